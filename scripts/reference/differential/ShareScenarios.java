package differential;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.AlterShareGroupOffsetsRequestData;
import org.apache.kafka.common.message.DeleteShareGroupOffsetsRequestData;
import org.apache.kafka.common.message.DeleteShareGroupStateRequestData;
import org.apache.kafka.common.message.DescribeShareGroupOffsetsRequestData;
import org.apache.kafka.common.message.FindCoordinatorRequestData;
import org.apache.kafka.common.message.IncrementalAlterConfigsRequestData;
import org.apache.kafka.common.message.InitializeShareGroupStateRequestData;
import org.apache.kafka.common.message.ReadShareGroupStateRequestData;
import org.apache.kafka.common.message.ReadShareGroupStateSummaryRequestData;
import org.apache.kafka.common.message.ShareAcknowledgeRequestData;
import org.apache.kafka.common.message.ShareFetchRequestData;
import org.apache.kafka.common.message.ShareGroupDescribeRequestData;
import org.apache.kafka.common.message.ShareGroupHeartbeatRequestData;
import org.apache.kafka.common.message.WriteShareGroupStateRequestData;
import org.apache.kafka.common.protocol.ApiKeys;

/**
 * Share groups (KIP-932): ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch,
 * ShareAcknowledge, the share-group offset admin APIs, and the share coordinator's
 * inter-broker state APIs sent by a client.
 *
 * Kafka 4.4 serves share groups without any setting: share.version is finalized (2) when the
 * storage is formatted with the release's default features. A member id is the client's own
 * (v1): here a Uuid derived from the scenario's name, the same on both peers. The groups read
 * from the earliest offset (group config share.auto.offset.reset=earliest, set as a client
 * would through IncrementalAlterConfigs), so that records produced before the member joins are
 * delivered whatever the timing of the share partition's initialisation.
 */
final class ShareScenarios {
    private ShareScenarios() {}

    static final byte ACCEPT = 1, RELEASE = 2, REJECT = 3, RENEW = 4;
    /** ShareAcquireMode (KIP-1206). */
    static final byte BATCH_OPTIMIZED = 0, RECORD_LIMIT = 1;

    // ---- request builders ----------------------------------------------------------------

    /** A member id as a share consumer makes one (a random Uuid in base64): derived from the
     *  scenario's id so that both peers get the same. */
    static String memberId(Ctx c, String which) {
        String seed = c.id + "/" + which;
        long hi = seed.hashCode() * 0x9E3779B97F4A7C15L | 1L;
        long lo = new StringBuilder(seed).reverse().toString().hashCode() * 0xC2B2AE3D27D4EB4FL | 1L;
        return new Uuid(hi, lo).toString();
    }

    static ShareGroupHeartbeatRequestData heartbeat(String group, String member, int epoch, List<String> topics) {
        return new ShareGroupHeartbeatRequestData().setGroupId(group).setMemberId(member).setMemberEpoch(epoch)
            .setSubscribedTopicNames(topics == null ? null : new ArrayList<>(topics));
    }

    static ShareGroupDescribeRequestData describe(String... groups) {
        return new ShareGroupDescribeRequestData().setGroupIds(new ArrayList<>(List.of(groups)));
    }

    static ShareFetchRequestData fetch(short v, String group, String member, int epoch, int maxWaitMs) {
        ShareFetchRequestData r = new ShareFetchRequestData().setGroupId(group).setMemberId(member).setShareSessionEpoch(epoch)
            .setMaxWaitMs(maxWaitMs).setMinBytes(1).setMaxBytes(1 << 20);
        if (v >= 1) r.setMaxRecords(500).setBatchSize(500);
        return r;
    }

    static ShareFetchRequestData.FetchPartition fetchPartition(ShareFetchRequestData r, Uuid topicId, int partition) {
        ShareFetchRequestData.FetchTopic t = r.topics().find(topicId);
        if (t == null) {
            t = new ShareFetchRequestData.FetchTopic().setTopicId(topicId);
            r.topics().add(t);
        }
        ShareFetchRequestData.FetchPartition p = new ShareFetchRequestData.FetchPartition().setPartitionIndex(partition);
        t.partitions().add(p);
        return p;
    }

    static ShareFetchRequestData.AcknowledgementBatch fetchAck(long first, long last, byte... types) {
        List<Byte> ts = new ArrayList<>();
        for (byte b : types) ts.add(b);
        return new ShareFetchRequestData.AcknowledgementBatch().setFirstOffset(first).setLastOffset(last).setAcknowledgeTypes(ts);
    }

    static ShareAcknowledgeRequestData acknowledge(String group, String member, int epoch, Uuid topicId, int partition,
                                                   ShareAcknowledgeRequestData.AcknowledgementBatch... batches) {
        ShareAcknowledgeRequestData r = new ShareAcknowledgeRequestData().setGroupId(group).setMemberId(member).setShareSessionEpoch(epoch);
        if (topicId != null) {
            ShareAcknowledgeRequestData.AcknowledgeTopic t = new ShareAcknowledgeRequestData.AcknowledgeTopic().setTopicId(topicId);
            ShareAcknowledgeRequestData.AcknowledgePartition p = new ShareAcknowledgeRequestData.AcknowledgePartition().setPartitionIndex(partition);
            p.acknowledgementBatches().addAll(List.of(batches));
            t.partitions().add(p);
            r.topics().add(t);
        }
        return r;
    }

    static ShareAcknowledgeRequestData.AcknowledgementBatch ack(long first, long last, byte... types) {
        List<Byte> ts = new ArrayList<>();
        for (byte b : types) ts.add(b);
        return new ShareAcknowledgeRequestData.AcknowledgementBatch().setFirstOffset(first).setLastOffset(last).setAcknowledgeTypes(ts);
    }

    static DescribeShareGroupOffsetsRequestData describeOffsets(String group, String topic, int... partitions) {
        DescribeShareGroupOffsetsRequestData r = new DescribeShareGroupOffsetsRequestData();
        DescribeShareGroupOffsetsRequestData.DescribeShareGroupOffsetsRequestGroup g =
            new DescribeShareGroupOffsetsRequestData.DescribeShareGroupOffsetsRequestGroup().setGroupId(group);
        if (topic == null) {
            g.setTopics(null);
        } else {
            DescribeShareGroupOffsetsRequestData.DescribeShareGroupOffsetsRequestTopic t =
                new DescribeShareGroupOffsetsRequestData.DescribeShareGroupOffsetsRequestTopic().setTopicName(topic);
            for (int p : partitions) t.partitions().add(p);
            g.topics().add(t);
        }
        r.groups().add(g);
        return r;
    }

