package differential;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.internals.ConsumerProtocol;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.AddOffsetsToTxnRequestData;
import org.apache.kafka.common.message.DeleteGroupsRequestData;
import org.apache.kafka.common.message.DescribeGroupsRequestData;
import org.apache.kafka.common.message.EndTxnRequestData;
import org.apache.kafka.common.message.FindCoordinatorRequestData;
import org.apache.kafka.common.message.HeartbeatRequestData;
import org.apache.kafka.common.message.InitProducerIdResponseData;
import org.apache.kafka.common.message.JoinGroupRequestData;
import org.apache.kafka.common.message.JoinGroupResponseData;
import org.apache.kafka.common.message.LeaveGroupRequestData;
import org.apache.kafka.common.message.ListGroupsRequestData;
import org.apache.kafka.common.message.OffsetCommitRequestData;
import org.apache.kafka.common.message.OffsetDeleteRequestData;
import org.apache.kafka.common.message.OffsetFetchRequestData;
import org.apache.kafka.common.message.SyncGroupRequestData;
import org.apache.kafka.common.message.TxnOffsetCommitRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;

/**
 * The classic group protocol and offsets: FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
 * LeaveGroup, OffsetCommit, OffsetFetch, DescribeGroups, ListGroups, DeleteGroups and
 * OffsetDelete, with good and bad input, and the empty group id "" wherever Kafka takes it.
 *
 * Members join with protocol type "consumer" and Kafka's own consumer subscription and
 * assignment blobs (ConsumerProtocol), so that the broker can read which topics a group is
 * subscribed to (OffsetDelete depends on it). Setting up a member (join, sync) uses fixed
 * versions; the API under test goes at the version under test.
 */
final class GroupScenarios {
    private GroupScenarios() {}

    static final String TYPE = "consumer";
    static final String PROTOCOL = "range";
    static final int SESSION_MS = 30_000;
    static final int REBALANCE_MS = 30_000;
    /** The group id "" is one group for the whole run: every scenario that uses it deletes it
     *  before and after, so that each starts from no group "". */
    static final String EMPTY = "";

    // Error codes used by the set-up steps.
    static final short MEMBER_ID_REQUIRED = 79;

    // ---- request builders ----------------------------------------------------------------

    static byte[] subscription(String... topics) {
        return bytes(ConsumerProtocol.serializeSubscription(new ConsumerPartitionAssignor.Subscription(List.of(topics))));
    }

    static byte[] assignment(String topic, int... partitions) {
        List<TopicPartition> tps = new ArrayList<>();
        for (int p : partitions) tps.add(new TopicPartition(topic, p));
        return bytes(ConsumerProtocol.serializeAssignment(new ConsumerPartitionAssignor.Assignment(tps)));
    }

    static byte[] bytes(ByteBuffer b) {
        byte[] out = new byte[b.remaining()];
        b.duplicate().get(out);
        return out;
    }

    static JoinGroupRequestData join(short v, String group, String memberId, String instanceId, byte[] metadata) {
        return join(v, group, memberId, instanceId, TYPE, PROTOCOL, metadata, SESSION_MS);
    }

    static JoinGroupRequestData join(short v, String group, String memberId, String instanceId, String type, String protocol,
                                     byte[] metadata, int sessionMs) {
        JoinGroupRequestData r = new JoinGroupRequestData().setGroupId(group).setSessionTimeoutMs(sessionMs)
            .setMemberId(memberId).setProtocolType(type);
        if (v >= 1) r.setRebalanceTimeoutMs(REBALANCE_MS);
        if (v >= 5) r.setGroupInstanceId(instanceId);
        if (protocol != null) r.protocols().add(new JoinGroupRequestData.JoinGroupRequestProtocol().setName(protocol).setMetadata(metadata));
        return r;
    }

    static SyncGroupRequestData sync(short v, String group, int generation, String memberId, String instanceId, Map<String, byte[]> assignments) {
        SyncGroupRequestData r = new SyncGroupRequestData().setGroupId(group).setGenerationId(generation).setMemberId(memberId);
        if (v >= 3) r.setGroupInstanceId(instanceId);
        if (v >= 5) r.setProtocolType(TYPE).setProtocolName(PROTOCOL);
        for (Map.Entry<String, byte[]> a : assignments.entrySet()) {
            r.assignments().add(new SyncGroupRequestData.SyncGroupRequestAssignment().setMemberId(a.getKey()).setAssignment(a.getValue()));
        }
        return r;
    }

    static SyncGroupRequestData sync(short v, Member m, Map<String, byte[]> assignments) {
        return sync(v, m.group, m.generation, m.id, m.instanceId, assignments);
    }

    static HeartbeatRequestData heartbeat(short v, String group, int generation, String memberId, String instanceId) {
        HeartbeatRequestData r = new HeartbeatRequestData().setGroupId(group).setGenerationId(generation).setMemberId(memberId);
        if (v >= 3) r.setGroupInstanceId(instanceId);
        return r;
    }

    /** LeaveGroup: v0-2 the first member id; v3+ each (member id, group instance id) pair,
     *  a missing last instance id being null. */
    static LeaveGroupRequestData leave(short v, String group, String... memberAndInstanceIds) {
        LeaveGroupRequestData r = new LeaveGroupRequestData().setGroupId(group);
        if (v <= 2) {
            r.setMemberId(memberAndInstanceIds[0]);
        } else {
            for (int i = 0; i < memberAndInstanceIds.length; i += 2) {
                LeaveGroupRequestData.MemberIdentity m = new LeaveGroupRequestData.MemberIdentity().setMemberId(memberAndInstanceIds[i]);
                if (i + 1 < memberAndInstanceIds.length) m.setGroupInstanceId(memberAndInstanceIds[i + 1]);
                r.members().add(m);
            }
        }
        return r;
    }

    /** The id this peer gave `topic` (zero for a topic it does not have): OffsetCommit and
     *  OffsetFetch v10 and TxnOffsetCommit v6 name topics by id. Each request sets both the name
     *  and the id; the version's encoding writes the one it has. */
    static Uuid topicId(Ctx c, String topic) {
        return c == null ? Uuid.ZERO_UUID : c.topicIds.getOrDefault(topic, Uuid.ZERO_UUID);
    }

    /** By topic name only (versions before 10); VersionScenarios uses these. */
    static OffsetCommitRequestData commit(short v, String group, int generation, String memberId, String topic, long offset,
                                          String metadata, int... partitions) {
        return commit(null, v, group, generation, memberId, topic, offset, metadata, partitions);
    }

    static OffsetFetchRequestData fetchOffsets(short v, String group, String topic, int... partitions) {
        return fetchOffsets(null, v, group, topic, partitions);
    }

    static OffsetCommitRequestData commit(Ctx c, short v, String group, int generation, String memberId, String topic, long offset,
                                          String metadata, int... partitions) {
        OffsetCommitRequestData r = new OffsetCommitRequestData().setGroupId(group).setGenerationIdOrMemberEpoch(generation).setMemberId(memberId);
        r.topics().add(commitTopic(c, topic, offset, metadata, partitions));
        return r;
    }

    static OffsetCommitRequestData.OffsetCommitRequestTopic commitTopic(Ctx c, String topic, long offset, String metadata, int... partitions) {
        OffsetCommitRequestData.OffsetCommitRequestTopic t = new OffsetCommitRequestData.OffsetCommitRequestTopic().setName(topic)
            .setTopicId(topicId(c, topic));
        for (int p : partitions) {
            t.partitions().add(new OffsetCommitRequestData.OffsetCommitRequestPartition().setPartitionIndex(p)
                .setCommittedOffset(offset + p).setCommittedMetadata(metadata));
        }
        return t;
    }

    /** OffsetFetch of one group; `topic` null asks for every topic (v2+). */
    static OffsetFetchRequestData fetchOffsets(Ctx c, short v, String group, String topic, int... partitions) {
        OffsetFetchRequestData r = new OffsetFetchRequestData();
        if (v >= 8) {
            r.groups().add(fetchGroup(c, group, topic, partitions));
        } else {
            r.setGroupId(group);
            if (topic == null) {
                r.setTopics(null);
            } else {
                OffsetFetchRequestData.OffsetFetchRequestTopic t = new OffsetFetchRequestData.OffsetFetchRequestTopic().setName(topic);
                for (int p : partitions) t.partitionIndexes().add(p);
                r.topics().add(t);
            }
        }
        return r;
    }

