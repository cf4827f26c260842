package differential;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.common.message.ConsumerGroupDescribeRequestData;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatRequestData;
import org.apache.kafka.common.message.IncrementalAlterConfigsRequestData;
import org.apache.kafka.common.message.JoinGroupRequestData;
import org.apache.kafka.common.message.JoinGroupResponseData;
import org.apache.kafka.common.message.ListGroupsRequestData;
import org.apache.kafka.common.message.OffsetFetchRequestData;
import org.apache.kafka.common.message.SyncGroupRequestData;
import org.apache.kafka.common.protocol.ApiKeys;

/**
 * KIP-848 consumer groups: ConsumerGroupHeartbeat and ConsumerGroupDescribe, and the group APIs
 * as they meet such a group (OffsetCommit and OffsetFetch with member epochs, ListGroups with the
 * type filter, DeleteGroups).
 *
 * Member ids: from version 1 of ConsumerGroupHeartbeat the client makes its own (here a Uuid
 * derived from the scenario's name, the same on both peers); at version 0 a member joins with an
 * empty id and the coordinator names it. Members are set up at version 1 in the scenarios of the
 * other APIs.
 *
 * Each group gets `consumer.assignment.interval.ms=0` (a group config both brokers take) before
 * its first heartbeat: Kafka 4.4 computes a group's target assignment at most once a second by
 * default, so a member that joins shortly after another would see the new assignment on a later
 * heartbeat, by timing; Samsa computes it at once (docs/design-notes.md). With 0 both compute it
 * within the heartbeat that changed the group, and every answer of a sequence is comparable.
 */
final class ConsumerGroupScenarios {
    private ConsumerGroupScenarios() {}

    static final int REBALANCE_MS = 30_000;
    static final short HB = 1;
    static final short DESCRIBE = 1;

    // ---- request builders ----------------------------------------------------------------

    static String memberId(Ctx c, String which) {
        return ShareScenarios.memberId(c, which);
    }

    /** A heartbeat carrying only the member and its epoch (the fields a client leaves null
     *  when they did not change). */
    static ConsumerGroupHeartbeatRequestData heartbeat(String group, String memberId, int epoch) {
        return new ConsumerGroupHeartbeatRequestData().setGroupId(group).setMemberId(memberId).setMemberEpoch(epoch);
    }

    /** A join as Kafka's consumer sends it: epoch 0, the subscription, the rebalance timeout,
     *  an empty owned list. */
    static ConsumerGroupHeartbeatRequestData join(String group, String memberId, String instanceId, String... topics) {
        return heartbeat(group, memberId, 0).setInstanceId(instanceId).setRebalanceTimeoutMs(REBALANCE_MS)
            .setSubscribedTopicNames(new ArrayList<>(List.of(topics))).setTopicPartitions(new ArrayList<>());
    }

    /** Partitions by topic name as a heartbeat's owned topic partitions (by this peer's topic ids). */
    static List<ConsumerGroupHeartbeatRequestData.TopicPartitions> owned(Ctx c, Map<String, TreeSet<Integer>> partitions) {
        List<ConsumerGroupHeartbeatRequestData.TopicPartitions> out = new ArrayList<>();
        for (Map.Entry<String, TreeSet<Integer>> e : partitions.entrySet()) {
            if (e.getValue().isEmpty()) continue;
            out.add(new ConsumerGroupHeartbeatRequestData.TopicPartitions().setTopicId(GroupScenarios.topicId(c, e.getKey()))
                .setPartitions(new ArrayList<>(e.getValue())));
        }
        return out;
    }

    static Map<String, TreeSet<Integer>> parts(String topic, Integer... partitions) {
        Map<String, TreeSet<Integer>> m = new TreeMap<>();
        m.put(topic, new TreeSet<>(List.of(partitions)));
        return m;
    }

    static ConsumerGroupDescribeRequestData describe(String... groups) {
        return new ConsumerGroupDescribeRequestData().setGroupIds(new ArrayList<>(List.of(groups)));
    }

    // ---- members -------------------------------------------------------------------------

    /** A member as its client knows it: id, epoch and the partitions it was given. */
    static final class Member {
        final String group;
        final String instanceId;
        String id;
        int epoch;
        final Map<String, TreeSet<Integer>> assigned = new TreeMap<>();

        Member(String group, String id, String instanceId) {
            this.group = group;
            this.id = id;
            this.instanceId = instanceId;
        }

        /** Takes in a heartbeat answer as the client does: id, epoch, and the assignment when
         *  the answer carries one. */
        void update(Ctx c, JsonNode a) {
            if (a == null || a.path("errorCode").asInt() != 0) return;
            String given = a.path("memberId").asText("");
            if (!given.isEmpty()) id = given;
            epoch = a.path("memberEpoch").asInt();
            JsonNode assignment = a.get("assignment");
            if (assignment != null && !assignment.isNull()) {
                assigned.clear();
                for (JsonNode tp : assignment.path("topicPartitions")) {
                    String name = c.topicNames.getOrDefault(tp.path("topicId").asText(), tp.path("topicId").asText());
                    TreeSet<Integer> ps = assigned.computeIfAbsent(name, k -> new TreeSet<>());
                    for (JsonNode p : tp.path("partitions")) ps.add(p.asInt());
                }
            }
        }

        /** A regular heartbeat reporting what the member owns. */
        ConsumerGroupHeartbeatRequestData beat(Ctx c) {
            return heartbeat(group, id, epoch).setTopicPartitions(owned(c, assigned));
        }
    }