    static AlterShareGroupOffsetsRequestData alterOffsets(String group, String topic, int partition, long offset) {
        AlterShareGroupOffsetsRequestData r = new AlterShareGroupOffsetsRequestData().setGroupId(group);
        AlterShareGroupOffsetsRequestData.AlterShareGroupOffsetsRequestTopic t =
            new AlterShareGroupOffsetsRequestData.AlterShareGroupOffsetsRequestTopic().setTopicName(topic);
        t.partitions().add(new AlterShareGroupOffsetsRequestData.AlterShareGroupOffsetsRequestPartition().setPartitionIndex(partition).setStartOffset(offset));
        r.topics().add(t);
        return r;
    }

    static DeleteShareGroupOffsetsRequestData deleteOffsets(String group, String... topics) {
        DeleteShareGroupOffsetsRequestData r = new DeleteShareGroupOffsetsRequestData().setGroupId(group);
        for (String t : topics) r.topics().add(new DeleteShareGroupOffsetsRequestData.DeleteShareGroupOffsetsRequestTopic().setTopicName(t));
        return r;
    }

    // ---- set-up steps --------------------------------------------------------------------

    /** share.auto.offset.reset=earliest for the group (a group config). */
    static void readFromEarliest(Ctx c, String group) throws IOException {
        IncrementalAlterConfigsRequestData r = new IncrementalAlterConfigsRequestData();
        IncrementalAlterConfigsRequestData.AlterConfigsResource res = new IncrementalAlterConfigsRequestData.AlterConfigsResource()
            .setResourceType((byte) 32).setResourceName(group);
        res.configs().add(new IncrementalAlterConfigsRequestData.AlterableConfig().setName("share.auto.offset.reset").setValue("earliest")
            .setConfigOperation((byte) 0));
        r.resources().add(res);
        Peer.Answer a = c.call(Route.ANY, ApiKeys.INCREMENTAL_ALTER_CONFIGS, (short) 1, r);
        if (a.json().path("responses").path(0).path("errorCode").asInt() != 0) {
            throw new Ctx.ScenarioFailure("IncrementalAlterConfigs share.auto.offset.reset of group " + group + ": " + a.json());
        }
    }

    static int assigned(JsonNode heartbeat) {
        int n = 0;
        for (JsonNode t : heartbeat.path("assignment").path("topicPartitions")) n += t.path("partitions").size();
        return n;
    }

    /** Heartbeats as a share consumer does until the member has `partitions` partitions;
     *  returns the member epoch. Not compared. */
    static int awaitAssignment(Ctx c, String group, String member, int epoch, int partitions) throws IOException {
        long deadline = System.currentTimeMillis() + Ctx.AWAIT_MS;
        while (true) {
            Peer.Answer a = c.call(Route.group(group), ApiKeys.SHARE_GROUP_HEARTBEAT, (short) 1, heartbeat(group, member, epoch, null));
            if (a.errorCode() != 0) throw new Ctx.ScenarioFailure("ShareGroupHeartbeat: " + a.json());
            epoch = a.json().path("memberEpoch").asInt();
            if (assigned(a.json()) >= partitions) return epoch;
            if (System.currentTimeMillis() > deadline) throw new Ctx.ScenarioFailure("no assignment of " + partitions + " partitions to " + member);
            Ctx.sleep(100);
        }
    }

    /** Joins a share group and waits for its assignment. Not compared. */
    static int join(Ctx c, String group, String member, String topic, int partitions) throws IOException {
        long deadline = System.currentTimeMillis() + Ctx.AWAIT_MS;
        while (true) {
            Peer.Answer a = c.call(Route.group(group), ApiKeys.SHARE_GROUP_HEARTBEAT, (short) 1, heartbeat(group, member, 0, List.of(topic)));
            if (a.errorCode() == 0) {
                int epoch = a.json().path("memberEpoch").asInt();
                return assigned(a.json()) >= partitions ? epoch : awaitAssignment(c, group, member, epoch, partitions);
            }
            if (!GroupScenarios.coordinatorBusy(a.errorCode()) || System.currentTimeMillis() > deadline) {
                throw new Ctx.ScenarioFailure("ShareGroupHeartbeat join: " + a.json());
            }
            Ctx.sleep(50);
        }
    }

    /** The share-partition start offset DescribeShareGroupOffsets reports for partition 0 of
     *  `topic`: polled until it is `expected` (the share partition leader writes its state to
     *  the share coordinator after it answers the acknowledgement) or 1.5 s have passed (Kafka 4.4 stays
     *  behind, at the state before the last acknowledgement, for longer). */
    static void awaitStartOffset(Ctx c, String group, String topic, long expected) throws IOException {
        long deadline = System.currentTimeMillis() + 1_500;
        long seen = Long.MIN_VALUE;
        while (System.currentTimeMillis() < deadline) {
            Peer.Answer a = c.call(Route.group(group), ApiKeys.DESCRIBE_SHARE_GROUP_OFFSETS, (short) 0, describeOffsets(group, topic, 0));
            seen = a.json().path("groups").path(0).path("topics").path(0).path("partitions").path(0).path("startOffset").asLong();
            if (seen == expected) return;
            Ctx.sleep(100);
        }
        System.err.println("note: " + c.peer.name + " " + c.id + ": share-partition start offset of " + group + " stays " + seen + ", not " + expected);
    }

    /** A topic of one partition with three records in one batch, a group reading it from the
     *  earliest offset, and a member holding the partition. */
    record Setup(String topic, Uuid topicId, String group, String member, int epoch) {}

    static Setup setup(Ctx c, int records) throws IOException {
        String t = c.topic();
        Uuid id = c.createTopic(t, 1);
        if (records > 0) c.produce(t, 0, Records.batch(records));
        String g = c.name("group");
        readFromEarliest(c, g);
        String m = memberId(c, "a");
        int epoch = join(c, g, m, t, 1);
        return new Setup(t, id, g, m, epoch);
    }