    static OffsetFetchRequestData.OffsetFetchRequestGroup fetchGroup(Ctx c, String group, String topic, int... partitions) {
        OffsetFetchRequestData.OffsetFetchRequestGroup g = new OffsetFetchRequestData.OffsetFetchRequestGroup().setGroupId(group);
        if (topic == null) {
            g.setTopics(null);
        } else {
            OffsetFetchRequestData.OffsetFetchRequestTopics t = new OffsetFetchRequestData.OffsetFetchRequestTopics().setName(topic)
                .setTopicId(topicId(c, topic));
            for (int p : partitions) t.partitionIndexes().add(p);
            g.topics().add(t);
        }
        return g;
    }

    static DescribeGroupsRequestData describe(String... groups) {
        return new DescribeGroupsRequestData().setGroups(new ArrayList<>(List.of(groups)));
    }

    static DeleteGroupsRequestData deleteGroups(String... groups) {
        return new DeleteGroupsRequestData().setGroupsNames(new ArrayList<>(List.of(groups)));
    }

    static OffsetDeleteRequestData offsetDelete(String group, String topic, int... partitions) {
        OffsetDeleteRequestData r = new OffsetDeleteRequestData().setGroupId(group);
        OffsetDeleteRequestData.OffsetDeleteRequestTopic t = new OffsetDeleteRequestData.OffsetDeleteRequestTopic().setName(topic);
        for (int p : partitions) t.partitions().add(new OffsetDeleteRequestData.OffsetDeleteRequestPartition().setPartitionIndex(p));
        r.topics().add(t);
        return r;
    }

    // ---- set-up steps --------------------------------------------------------------------

    /** A member as the set-up steps know it. */
    record Member(String group, String id, String instanceId, int generation, String leader) {
        Member withGeneration(int g) {
            return new Member(group, id, instanceId, g, leader);
        }
    }

    static boolean coordinatorBusy(short error) {
        // COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
        return error == 14 || error == 15 || error == 16;
    }

    /** Joins `group` alone (JoinGroup v9, the member id round included); not compared. */
    /** Why a group described right after a join is masked in a cluster. */
    static final String COMMITTED_READ = "Kafka's group coordinator reads a group as of the last offset its __consumer_offsets "
        + "partition has replicated: in a cluster, a group that members have joined but not yet synced may read as Dead "
        + "for a moment; Samsa answers from the group as it is";

    static Member joinOnly(Ctx c, String group, String instanceId, byte[] metadata) throws IOException {
        String memberId = "";
        long deadline = System.currentTimeMillis() + Ctx.AWAIT_MS;
        while (true) {
            JoinGroupResponseData r = (JoinGroupResponseData) c.call(Route.group(group), ApiKeys.JOIN_GROUP, (short) 9,
                join((short) 9, group, memberId, instanceId, metadata)).message();
            if (r.errorCode() == 0) return new Member(group, r.memberId(), instanceId, r.generationId(), r.leader());
            if (r.errorCode() == MEMBER_ID_REQUIRED) {
                memberId = r.memberId();
            } else if (!coordinatorBusy(r.errorCode()) || System.currentTimeMillis() > deadline) {
                throw new Ctx.ScenarioFailure("JoinGroup " + group + ": error " + r.errorCode());
            } else {
                Ctx.sleep(50);
            }
        }
    }

    /** Joins `group` alone and syncs as its leader, assigning itself `assignment`: a stable
     *  group of one member. Not compared. */
    static Member joinAndSync(Ctx c, String group, String instanceId, byte[] metadata, byte[] assignment) throws IOException {
        Member m = joinOnly(c, group, instanceId, metadata);
        Peer.Answer a = c.call(Route.group(group), ApiKeys.SYNC_GROUP, (short) 5, sync((short) 5, m, Map.of(m.id, assignment)));
        if (a.errorCode() != 0) throw new Ctx.ScenarioFailure("SyncGroup " + group + ": error " + a.errorCode());
        return m;
    }

    /** Commits offsets admin style (generation -1, no member): an Empty group with offsets. */
    static void commitAdmin(Ctx c, String group, String topic, long offset, int... partitions) throws IOException {
        long deadline = System.currentTimeMillis() + Ctx.AWAIT_MS;
        while (true) {
            Peer.Answer a = c.call(Route.group(group), ApiKeys.OFFSET_COMMIT, (short) 9, commit(c, (short) 9, group, -1, "", topic, offset, "m", partitions));
            JsonNode p = a.json().path("topics").path(0).path("partitions").path(0);
            short error = (short) p.path("errorCode").asInt();
            if (error == 0) return;
            if (!coordinatorBusy(error) || System.currentTimeMillis() > deadline) {
                throw new Ctx.ScenarioFailure("OffsetCommit " + group + ": error " + error);
            }
            Ctx.sleep(50);
        }
    }

    /** Waits until the coordinator of `group` serves it: Kafka answers FindCoordinator as soon
     *  as it knows the leader of the group's __consumer_offsets partition, and NOT_COORDINATOR or
     *  COORDINATOR_LOAD_IN_PROGRESS to group requests until it has loaded that partition. */
    static void awaitGroupCoordinator(Ctx c, String group) throws IOException {
        long deadline = System.currentTimeMillis() + Ctx.AWAIT_MS;
        while (true) {
            Peer.Answer a = c.call(Route.group(group), ApiKeys.OFFSET_FETCH, (short) 7, fetchOffsets(c, (short) 7, group, null));
            if (!coordinatorBusy(a.errorCode())) return;
            if (System.currentTimeMillis() > deadline) throw new Ctx.ScenarioFailure("group coordinator of " + group + ": error " + a.errorCode());
            Ctx.sleep(50);
        }
    }

    /** The coordinator of group "", looked up once per scenario run (Samsa takes 5 s to answer
     *  FindCoordinator for the empty key; Kafka answers at once). */
    static Route emptyGroupRoute(Ctx c) throws IOException {
        return Route.node(c.coordinator((byte) 0, EMPTY));
    }

    /** Deletes group "" if it exists (the empty group id is shared by every scenario). */
    static void resetEmptyGroup(Ctx c, Route e) throws IOException {
        c.call(e, ApiKeys.DELETE_GROUPS, (short) 2, deleteGroups(EMPTY));
    }

    /** Keeps only the entries of `array` whose `field` is one of this scenario's names (or in
     *  `also`): ListGroups answers list every group of the broker, which other scenarios made
     *  (and whose states would tie this comparison to every other scenario's outcome). */
    static void keepOwn(Ctx c, Observation o, String array, String field, String... also) {
        JsonNode json = o.json();
        if (!(json instanceof ObjectNode obj) || !(json.get(array) instanceof ArrayNode items)) return;
        List<JsonNode> kept = new ArrayList<>();
        String prefix = c.name("") + "-";
        for (JsonNode item : items) {
            String id = item.path(field).asText();
            boolean own = id.startsWith(prefix);
            for (String a : also) own |= id.equals(a);
            if (own) kept.add(item);
        }
        // In the order of their ids (the broker lists them in its own hash order), so that the
        // ids the entries carry (producer ids, member ids) are numbered alike on both peers.
        kept.sort(java.util.Comparator.comparing(item -> item.path(field).asText()));
        ArrayNode out = Json.F.arrayNode();
        kept.forEach(out::add);
        obj.set(array, out);
    }

    /** A request on a connection of its own, from another thread: a second client. */
    static CompletableFuture<Peer.Answer> callAsync(Ctx c, int node, ApiKeys key, short version, ApiMessage body) {
        return CompletableFuture.supplyAsync(() -> {
            try (Peer.Conn conn = new Peer.Conn(c.peer.nodes.get(node))) {
                return conn.call(key, version, body);
            } catch (IOException e) {
                return Peer.Answer.failed(e.getMessage());
            }
        });
    }