    /** Sends `r` for `m` at the version under test, compares the answer and takes it in. */
    static Observation beat(Ctx c, String label, int node, Member m, ConsumerGroupHeartbeatRequestData r) throws IOException {
        Observation o = c.observe(label, Route.node(node), ApiKeys.CONSUMER_GROUP_HEARTBEAT, r);
        if (m != null) m.update(c, o.json());
        return o;
    }

    /** As {@link #beat}, at version 1 and not compared (setting up). */
    static JsonNode quietly(Ctx c, int node, Member m, ConsumerGroupHeartbeatRequestData r) throws IOException {
        JsonNode a = c.call(Route.node(node), ApiKeys.CONSUMER_GROUP_HEARTBEAT, HB, r).json();
        if (m != null) m.update(c, a);
        return a;
    }

    /** Orders the members of each described group by member id, before the comparison numbers
     *  them: they first appear here (they joined unobserved), and each broker lists them in an
     *  order of its own. The ids are the clients' own, the same on both peers. */
    static Observation byMemberId(Observation o) {
        for (JsonNode group : o.json().path("groups")) {
            if (!(group.get("members") instanceof com.fasterxml.jackson.databind.node.ArrayNode members)) continue;
            List<JsonNode> sorted = new ArrayList<>();
            members.forEach(sorted::add);
            sorted.sort(java.util.Comparator.comparing(m -> m.path("memberId").asText()));
            members.removeAll();
            sorted.forEach(members::add);
        }
        return o;
    }

    // ---- set-up steps --------------------------------------------------------------------

    /** consumer.assignment.interval.ms=0 for `group` (see the class comment), then waits until
     *  its coordinator serves it; returns the coordinator. */
    static int prepare(Ctx c, String group) throws IOException {
        IncrementalAlterConfigsRequestData r = new IncrementalAlterConfigsRequestData();
        IncrementalAlterConfigsRequestData.AlterConfigsResource res = new IncrementalAlterConfigsRequestData.AlterConfigsResource()
            .setResourceType((byte) 32).setResourceName(group);
        res.configs().add(new IncrementalAlterConfigsRequestData.AlterableConfig().setName("consumer.assignment.interval.ms")
            .setValue("0").setConfigOperation((byte) 0));
        r.resources().add(res);
        Peer.Answer a = c.call(Route.ANY, ApiKeys.INCREMENTAL_ALTER_CONFIGS, (short) 1, r);
        if (a.json().path("responses").path(0).path("errorCode").asInt() != 0) {
            throw new Ctx.ScenarioFailure("IncrementalAlterConfigs consumer.assignment.interval.ms of group " + group + ": " + a.json());
        }
        GroupScenarios.awaitGroupCoordinator(c, group);
        int node = c.coordinator((byte) 0, group);
        // In a cluster the coordinator learns the group config from the metadata log in its own
        // time: wait until it has it.
        long deadline = System.currentTimeMillis() + Ctx.AWAIT_MS;
        while (c.peer.nodes.size() > 1) {
            JsonNode d = c.call(Route.node(node), ApiKeys.DESCRIBE_CONFIGS, (short) 4,
                ConfigScenarios.describe((short) 4, (byte) 32, group, false, false, "consumer.assignment.interval.ms")).json();
            if (d.path("results").path(0).path("configs").path(0).path("value").asText("").equals("0")) break;
            if (System.currentTimeMillis() > deadline) throw new Ctx.ScenarioFailure("node " + node + " does not have the config of group " + group);
            Ctx.sleep(20);
        }
        return node;
    }

    /** Joins `m` (version 1, not compared). */
    static void joinQuietly(Ctx c, int node, Member m, String... topics) throws IOException {
        JsonNode a = quietly(c, node, m, join(m.group, m.id, m.instanceId, topics));
        if (a.path("errorCode").asInt() != 0) throw new Ctx.ScenarioFailure("ConsumerGroupHeartbeat join of " + m.group + ": " + a);
    }

    /** Heartbeats every member, each reporting what it owns, as their clients would, until a
     *  round changes nothing and all are at one epoch: the group is stable. Not compared. */
    static void settle(Ctx c, int node, Member... members) throws IOException {
        long deadline = System.currentTimeMillis() + Ctx.AWAIT_MS;
        while (true) {
            boolean changed = false;
            for (Member m : members) {
                String before = m.epoch + " " + m.assigned;
                JsonNode a = quietly(c, node, m, m.beat(c));
                if (a.path("errorCode").asInt() != 0) throw new Ctx.ScenarioFailure("ConsumerGroupHeartbeat of " + m.group + ": " + a);
                changed |= !before.equals(m.epoch + " " + m.assigned);
            }
            boolean oneEpoch = true;
            for (Member m : members) oneEpoch &= m.epoch == members[0].epoch;
            if (!changed && oneEpoch) return;
            if (System.currentTimeMillis() > deadline) throw new Ctx.ScenarioFailure("consumer group " + members[0].group + " does not settle");
        }
    }

    /** Leaves the group (epoch -1), not compared. */
    static void leaveQuietly(Ctx c, int node, Member m) throws IOException {
        JsonNode a = quietly(c, node, null, heartbeat(m.group, m.id, -1));
        if (a.path("errorCode").asInt() != 0) throw new Ctx.ScenarioFailure("ConsumerGroupHeartbeat leave of " + m.group + ": " + a);
    }