    // ---- scenarios -----------------------------------------------------------------------

    static void add(List<Scenario> s) {
        addHeartbeat(s);
        addDescribe(s);
        addFetch(s);
        addAcknowledge(s);
        addVersion2(s);
        addOffsets(s);
        addStateApis(s);
        addFindCoordinator(s);
    }

    static void addHeartbeat(List<Scenario> s) {
        s.add(Scenario.of("share.heartbeat", ApiKeys.SHARE_GROUP_HEARTBEAT, 1, 1, c -> {
            String t = c.topic();
            c.createTopic(t, 2);
            String g = c.name("group");
            String m = memberId(c, "a");
            GroupScenarios.awaitGroupCoordinator(c, g);
            Route r = Route.group(g);
            // Kafka bumps the group epoch for each round in which it initialises share partitions:
            // with two partitions one round or two, by timing (member epoch 3 or 4 once assigned).
            // share.describe compares the epochs where they do not depend on timing.
            String epochs = "Kafka's group epoch counts its rounds of share-partition initialisation, one or two here by timing";
            Observation joined = c.observe("join", r, ApiKeys.SHARE_GROUP_HEARTBEAT, heartbeat(g, m, 0, List.of(t)));
            // The assignment can come with the join or with a later heartbeat, once the broker
            // has initialised the share partitions: loop as a client does, then compare.
            if (assigned(joined.json()) < 2) {
                joined.mask("whether the first heartbeat already carries the assignment depends on when the share partitions' "
                    + "state is initialised", "/assignment", "/memberEpoch");
            }
            int epoch = joined.json().path("memberEpoch").asInt();
            if (assigned(joined.json()) < 2) epoch = awaitAssignment(c, g, m, epoch, 2);
            c.observe("heartbeat-again", r, ApiKeys.SHARE_GROUP_HEARTBEAT, heartbeat(g, m, epoch, null)).mask(epochs, "/memberEpoch");
            c.observe("same-subscription-again", r, ApiKeys.SHARE_GROUP_HEARTBEAT, heartbeat(g, m, epoch, List.of(t))).mask(epochs, "/memberEpoch");
            c.observe("unknown-member", r, ApiKeys.SHARE_GROUP_HEARTBEAT, heartbeat(g, memberId(c, "unknown"), 1, null));
            c.observe("epoch-ahead", r, ApiKeys.SHARE_GROUP_HEARTBEAT, heartbeat(g, m, epoch + 5, null));
            Observation rejoin = c.observe("rejoin-with-epoch-0", r, ApiKeys.SHARE_GROUP_HEARTBEAT, heartbeat(g, m, 0, List.of(t)));
            epoch = rejoin.json().path("memberEpoch").asInt(epoch);
            rejoin.mask(epochs, "/memberEpoch");
            // (After the rejoin: the member epoch is at least 2 on both, so that one behind is
            // not 0, a join.)
            c.observe("epoch-behind", r, ApiKeys.SHARE_GROUP_HEARTBEAT, heartbeat(g, m, epoch - 1, null)).mask(epochs, "/memberEpoch");
            String[] describedEpochs = {"/groups/*/groupEpoch", "/groups/*/assignmentEpoch", "/groups/*/members/*/memberEpoch"};
            c.observe("describe", r, ApiKeys.SHARE_GROUP_DESCRIBE, describe(g)).mask(epochs, describedEpochs);
            c.observe("leave", r, ApiKeys.SHARE_GROUP_HEARTBEAT, heartbeat(g, m, -1, null));
            c.observe("describe-after-leave", r, ApiKeys.SHARE_GROUP_DESCRIBE, describe(g)).mask(epochs, describedEpochs);
            c.observe("heartbeat-after-leave", r, ApiKeys.SHARE_GROUP_HEARTBEAT, heartbeat(g, m, epoch, null));
            c.observe("leave-again", r, ApiKeys.SHARE_GROUP_HEARTBEAT, heartbeat(g, m, -1, null));
        }));
        s.add(Scenario.of("share.heartbeat.invalid", ApiKeys.SHARE_GROUP_HEARTBEAT, 1, 1, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            String g = c.name("group");
            GroupScenarios.awaitGroupCoordinator(c, g);
            Route r = Route.group(g);
            c.observe("no-member-id", r, ApiKeys.SHARE_GROUP_HEARTBEAT, heartbeat(g, "", 0, List.of(t)));
            c.observe("join-without-topics", r, ApiKeys.SHARE_GROUP_HEARTBEAT, heartbeat(g, memberId(c, "a"), 0, null));
            c.observe("join-empty-topics", r, ApiKeys.SHARE_GROUP_HEARTBEAT, heartbeat(g, memberId(c, "b"), 0, List.of()));
            c.observe("join-with-epoch-1", r, ApiKeys.SHARE_GROUP_HEARTBEAT, heartbeat(g, memberId(c, "c"), 1, List.of(t)));
            c.observe("epoch-minus-2", r, ApiKeys.SHARE_GROUP_HEARTBEAT, heartbeat(g, memberId(c, "d"), -2, List.of(t)));
            c.observe("empty-group-id", Route.ANY, ApiKeys.SHARE_GROUP_HEARTBEAT, heartbeat("", memberId(c, "e"), 0, List.of(t)));
            c.observe("unknown-topic", r, ApiKeys.SHARE_GROUP_HEARTBEAT, heartbeat(g, memberId(c, "f"), 0, List.of(c.name("missing"))));
            // A classic group's id (offsets committed, no members): not a share group.
            String classic = c.name("classic");
            GroupScenarios.commitAdmin(c, classic, t, 1, 0);
            c.observe("classic-group-id", Route.group(classic), ApiKeys.SHARE_GROUP_HEARTBEAT, heartbeat(classic, memberId(c, "g"), 0, List.of(t)));
        }));
    }

    static void addDescribe(List<Scenario> s) {
        s.add(Scenario.of("share.describe", ApiKeys.SHARE_GROUP_DESCRIBE, 1, 1, c -> {
            Setup x = setup(c, 0);
            String missing = c.name("missing");
            String classic = c.name("classic");
            GroupScenarios.commitAdmin(c, classic, x.topic, 1, 0);
            GroupScenarios.awaitGroupCoordinator(c, missing);
            c.observe("live", Route.group(x.group), ApiKeys.SHARE_GROUP_DESCRIBE, describe(x.group));
            c.observe("live-with-operations", Route.group(x.group), ApiKeys.SHARE_GROUP_DESCRIBE, describe(x.group).setIncludeAuthorizedOperations(true));
            c.observe("missing", Route.group(missing), ApiKeys.SHARE_GROUP_DESCRIBE, describe(missing));
            c.observe("classic-group", Route.group(classic), ApiKeys.SHARE_GROUP_DESCRIBE, describe(classic));
            c.observe("three", Route.group(x.group), ApiKeys.SHARE_GROUP_DESCRIBE, describe(x.group, missing, classic));
            c.observe("empty-group-id", Route.ANY, ApiKeys.SHARE_GROUP_DESCRIBE, describe(""));
            c.observe("describe-groups-of-a-share-group", Route.group(x.group), ApiKeys.DESCRIBE_GROUPS, (short) 6, GroupScenarios.describe(x.group));
            GroupScenarios.keepOwn(c, c.observe("list-groups-share", Route.ANY, ApiKeys.LIST_GROUPS, (short) 5,
                new org.apache.kafka.common.message.ListGroupsRequestData().setTypesFilter(List.of("share"))), "groups", "groupId");
        }));
    }

    static void addFetch(List<Scenario> s) {
        // One member reads three records, acknowledges them one way each (accept, release,
        // reject), gets the released one again, and closes its session.
        s.add(Scenario.of("share.fetch", ApiKeys.SHARE_FETCH, 1, 2, c -> {
            Setup x = setup(c, 3);
            Route leader = Route.leader(x.topic, 0);
            ShareFetchRequestData first = fetch(c.version, x.group, x.member, 0, 5_000);
            fetchPartition(first, x.topicId, 0);
            c.observe("open-session", leader, ApiKeys.SHARE_FETCH, first);
            ShareFetchRequestData acks = fetch(c.version, x.group, x.member, 1, 200);
            fetchPartition(acks, x.topicId, 0).acknowledgementBatches().add(fetchAck(0, 2, ACCEPT, RELEASE, REJECT));
            c.observe("acknowledge-and-fetch", leader, ApiKeys.SHARE_FETCH, acks);
            ShareFetchRequestData again = fetch(c.version, x.group, x.member, 2, 200);
            c.observe("fetch-again-incremental", leader, ApiKeys.SHARE_FETCH, again);
            ShareFetchRequestData accept = fetch(c.version, x.group, x.member, 3, 200);
            fetchPartition(accept, x.topicId, 0).acknowledgementBatches().add(fetchAck(1, 1, ACCEPT));
            c.observe("accept-the-released-one", leader, ApiKeys.SHARE_FETCH, accept);
            c.observe("wrong-session-epoch", leader, ApiKeys.SHARE_FETCH, fetch(c.version, x.group, x.member, 9, 200));
            c.observe("close-session", leader, ApiKeys.SHARE_FETCH, fetch(c.version, x.group, x.member, -1, 200));
            c.observe("incremental-after-close", leader, ApiKeys.SHARE_FETCH, fetch(c.version, x.group, x.member, 5, 200));
            awaitStartOffset(c, x.group, x.topic, 3);
            c.observe("offsets", Route.group(x.group), ApiKeys.DESCRIBE_SHARE_GROUP_OFFSETS, (short) 0, describeOffsets(x.group, x.topic, 0));
        }));
        s.add(Scenario.of("share.fetch.invalid", ApiKeys.SHARE_FETCH, 1, 2, c -> {
            Setup x = setup(c, 2);
            Route leader = Route.leader(x.topic, 0);
            ShareFetchRequestData unknownMember = fetch(c.version, x.group, memberId(c, "stranger"), 0, 200);
            fetchPartition(unknownMember, x.topicId, 0);
            c.observe("unknown-member", leader, ApiKeys.SHARE_FETCH, unknownMember);
            ShareFetchRequestData unknownGroup = fetch(c.version, c.name("missing"), x.member, 0, 200);
            fetchPartition(unknownGroup, x.topicId, 0);
            c.observe("unknown-group", leader, ApiKeys.SHARE_FETCH, unknownGroup);
            ShareFetchRequestData ackOnOpen = fetch(c.version, x.group, x.member, 0, 200);
            fetchPartition(ackOnOpen, x.topicId, 0).acknowledgementBatches().add(fetchAck(0, 0, ACCEPT));
            c.observe("acknowledge-when-opening", leader, ApiKeys.SHARE_FETCH, ackOnOpen);
            ShareFetchRequestData unknownTopic = fetch(c.version, x.group, x.member, 0, 200);
            fetchPartition(unknownTopic, Uuid.fromString("AAAAAAAAAAAAAAAAAAAAAQ"), 0);
            fetchPartition(unknownTopic, x.topicId, 7);
            c.observe("unknown-topic-and-partition", leader, ApiKeys.SHARE_FETCH, unknownTopic);
            c.observe("no-group-id", leader, ApiKeys.SHARE_FETCH, fetch(c.version, null, x.member, 0, 200));
            c.observe("no-member-id", leader, ApiKeys.SHARE_FETCH, fetch(c.version, x.group, null, 0, 200));
        }));
    }

    static void addAcknowledge(List<Scenario> s) {
        s.add(Scenario.of("share.acknowledge", ApiKeys.SHARE_ACKNOWLEDGE, 1, 2, c -> {
            Setup x = setup(c, 3);
            Route leader = Route.leader(x.topic, 0);
            ShareFetchRequestData first = fetch((short) 1, x.group, x.member, 0, 5_000);
            fetchPartition(first, x.topicId, 0);
            c.observe("fetch", leader, ApiKeys.SHARE_FETCH, (short) 1, first);
            c.observe("accept-release-reject", leader, ApiKeys.SHARE_ACKNOWLEDGE,
                acknowledge(x.group, x.member, 1, x.topicId, 0, ack(0, 0, ACCEPT), ack(1, 1, RELEASE), ack(2, 2, REJECT)));
            c.observe("again-already-acknowledged", leader, ApiKeys.SHARE_ACKNOWLEDGE,
                acknowledge(x.group, x.member, 2, x.topicId, 0, ack(0, 0, ACCEPT)));
            c.observe("released-not-acquired", leader, ApiKeys.SHARE_ACKNOWLEDGE,
                acknowledge(x.group, x.member, 3, x.topicId, 0, ack(1, 1, ACCEPT)));
            c.observe("beyond-the-log", leader, ApiKeys.SHARE_ACKNOWLEDGE,
                acknowledge(x.group, x.member, 4, x.topicId, 0, ack(10, 12, ACCEPT)));
            c.observe("gap-type-0", leader, ApiKeys.SHARE_ACKNOWLEDGE,
                acknowledge(x.group, x.member, 5, x.topicId, 0, ack(0, 0, (byte) 0)));
            c.observe("invalid-type-9", leader, ApiKeys.SHARE_ACKNOWLEDGE,
                acknowledge(x.group, x.member, 6, x.topicId, 0, ack(0, 0, (byte) 9)));
            c.observe("wrong-session-epoch", leader, ApiKeys.SHARE_ACKNOWLEDGE,
                acknowledge(x.group, x.member, 42, x.topicId, 0, ack(0, 0, ACCEPT)));
            c.observe("epoch-0", leader, ApiKeys.SHARE_ACKNOWLEDGE,
                acknowledge(x.group, x.member, 0, x.topicId, 0, ack(0, 0, ACCEPT)));
            ShareFetchRequestData refetch = fetch((short) 1, x.group, x.member, 7, 2_000);
            c.observe("fetch-the-released-one", leader, ApiKeys.SHARE_FETCH, (short) 1, refetch);
            c.observe("close-with-acknowledgement", leader, ApiKeys.SHARE_ACKNOWLEDGE,
                acknowledge(x.group, x.member, -1, x.topicId, 0, ack(1, 1, ACCEPT)));
            c.observe("after-close", leader, ApiKeys.SHARE_ACKNOWLEDGE,
                acknowledge(x.group, x.member, 8, x.topicId, 0, ack(1, 1, ACCEPT)));
            c.observe("unknown-member", leader, ApiKeys.SHARE_ACKNOWLEDGE,
                acknowledge(x.group, memberId(c, "stranger"), 1, x.topicId, 0, ack(0, 0, ACCEPT)));
            awaitStartOffset(c, x.group, x.topic, 3);
            c.observe("offsets", Route.group(x.group), ApiKeys.DESCRIBE_SHARE_GROUP_OFFSETS, (short) 0, describeOffsets(x.group, x.topic, 0));
        }));
    }

    /** A ShareFetch v2 in record_limit mode taking at most `maxRecords`. */
    static ShareFetchRequestData recordLimit(String group, String member, int epoch, int maxRecords) {
        return fetch((short) 2, group, member, epoch, 2_000).setShareAcquireMode(RECORD_LIMIT)
            .setMaxRecords(maxRecords).setBatchSize(maxRecords);
    }

    /** A ShareFetch v2 that only renews (KIP-1222): it must ask for nothing. */
    static ShareFetchRequestData renewOnly(String group, String member, int epoch) {
        return new ShareFetchRequestData().setGroupId(group).setMemberId(member).setShareSessionEpoch(epoch)
            .setMaxWaitMs(0).setMinBytes(0).setMaxBytes(0).setMaxRecords(0).setBatchSize(0).setIsRenewAck(true);
    }

    static void addVersion2(List<Scenario> s) {
        // KIP-1206 record_limit inside one batch of five records, and KIP-1222 renewals by
        // ShareFetch. (The start offset the group reaches is not compared: Kafka writes it to
        // its share coordinator lazily, see share.fetch.)
        s.add(Scenario.of("share.fetch.record-limit-and-renew", ApiKeys.SHARE_FETCH, 2, 2, c -> {
            Setup x = setup(c, 5);
            Route leader = Route.leader(x.topic, 0);
            ShareFetchRequestData first = recordLimit(x.group, x.member, 0, 2);
            first.setMaxWaitMs(5_000);
            fetchPartition(first, x.topicId, 0);
            c.observe("open-session-two-records", leader, ApiKeys.SHARE_FETCH, first);
            ShareFetchRequestData renew = renewOnly(x.group, x.member, 1);
            fetchPartition(renew, x.topicId, 0).acknowledgementBatches().add(fetchAck(0, 1, RENEW));
            c.observe("renew-only", leader, ApiKeys.SHARE_FETCH, renew);
            ShareFetchRequestData asking = renewOnly(x.group, x.member, 2).setMaxRecords(2);
            fetchPartition(asking, x.topicId, 0).acknowledgementBatches().add(fetchAck(0, 1, RENEW));
            c.observe("renew-asking-for-records", leader, ApiKeys.SHARE_FETCH, asking);
            ShareFetchRequestData unflagged = recordLimit(x.group, x.member, 2, 2);
            fetchPartition(unflagged, x.topicId, 0).acknowledgementBatches().add(fetchAck(0, 0, RENEW));
            c.observe("renew-without-the-flag-and-two-more", leader, ApiKeys.SHARE_FETCH, unflagged);
            ShareFetchRequestData accept = recordLimit(x.group, x.member, 3, 2);
            fetchPartition(accept, x.topicId, 0).acknowledgementBatches().add(fetchAck(0, 3, ACCEPT));
            c.observe("accept-the-renewed-and-the-rest", leader, ApiKeys.SHARE_FETCH, accept);
            ShareFetchRequestData unknownMode = recordLimit(x.group, x.member, 4, 2).setShareAcquireMode((byte) 7).setMaxWaitMs(0);
            fetchPartition(unknownMode, x.topicId, 0);
            c.observe("unknown-acquire-mode", leader, ApiKeys.SHARE_FETCH, unknownMode);
            ShareFetchRequestData close = fetch((short) 2, x.group, x.member, -1, 0);
            fetchPartition(close, x.topicId, 0).acknowledgementBatches().add(fetchAck(4, 4, ACCEPT));
            c.observe("close-session", leader, ApiKeys.SHARE_FETCH, close);
        }));
        // KIP-1222 renewals by ShareAcknowledge, and its AcquisitionLockTimeoutMs.
        s.add(Scenario.of("share.acknowledge.renew", ApiKeys.SHARE_ACKNOWLEDGE, 2, 2, c -> {
            Setup x = setup(c, 3);
            Route leader = Route.leader(x.topic, 0);
            ShareFetchRequestData first = fetch((short) 2, x.group, x.member, 0, 5_000).setShareAcquireMode(BATCH_OPTIMIZED);
            fetchPartition(first, x.topicId, 0);
            c.observe("fetch", leader, ApiKeys.SHARE_FETCH, (short) 2, first);
            c.observe("renew", leader, ApiKeys.SHARE_ACKNOWLEDGE,
                acknowledge(x.group, x.member, 1, x.topicId, 0, ack(0, 1, RENEW)).setIsRenewAck(true));
            c.observe("renew-without-the-flag", leader, ApiKeys.SHARE_ACKNOWLEDGE,
                acknowledge(x.group, x.member, 2, x.topicId, 0, ack(2, 2, RENEW)));
            c.observe("renew-in-version-1", leader, ApiKeys.SHARE_ACKNOWLEDGE, (short) 1,
                acknowledge(x.group, x.member, 3, x.topicId, 0, ack(2, 2, RENEW)));
            c.observe("flag-with-renew-and-accept", leader, ApiKeys.SHARE_ACKNOWLEDGE,
                acknowledge(x.group, x.member, 4, x.topicId, 0, ack(0, 0, RENEW), ack(2, 2, ACCEPT)).setIsRenewAck(true));
            c.observe("accept-the-renewed", leader, ApiKeys.SHARE_ACKNOWLEDGE,
                acknowledge(x.group, x.member, 5, x.topicId, 0, ack(0, 1, ACCEPT)));
            c.observe("close", leader, ApiKeys.SHARE_ACKNOWLEDGE, acknowledge(x.group, x.member, -1, null, 0));
        }));
    }

    /** A share group that has consumed a topic and has no members any more. */
    static Setup emptyGroupThatRead(Ctx c) throws IOException {
        Setup x = setup(c, 3);
        Route leader = Route.leader(x.topic, 0);
        ShareFetchRequestData first = fetch((short) 1, x.group, x.member, 0, 5_000);
        fetchPartition(first, x.topicId, 0);
        c.call(leader, ApiKeys.SHARE_FETCH, (short) 1, first);
        ShareFetchRequestData close = fetch((short) 1, x.group, x.member, -1, 0);
        fetchPartition(close, x.topicId, 0).acknowledgementBatches().add(fetchAck(0, 1, ACCEPT, ACCEPT));
        c.call(leader, ApiKeys.SHARE_FETCH, (short) 1, close);
        c.call(Route.group(x.group), ApiKeys.SHARE_GROUP_HEARTBEAT, (short) 1, heartbeat(x.group, x.member, -1, null));
        awaitStartOffset(c, x.group, x.topic, 2);
        return x;
    }

    static void addOffsets(List<Scenario> s) {
        s.add(Scenario.of("share.describe-offsets", ApiKeys.DESCRIBE_SHARE_GROUP_OFFSETS, 0, 1, c -> {
            Setup x = emptyGroupThatRead(c);
            String missing = c.name("missing");
            GroupScenarios.awaitGroupCoordinator(c, missing);
            Route r = Route.group(x.group);
            c.observe("empty-group", r, ApiKeys.DESCRIBE_SHARE_GROUP_OFFSETS, describeOffsets(x.group, x.topic, 0));
            c.observe("all-topics", r, ApiKeys.DESCRIBE_SHARE_GROUP_OFFSETS, describeOffsets(x.group, null));
            // Not sent: a partition the topic does not have (index 5 of 1) gets no answer from
            // Kafka 4.4 within 30 s; Samsa answers startOffset -1, error NONE.
            c.observe("unknown-topic", r, ApiKeys.DESCRIBE_SHARE_GROUP_OFFSETS, describeOffsets(x.group, c.name("missing-topic"), 0));
            c.observe("missing-group", Route.group(missing), ApiKeys.DESCRIBE_SHARE_GROUP_OFFSETS, describeOffsets(missing, x.topic, 0));
            c.observe("missing-group-all-topics", Route.group(missing), ApiKeys.DESCRIBE_SHARE_GROUP_OFFSETS, describeOffsets(missing, null));
        }));
        s.add(Scenario.of("share.alter-offsets", ApiKeys.ALTER_SHARE_GROUP_OFFSETS, 0, 0, c -> {
            Setup x = emptyGroupThatRead(c);
            String missing = c.name("missing");
            GroupScenarios.awaitGroupCoordinator(c, missing);
            Route r = Route.group(x.group);
            c.observe("empty-group", r, ApiKeys.ALTER_SHARE_GROUP_OFFSETS, alterOffsets(x.group, x.topic, 0, 1));
            c.observe("describe-after", r, ApiKeys.DESCRIBE_SHARE_GROUP_OFFSETS, (short) 0, describeOffsets(x.group, x.topic, 0));
            c.observe("unknown-partition", r, ApiKeys.ALTER_SHARE_GROUP_OFFSETS, alterOffsets(x.group, x.topic, 4, 0));
            c.observe("unknown-topic", r, ApiKeys.ALTER_SHARE_GROUP_OFFSETS, alterOffsets(x.group, c.name("missing-topic"), 0, 0));
            c.observe("missing-group", Route.group(missing), ApiKeys.ALTER_SHARE_GROUP_OFFSETS, alterOffsets(missing, x.topic, 0, 0));
            // A live group refuses.
            int epoch = join(c, x.group, x.member, x.topic, 1);
            c.observe("live-group", r, ApiKeys.ALTER_SHARE_GROUP_OFFSETS, alterOffsets(x.group, x.topic, 0, 2));
            c.call(r, ApiKeys.SHARE_GROUP_HEARTBEAT, (short) 1, heartbeat(x.group, x.member, -1, null));
            if (epoch < 0) throw new Ctx.ScenarioFailure("join");
        }));
        s.add(Scenario.of("share.delete-offsets", ApiKeys.DELETE_SHARE_GROUP_OFFSETS, 0, 0, c -> {
            Setup x = emptyGroupThatRead(c);
            String missing = c.name("missing");
            GroupScenarios.awaitGroupCoordinator(c, missing);
            Route r = Route.group(x.group);
            c.observe("unknown-topic", r, ApiKeys.DELETE_SHARE_GROUP_OFFSETS, deleteOffsets(x.group, c.name("missing-topic")));
            c.observe("empty-group", r, ApiKeys.DELETE_SHARE_GROUP_OFFSETS, deleteOffsets(x.group, x.topic));
            c.observe("describe-after", r, ApiKeys.DESCRIBE_SHARE_GROUP_OFFSETS, (short) 0, describeOffsets(x.group, null));
            c.observe("again", r, ApiKeys.DELETE_SHARE_GROUP_OFFSETS, deleteOffsets(x.group, x.topic));
            c.observe("missing-group", Route.group(missing), ApiKeys.DELETE_SHARE_GROUP_OFFSETS, deleteOffsets(missing, x.topic));
            c.observe("no-topics", r, ApiKeys.DELETE_SHARE_GROUP_OFFSETS, deleteOffsets(x.group));
            join(c, x.group, x.member, x.topic, 1);
            c.observe("live-group", r, ApiKeys.DELETE_SHARE_GROUP_OFFSETS, deleteOffsets(x.group, x.topic));
            c.call(r, ApiKeys.SHARE_GROUP_HEARTBEAT, (short) 1, heartbeat(x.group, x.member, -1, null));
        }));
    }

    // ---- the share coordinator's state APIs, sent by a client ----------------------------

    static String shareKey(String group, Uuid topicId, int partition) {
        return group + ":" + topicId + ":" + partition;
    }

    /** The share coordinator of (group, topic, partition): FindCoordinator v6, key type 2. */
    static Route shareCoordinator(String key) {
        return c -> {
            long deadline = System.currentTimeMillis() + Ctx.AWAIT_MS;
            while (true) {
                FindCoordinatorRequestData req = new FindCoordinatorRequestData().setKeyType((byte) 2);
                req.coordinatorKeys().add(key);
                Peer.Answer a = c.call(Route.ANY, ApiKeys.FIND_COORDINATOR, (short) 6, req);
                JsonNode co = a.json().path("coordinators").path(0);
                if (co.path("errorCode").asInt() == 0) return co.path("nodeId").asInt();
                // A broker that does not find share coordinators (share.find-coordinator shows
                // it): the group's coordinator, so that the state APIs still show their answers.
                if (co.path("errorCode").asInt() == 42) return c.coordinator((byte) 0, key.substring(0, key.indexOf(':')));
                if (System.currentTimeMillis() > deadline) throw new Ctx.ScenarioFailure("no share coordinator for " + key + ": " + a.json());
                Ctx.sleep(50);
            }
        };
    }

    static ReadShareGroupStateRequestData readState(String group, Uuid topicId, int partition) {
        ReadShareGroupStateRequestData r = new ReadShareGroupStateRequestData().setGroupId(group);
        ReadShareGroupStateRequestData.ReadStateData t = new ReadShareGroupStateRequestData.ReadStateData().setTopicId(topicId);
        t.partitions().add(new ReadShareGroupStateRequestData.PartitionData().setPartition(partition).setLeaderEpoch(0));
        r.topics().add(t);
        return r;
    }

    static WriteShareGroupStateRequestData writeState(String group, Uuid topicId, int partition, int stateEpoch, long startOffset) {
        WriteShareGroupStateRequestData r = new WriteShareGroupStateRequestData().setGroupId(group);
        WriteShareGroupStateRequestData.WriteStateData t = new WriteShareGroupStateRequestData.WriteStateData().setTopicId(topicId);
        WriteShareGroupStateRequestData.PartitionData p = new WriteShareGroupStateRequestData.PartitionData().setPartition(partition)
            .setStateEpoch(stateEpoch).setLeaderEpoch(0).setStartOffset(startOffset);
        p.stateBatches().add(new WriteShareGroupStateRequestData.StateBatch().setFirstOffset(startOffset).setLastOffset(startOffset)
            .setDeliveryState((byte) 4).setDeliveryCount((short) 1));
        t.partitions().add(p);
        r.topics().add(t);
        return r;
    }

    static DeleteShareGroupStateRequestData deleteState(String group, Uuid topicId, int partition) {
        DeleteShareGroupStateRequestData r = new DeleteShareGroupStateRequestData().setGroupId(group);
        DeleteShareGroupStateRequestData.DeleteStateData t = new DeleteShareGroupStateRequestData.DeleteStateData().setTopicId(topicId);
        t.partitions().add(new DeleteShareGroupStateRequestData.PartitionData().setPartition(partition));
        r.topics().add(t);
        return r;
    }

    static InitializeShareGroupStateRequestData initializeState(String group, Uuid topicId, int partition, int stateEpoch, long startOffset) {
        InitializeShareGroupStateRequestData r = new InitializeShareGroupStateRequestData().setGroupId(group);
        InitializeShareGroupStateRequestData.InitializeStateData t = new InitializeShareGroupStateRequestData.InitializeStateData().setTopicId(topicId);
        t.partitions().add(new InitializeShareGroupStateRequestData.PartitionData().setPartition(partition).setStateEpoch(stateEpoch).setStartOffset(startOffset));
        r.topics().add(t);
        return r;
    }

    static ReadShareGroupStateSummaryRequestData readSummary(String group, Uuid topicId, int partition) {
        ReadShareGroupStateSummaryRequestData r = new ReadShareGroupStateSummaryRequestData().setGroupId(group);
        ReadShareGroupStateSummaryRequestData.ReadStateSummaryData t = new ReadShareGroupStateSummaryRequestData.ReadStateSummaryData().setTopicId(topicId);
        t.partitions().add(new ReadShareGroupStateSummaryRequestData.PartitionData().setPartition(partition).setLeaderEpoch(0));
        r.topics().add(t);
        return r;
    }

    static void addStateApis(List<Scenario> s) {
        // The state of a share partition a member has read (two records accepted, one held),
        // then of a group that never existed.
        s.add(Scenario.of("share.read-state", ApiKeys.READ_SHARE_GROUP_STATE, 0, 0, c -> {
            Setup x = setup(c, 3);
            ShareFetchRequestData first = fetch((short) 1, x.group, x.member, 0, 5_000);
            fetchPartition(first, x.topicId, 0);
            c.call(Route.leader(x.topic, 0), ApiKeys.SHARE_FETCH, (short) 1, first);
            c.call(Route.leader(x.topic, 0), ApiKeys.SHARE_ACKNOWLEDGE, (short) 1,
                acknowledge(x.group, x.member, 1, x.topicId, 0, ack(0, 1, ACCEPT, ACCEPT)));
            Route coordinator = shareCoordinator(shareKey(x.group, x.topicId, 0));
            c.observe("read", coordinator, ApiKeys.READ_SHARE_GROUP_STATE, readState(x.group, x.topicId, 0));
            String missing = c.name("missing");
            c.observe("missing-group", shareCoordinator(shareKey(missing, x.topicId, 0)), ApiKeys.READ_SHARE_GROUP_STATE, readState(missing, x.topicId, 0));
            c.observe("unknown-partition", coordinator, ApiKeys.READ_SHARE_GROUP_STATE, readState(x.group, x.topicId, 3));
        }));
        s.add(Scenario.of("share.write-state", ApiKeys.WRITE_SHARE_GROUP_STATE, 0, 1, c -> {
            Setup x = setup(c, 3);
            ShareFetchRequestData first = fetch((short) 1, x.group, x.member, 0, 5_000);
            fetchPartition(first, x.topicId, 0);
            c.call(Route.leader(x.topic, 0), ApiKeys.SHARE_FETCH, (short) 1, first);
            Route coordinator = shareCoordinator(shareKey(x.group, x.topicId, 0));
            Peer.Answer before = c.call(coordinator, ApiKeys.READ_SHARE_GROUP_STATE, (short) 0, readState(x.group, x.topicId, 0));
            int stateEpoch = before.json().path("results").path(0).path("partitions").path(0).path("stateEpoch").asInt(0);
            c.observe("write", coordinator, ApiKeys.WRITE_SHARE_GROUP_STATE, writeState(x.group, x.topicId, 0, stateEpoch, 1));
            c.observe("read-after", coordinator, ApiKeys.READ_SHARE_GROUP_STATE, (short) 0, readState(x.group, x.topicId, 0));
            c.observe("stale-state-epoch", coordinator, ApiKeys.WRITE_SHARE_GROUP_STATE, writeState(x.group, x.topicId, 0, stateEpoch - 1, 2));
            String missing = c.name("missing");
            c.observe("missing-group", shareCoordinator(shareKey(missing, x.topicId, 0)), ApiKeys.WRITE_SHARE_GROUP_STATE,
                writeState(missing, x.topicId, 0, 0, 0));
        }));
        s.add(Scenario.of("share.delete-state", ApiKeys.DELETE_SHARE_GROUP_STATE, 0, 0, c -> {
            Setup x = setup(c, 1);
            ShareFetchRequestData first = fetch((short) 1, x.group, x.member, 0, 5_000);
            fetchPartition(first, x.topicId, 0);
            c.call(Route.leader(x.topic, 0), ApiKeys.SHARE_FETCH, (short) 1, first);
            Route coordinator = shareCoordinator(shareKey(x.group, x.topicId, 0));
            c.observe("delete-live", coordinator, ApiKeys.DELETE_SHARE_GROUP_STATE, deleteState(x.group, x.topicId, 0));
            c.observe("read-after", coordinator, ApiKeys.READ_SHARE_GROUP_STATE, (short) 0, readState(x.group, x.topicId, 0));
            String missing = c.name("missing");
            c.observe("missing-group", shareCoordinator(shareKey(missing, x.topicId, 0)), ApiKeys.DELETE_SHARE_GROUP_STATE, deleteState(missing, x.topicId, 0));
        }));
        // Both exist in Kafka only (Samsa does not advertise them): they run when both serve.
        s.add(Scenario.of("share.initialize-state", ApiKeys.INITIALIZE_SHARE_GROUP_STATE, 0, 0, c -> {
            String t = c.topic();
            Uuid id = c.createTopic(t, 1);
            String g = c.name("group");
            Route coordinator = shareCoordinator(shareKey(g, id, 0));
            c.observe("initialize", coordinator, ApiKeys.INITIALIZE_SHARE_GROUP_STATE, initializeState(g, id, 0, 1, 0));
            c.observe("read-after", coordinator, ApiKeys.READ_SHARE_GROUP_STATE, (short) 0, readState(g, id, 0));
        }));
        s.add(Scenario.of("share.read-state-summary", ApiKeys.READ_SHARE_GROUP_STATE_SUMMARY, 0, 1, c -> {
            Setup x = setup(c, 2);
            ShareFetchRequestData first = fetch((short) 1, x.group, x.member, 0, 5_000);
            fetchPartition(first, x.topicId, 0);
            c.call(Route.leader(x.topic, 0), ApiKeys.SHARE_FETCH, (short) 1, first);
            c.observe("summary", shareCoordinator(shareKey(x.group, x.topicId, 0)), ApiKeys.READ_SHARE_GROUP_STATE_SUMMARY, readSummary(x.group, x.topicId, 0));
        }));
    }

    static void addFindCoordinator(List<Scenario> s) {
        // Key type 2 (share, v6): the key is "group:topicId:partition".
        s.add(Scenario.of("share.find-coordinator", ApiKeys.FIND_COORDINATOR, 6, 6, c -> {
            String t = c.topic();
            Uuid id = c.createTopic(t, 1);
            String key = shareKey(c.name("group"), id, 0);
            shareCoordinator(key).node(c);
            for (String[] k : new String[][] {{"valid", key}, {"no-colons", c.name("group")}, {"bad-topic-id", c.name("group") + ":nope:0"},
                {"bad-partition", c.name("group") + ":" + id + ":x"}, {"empty", ""}}) {
                FindCoordinatorRequestData req = new FindCoordinatorRequestData().setKeyType((byte) 2);
                req.coordinatorKeys().add(k[1]);
                Observation o = c.observe(k[0], Route.ANY, ApiKeys.FIND_COORDINATOR, req);
                // The key names the topic by the id this cluster drew for it: shown as the topic's
                // name, as Normalise shows topic ids.
                for (JsonNode co : o.json().path("coordinators")) {
                    if (co instanceof com.fasterxml.jackson.databind.node.ObjectNode obj && co.path("key").isTextual()) {
                        obj.put("key", co.path("key").asText().replace(id.toString(), "<id of " + t + ">"));
                    }
                }
            }
        }));
    }
}