    /** Records an answer obtained outside `c.observe` (another connection) as an observation. */
    static Observation record(Ctx c, String label, ApiKeys key, short version, ApiMessage body, Peer.Answer a) {
        Observation o = new Observation(label, key, version, Json.toJson(body, version), a);
        c.observed.add(o);
        return o;
    }

    static Peer.Answer await(CompletableFuture<Peer.Answer> f) {
        try {
            return f.get(Peer.READ_TIMEOUT_MS + 5_000, TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            return Peer.Answer.failed(e.getClass().getSimpleName() + ": " + e.getMessage());
        }
    }

    /** The answer if it comes within `ms`, else null. */
    static Peer.Answer awaitBriefly(CompletableFuture<Peer.Answer> f, long ms) {
        try {
            return f.get(ms, TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            return null;
        } catch (Exception e) {
            return Peer.Answer.failed(e.getClass().getSimpleName() + ": " + e.getMessage());
        }
    }

    /** JoinGroup at the version under test, as a client joins: from v4 on a member without a
     *  member id is first told MEMBER_ID_REQUIRED (observed as `label`-member-id-required) and
     *  joins again with the id it got. */
    static Member observeJoin(Ctx c, String label, String group, String instanceId, byte[] metadata) throws IOException {
        String memberId = "";
        if (c.version >= 4 && instanceId == null) {
            Observation first = c.observe(label + "-member-id-required", Route.group(group), ApiKeys.JOIN_GROUP,
                join(c.version, group, "", null, metadata));
            memberId = first.json().path("memberId").asText("");
        }
        Observation o = c.observe(label, Route.group(group), ApiKeys.JOIN_GROUP, join(c.version, group, memberId, instanceId, metadata));
        JsonNode j = o.json();
        return new Member(group, j.path("memberId").asText(memberId), instanceId, j.path("generationId").asInt(-1), j.path("leader").asText(""));
    }

    // ---- scenarios -----------------------------------------------------------------------

    static void add(List<Scenario> s) {
        addFindCoordinator(s);
        addJoinGroup(s);
        addSyncGroup(s);
        addHeartbeat(s);
        addLeaveGroup(s);
        addOffsetCommit(s);
        addOffsetFetch(s);
        addDescribeGroups(s);
        addListGroups(s);
        addDeleteGroups(s);
        addOffsetDelete(s);
    }

    static FindCoordinatorRequestData findCoordinator(short v, byte type, String... keys) {
        FindCoordinatorRequestData r = new FindCoordinatorRequestData();
        if (v >= 1) r.setKeyType(type);
        if (v >= 4) r.setCoordinatorKeys(new ArrayList<>(List.of(keys)));
        else r.setKey(keys[0]);
        return r;
    }

    static void addFindCoordinator(List<Scenario> s) {
        s.add(Scenario.of("groups.find-coordinator.group", ApiKeys.FIND_COORDINATOR, 0, 6, c -> {
            String a = c.name("a"), b = c.name("b");
            // Wait until both keys' coordinators have loaded (Kafka loads a partition of
            // __consumer_offsets on first use and answers COORDINATOR_NOT_AVAILABLE meanwhile).
            awaitGroupCoordinator(c, a);
            awaitGroupCoordinator(c, b);
            c.observe("one-key", Route.ANY, ApiKeys.FIND_COORDINATOR, findCoordinator(c.version, (byte) 0, a));
            if (c.version >= 4) c.observe("two-keys", Route.ANY, ApiKeys.FIND_COORDINATOR, findCoordinator(c.version, (byte) 0, a, b));
            if (c.version >= 4) c.observe("no-keys", Route.ANY, ApiKeys.FIND_COORDINATOR, findCoordinator(c.version, (byte) 0));
        }));
        s.add(Scenario.of("groups.find-coordinator.transaction", ApiKeys.FIND_COORDINATOR, 1, 6, c -> {
            String a = c.name("a"), b = c.name("b");
            c.coordinator((byte) 1, a);
            c.coordinator((byte) 1, b);
            c.observe("one-key", Route.ANY, ApiKeys.FIND_COORDINATOR, findCoordinator(c.version, (byte) 1, a));
            if (c.version >= 4) c.observe("two-keys", Route.ANY, ApiKeys.FIND_COORDINATOR, findCoordinator(c.version, (byte) 1, a, b));
        }));
        s.add(Scenario.of("groups.find-coordinator.invalid-key-type", ApiKeys.FIND_COORDINATOR, 1, 6, c -> {
            c.observe("key-type-5", Route.ANY, ApiKeys.FIND_COORDINATOR, findCoordinator(c.version, (byte) 5, c.name("a")));
            c.observe("key-type-negative", Route.ANY, ApiKeys.FIND_COORDINATOR, findCoordinator(c.version, (byte) -1, c.name("a")));
        }));
        s.add(Scenario.of("groups.find-coordinator.empty-key", ApiKeys.FIND_COORDINATOR, 0, 6, c -> {
            c.observe("group-empty-key", Route.ANY, ApiKeys.FIND_COORDINATOR, findCoordinator(c.version, (byte) 0, EMPTY));
            if (c.version >= 1) c.observe("transaction-empty-key", Route.ANY, ApiKeys.FIND_COORDINATOR, findCoordinator(c.version, (byte) 1, EMPTY));
        }));
    }

    static void addJoinGroup(List<Scenario> s) {
        // A full round of one member: join (with the member id round from v4), sync as leader,
        // heartbeat, describe, and a rejoin of the leader, which starts a new generation.
        s.add(Scenario.of("groups.join.single-member", ApiKeys.JOIN_GROUP, 0, 9, c -> {
            String t = c.topic();
            c.createTopic(t, 2);
            String g = c.name("group");
            byte[] meta = subscription(t);
            Member m = observeJoin(c, "join", g, null, meta);
            c.observe("sync", Route.group(g), ApiKeys.SYNC_GROUP, (short) 5, sync((short) 5, m, Map.of(m.id, assignment(t, 0, 1))));
            c.observe("heartbeat", Route.group(g), ApiKeys.HEARTBEAT, (short) 4, heartbeat((short) 4, g, m.generation, m.id, null));
            c.observe("describe", Route.group(g), ApiKeys.DESCRIBE_GROUPS, (short) 5, describe(g));
            Observation again = c.observe("rejoin", Route.group(g), ApiKeys.JOIN_GROUP, join(c.version, g, m.id, null, meta));
            Member m2 = m.withGeneration(again.json().path("generationId").asInt(-1));
            c.observe("sync-again", Route.group(g), ApiKeys.SYNC_GROUP, (short) 5, sync((short) 5, m2, Map.of(m.id, assignment(t, 0, 1))));
            c.observe("old-generation-heartbeat", Route.group(g), ApiKeys.HEARTBEAT, (short) 4, heartbeat((short) 4, g, m.generation, m.id, null));
        }));
        // Static membership (KIP-345): a member with group.instance.id gets its member id at once;
        // a restart (same instance id, no member id) takes the place of the old member; the old
        // member id is then fenced.
        s.add(Scenario.of("groups.join.static-member", ApiKeys.JOIN_GROUP, 5, 9, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            String g = c.name("group");
            String instance = c.name("instance");
            byte[] meta = subscription(t);
            Observation first = c.observe("join", Route.group(g), ApiKeys.JOIN_GROUP, join(c.version, g, "", instance, meta));
            Member m = new Member(g, first.json().path("memberId").asText(""), instance, first.json().path("generationId").asInt(-1), "");
            c.observe("sync", Route.group(g), ApiKeys.SYNC_GROUP, (short) 5, sync((short) 5, m, Map.of(m.id, assignment(t, 0))));
            Observation restart = c.observe("rejoin-after-restart", Route.group(g), ApiKeys.JOIN_GROUP, join(c.version, g, "", instance, meta));
            String newId = restart.json().path("memberId").asText("");
            c.observe("old-member-id-fenced-join", Route.group(g), ApiKeys.JOIN_GROUP, join(c.version, g, m.id, instance, meta));
            c.observe("old-member-id-fenced-heartbeat", Route.group(g), ApiKeys.HEARTBEAT, (short) 4, heartbeat((short) 4, g, m.generation, m.id, instance));
            c.observe("new-member-id-heartbeat", Route.group(g), ApiKeys.HEARTBEAT, (short) 4, heartbeat((short) 4, g, m.generation, newId, instance));
            c.observe("describe", Route.group(g), ApiKeys.DESCRIBE_GROUPS, (short) 5, describe(g));
        }));
        s.add(Scenario.of("groups.join.invalid-session-timeout", ApiKeys.JOIN_GROUP, 0, 9, c -> {
            String g = c.name("group");
            byte[] meta = subscription(c.topic());
            c.observe("too-small", Route.group(g), ApiKeys.JOIN_GROUP, join(c.version, g, "", null, TYPE, PROTOCOL, meta, 1_000));
            c.observe("too-large", Route.group(g), ApiKeys.JOIN_GROUP, join(c.version, g, "", null, TYPE, PROTOCOL, meta, 1_800_001));
            c.observe("describe", Route.group(g), ApiKeys.DESCRIBE_GROUPS, (short) 5, describe(g));
        }));
        s.add(Scenario.of("groups.join.unknown-member-id", ApiKeys.JOIN_GROUP, 0, 9, c -> {
            String g = c.name("group");
            byte[] meta = subscription(c.topic());
            c.observe("new-group", Route.group(g), ApiKeys.JOIN_GROUP, join(c.version, g, "no-such-member", null, meta));
            Member m = joinAndSync(c, g, null, meta, assignment(c.topic(), 0));
            c.observe("live-group", Route.group(g), ApiKeys.JOIN_GROUP, join(c.version, g, m.id + "-other", null, meta));
        }));
        s.add(Scenario.of("groups.join.inconsistent-protocol", ApiKeys.JOIN_GROUP, 0, 9, c -> {
            String g = c.name("group");
            byte[] meta = subscription(c.topic());
            joinAndSync(c, g, null, meta, assignment(c.topic(), 0));
            c.observe("other-protocol-type", Route.group(g), ApiKeys.JOIN_GROUP, join(c.version, g, "", null, "connect", PROTOCOL, meta, SESSION_MS));
            c.observe("no-common-protocol", Route.group(g), ApiKeys.JOIN_GROUP, join(c.version, g, "", null, TYPE, "roundrobin", meta, SESSION_MS));
            String g2 = c.name("group2");
            c.observe("no-protocols", Route.group(g2), ApiKeys.JOIN_GROUP, join(c.version, g2, "", null, TYPE, null, meta, SESSION_MS));
            c.observe("empty-protocol-type", Route.group(g2), ApiKeys.JOIN_GROUP, join(c.version, g2, "", null, "", PROTOCOL, meta, SESSION_MS));
        }));
        s.add(Scenario.of("groups.join.empty-group-id", ApiKeys.JOIN_GROUP, 0, 9, c -> {
            byte[] meta = subscription(c.topic());
            c.observe("join", Route.ANY, ApiKeys.JOIN_GROUP, join(c.version, EMPTY, "", null, meta));
        }));
        // Two members: the first forms generation 1 alone; the second's join starts a rebalance
        // that waits for the first to join again (it learns so from its heartbeat); both land in
        // generation 2 with the first as leader, and each gets its own assignment.
        s.add(Scenario.of("groups.join.two-members", ApiKeys.JOIN_GROUP, 0, 9, c -> {
            String t = c.topic();
            c.createTopic(t, 2);
            String g = c.name("group");
            byte[] meta = subscription(t);
            Member a = observeJoin(c, "a-join", g, null, meta);
            c.observe("a-sync", Route.group(g), ApiKeys.SYNC_GROUP, (short) 5, sync((short) 5, a, Map.of(a.id, assignment(t, 0, 1))));
            awaitGroupCoordinator(c, g);
            int node = c.coordinator((byte) 0, g);
            String bId = "";
            if (c.version >= 4) {
                Observation required = c.observe("b-join-member-id-required", Route.group(g), ApiKeys.JOIN_GROUP, join(c.version, g, "", null, meta));
                bId = required.json().path("memberId").asText("");
            }
            JoinGroupRequestData bJoin = join(c.version, g, bId, null, meta);
            CompletableFuture<Peer.Answer> bPending = callAsync(c, node, ApiKeys.JOIN_GROUP, c.version, bJoin);
            // The rebalance has begun once a's heartbeat says so.
            long deadline = System.currentTimeMillis() + Ctx.AWAIT_MS;
            while (System.currentTimeMillis() < deadline) {
                Peer.Answer probe = c.call(Route.node(node), ApiKeys.HEARTBEAT, (short) 4, heartbeat((short) 4, g, a.generation, a.id, null));
                if (probe.errorCode() != 0) break;
                Ctx.sleep(20);
            }
            c.observe("a-heartbeat-during-rebalance", Route.node(node), ApiKeys.HEARTBEAT, (short) 4, heartbeat((short) 4, g, a.generation, a.id, null));
            Observation aRejoin = c.observe("a-rejoin", Route.node(node), ApiKeys.JOIN_GROUP, join(c.version, g, a.id, null, meta));
            Peer.Answer bAnswer = await(bPending);
            Observation bObs = record(c, "b-join", ApiKeys.JOIN_GROUP, c.version, bJoin, bAnswer);
            int generation = aRejoin.json().path("generationId").asInt(-1);
            String b = bObs.json().path("memberId").asText(bId);
            Map<String, byte[]> plan = new LinkedHashMap<>();
            plan.put(a.id, assignment(t, 0));
            plan.put(b, assignment(t, 1));
            c.observe("a-sync-as-leader", Route.node(node), ApiKeys.SYNC_GROUP, (short) 5, sync((short) 5, g, generation, a.id, null, plan));
            c.observe("b-sync", Route.node(node), ApiKeys.SYNC_GROUP, (short) 5, sync((short) 5, g, generation, b, null, Map.of()));
            c.observe("describe", Route.node(node), ApiKeys.DESCRIBE_GROUPS, (short) 5, describe(g));
        }));
        // Both members send their joins to a new group at the same time (each on a connection of
        // its own). With group.initial.rebalance.delay.ms=0 the first join may complete the
        // first generation before the second arrives, so only what does not depend on that
        // race is compared: both succeed, and end up in one generation after at most one more.
        s.add(Scenario.of("groups.join.two-members-together", ApiKeys.JOIN_GROUP, 4, 9, c -> {
            String t = c.topic();
            c.createTopic(t, 2);
            String g = c.name("group");
            byte[] meta = subscription(t);
            awaitGroupCoordinator(c, g);
            int node = c.coordinator((byte) 0, g);
            Observation ra = c.observe("a-member-id-required", Route.node(node), ApiKeys.JOIN_GROUP, join(c.version, g, "", null, meta));
            Observation rb = c.observe("b-member-id-required", Route.node(node), ApiKeys.JOIN_GROUP, join(c.version, g, "", null, meta));
            JoinGroupRequestData aJoin = join(c.version, g, ra.json().path("memberId").asText(""), null, meta);
            JoinGroupRequestData bJoin = join(c.version, g, rb.json().path("memberId").asText(""), null, meta);
            CompletableFuture<Peer.Answer> fa = callAsync(c, node, ApiKeys.JOIN_GROUP, c.version, aJoin);
            CompletableFuture<Peer.Answer> fb = callAsync(c, node, ApiKeys.JOIN_GROUP, c.version, bJoin);
            Peer.Answer aa = awaitBriefly(fa, 3_000);
            Peer.Answer ab = awaitBriefly(fb, 3_000);
            // If one join completed a generation alone, the other's join started a rebalance
            // that waits for the first to join again: it does so, as its client would.
            String how = "together";
            if (aa != null && ab == null && aa.ok()) {
                c.call(Route.node(node), ApiKeys.JOIN_GROUP, c.version, join(c.version, g, aa.json().path("memberId").asText(""), null, meta));
                how = "a first, alone; a joined again";
            } else if (ab != null && aa == null && ab.ok()) {
                c.call(Route.node(node), ApiKeys.JOIN_GROUP, c.version, join(c.version, g, ab.json().path("memberId").asText(""), null, meta));
                how = "b first, alone; b joined again";
            }
            if (aa == null) aa = await(fa);
            if (ab == null) ab = await(fb);
            System.err.println("note: " + c.peer.name + " " + c.id + ": concurrent joins " + how + ", generations "
                + aa.json().path("generationId") + " and " + ab.json().path("generationId"));
            // Which one is leader, and whether the leader sees both members, depends on which
            // join the coordinator read first.
            String race = "which join the coordinator reads first decides the leader and, with no initial rebalance delay, "
                + "whether the first completes generation 1 alone";
            record(c, "a-join", ApiKeys.JOIN_GROUP, c.version, aJoin, aa).mask(race, "/leader", "/members", "/generationId");
            record(c, "b-join", ApiKeys.JOIN_GROUP, c.version, bJoin, ab).mask(race, "/leader", "/members", "/generationId");
            c.observe("describe", Route.node(node), ApiKeys.DESCRIBE_GROUPS, (short) 5, describe(g))
                .mask(race + " (the members' order and whether the group waits for a sync or a rejoin)", "/groups/*/groupState", "/groups/*/members")
                .inCluster(c, COMMITTED_READ, "/groups/*/protocolType", "/groups/*/protocol");
        }));
    }

    static void addSyncGroup(List<Scenario> s) {
        s.add(Scenario.of("groups.sync.leader", ApiKeys.SYNC_GROUP, 0, 5, c -> {
            String t = c.topic();
            c.createTopic(t, 2);
            String g = c.name("group");
            Member m = joinOnly(c, g, null, subscription(t));
            c.observe("describe-before-sync", Route.group(g), ApiKeys.DESCRIBE_GROUPS, (short) 5, describe(g))
                .inCluster(c, COMMITTED_READ, "/groups/*/groupState", "/groups/*/protocolType", "/groups/*/protocol", "/groups/*/members");
            c.observe("heartbeat-before-sync", Route.group(g), ApiKeys.HEARTBEAT, (short) 4, heartbeat((short) 4, g, m.generation, m.id, null));
            c.observe("leader-sync", Route.group(g), ApiKeys.SYNC_GROUP, sync(c.version, m, Map.of(m.id, assignment(t, 0, 1))));
            c.observe("sync-again-without-assignments", Route.group(g), ApiKeys.SYNC_GROUP, sync(c.version, m, Map.of()));
            c.observe("describe", Route.group(g), ApiKeys.DESCRIBE_GROUPS, (short) 5, describe(g));
        }));
        s.add(Scenario.of("groups.sync.errors", ApiKeys.SYNC_GROUP, 0, 5, c -> {
            String t = c.topic();
            String g = c.name("group");
            Member m = joinOnly(c, g, null, subscription(t));
            c.observe("wrong-generation", Route.group(g), ApiKeys.SYNC_GROUP, sync(c.version, g, m.generation + 1, m.id, null, Map.of(m.id, assignment(t, 0))));
            c.observe("unknown-member", Route.group(g), ApiKeys.SYNC_GROUP, sync(c.version, g, m.generation, m.id + "-other", null, Map.of()));
            if (c.version >= 5) {
                SyncGroupRequestData wrongType = sync(c.version, m, Map.of(m.id, assignment(t, 0))).setProtocolType("connect");
                c.observe("inconsistent-protocol-type", Route.group(g), ApiKeys.SYNC_GROUP, wrongType);
                SyncGroupRequestData wrongName = sync(c.version, m, Map.of(m.id, assignment(t, 0))).setProtocolName("roundrobin");
                c.observe("inconsistent-protocol-name", Route.group(g), ApiKeys.SYNC_GROUP, wrongName);
            }
            String missing = c.name("missing");
            c.observe("unknown-group", Route.group(missing), ApiKeys.SYNC_GROUP, sync(c.version, missing, 1, "someone", null, Map.of()));
            c.observe("empty-group-id", Route.ANY, ApiKeys.SYNC_GROUP, sync(c.version, EMPTY, 1, "someone", null, Map.of()));
        }));
    }

    static void addHeartbeat(List<Scenario> s) {
        s.add(Scenario.of("groups.heartbeat", ApiKeys.HEARTBEAT, 0, 4, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            String g = c.name("group");
            Member m = joinAndSync(c, g, null, subscription(t), assignment(t, 0));
            c.observe("good", Route.group(g), ApiKeys.HEARTBEAT, heartbeat(c.version, g, m.generation, m.id, null));
            c.observe("wrong-generation", Route.group(g), ApiKeys.HEARTBEAT, heartbeat(c.version, g, m.generation + 1, m.id, null));
            c.observe("older-generation", Route.group(g), ApiKeys.HEARTBEAT, heartbeat(c.version, g, m.generation - 1, m.id, null));
            c.observe("unknown-member", Route.group(g), ApiKeys.HEARTBEAT, heartbeat(c.version, g, m.generation, m.id + "-other", null));
            String missing = c.name("missing");
            c.observe("unknown-group", Route.group(missing), ApiKeys.HEARTBEAT, heartbeat(c.version, missing, 1, "someone", null));
            c.observe("empty-group-id", Route.ANY, ApiKeys.HEARTBEAT, heartbeat(c.version, EMPTY, 1, "someone", null));
            // A group that has offsets but no members (an Empty group).
            String empty = c.name("empty");
            commitAdmin(c, empty, t, 5, 0);
            c.observe("empty-group", Route.group(empty), ApiKeys.HEARTBEAT, heartbeat(c.version, empty, 1, "someone", null));
        }));
        s.add(Scenario.of("groups.heartbeat.static-member", ApiKeys.HEARTBEAT, 3, 4, c -> {
            String t = c.topic();
            String g = c.name("group");
            String instance = c.name("instance");
            Member m = joinAndSync(c, g, instance, subscription(t), assignment(t, 0));
            c.observe("good", Route.group(g), ApiKeys.HEARTBEAT, heartbeat(c.version, g, m.generation, m.id, instance));
            c.observe("wrong-instance-id", Route.group(g), ApiKeys.HEARTBEAT, heartbeat(c.version, g, m.generation, m.id, instance + "-other"));
            c.observe("no-instance-id", Route.group(g), ApiKeys.HEARTBEAT, heartbeat(c.version, g, m.generation, m.id, null));
        }));
    }