    /** A stable consumer group of one member (version 1) holding every partition of `topic`. */
    static Member oneMember(Ctx c, int node, String group, String topic) throws IOException {
        Member m = new Member(group, memberId(c, group + "/a"), null);
        joinQuietly(c, node, m, topic);
        settle(c, node, m);
        return m;
    }

    /** A classic group with one member that has joined and synced, of protocol type `type`
     *  (a static member, which gets its member id at once). Not compared. */
    static void classicGroup(Ctx c, String group, String type, String topic) throws IOException {
        String instance = c.name("classic-instance");
        long deadline = System.currentTimeMillis() + Ctx.AWAIT_MS;
        JoinGroupResponseData r;
        while (true) {
            JoinGroupRequestData j = GroupScenarios.join((short) 9, group, "", instance, type, GroupScenarios.PROTOCOL,
                GroupScenarios.subscription(topic), GroupScenarios.SESSION_MS);
            r = (JoinGroupResponseData) c.call(Route.group(group), ApiKeys.JOIN_GROUP, (short) 9, j).message();
            if (r.errorCode() == 0) break;
            if (!GroupScenarios.coordinatorBusy(r.errorCode()) || System.currentTimeMillis() > deadline) {
                throw new Ctx.ScenarioFailure("JoinGroup " + group + ": error " + r.errorCode());
            }
            Ctx.sleep(50);
        }
        SyncGroupRequestData s = new SyncGroupRequestData().setGroupId(group).setGenerationId(r.generationId()).setMemberId(r.memberId())
            .setGroupInstanceId(instance).setProtocolType(type).setProtocolName(GroupScenarios.PROTOCOL);
        s.assignments().add(new SyncGroupRequestData.SyncGroupRequestAssignment().setMemberId(r.memberId())
            .setAssignment(GroupScenarios.assignment(topic, 0)));
        Peer.Answer a = c.call(Route.group(group), ApiKeys.SYNC_GROUP, (short) 5, s);
        if (a.errorCode() != 0) throw new Ctx.ScenarioFailure("SyncGroup " + group + ": error " + a.errorCode());
    }

    // ---- scenarios -----------------------------------------------------------------------

    static void add(List<Scenario> s) {
        addHeartbeat(s);
        addClassicMember(s);
        addDescribe(s);
        addOffsets(s);
        addListAndDelete(s);
    }