    static void addLeaveGroup(List<Scenario> s) {
        s.add(Scenario.of("groups.leave.member", ApiKeys.LEAVE_GROUP, 0, 5, c -> {
            String t = c.topic();
            String g = c.name("group");
            Member m = joinAndSync(c, g, null, subscription(t), assignment(t, 0));
            c.observe("leave", Route.group(g), ApiKeys.LEAVE_GROUP, leave(c.version, g, m.id));
            c.observe("describe-after", Route.group(g), ApiKeys.DESCRIBE_GROUPS, (short) 5, describe(g));
            c.observe("leave-again", Route.group(g), ApiKeys.LEAVE_GROUP, leave(c.version, g, m.id));
            c.observe("heartbeat-after", Route.group(g), ApiKeys.HEARTBEAT, (short) 4, heartbeat((short) 4, g, m.generation, m.id, null));
        }));
        s.add(Scenario.of("groups.leave.unknown", ApiKeys.LEAVE_GROUP, 0, 5, c -> {
            String t = c.topic();
            String g = c.name("group");
            Member m = joinAndSync(c, g, null, subscription(t), assignment(t, 0));
            c.observe("unknown-member", Route.group(g), ApiKeys.LEAVE_GROUP, leave(c.version, g, m.id + "-other"));
            String missing = c.name("missing");
            c.observe("unknown-group", Route.group(missing), ApiKeys.LEAVE_GROUP, leave(c.version, missing, "someone"));
            c.observe("empty-group-id", Route.ANY, ApiKeys.LEAVE_GROUP, leave(c.version, EMPTY, "someone"));
            c.observe("describe", Route.group(g), ApiKeys.DESCRIBE_GROUPS, (short) 5, describe(g));
        }));
        // Batched leave (v3+): a static member by instance id (no member id), a dynamic one by
        // member id, and an unknown one, in one request.
        s.add(Scenario.of("groups.leave.batch", ApiKeys.LEAVE_GROUP, 3, 5, c -> {
            String t = c.topic();
            String g = c.name("group");
            String instance = c.name("instance");
            Member m = joinAndSync(c, g, instance, subscription(t), assignment(t, 0));
            c.observe("wrong-instance-member", Route.group(g), ApiKeys.LEAVE_GROUP, leave(c.version, g, m.id + "-other", instance));
            LeaveGroupRequestData batch = leave(c.version, g, "", instance, "no-such-member", null);
            if (c.version >= 5) batch.members().forEach(x -> x.setReason("differential"));
            c.observe("static-by-instance-and-unknown", Route.group(g), ApiKeys.LEAVE_GROUP, batch);
            c.observe("describe", Route.group(g), ApiKeys.DESCRIBE_GROUPS, (short) 5, describe(g));
            c.observe("no-members", Route.group(g), ApiKeys.LEAVE_GROUP, new LeaveGroupRequestData().setGroupId(g));
        }));
    }