    static void addHeartbeat(List<Scenario> s) {
        // Two members of one topic of two partitions: a joins and gets both; b joins and waits
        // while a, told to give one up, still owns it; a revokes it and b gets it; fenced epochs
        // (greater; smaller and the previous one with and without owned partitions); b leaves
        // and a gets both again at a new epoch, after which the epoch two back is fenced.
        s.add(Scenario.of("consumer-groups.heartbeat.rebalance", ApiKeys.CONSUMER_GROUP_HEARTBEAT, 0, 1, c -> {
            String t = c.topic();
            c.createTopic(t, 2);
            String g = c.name("group");
            int node = prepare(c, g);
            boolean v0 = c.version == 0;
            Member a = new Member(g, v0 ? "" : memberId(c, "a"), null);
            Member b = new Member(g, v0 ? "" : memberId(c, "b"), null);
            beat(c, "a-join", node, a, join(g, a.id, null, t));
            beat(c, "a-heartbeat", node, a, a.beat(c));
            beat(c, "b-join", node, b, join(g, b.id, null, t));
            c.observe("describe-b-joined", Route.node(node), ApiKeys.CONSUMER_GROUP_DESCRIBE, DESCRIBE, describe(g));
            // a still reports both partitions: it is told which one to keep.
            beat(c, "a-told-to-revoke", node, a, heartbeat(g, a.id, a.epoch).setTopicPartitions(owned(c, parts(t, 0, 1))));
            beat(c, "b-while-a-revokes", node, b, b.beat(c));
            beat(c, "a-revoked", node, a, a.beat(c));
            beat(c, "b-gets-partition", node, b, b.beat(c));
            beat(c, "a-stable", node, a, a.beat(c));
            c.observe("describe-stable", Route.node(node), ApiKeys.CONSUMER_GROUP_DESCRIBE, DESCRIBE, describe(g));
            int epoch = a.epoch;
            beat(c, "a-epoch-greater", node, null, heartbeat(g, a.id, epoch + 1).setTopicPartitions(owned(c, a.assigned)));
            beat(c, "a-previous-epoch-owned-subset", node, null, heartbeat(g, a.id, epoch - 1).setTopicPartitions(owned(c, a.assigned)));
            beat(c, "a-previous-epoch-no-owned", node, null, heartbeat(g, a.id, epoch - 1));
            beat(c, "b-leave", node, null, heartbeat(g, b.id, -1));
            beat(c, "a-after-b-left", node, a, a.beat(c));
            beat(c, "a-two-epochs-back", node, null, heartbeat(g, a.id, epoch - 1).setTopicPartitions(owned(c, parts(t, 0))));
            beat(c, "b-after-leaving", node, null, heartbeat(g, b.id, epoch));
            beat(c, "unknown-member", node, null, heartbeat(g, memberId(c, "nobody"), a.epoch));
            beat(c, "unknown-member-leave", node, null, heartbeat(g, memberId(c, "nobody"), -1));
            c.observe("describe-end", Route.node(node), ApiKeys.CONSUMER_GROUP_DESCRIBE, DESCRIBE, describe(g));
            beat(c, "a-leave", node, null, heartbeat(g, a.id, -1));
            c.observe("describe-empty", Route.node(node), ApiKeys.CONSUMER_GROUP_DESCRIBE, DESCRIBE, describe(g));
        }));
        // A static member (group.instance.id) leaves with epoch -2, meaning it will be back: it
        // keeps its place and partitions; a new client with the same instance id and a new member
        // id takes them over; the old member id is gone; a second client with the instance id is
        // refused while the first holds it.
        s.add(Scenario.of("consumer-groups.heartbeat.static-member", ApiKeys.CONSUMER_GROUP_HEARTBEAT, 0, 1, c -> {
            String t = c.topic();
            c.createTopic(t, 2);
            String g = c.name("group");
            String instance = c.name("instance");
            int node = prepare(c, g);
            boolean v0 = c.version == 0;
            Member first = new Member(g, v0 ? "" : memberId(c, "first"), instance);
            beat(c, "join", node, first, join(g, first.id, instance, t));
            beat(c, "heartbeat", node, first, first.beat(c));
            beat(c, "leave-static", node, null, heartbeat(g, first.id, -2).setInstanceId(instance));
            c.observe("describe-after-static-leave", Route.node(node), ApiKeys.CONSUMER_GROUP_DESCRIBE, DESCRIBE, describe(g));
            Member second = new Member(g, v0 ? "" : memberId(c, "second"), instance);
            beat(c, "rejoin-new-member-id", node, second, join(g, second.id, instance, t));
            beat(c, "old-member-id", node, null, heartbeat(g, first.id, first.epoch).setTopicPartitions(owned(c, first.assigned)));
            Member third = new Member(g, v0 ? "" : memberId(c, "third"), instance);
            beat(c, "other-client-same-instance", node, null, join(g, third.id, instance, t));
            beat(c, "static-leave-other-instance", node, null, heartbeat(g, second.id, -2).setInstanceId(c.name("other-instance")));
            c.observe("describe", Route.node(node), ApiKeys.CONSUMER_GROUP_DESCRIBE, DESCRIBE, describe(g));
            beat(c, "leave", node, null, heartbeat(g, second.id, -1).setInstanceId(instance));
            c.observe("describe-after-leave", Route.node(node), ApiKeys.CONSUMER_GROUP_DESCRIBE, DESCRIBE, describe(g));
        }));
        // Each request Kafka refuses before it reaches the group, to a group that does not exist;
        // none may leave a group behind.
        s.add(Scenario.of("consumer-groups.heartbeat.invalid", ApiKeys.CONSUMER_GROUP_HEARTBEAT, 0, 1, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            String g = c.name("group");
            int node = prepare(c, g);
            String m = memberId(c, "m");
            Route r = Route.node(node);
            ApiKeys k = ApiKeys.CONSUMER_GROUP_HEARTBEAT;
            if (c.version >= 1) c.observe("join-empty-member-id", r, k, join(g, "", null, t));
            c.observe("heartbeat-empty-member-id", r, k, heartbeat(g, "", 1));
            c.observe("leave-empty-member-id", r, k, heartbeat(g, "", -1));
            c.observe("join-no-rebalance-timeout", r, k, join(g, m, null, t).setRebalanceTimeoutMs(-1));
            c.observe("join-owned-not-empty", r, k, join(g, m, null, t).setTopicPartitions(owned(c, parts(t, 0))));
            c.observe("join-owned-null", r, k, join(g, m, null, t).setTopicPartitions(null));
            c.observe("join-no-subscription", r, k, join(g, m, null, t).setSubscribedTopicNames(null));
            c.observe("static-leave-without-instance-id", r, k, heartbeat(g, m, -2));
            c.observe("epoch-minus-3", r, k, heartbeat(g, m, -3));
            c.observe("empty-instance-id", r, k, join(g, m, "", t));
            c.observe("empty-rack-id", r, k, join(g, m, null, t).setRackId(""));
            c.observe("empty-group-id", Route.ANY, k, join("", m, null, t));
            // Whatever was refused above, the group must not exist now.
            c.observe("describe-after", r, ApiKeys.CONSUMER_GROUP_DESCRIBE, DESCRIBE, describe(g));
            GroupScenarios.keepOwn(c, c.observe("list-after", r, ApiKeys.LIST_GROUPS, (short) 5,
                new ListGroupsRequestData().setTypesFilter(List.of("consumer"))), "groups", "groupId");
            // Refusals that Kafka makes further in (the assignor, the regex), each to a group of
            // its own, which must not exist afterwards either.
            String ga = c.name("assignor");
            int na = prepare(c, ga);
            c.observe("unknown-assignor", Route.node(na), k, join(ga, m, null, t).setServerAssignor("no-such-assignor"));
            c.observe("describe-after-unknown-assignor", Route.node(na), ApiKeys.CONSUMER_GROUP_DESCRIBE, DESCRIBE, describe(ga));
            if (c.version >= 1) {
                String gr = c.name("regex");
                int nr = prepare(c, gr);
                c.observe("invalid-regex", Route.node(nr), k, join(gr, m, null).setSubscribedTopicNames(null).setSubscribedTopicRegex("["));
                c.observe("describe-after-invalid-regex", Route.node(nr), ApiKeys.CONSUMER_GROUP_DESCRIBE, DESCRIBE, describe(gr));
            }
            // Requests at the edge that are not refused, to a group of their own: an empty list
            // of topic names, and (v1) both names and a regex.
            String g2 = c.name("accepted");
            int n2 = prepare(c, g2);
            c.observe("join-empty-subscription", Route.node(n2), k, join(g2, memberId(c, "empty"), null).setSubscribedTopicNames(new ArrayList<>()));
            if (c.version >= 1) {
                c.observe("names-and-regex", Route.node(n2), k, join(g2, memberId(c, "both"), null, t).setSubscribedTopicRegex("^$"));
            }
            // A member with nothing to subscribe to joining a group that has an assignment: does
            // the group epoch move?
            c.observe("join-empty-subscription-again", Route.node(n2), k,
                join(g2, memberId(c, "empty-again"), null).setSubscribedTopicNames(new ArrayList<>()));
            c.observe("describe-accepted", Route.node(n2), ApiKeys.CONSUMER_GROUP_DESCRIBE, DESCRIBE, describe(g2));
        }));
        // Heartbeats to group ids that are not consumer groups: none at all, a classic group with
        // a member (protocol type consumer, and connect), a classic group that only has offsets.
        s.add(Scenario.of("consumer-groups.heartbeat.not-a-consumer-group", ApiKeys.CONSUMER_GROUP_HEARTBEAT, 0, 1, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            String missing = c.name("missing"), classic = c.name("classic"), connect = c.name("connect"), offsets = c.name("offsets");
            int nm = prepare(c, missing);
            String m = memberId(c, "m");
            ApiKeys k = ApiKeys.CONSUMER_GROUP_HEARTBEAT;
            c.observe("unknown-group-epoch-1", Route.node(nm), k, heartbeat(missing, m, 1));
            c.observe("unknown-group-leave", Route.node(nm), k, heartbeat(missing, m, -1));
            c.observe("unknown-group-static-leave", Route.node(nm), k, heartbeat(missing, m, -2).setInstanceId(c.name("instance")));
            int nc = prepare(c, classic);
            classicGroup(c, classic, GroupScenarios.TYPE, t);
            c.observe("classic-consumer-group-join", Route.node(nc), k, join(classic, c.version == 0 ? "" : m, null, t));
            c.observe("classic-consumer-group-heartbeat", Route.node(nc), k, heartbeat(classic, m, 1));
            int nx = prepare(c, connect);
            classicGroup(c, connect, "connect", t);
            c.observe("classic-connect-group-join", Route.node(nx), k, join(connect, c.version == 0 ? "" : m, null, t));
            int no = prepare(c, offsets);
            GroupScenarios.commitAdmin(c, offsets, t, 5, 0);
            Member o = new Member(offsets, c.version == 0 ? "" : m, null);
            beat(c, "offsets-only-group-join", no, o, join(offsets, o.id, null, t));
            c.observe("offsets-only-group-describe", Route.node(no), ApiKeys.CONSUMER_GROUP_DESCRIBE, DESCRIBE, describe(offsets));
            c.observe("offsets-only-group-offsets", Route.node(no), ApiKeys.OFFSET_FETCH, (short) 9,
                GroupScenarios.fetchOffsets(c, (short) 9, offsets, t, 0));
        }));
    }

    /** A classic member inside a consumer group (KIP-848's migration path): a consumer-protocol
     *  member holds both partitions of a topic; a static classic member joins (JoinGroup at the
     *  version compared), syncs with nothing yet, heartbeats; the consumer member gives one up and
     *  the classic member is told to rejoin, rejoins and gets it; wrong generations, the consumer
     *  member through the classic APIs, a commit; the consumer member leaves, which downgrades
     *  the group to a classic one, where the classic member rejoins, syncs and leaves. */
    static void addClassicMember(List<Scenario> s) {
        s.add(Scenario.of("consumer-groups.classic-member", ApiKeys.JOIN_GROUP, 5, 9, c -> {
            String t = c.topic();
            c.createTopic(t, 2);
            String g = c.name("mixed");
            int n = prepare(c, g);
            Member a = oneMember(c, n, g, t);
            String instance = c.name("classic-instance");
            short v = c.version;
            JoinGroupRequestData j = GroupScenarios.join(v, g, "", instance, GroupScenarios.TYPE, GroupScenarios.PROTOCOL,
                GroupScenarios.subscription(t), GroupScenarios.SESSION_MS);
            Observation joined = c.observe("classic-join", Route.node(n), ApiKeys.JOIN_GROUP, v, j);
            JoinGroupResponseData r = (JoinGroupResponseData) joined.answer.message();
            if (r.errorCode() != 0) throw new Ctx.ScenarioFailure("classic JoinGroup to consumer group " + g + ": error " + r.errorCode());
            String id = r.memberId();
            c.observe("classic-sync", Route.node(n), ApiKeys.SYNC_GROUP, (short) 5,
                GroupScenarios.sync((short) 5, g, r.generationId(), id, instance, Map.of()));
            c.observe("classic-sync-wrong-generation", Route.node(n), ApiKeys.SYNC_GROUP, (short) 5,
                GroupScenarios.sync((short) 5, g, r.generationId() + 1, id, instance, Map.of()));
            c.observe("classic-heartbeat-before", Route.node(n), ApiKeys.HEARTBEAT, (short) 4,
                GroupScenarios.heartbeat((short) 4, g, r.generationId(), id, instance));
            c.observe("consumer-member-classic-heartbeat", Route.node(n), ApiKeys.HEARTBEAT, (short) 4,
                GroupScenarios.heartbeat((short) 4, g, a.epoch, a.id, null));
            // a gives up the partition the target moves (it reports what it keeps).
            settle(c, n, a);
            c.observe("classic-heartbeat-released", Route.node(n), ApiKeys.HEARTBEAT, (short) 4,
                GroupScenarios.heartbeat((short) 4, g, r.generationId(), id, instance));
            JoinGroupRequestData again = GroupScenarios.join(v, g, id, instance, GroupScenarios.TYPE, GroupScenarios.PROTOCOL,
                GroupScenarios.subscription(t), GroupScenarios.SESSION_MS);
            JoinGroupResponseData r2 = (JoinGroupResponseData) c.observe("classic-rejoin", Route.node(n), ApiKeys.JOIN_GROUP, v, again)
                .answer.message();
            c.observe("classic-sync-assigned", Route.node(n), ApiKeys.SYNC_GROUP, (short) 5,
                GroupScenarios.sync((short) 5, g, r2.generationId(), id, instance, Map.of()));
            c.observe("classic-heartbeat-stable", Route.node(n), ApiKeys.HEARTBEAT, (short) 4,
                GroupScenarios.heartbeat((short) 4, g, r2.generationId(), id, instance));
            c.observe("describe-mixed", Route.node(n), ApiKeys.CONSUMER_GROUP_DESCRIBE, DESCRIBE, describe(g));
            c.observe("classic-commit-wrong-generation", Route.node(n), ApiKeys.OFFSET_COMMIT, (short) 8,
                GroupScenarios.commit(c, (short) 8, g, r2.generationId() + 1, id, t, 1, "m", 0, 1));
            c.observe("consumer-member-classic-leave", Route.node(n), ApiKeys.LEAVE_GROUP, (short) 4,
                GroupScenarios.leave((short) 4, g, a.id));
            // The last consumer-protocol member is gone: the group is downgraded to a classic
            // group at the group epoch, preparing a rebalance; the classic member hears it,
            // rejoins (alone, it completes the rebalance at once), leads and syncs.
            c.observe("describe-groups-downgraded", Route.node(n), ApiKeys.DESCRIBE_GROUPS, (short) 5,
                GroupScenarios.describe(g));
            c.observe("describe-after-downgrade", Route.node(n), ApiKeys.CONSUMER_GROUP_DESCRIBE, DESCRIBE, describe(g));
            c.observe("classic-heartbeat-downgraded", Route.node(n), ApiKeys.HEARTBEAT, (short) 4,
                GroupScenarios.heartbeat((short) 4, g, r2.generationId(), id, instance));
            JoinGroupResponseData r3 = (JoinGroupResponseData) c.observe("classic-rejoin-downgraded", Route.node(n),
                ApiKeys.JOIN_GROUP, v, again).answer.message();
            c.observe("classic-sync-downgraded", Route.node(n), ApiKeys.SYNC_GROUP, (short) 5,
                GroupScenarios.sync((short) 5, g, r3.generationId(), id, instance, Map.of(id, new byte[0])));
            c.observe("describe-groups-classic", Route.node(n), ApiKeys.DESCRIBE_GROUPS, (short) 5,
                GroupScenarios.describe(g));
            c.observe("classic-leave", Route.node(n), ApiKeys.LEAVE_GROUP, (short) 4,
                GroupScenarios.leave((short) 4, g, id, instance));
            c.observe("describe-after-leave", Route.node(n), ApiKeys.CONSUMER_GROUP_DESCRIBE, DESCRIBE, describe(g));
        }));
    }

    static void addDescribe(List<Scenario> s) {
        // A group of two members (one static, with a rack) on a topic of three partitions, seen
        // stable, while a third member's join is being reconciled, and empty; then ids that are
        // not consumer groups, alone and together.
        s.add(Scenario.of("consumer-groups.describe", ApiKeys.CONSUMER_GROUP_DESCRIBE, 0, 1, c -> {
            String t = c.topic();
            c.createTopic(t, 3);
            String g = c.name("group"), missing = c.name("missing"), classic = c.name("classic");
            int node = prepare(c, g);
            Member a = new Member(g, memberId(c, "a"), c.name("instance-a"));
            Member b = new Member(g, memberId(c, "b"), null);
            Member x = new Member(g, memberId(c, "c"), null);
            quietly(c, node, a, join(g, a.id, a.instanceId, t).setRackId("rack-a"));
            settle(c, node, a);
            joinQuietly(c, node, b, t);
            settle(c, node, a, b);
            Route r = Route.node(node);
            ApiKeys k = ApiKeys.CONSUMER_GROUP_DESCRIBE;
            byMemberId(c.observe("stable", r, k, describe(g)));
            byMemberId(c.observe("stable-with-operations", r, k, describe(g).setIncludeAuthorizedOperations(true)));
            // The classic API on a consumer group (the admin client's describeConsumerGroups
            // falls back to it).
            c.observe("describe-groups-v5", r, ApiKeys.DESCRIBE_GROUPS, (short) 5, GroupScenarios.describe(g));
            c.observe("describe-groups-v6", r, ApiKeys.DESCRIBE_GROUPS, (short) 6, GroupScenarios.describe(g));
            joinQuietly(c, node, x, t);
            byMemberId(c.observe("reconciling", r, k, describe(g)));
            settle(c, node, a, b, x);
            byMemberId(c.observe("stable-three", r, k, describe(g)));
            leaveQuietly(c, node, a);
            leaveQuietly(c, node, b);
            leaveQuietly(c, node, x);
            c.observe("empty", r, k, describe(g));
            // A member asking for the range assignor.
            String ranged = c.name("range");
            int nr = prepare(c, ranged);
            Member y = new Member(ranged, memberId(c, "y"), null);
            quietly(c, nr, y, join(ranged, y.id, null, t).setServerAssignor("range"));
            settle(c, nr, y);
            c.observe("range-assignor", Route.node(nr), k, describe(ranged));
            prepare(c, missing);
            c.observe("unknown", Route.group(missing), k, describe(missing));
            prepare(c, classic);
            classicGroup(c, classic, GroupScenarios.TYPE, t);
            c.observe("classic", Route.group(classic), k, describe(classic));
            c.observe("empty-id", Route.ANY, k, describe(""));
            c.observe("several", r, k, describe(g, missing, classic));
            c.observe("none", r, k, describe());
        }));
    }

    static void addOffsets(List<Scenario> s) {
        // Commits of a consumer group's members carry the member epoch (v9+): the current one,
        // a greater one, an older one (for a partition the member has held since then), an
        // unknown member, an admin commit to the live group; v8 from a consumer-protocol member;
        // an admin commit once the group is empty.
        s.add(Scenario.of("consumer-groups.offset-commit", ApiKeys.OFFSET_COMMIT, 9, 10, c -> {
            String t = c.topic();
            c.createTopic(t, 2);
            String g = c.name("group");
            int node = prepare(c, g);
            Route r = Route.node(node);
            ApiKeys k = ApiKeys.OFFSET_COMMIT;
            Member a = oneMember(c, node, g, t);
            c.observe("member-epoch", r, k, GroupScenarios.commit(c, c.version, g, a.epoch, a.id, t, 10, "a", 0, 1));
            c.observe("greater-epoch", r, k, GroupScenarios.commit(c, c.version, g, a.epoch + 1, a.id, t, 11, null, 0));
            c.observe("unknown-member", r, k, GroupScenarios.commit(c, c.version, g, a.epoch, memberId(c, "nobody"), t, 12, null, 0));
            c.observe("admin-on-live-group", r, k, GroupScenarios.commit(c, c.version, g, -1, "", t, 13, null, 0));
            c.observe("member-id-epoch-minus-1", r, k, GroupScenarios.commit(c, c.version, g, -1, a.id, t, 14, null, 0));
            c.observe("v8-from-member", r, k, (short) 8, GroupScenarios.commit(c, (short) 8, g, a.epoch, a.id, t, 15, null, 0));
            // b joins: a keeps one partition (at its old epoch's assignment) and moves on an epoch.
            Member b = new Member(g, memberId(c, "b"), null);
            joinQuietly(c, node, b, t);
            settle(c, node, a, b);
            int kept = a.assigned.get(t).first();
            c.observe("current-epoch-after-rebalance", r, k, GroupScenarios.commit(c, c.version, g, a.epoch, a.id, t, 20, null, kept));
            c.observe("older-epoch-kept-partition", r, k, GroupScenarios.commit(c, c.version, g, a.epoch - 1, a.id, t, 21, null, kept));
            int given = b.assigned.get(t).first();
            c.observe("older-epoch-new-partition", r, k, GroupScenarios.commit(c, c.version, g, b.epoch - 1, b.id, t, 22, null, given));
            c.observe("fetch", r, ApiKeys.OFFSET_FETCH, (short) 9, GroupScenarios.fetchOffsets(c, (short) 9, g, t, 0, 1));
            leaveQuietly(c, node, a);
            leaveQuietly(c, node, b);
            c.observe("admin-on-empty-group", r, k, GroupScenarios.commit(c, c.version, g, -1, "", t, 30, "admin", 0, 1));
            c.observe("left-member-on-empty-group", r, k, GroupScenarios.commit(c, c.version, g, a.epoch, a.id, t, 31, null, 0));
            c.observe("fetch-after", r, ApiKeys.OFFSET_FETCH, (short) 9, GroupScenarios.fetchOffsets(c, (short) 9, g, t, 0, 1));
            c.observe("describe-after", r, ApiKeys.CONSUMER_GROUP_DESCRIBE, DESCRIBE, describe(g));
        }));
        // OffsetFetch v9+ names the member and its epoch; without them it is an admin's fetch.
        s.add(Scenario.of("consumer-groups.offset-fetch", ApiKeys.OFFSET_FETCH, 9, 10, c -> {
            String t = c.topic();
            c.createTopic(t, 2);
            String g = c.name("group");
            int node = prepare(c, g);
            Route r = Route.node(node);
            ApiKeys k = ApiKeys.OFFSET_FETCH;
            Member a = oneMember(c, node, g, t);
            c.call(r, ApiKeys.OFFSET_COMMIT, (short) 9, GroupScenarios.commit(c, (short) 9, g, a.epoch, a.id, t, 7, "m", 0, 1));
            OffsetFetchRequestData right = GroupScenarios.fetchOffsets(c, c.version, g, t, 0, 1);
            right.groups().get(0).setMemberId(a.id).setMemberEpoch(a.epoch);
            c.observe("member-epoch", r, k, right);
            OffsetFetchRequestData stale = GroupScenarios.fetchOffsets(c, c.version, g, t, 0, 1);
            stale.groups().get(0).setMemberId(a.id).setMemberEpoch(a.epoch + 1);
            c.observe("greater-epoch", r, k, stale);
            OffsetFetchRequestData older = GroupScenarios.fetchOffsets(c, c.version, g, t, 0, 1);
            older.groups().get(0).setMemberId(a.id).setMemberEpoch(a.epoch - 1);
            c.observe("older-epoch", r, k, older);
            OffsetFetchRequestData unknown = GroupScenarios.fetchOffsets(c, c.version, g, t, 0, 1);
            unknown.groups().get(0).setMemberId(memberId(c, "nobody")).setMemberEpoch(a.epoch);
            c.observe("unknown-member", r, k, unknown);
            OffsetFetchRequestData noEpoch = GroupScenarios.fetchOffsets(c, c.version, g, t, 0, 1);
            noEpoch.groups().get(0).setMemberId(a.id).setMemberEpoch(-1);
            c.observe("member-id-epoch-minus-1", r, k, noEpoch);
            c.observe("admin", r, k, GroupScenarios.fetchOffsets(c, c.version, g, t, 0, 1));
            OffsetFetchRequestData all = GroupScenarios.fetchOffsets(c, c.version, g, null);
            all.groups().get(0).setMemberId(a.id).setMemberEpoch(a.epoch);
            c.observe("member-epoch-all-topics", r, k, all);
        }));
    }

    static void addListAndDelete(List<Scenario> s) {
        // A stable consumer group, an empty one (its member left), a classic group with a member
        // and one with offsets only, listed with the type and state filters.
        s.add(Scenario.of("consumer-groups.list", ApiKeys.LIST_GROUPS, 0, 5, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            String stable = c.name("stable"), empty = c.name("empty"), classic = c.name("classic"), offsets = c.name("offsets");
            int ns = prepare(c, stable);
            oneMember(c, ns, stable, t);
            int ne = prepare(c, empty);
            leaveQuietly(c, ne, oneMember(c, ne, empty, t));
            classicGroup(c, classic, GroupScenarios.TYPE, t);
            GroupScenarios.commitAdmin(c, offsets, t, 1, 0);
            GroupScenarios.keepOwn(c, c.observeEveryNode("all", ApiKeys.LIST_GROUPS, new ListGroupsRequestData(), "groups"), "groups", "groupId");
            if (c.version >= 4) {
                GroupScenarios.keepOwn(c, c.observeEveryNode("states-stable", ApiKeys.LIST_GROUPS,
                    new ListGroupsRequestData().setStatesFilter(List.of("Stable")), "groups"), "groups", "groupId");
                GroupScenarios.keepOwn(c, c.observeEveryNode("states-empty", ApiKeys.LIST_GROUPS,
                    new ListGroupsRequestData().setStatesFilter(List.of("Empty")), "groups"), "groups", "groupId");
            }
            if (c.version >= 5) {
                GroupScenarios.keepOwn(c, c.observeEveryNode("types-consumer", ApiKeys.LIST_GROUPS,
                    new ListGroupsRequestData().setTypesFilter(List.of("consumer")), "groups"), "groups", "groupId");
                GroupScenarios.keepOwn(c, c.observeEveryNode("types-classic", ApiKeys.LIST_GROUPS,
                    new ListGroupsRequestData().setTypesFilter(List.of("classic")), "groups"), "groups", "groupId");
                GroupScenarios.keepOwn(c, c.observeEveryNode("types-consumer-states-stable", ApiKeys.LIST_GROUPS,
                    new ListGroupsRequestData().setTypesFilter(List.of("Consumer")).setStatesFilter(List.of("stable")), "groups"),
                    "groups", "groupId");
            }
        }));
        // DeleteGroups of a consumer group with a member (refused), and once it is empty (its
        // offsets go with it); after that the id starts a new group.
        s.add(Scenario.of("consumer-groups.delete", ApiKeys.DELETE_GROUPS, 0, 3, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            String live = c.name("live"), empty = c.name("empty");
            int nl = prepare(c, live);
            Member l = oneMember(c, nl, live, t);
            int ne = prepare(c, empty);
            Member e = oneMember(c, ne, empty, t);
            c.call(Route.node(ne), ApiKeys.OFFSET_COMMIT, (short) 9, GroupScenarios.commit(c, (short) 9, empty, e.epoch, e.id, t, 3, null, 0));
            leaveQuietly(c, ne, e);
            c.observe("live", Route.node(nl), ApiKeys.DELETE_GROUPS, GroupScenarios.deleteGroups(live));
            c.observe("empty", Route.node(ne), ApiKeys.DELETE_GROUPS, GroupScenarios.deleteGroups(empty));
            c.observe("again", Route.node(ne), ApiKeys.DELETE_GROUPS, GroupScenarios.deleteGroups(empty));
            c.observe("describe-live", Route.node(nl), ApiKeys.CONSUMER_GROUP_DESCRIBE, DESCRIBE, describe(live));
            c.observe("describe-deleted", Route.node(ne), ApiKeys.CONSUMER_GROUP_DESCRIBE, DESCRIBE, describe(empty));
            c.observe("fetch-deleted", Route.node(ne), ApiKeys.OFFSET_FETCH, (short) 9, GroupScenarios.fetchOffsets(c, (short) 9, empty, t, 0));
            Member again = new Member(empty, memberId(c, "again"), null);
            Observation rejoin = c.observe("rejoin-after-delete", Route.node(ne), ApiKeys.CONSUMER_GROUP_HEARTBEAT, HB,
                join(empty, again.id, null, t));
            again.update(c, rejoin.json());
            c.observe("describe-new", Route.node(ne), ApiKeys.CONSUMER_GROUP_DESCRIBE, DESCRIBE, describe(empty));
            leaveQuietly(c, nl, l);
        }));
    }
}