    static void addOffsetCommit(List<Scenario> s) {
        s.add(Scenario.of("groups.offset-commit.admin", ApiKeys.OFFSET_COMMIT, 2, 10, c -> {
            String t = c.topic();
            c.createTopic(t, 2);
            String g = c.name("group");
            awaitGroupCoordinator(c, g);
            c.observe("with-metadata", Route.group(g), ApiKeys.OFFSET_COMMIT, commit(c, c.version, g, -1, "", t, 10, "meta", 0, 1));
            c.observe("null-metadata", Route.group(g), ApiKeys.OFFSET_COMMIT, commit(c, c.version, g, -1, "", t, 20, null, 1));
            c.observe("empty-metadata", Route.group(g), ApiKeys.OFFSET_COMMIT, commit(c, c.version, g, -1, "", t, 30, "", 0));
            c.observe("fetch", Route.group(g), ApiKeys.OFFSET_FETCH, (short) 7, fetchOffsets(c, (short) 7, g, t, 0, 1));
            c.observe("describe", Route.group(g), ApiKeys.DESCRIBE_GROUPS, (short) 5, describe(g));
            if (c.version >= 6) {
                OffsetCommitRequestData epoch = commit(c, c.version, g, -1, "", t, 40, "e", 0);
                epoch.topics().get(0).partitions().get(0).setCommittedLeaderEpoch(0);
                c.observe("leader-epoch", Route.group(g), ApiKeys.OFFSET_COMMIT, epoch);
            }
            c.observe("negative-offset", Route.group(g), ApiKeys.OFFSET_COMMIT, commit(c, c.version, g, -1, "", t, -5, null, 0));
            c.observe("fetch-after", Route.group(g), ApiKeys.OFFSET_FETCH, (short) 7, fetchOffsets(c, (short) 7, g, t, 0, 1));
        }));
        s.add(Scenario.of("groups.offset-commit.unknown-topic", ApiKeys.OFFSET_COMMIT, 2, 10, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            String g = c.name("group");
            awaitGroupCoordinator(c, g);
            c.observe("unknown-topic", Route.group(g), ApiKeys.OFFSET_COMMIT, commit(c, c.version, g, -1, "", c.name("missing"), 1, null, 0));
            c.observe("unknown-partition", Route.group(g), ApiKeys.OFFSET_COMMIT, commit(c, c.version, g, -1, "", t, 1, null, 7));
            OffsetCommitRequestData mixed = commit(c, c.version, g, -1, "", t, 1, null, 0);
            mixed.topics().add(commitTopic(c, c.name("missing"), 1, null, 0));
            c.observe("mixed", Route.group(g), ApiKeys.OFFSET_COMMIT, mixed);
            c.observe("fetch", Route.group(g), ApiKeys.OFFSET_FETCH, (short) 7, fetchOffsets(c, (short) 7, g, null));
        }));
        s.add(Scenario.of("groups.offset-commit.metadata-too-large", ApiKeys.OFFSET_COMMIT, 2, 10, c -> {
            String t = c.topic();
            c.createTopic(t, 2);
            String g = c.name("group");
            awaitGroupCoordinator(c, g);
            OffsetCommitRequestData r = commit(c, c.version, g, -1, "", t, 1, "x".repeat(4096), 0);
            r.topics().get(0).partitions().add(new OffsetCommitRequestData.OffsetCommitRequestPartition().setPartitionIndex(1)
                .setCommittedOffset(2).setCommittedMetadata("y".repeat(4097)));
            c.observe("4096-and-4097", Route.group(g), ApiKeys.OFFSET_COMMIT, r);
            c.observe("fetch", Route.group(g), ApiKeys.OFFSET_FETCH, (short) 7, fetchOffsets(c, (short) 7, g, t, 0, 1));
        }));
        s.add(Scenario.of("groups.offset-commit.member", ApiKeys.OFFSET_COMMIT, 2, 10, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            String g = c.name("group");
            Member m = joinAndSync(c, g, null, subscription(t), assignment(t, 0));
            c.observe("current-generation", Route.group(g), ApiKeys.OFFSET_COMMIT, commit(c, c.version, g, m.generation, m.id, t, 3, null, 0));
            c.observe("wrong-generation", Route.group(g), ApiKeys.OFFSET_COMMIT, commit(c, c.version, g, m.generation + 1, m.id, t, 4, null, 0));
            c.observe("unknown-member", Route.group(g), ApiKeys.OFFSET_COMMIT, commit(c, c.version, g, m.generation, m.id + "-other", t, 5, null, 0));
            c.observe("admin-style-on-live-group", Route.group(g), ApiKeys.OFFSET_COMMIT, commit(c, c.version, g, -1, "", t, 6, null, 0));
            c.observe("fetch", Route.group(g), ApiKeys.OFFSET_FETCH, (short) 7, fetchOffsets(c, (short) 7, g, t, 0));
            if (c.version >= 7) {
                OffsetCommitRequestData wrongInstance = commit(c, c.version, g, m.generation, m.id, t, 7, null, 0).setGroupInstanceId(c.name("instance"));
                c.observe("unknown-instance-id", Route.group(g), ApiKeys.OFFSET_COMMIT, wrongInstance);
            }
            // While the group rebalances (the member joined again but has not synced).
            c.call(Route.group(g), ApiKeys.JOIN_GROUP, (short) 9, join((short) 9, g, m.id, null, subscription(t)));
            c.observe("old-generation-after-rejoin", Route.group(g), ApiKeys.OFFSET_COMMIT, commit(c, c.version, g, m.generation, m.id, t, 8, null, 0));
        }));
        s.add(Scenario.of("groups.offset-commit.empty-group-id", ApiKeys.OFFSET_COMMIT, 2, 10, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            Route e = emptyGroupRoute(c);
            resetEmptyGroup(c, e);
            c.observe("commit", e, ApiKeys.OFFSET_COMMIT, commit(c, c.version, EMPTY, -1, "", t, 9, "meta", 0));
            c.observe("fetch", e, ApiKeys.OFFSET_FETCH, (short) 7, fetchOffsets(c, (short) 7, EMPTY, t, 0));
            c.observe("describe", e, ApiKeys.DESCRIBE_GROUPS, (short) 5, describe(EMPTY));
            c.observe("delete", e, ApiKeys.DELETE_GROUPS, (short) 2, deleteGroups(EMPTY));
            resetEmptyGroup(c, e);
        }));
    }

    static void addOffsetFetch(List<Scenario> s) {
        s.add(Scenario.of("groups.offset-fetch.committed", ApiKeys.OFFSET_FETCH, 1, 10, c -> {
            String t = c.topic();
            String t2 = c.name("other");
            c.createTopic(t, 3);
            c.createTopic(t2, 1);
            String g = c.name("group");
            commitAdmin(c, g, t, 100, 0, 1);
            commitAdmin(c, g, t2, 7, 0);
            c.observe("partitions", Route.group(g), ApiKeys.OFFSET_FETCH, fetchOffsets(c, c.version, g, t, 0, 1, 2));
            if (c.version >= 2) c.observe("all-topics", Route.group(g), ApiKeys.OFFSET_FETCH, fetchOffsets(c, c.version, g, null));
            c.observe("unknown-topic", Route.group(g), ApiKeys.OFFSET_FETCH, fetchOffsets(c, c.version, g, c.name("missing"), 0));
            c.observe("unknown-partition", Route.group(g), ApiKeys.OFFSET_FETCH, fetchOffsets(c, c.version, g, t, 9));
            if (c.version >= 2) {
                OffsetFetchRequestData noTopics = fetchOffsets(c, c.version, g, t);
                if (c.version >= 8) noTopics.groups().get(0).topics().clear();
                else noTopics.topics().clear();
                c.observe("empty-topic-list", Route.group(g), ApiKeys.OFFSET_FETCH, noTopics);
            }
        }));
        s.add(Scenario.of("groups.offset-fetch.missing-group", ApiKeys.OFFSET_FETCH, 1, 10, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            String g = c.name("missing");
            awaitGroupCoordinator(c, g);
            c.observe("partitions", Route.group(g), ApiKeys.OFFSET_FETCH, fetchOffsets(c, c.version, g, t, 0));
            if (c.version >= 2) c.observe("all-topics", Route.group(g), ApiKeys.OFFSET_FETCH, fetchOffsets(c, c.version, g, null));
        }));
        s.add(Scenario.of("groups.offset-fetch.live-group", ApiKeys.OFFSET_FETCH, 1, 10, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            String g = c.name("group");
            Member m = joinAndSync(c, g, null, subscription(t), assignment(t, 0));
            c.call(Route.group(g), ApiKeys.OFFSET_COMMIT, (short) 9, commit(c, (short) 9, g, m.generation, m.id, t, 12, "live", 0));
            c.observe("partitions", Route.group(g), ApiKeys.OFFSET_FETCH, fetchOffsets(c, c.version, g, t, 0));
            if (c.version >= 2) c.observe("all-topics", Route.group(g), ApiKeys.OFFSET_FETCH, fetchOffsets(c, c.version, g, null));
        }));
        // require_stable (v7+): offsets a transaction has committed but not yet completed.
        s.add(Scenario.of("groups.offset-fetch.require-stable", ApiKeys.OFFSET_FETCH, 7, 10, c -> {
            String t = c.topic();
            c.createTopic(t, 2);
            String g = c.name("group");
            String txn = c.name("txn");
            commitAdmin(c, g, t, 50, 1);
            InitProducerIdResponseData pid = DataScenarios.initProducerId(c, txn);
            c.call(Route.txn(txn), ApiKeys.ADD_OFFSETS_TO_TXN, (short) 3, new AddOffsetsToTxnRequestData().setTransactionalId(txn)
                .setProducerId(pid.producerId()).setProducerEpoch(pid.producerEpoch()).setGroupId(g));
            TxnOffsetCommitRequestData tc = new TxnOffsetCommitRequestData().setTransactionalId(txn).setGroupId(g)
                .setProducerId(pid.producerId()).setProducerEpoch(pid.producerEpoch());
            TxnOffsetCommitRequestData.TxnOffsetCommitRequestTopic tt = new TxnOffsetCommitRequestData.TxnOffsetCommitRequestTopic().setName(t);
            tt.partitions().add(new TxnOffsetCommitRequestData.TxnOffsetCommitRequestPartition().setPartitionIndex(0).setCommittedOffset(5));
            tc.topics().add(tt);
            c.observe("txn-offset-commit", Route.group(g), ApiKeys.TXN_OFFSET_COMMIT, (short) 3, tc);
            OffsetFetchRequestData stable = fetchOffsets(c, c.version, g, t, 0, 1).setRequireStable(true);
            c.observe("require-stable", Route.group(g), ApiKeys.OFFSET_FETCH, stable);
            c.observe("not-require-stable", Route.group(g), ApiKeys.OFFSET_FETCH, fetchOffsets(c, c.version, g, t, 0, 1));
            c.observe("require-stable-all-topics", Route.group(g), ApiKeys.OFFSET_FETCH, fetchOffsets(c, c.version, g, null).setRequireStable(true));
            c.call(Route.txn(txn), ApiKeys.END_TXN, (short) 3, new EndTxnRequestData().setTransactionalId(txn)
                .setProducerId(pid.producerId()).setProducerEpoch(pid.producerEpoch()).setCommitted(true));
            // The commit completes asynchronously (markers); wait until the offset is stable.
            long deadline = System.currentTimeMillis() + Ctx.AWAIT_MS;
            while (System.currentTimeMillis() < deadline) {
                Peer.Answer a = c.call(Route.group(g), ApiKeys.OFFSET_FETCH, c.version, fetchOffsets(c, c.version, g, t, 0, 1).setRequireStable(true));
                if (!a.json().toString().contains("\"errorCode\":88")) break;
                Ctx.sleep(50);
            }
            c.observe("require-stable-after-commit", Route.group(g), ApiKeys.OFFSET_FETCH, fetchOffsets(c, c.version, g, t, 0, 1).setRequireStable(true));
        }));
        s.add(Scenario.of("groups.offset-fetch.batched", ApiKeys.OFFSET_FETCH, 8, 10, c -> {
            String t = c.topic();
            c.createTopic(t, 2);
            String a = c.name("a"), b = c.name("b"), missing = c.name("missing");
            commitAdmin(c, a, t, 1, 0);
            commitAdmin(c, b, t, 2, 1);
            awaitGroupCoordinator(c, missing);
            OffsetFetchRequestData r = new OffsetFetchRequestData();
            r.groups().add(fetchGroup(c, a, t, 0, 1));
            r.groups().add(fetchGroup(c, b, null));
            r.groups().add(fetchGroup(c, missing, t, 0));
            // One request goes to one coordinator; with one node every group is there.
            c.observe("three-groups", Route.group(a), ApiKeys.OFFSET_FETCH, r);
            OffsetFetchRequestData none = new OffsetFetchRequestData();
            c.observe("no-groups", Route.group(a), ApiKeys.OFFSET_FETCH, none);
        }));
        s.add(Scenario.of("groups.offset-fetch.empty-group-id", ApiKeys.OFFSET_FETCH, 1, 10, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            Route e = emptyGroupRoute(c);
            resetEmptyGroup(c, e);
            c.observe("before-commit", e, ApiKeys.OFFSET_FETCH, fetchOffsets(c, c.version, EMPTY, t, 0));
            c.call(e, ApiKeys.OFFSET_COMMIT, (short) 9, commit(c, (short) 9, EMPTY, -1, "", t, 4, "e", 0));
            c.observe("partitions", e, ApiKeys.OFFSET_FETCH, fetchOffsets(c, c.version, EMPTY, t, 0));
            if (c.version >= 2) c.observe("all-topics", e, ApiKeys.OFFSET_FETCH, fetchOffsets(c, c.version, EMPTY, null));
            resetEmptyGroup(c, e);
        }));
    }

    static void addDescribeGroups(List<Scenario> s) {
        s.add(Scenario.of("groups.describe", ApiKeys.DESCRIBE_GROUPS, 0, 6, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            String live = c.name("live"), empty = c.name("empty"), missing = c.name("missing");
            String instance = c.name("instance");
            joinAndSync(c, live, instance, subscription(t), assignment(t, 0));
            commitAdmin(c, empty, t, 3, 0);
            awaitGroupCoordinator(c, missing);
            DescribeGroupsRequestData ops = describe(live);
            if (c.version >= 3) ops.setIncludeAuthorizedOperations(true);
            c.observe("live", Route.group(live), ApiKeys.DESCRIBE_GROUPS, describe(live));
            if (c.version >= 3) c.observe("live-with-operations", Route.group(live), ApiKeys.DESCRIBE_GROUPS, ops);
            c.observe("empty", Route.group(empty), ApiKeys.DESCRIBE_GROUPS, describe(empty));
            c.observe("missing", Route.group(missing), ApiKeys.DESCRIBE_GROUPS, describe(missing));
            c.observe("three", Route.group(live), ApiKeys.DESCRIBE_GROUPS, describe(live, empty, missing));
            c.observe("none", Route.ANY, ApiKeys.DESCRIBE_GROUPS, describe());
        }));
        s.add(Scenario.of("groups.describe.empty-group-id", ApiKeys.DESCRIBE_GROUPS, 0, 6, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            Route e = emptyGroupRoute(c);
            resetEmptyGroup(c, e);
            c.observe("missing", e, ApiKeys.DESCRIBE_GROUPS, describe(EMPTY));
            c.call(e, ApiKeys.OFFSET_COMMIT, (short) 9, commit(c, (short) 9, EMPTY, -1, "", t, 4, "e", 0));
            c.observe("with-offsets", e, ApiKeys.DESCRIBE_GROUPS, describe(EMPTY));
            resetEmptyGroup(c, e);
        }));
    }

    static void addListGroups(List<Scenario> s) {
        // ListGroups answers every group of the broker; each observation here keeps only this
        // scenario's groups (see keepOwn), and group "" which this scenario makes.
        s.add(Scenario.of("groups.list", ApiKeys.LIST_GROUPS, 0, 5, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            String live = c.name("live"), empty = c.name("empty"), joining = c.name("joining");
            joinAndSync(c, live, null, subscription(t), assignment(t, 0));
            commitAdmin(c, empty, t, 3, 0);
            joinOnly(c, joining, null, subscription(t)); // CompletingRebalance: joined, not synced
            Route e = emptyGroupRoute(c);
            resetEmptyGroup(c, e);
            c.call(e, ApiKeys.OFFSET_COMMIT, (short) 9, commit(c, (short) 9, EMPTY, -1, "", t, 4, "e", 0));
            keepOwn(c, c.observeEveryNode("all", ApiKeys.LIST_GROUPS,
                    new ListGroupsRequestData(), "groups"), "groups", "groupId", EMPTY);
            if (c.version >= 4) {
                keepOwn(c, c.observeEveryNode("states-empty", ApiKeys.LIST_GROUPS,
                    new ListGroupsRequestData().setStatesFilter(List.of("Empty")), "groups"), "groups", "groupId", EMPTY);
                keepOwn(c, c.observeEveryNode("states-stable-lowercase", ApiKeys.LIST_GROUPS,
                    new ListGroupsRequestData().setStatesFilter(List.of("stable")), "groups"), "groups", "groupId", EMPTY);
                keepOwn(c, c.observeEveryNode("states-stable-and-completing", ApiKeys.LIST_GROUPS,
                    new ListGroupsRequestData().setStatesFilter(List.of("Stable", "CompletingRebalance")), "groups"), "groups", "groupId", EMPTY);
                keepOwn(c, c.observeEveryNode("states-unknown", ApiKeys.LIST_GROUPS,
                    new ListGroupsRequestData().setStatesFilter(List.of("NoSuchState")), "groups"), "groups", "groupId", EMPTY);
            }
            if (c.version >= 5) {
                keepOwn(c, c.observeEveryNode("types-classic", ApiKeys.LIST_GROUPS,
                    new ListGroupsRequestData().setTypesFilter(List.of("classic")), "groups"), "groups", "groupId", EMPTY);
                keepOwn(c, c.observeEveryNode("types-consumer", ApiKeys.LIST_GROUPS,
                    new ListGroupsRequestData().setTypesFilter(List.of("consumer")), "groups"), "groups", "groupId", EMPTY);
                keepOwn(c, c.observeEveryNode("types-share", ApiKeys.LIST_GROUPS,
                    new ListGroupsRequestData().setTypesFilter(List.of("share")), "groups"), "groups", "groupId", EMPTY);
                keepOwn(c, c.observeEveryNode("types-unknown", ApiKeys.LIST_GROUPS,
                    new ListGroupsRequestData().setTypesFilter(List.of("nosuchtype")), "groups"), "groups", "groupId", EMPTY);
                keepOwn(c, c.observeEveryNode("states-and-types", ApiKeys.LIST_GROUPS,
                    new ListGroupsRequestData().setStatesFilter(List.of("Empty")).setTypesFilter(List.of("Classic")), "groups"), "groups", "groupId", EMPTY);
            }
            resetEmptyGroup(c, e);
        }));
    }

    static void addDeleteGroups(List<Scenario> s) {
        s.add(Scenario.of("groups.delete", ApiKeys.DELETE_GROUPS, 0, 3, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            String empty = c.name("empty"), live = c.name("live"), missing = c.name("missing");
            commitAdmin(c, empty, t, 3, 0);
            joinAndSync(c, live, null, subscription(t), assignment(t, 0));
            awaitGroupCoordinator(c, missing);
            Route e = emptyGroupRoute(c);
            resetEmptyGroup(c, e);
            c.call(e, ApiKeys.OFFSET_COMMIT, (short) 9, commit(c, (short) 9, EMPTY, -1, "", t, 4, "e", 0));
            c.observe("empty-live-missing-and-empty-id", Route.group(empty), ApiKeys.DELETE_GROUPS, deleteGroups(empty, live, missing, EMPTY));
            c.observe("again", Route.group(empty), ApiKeys.DELETE_GROUPS, deleteGroups(empty));
            c.observe("fetch-deleted", Route.group(empty), ApiKeys.OFFSET_FETCH, (short) 7, fetchOffsets(c, (short) 7, empty, t, 0));
            c.observe("describe-deleted", Route.group(empty), ApiKeys.DESCRIBE_GROUPS, (short) 5, describe(empty));
            c.observe("none", Route.group(empty), ApiKeys.DELETE_GROUPS, deleteGroups());
            resetEmptyGroup(c, e);
        }));
    }

    static void addOffsetDelete(List<Scenario> s) {
        s.add(Scenario.of("groups.offset-delete", ApiKeys.OFFSET_DELETE, 0, 0, c -> {
            String t = c.topic();
            String other = c.name("other");
            c.createTopic(t, 2);
            c.createTopic(other, 1);
            String empty = c.name("empty"), live = c.name("live"), missing = c.name("missing");
            commitAdmin(c, empty, t, 3, 0, 1);
            c.observe("empty-group", Route.group(empty), ApiKeys.OFFSET_DELETE, offsetDelete(empty, t, 0));
            c.observe("fetch-after", Route.group(empty), ApiKeys.OFFSET_FETCH, (short) 7, fetchOffsets(c, (short) 7, empty, t, 0, 1));
            c.observe("not-committed-partition", Route.group(empty), ApiKeys.OFFSET_DELETE, offsetDelete(empty, t, 0));
            c.observe("unknown-topic", Route.group(empty), ApiKeys.OFFSET_DELETE, offsetDelete(empty, c.name("missing-topic"), 0));
            c.observe("unknown-partition", Route.group(empty), ApiKeys.OFFSET_DELETE, offsetDelete(empty, t, 9));
            Member m = joinAndSync(c, live, null, subscription(t), assignment(t, 0, 1));
            c.call(Route.group(live), ApiKeys.OFFSET_COMMIT, (short) 9, commit(c, (short) 9, live, m.generation, m.id, t, 5, null, 0));
            c.call(Route.group(live), ApiKeys.OFFSET_COMMIT, (short) 9, commit(c, (short) 9, live, m.generation, m.id, other, 6, null, 0));
            c.observe("live-group-subscribed-topic", Route.group(live), ApiKeys.OFFSET_DELETE, offsetDelete(live, t, 0));
            c.observe("live-group-other-topic", Route.group(live), ApiKeys.OFFSET_DELETE, offsetDelete(live, other, 0));
            c.observe("missing-group", Route.group(missing), ApiKeys.OFFSET_DELETE, offsetDelete(missing, t, 0));
            Route e = emptyGroupRoute(c);
            resetEmptyGroup(c, e);
            c.call(e, ApiKeys.OFFSET_COMMIT, (short) 9, commit(c, (short) 9, EMPTY, -1, "", t, 4, "e", 0));
            c.observe("empty-group-id", e, ApiKeys.OFFSET_DELETE, offsetDelete(EMPTY, t, 0));
            resetEmptyGroup(c, e);
        }));
    }
}
