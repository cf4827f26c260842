package differential;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.common.message.IncrementalAlterConfigsRequestData;
import org.apache.kafka.common.message.ListGroupsRequestData;
import org.apache.kafka.common.message.OffsetFetchRequestData;
import org.apache.kafka.common.message.StreamsGroupDescribeRequestData;
import org.apache.kafka.common.message.StreamsGroupHeartbeatRequestData;
import org.apache.kafka.common.message.StreamsGroupTopologyDescriptionUpdateRequestData;
import org.apache.kafka.common.protocol.ApiKeys;

/**
 * KIP-1071 streams groups: StreamsGroupHeartbeat and StreamsGroupDescribe, and the group APIs
 * as they meet such a group (OffsetCommit and OffsetFetch with member epochs, ListGroups with the
 * type filter, DescribeGroups, DeleteGroups).
 *
 * A streams member names itself (a Uuid derived from the scenario's name, the same on both
 * peers, as {@link ShareScenarios#memberId}), and its process (an id chosen here). The topology
 * is Kafka Streams' own shape: subtopology "0" reading the scenario's topic, with a changelog
 * topic when stateful. Members are set up at version 1 in the scenarios of the other APIs.
 *
 * Each group gets `streams.initial.rebalance.delay.ms=0` and `streams.assignment.interval.ms=0`
 * (group configs both brokers take) before its first heartbeat: Kafka delays a new group's first
 * assignment by 3 s and computes a group's target assignment at most once a second by default,
 * so a member that joins shortly after another would see its tasks on a later heartbeat, by
 * timing. With 0 both compute it within the heartbeat that changed the group.
 */
final class StreamsGroupScenarios {
    private StreamsGroupScenarios() {}

    static final int REBALANCE_MS = 300_000;
    static final short HB = 1;
    static final short DESCRIBE = 1;
    static final String SUBTOPOLOGY = "0";

    // ---- request builders ----------------------------------------------------------------

    static String memberId(Ctx c, String which) {
        return ShareScenarios.memberId(c, which);
    }

    /** A stateless topology: subtopology "0" reading `topics`. */
    static StreamsGroupHeartbeatRequestData.Topology topology(String... topics) {
        StreamsGroupHeartbeatRequestData.Topology t = new StreamsGroupHeartbeatRequestData.Topology().setEpoch(0);
        t.subtopologies().add(new StreamsGroupHeartbeatRequestData.Subtopology().setSubtopologyId(SUBTOPOLOGY)
            .setSourceTopics(new ArrayList<>(List.of(topics))));
        return t;
    }

    /** A stateful topology: subtopology "0" reading `topic` with a store logged to `changelog`. */
    static StreamsGroupHeartbeatRequestData.Topology stateful(String topic, String changelog) {
        StreamsGroupHeartbeatRequestData.Topology t = topology(topic);
        t.subtopologies().get(0).stateChangelogTopics().add(new StreamsGroupHeartbeatRequestData.TopicInfo().setName(changelog)
            .setTopicConfigs(new ArrayList<>(List.of(new StreamsGroupHeartbeatRequestData.KeyValue().setKey("cleanup.policy").setValue("compact")))));
        return t;
    }

    /** A heartbeat carrying only the member and its epoch (the fields a client leaves null
     *  when they did not change). */
    static StreamsGroupHeartbeatRequestData heartbeat(String group, String memberId, int epoch) {
        return new StreamsGroupHeartbeatRequestData().setGroupId(group).setMemberId(memberId).setMemberEpoch(epoch);
    }

    /** A join as Kafka Streams sends it: epoch 0, the topology, the rebalance timeout, the
     *  process, empty task lists, tags and offsets. */
    static StreamsGroupHeartbeatRequestData join(String group, String memberId, String instanceId, String process,
                                                StreamsGroupHeartbeatRequestData.Topology topology) {
        return heartbeat(group, memberId, 0).setInstanceId(instanceId).setRebalanceTimeoutMs(REBALANCE_MS).setTopology(topology)
            .setProcessId(process).setActiveTasks(new ArrayList<>()).setStandbyTasks(new ArrayList<>()).setWarmupTasks(new ArrayList<>())
            .setClientTags(new ArrayList<>()).setTaskOffsets(new ArrayList<>()).setTaskEndOffsets(new ArrayList<>());
    }

    static List<StreamsGroupHeartbeatRequestData.TaskIds> taskIds(Map<String, TreeSet<Integer>> tasks) {
        List<StreamsGroupHeartbeatRequestData.TaskIds> out = new ArrayList<>();
        for (Map.Entry<String, TreeSet<Integer>> e : tasks.entrySet()) {
            if (e.getValue().isEmpty()) continue;
            out.add(new StreamsGroupHeartbeatRequestData.TaskIds().setSubtopologyId(e.getKey()).setPartitions(new ArrayList<>(e.getValue())));
        }
        return out;
    }

    static Map<String, TreeSet<Integer>> tasks(Integer... partitions) {
        Map<String, TreeSet<Integer>> m = new TreeMap<>();
        m.put(SUBTOPOLOGY, new TreeSet<>(List.of(partitions)));
        return m;
    }

    static StreamsGroupHeartbeatRequestData.Endpoint endpoint(String host, int port) {
        return new StreamsGroupHeartbeatRequestData.Endpoint().setHost(host).setPort(port);
    }

    static StreamsGroupDescribeRequestData describe(String... groups) {
        return new StreamsGroupDescribeRequestData().setGroupIds(new ArrayList<>(List.of(groups)));
    }

    // ---- members -------------------------------------------------------------------------

    /** A member as its client knows it: id, epoch and the tasks it was given. */
    static final class Member {
        final String group;
        final String instanceId;
        final String process;
        String id;
        int epoch;
        final Map<String, TreeSet<Integer>> active = new TreeMap<>();
        final Map<String, TreeSet<Integer>> standby = new TreeMap<>();
        final Map<String, TreeSet<Integer>> warmup = new TreeMap<>();

        Member(String group, String id, String instanceId, String process) {
            this.group = group;
            this.id = id;
            this.instanceId = instanceId;
            this.process = process;
        }

        /** Takes in a heartbeat answer as the client does: epoch, and the tasks when the
         *  answer carries them. */
        void update(JsonNode a) {
            if (a == null || a.path("errorCode").asInt() != 0) return;
            epoch = a.path("memberEpoch").asInt();
            if (a.get("activeTasks") != null && !a.get("activeTasks").isNull()) {
                read(a.get("activeTasks"), active);
                read(a.get("standbyTasks"), standby);
                read(a.get("warmupTasks"), warmup);
            }
        }

        private static void read(JsonNode list, Map<String, TreeSet<Integer>> into) {
            into.clear();
            if (list == null) return;
            for (JsonNode t : list) {
                TreeSet<Integer> ps = into.computeIfAbsent(t.path("subtopologyId").asText(), k -> new TreeSet<>());
                for (JsonNode p : t.path("partitions")) ps.add(p.asInt());
            }
        }

        /** A regular heartbeat reporting the tasks the member owns. */
        StreamsGroupHeartbeatRequestData beat() {
            return heartbeat(group, id, epoch).setActiveTasks(taskIds(active)).setStandbyTasks(taskIds(standby))
                .setWarmupTasks(taskIds(warmup));
        }

        String state() {
            return epoch + " " + active + " " + standby + " " + warmup;
        }
    }

    /** Sends `r` for `m` at the version under test, compares the answer and takes it in. */
    static Observation beat(Ctx c, String label, int node, Member m, StreamsGroupHeartbeatRequestData r) throws IOException {
        Observation o = c.observe(label, Route.node(node), ApiKeys.STREAMS_GROUP_HEARTBEAT, r);
        if (m != null) m.update(o.json());
        return byEndpoint(o);
    }

    /** Orders the answer's partitions by user endpoint by endpoint (host, port): one entry per
     *  member, which each broker lists in an order of its own (Kafka from a hash map); clients
     *  union the entries of an endpoint. */
    static Observation byEndpoint(Observation o) {
        if (!(o.json().get("partitionsByUserEndpoint") instanceof com.fasterxml.jackson.databind.node.ArrayNode entries)) return o;
        List<JsonNode> sorted = new ArrayList<>();
        entries.forEach(sorted::add);
        sorted.sort(java.util.Comparator.comparing(e -> e.path("userEndpoint").path("host").asText() + ":"
            + e.path("userEndpoint").path("port").asInt()));
        entries.removeAll();
        sorted.forEach(entries::add);
        return o;
    }

    /** As {@link #beat}, at version 1 and not compared (setting up). */
    static JsonNode quietly(Ctx c, int node, Member m, StreamsGroupHeartbeatRequestData r) throws IOException {
        JsonNode a = c.call(Route.node(node), ApiKeys.STREAMS_GROUP_HEARTBEAT, HB, r).json();
        if (m != null) m.update(a);
        return a;
    }

    /** StreamsGroupDescribe of `groups`, compared, with each group's members in the order of
     *  their ids (each broker lists them in an order of its own). */
    static Observation describe(Ctx c, String label, int node, String... groups) throws IOException {
        return describe(c, label, node, describe(groups));
    }

    static Observation describe(Ctx c, String label, int node, StreamsGroupDescribeRequestData r) throws IOException {
        return describeAt(c, label, node, DESCRIBE, r);
    }

    static Observation describeAt(Ctx c, String label, int node, short version, StreamsGroupDescribeRequestData r) throws IOException {
        return ConsumerGroupScenarios.byMemberId(c.observe(label, Route.node(node), ApiKeys.STREAMS_GROUP_DESCRIBE, version, r));
    }

    // ---- set-up steps --------------------------------------------------------------------

    static final String[] CONFIGS = {"streams.initial.rebalance.delay.ms", "streams.assignment.interval.ms"};

    static IncrementalAlterConfigsRequestData configs(String group, String... more) {
        IncrementalAlterConfigsRequestData r = new IncrementalAlterConfigsRequestData();
        IncrementalAlterConfigsRequestData.AlterConfigsResource res = new IncrementalAlterConfigsRequestData.AlterConfigsResource()
            .setResourceType((byte) 32).setResourceName(group);
        for (String k : CONFIGS) {
            res.configs().add(new IncrementalAlterConfigsRequestData.AlterableConfig().setName(k).setValue("0").setConfigOperation((byte) 0));
        }
        for (int i = 0; i + 1 < more.length; i += 2) {
            res.configs().add(new IncrementalAlterConfigsRequestData.AlterableConfig().setName(more[i]).setValue(more[i + 1])
                .setConfigOperation((byte) 0));
        }
        r.resources().add(res);
        return r;
    }

    /** The group configs of the class comment for `group` (compared when `observe`), then waits
     *  until its coordinator serves it; returns the coordinator. */
    static int prepare(Ctx c, String group, boolean observe, String... more) throws IOException {
        JsonNode a = observe
            ? c.observe("group-configs", Route.ANY, ApiKeys.INCREMENTAL_ALTER_CONFIGS, (short) 1, configs(group, more)).json()
            : c.call(Route.ANY, ApiKeys.INCREMENTAL_ALTER_CONFIGS, (short) 1, configs(group, more)).json();
        if (a.path("responses").path(0).path("errorCode").asInt() != 0) {
            throw new Ctx.ScenarioFailure("IncrementalAlterConfigs streams configs of group " + group + ": " + a);
        }
        GroupScenarios.awaitGroupCoordinator(c, group);
        int node = c.coordinator((byte) 0, group);
        long deadline = System.currentTimeMillis() + Ctx.AWAIT_MS;
        while (c.peer.nodes.size() > 1) {
            JsonNode d = c.call(Route.node(node), ApiKeys.DESCRIBE_CONFIGS, (short) 4,
                ConfigScenarios.describe((short) 4, (byte) 32, group, false, false, CONFIGS)).json();
            boolean all = true;
            for (JsonNode cfg : d.path("results").path(0).path("configs")) all &= cfg.path("value").asText("").equals("0");
            if (all && d.path("results").path(0).path("configs").size() == CONFIGS.length) break;
            if (System.currentTimeMillis() > deadline) throw new Ctx.ScenarioFailure("node " + node + " does not have the config of group " + group);
            Ctx.sleep(20);
        }
        return node;
    }

    static int prepare(Ctx c, String group) throws IOException {
        return prepare(c, group, false);
    }

    /** Joins `m` (version 1, not compared). */
    static void joinQuietly(Ctx c, int node, Member m, StreamsGroupHeartbeatRequestData.Topology topology) throws IOException {
        JsonNode a = quietly(c, node, m, join(m.group, m.id, m.instanceId, m.process, topology));
        if (a.path("errorCode").asInt() != 0) throw new Ctx.ScenarioFailure("StreamsGroupHeartbeat join of " + m.group + ": " + a);
    }

    /** Heartbeats every member, each reporting what it owns, until a round changes nothing and
     *  all are at one epoch: the group is stable. Not compared. */
    static void settle(Ctx c, int node, Member... members) throws IOException {
        long deadline = System.currentTimeMillis() + Ctx.AWAIT_MS;
        while (true) {
            boolean changed = false;
            for (Member m : members) {
                String before = m.state();
                JsonNode a = quietly(c, node, m, m.beat());
                if (a.path("errorCode").asInt() != 0) throw new Ctx.ScenarioFailure("StreamsGroupHeartbeat of " + m.group + ": " + a);
                changed |= !before.equals(m.state());
            }
            boolean oneEpoch = true;
            for (Member m : members) oneEpoch &= m.epoch == members[0].epoch;
            if (!changed && oneEpoch) return;
            if (System.currentTimeMillis() > deadline) throw new Ctx.ScenarioFailure("streams group " + members[0].group + " does not settle");
        }
    }

    /** Leaves the group (epoch -1), not compared. */
    static void leaveQuietly(Ctx c, int node, Member m) throws IOException {
        JsonNode a = quietly(c, node, null, heartbeat(m.group, m.id, -1));
        if (a.path("errorCode").asInt() != 0) throw new Ctx.ScenarioFailure("StreamsGroupHeartbeat leave of " + m.group + ": " + a);
    }

    /** A stable streams group of one member (version 1) with every task of `topic`'s
     *  stateless topology. */
    static Member oneMember(Ctx c, int node, String group, String topic) throws IOException {
        Member m = new Member(group, memberId(c, group + "/a"), null, c.name("process-a"));
        joinQuietly(c, node, m, topology(topic));
        settle(c, node, m);
        return m;
    }

    /** Waits until `topic` (an internal topic a coordinator creates) serves, then a moment
     *  more: the group coordinator learns of it from the metadata log in its own time. */
    static void awaitInternalTopic(Ctx c, String topic, int partitions) throws IOException {
        long deadline = System.currentTimeMillis() + Ctx.AWAIT_MS;
        while (true) {
            org.apache.kafka.common.message.MetadataRequestData req = new org.apache.kafka.common.message.MetadataRequestData()
                .setAllowAutoTopicCreation(false);
            req.topics().add(new org.apache.kafka.common.message.MetadataRequestData.MetadataRequestTopic().setName(topic));
            JsonNode m = c.call(Route.ANY, ApiKeys.METADATA, (short) 12, req).json();
            if (m.path("topics").path(0).path("errorCode").asInt() == 0) break;
            if (System.currentTimeMillis() > deadline) throw new Ctx.ScenarioFailure("internal topic " + topic + " not created");
            Ctx.sleep(50);
        }
        c.awaitTopic(topic, partitions);
        Ctx.sleep(500);
    }

    // ---- scenarios -----------------------------------------------------------------------

    static void add(List<Scenario> s) {
        addHeartbeat(s);
        addInvalid(s);
        addMissingTopics(s);
        addStatic(s);
        addNotAStreamsGroup(s);
        addDescribe(s);
        addOtherApis(s);
    }

    /** The two-member sequence of `rebalance` and `stateful`: a joins alone and gets every task;
     *  b (another process) joins and waits while a, told to give one up, still owns it; a
     *  revokes it and b gets it; fenced epochs (greater; smaller with and without tasks); b
     *  leaves and a gets everything again at a new epoch, after which the epoch two back is
     *  fenced; a leaves. Described after each phase. */
    static void twoMembers(Ctx c, String t, String g, int node, Member a, Member b, StreamsGroupHeartbeatRequestData.Topology topology,
                           boolean afterJoin) throws IOException {
        if (afterJoin) beat(c, "a-heartbeat", node, a, a.beat());
        describe(c, "describe-a-joined", node, g);
        beat(c, "b-join", node, b, join(g, b.id, null, b.process, topology).setUserEndpoint(endpoint("host-b", 8081)));
        describe(c, "describe-b-joined", node, g);
        // a still reports both tasks: it is told which one to keep.
        beat(c, "a-told-to-revoke", node, a, heartbeat(g, a.id, a.epoch).setActiveTasks(taskIds(tasks(0, 1)))
            .setStandbyTasks(new ArrayList<>()).setWarmupTasks(new ArrayList<>()));
        beat(c, "b-while-a-revokes", node, b, b.beat());
        describe(c, "describe-revoking", node, g);
        beat(c, "a-revoked", node, a, a.beat());
        beat(c, "b-gets-task", node, b, b.beat());
        beat(c, "a-stable", node, a, a.beat());
        beat(c, "b-stable", node, b, b.beat());
        describe(c, "describe-stable", node, g);
        int epoch = a.epoch;
        beat(c, "a-epoch-greater", node, null, a.beat().setMemberEpoch(epoch + 1));
        beat(c, "a-previous-epoch-owned", node, null, a.beat().setMemberEpoch(epoch - 1));
        beat(c, "a-previous-epoch-null-tasks", node, null, heartbeat(g, a.id, epoch - 1));
        beat(c, "b-leave", node, null, heartbeat(g, b.id, -1));
        describe(c, "describe-b-left", node, g);
        beat(c, "a-after-b-left", node, a, a.beat());
        beat(c, "a-two-epochs-back", node, null, heartbeat(g, a.id, epoch - 1).setActiveTasks(taskIds(tasks(0)))
            .setStandbyTasks(new ArrayList<>()).setWarmupTasks(new ArrayList<>()));
        beat(c, "b-after-leaving", node, null, heartbeat(g, b.id, epoch));
        beat(c, "unknown-member", node, null, heartbeat(g, memberId(c, "nobody"), a.epoch));
        beat(c, "unknown-member-leave", node, null, heartbeat(g, memberId(c, "nobody"), -1));
        describe(c, "describe-end", node, g);
        beat(c, "a-leave", node, null, heartbeat(g, a.id, -1));
        describe(c, "describe-empty", node, g);
    }

    static void addHeartbeat(List<Scenario> s) {
        s.add(Scenario.of("streams-groups.heartbeat.rebalance", ApiKeys.STREAMS_GROUP_HEARTBEAT, 0, 1, c -> {
            String t = c.topic();
            c.createTopic(t, 2);
            String g = c.name("group");
            int node = prepare(c, g, true);
            Member a = new Member(g, memberId(c, "a"), null, c.name("process-a"));
            Member b = new Member(g, memberId(c, "b"), null, c.name("process-b"));
            StreamsGroupHeartbeatRequestData.Topology topology = topology(t);
            beat(c, "a-join", node, a, join(g, a.id, null, a.process, topology).setUserEndpoint(endpoint("host-a", 8080)));
            twoMembers(c, t, g, node, a, b, topology, true);
        }));
        // As above with a store: the changelog topic is missing when a joins (the coordinator
        // creates it, MISSING_INTERNAL_TOPICS meanwhile, no tasks); once it serves, the next
        // heartbeat brings the tasks.
        s.add(Scenario.of("streams-groups.heartbeat.stateful", ApiKeys.STREAMS_GROUP_HEARTBEAT, 0, 1, c -> {
            String t = c.topic();
            c.createTopic(t, 2);
            String g = c.name("group");
            String changelog = c.name("store-changelog");
            int node = prepare(c, g);
            Member a = new Member(g, memberId(c, "a"), null, c.name("process-a"));
            Member b = new Member(g, memberId(c, "b"), null, c.name("process-b"));
            StreamsGroupHeartbeatRequestData.Topology topology = stateful(t, changelog);
            beat(c, "a-join", node, a, join(g, a.id, null, a.process, topology).setUserEndpoint(endpoint("host-a", 8080)));
            describe(c, "describe-missing-internal-topics", node, g);
            awaitInternalTopic(c, changelog, 2);
            beat(c, "a-heartbeat-topics-created", node, a, a.beat());
            c.observe("changelog-topic", Route.ANY, ApiKeys.DESCRIBE_CONFIGS, (short) 4,
                ConfigScenarios.describe((short) 4, (byte) 2, changelog, false, false, "cleanup.policy"));
            twoMembers(c, t, g, node, a, b, topology, true);
        }));
        // A stateful topology with a standby replica per task (streams.num.standby.replicas=1):
        // a alone has every task active and no standby (none on another process); b of another
        // process joins and gets standbys, then active tasks; each reports task offsets, which
        // the describe shows; b leaves.
        s.add(Scenario.of("streams-groups.heartbeat.standby", ApiKeys.STREAMS_GROUP_HEARTBEAT, 0, 1, c -> {
            String t = c.topic();
            c.createTopic(t, 2);
            String g = c.name("group");
            String changelog = c.name("store-changelog");
            int node = prepare(c, g, true, "streams.num.standby.replicas", "1");
            // The group configs of warm-up tasks (Kafka's assignment refinement), to a group of
            // their own.
            IncrementalAlterConfigsRequestData warmup = new IncrementalAlterConfigsRequestData();
            for (String[] kv : new String[][] {{"streams.num.warmup.replicas", "1"}, {"streams.acceptable.recovery.lag", "0"},
                {"streams.task.offset.interval.ms", "60000"}}) {
                IncrementalAlterConfigsRequestData.AlterConfigsResource res = new IncrementalAlterConfigsRequestData.AlterConfigsResource()
                    .setResourceType((byte) 32).setResourceName(c.name("warmup-" + kv[0]));
                res.configs().add(new IncrementalAlterConfigsRequestData.AlterableConfig().setName(kv[0]).setValue(kv[1])
                    .setConfigOperation((byte) 0));
                warmup.resources().add(res);
            }
            c.observe("warmup-group-configs", Route.ANY, ApiKeys.INCREMENTAL_ALTER_CONFIGS, (short) 1, warmup);
            Member a = new Member(g, memberId(c, "a"), null, c.name("process-a"));
            Member b = new Member(g, memberId(c, "b"), null, c.name("process-b"));
            StreamsGroupHeartbeatRequestData.Topology topology = stateful(t, changelog);
            beat(c, "a-join", node, a, join(g, a.id, null, a.process, topology));
            awaitInternalTopic(c, changelog, 2);
            beat(c, "a-heartbeat-topics-created", node, a, a.beat());
            beat(c, "a-stable", node, a, a.beat());
            beat(c, "b-join", node, b, join(g, b.id, null, b.process, topology));
            for (int round = 1; round <= 3; round++) {
                beat(c, "a-round-" + round, node, a, a.beat().setTaskOffsets(offsets(a, 10)).setTaskEndOffsets(offsets(a, 20)));
                beat(c, "b-round-" + round, node, b, b.beat().setTaskOffsets(offsets(b, 5)).setTaskEndOffsets(offsets(b, 20)));
            }
            describe(c, "describe", node, g);
            beat(c, "b-leave", node, null, heartbeat(g, b.id, -1));
            beat(c, "a-after-b-left", node, a, a.beat());
            describe(c, "describe-b-left", node, g);
        }));
    }

    /** The task offsets a member reports: `offset` for each task it holds (active, standby or
     *  warm-up). */
    static List<StreamsGroupHeartbeatRequestData.TaskOffset> offsets(Member m, long offset) {
        List<StreamsGroupHeartbeatRequestData.TaskOffset> out = new ArrayList<>();
        TreeMap<String, TreeSet<Integer>> all = new TreeMap<>();
        for (Map<String, TreeSet<Integer>> tasks : List.of(m.active, m.standby, m.warmup)) {
            tasks.forEach((s, ps) -> all.computeIfAbsent(s, k -> new TreeSet<>()).addAll(ps));
        }
        all.forEach((s, ps) -> ps.forEach(p -> out.add(new StreamsGroupHeartbeatRequestData.TaskOffset().setSubtopologyId(s)
            .setPartition(p).setOffset(offset))));
        return out;
    }

    static void addInvalid(List<Scenario> s) {
        // Each request Kafka refuses before it reaches the group, to a group that does not exist;
        // none may leave a group behind. Then an unknown member of a live group, and a non-zero
        // epoch to a group that does not exist.
        s.add(Scenario.of("streams-groups.heartbeat.invalid", ApiKeys.STREAMS_GROUP_HEARTBEAT, 0, 1, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            String g = c.name("group");
            int node = prepare(c, g);
            String m = memberId(c, "m");
            String p = c.name("process");
            Route r = Route.node(node);
            ApiKeys k = ApiKeys.STREAMS_GROUP_HEARTBEAT;
            StreamsGroupHeartbeatRequestData.Topology topo = topology(t);
            c.observe("join-empty-member-id", r, k, join(g, "", null, p, topo));
            c.observe("heartbeat-empty-member-id", r, k, heartbeat(g, "", 1));
            c.observe("empty-group-id", Route.ANY, k, join("", m, null, p, topo));
            c.observe("empty-instance-id", r, k, join(g, m, "", p, topo));
            c.observe("empty-rack-id", r, k, join(g, m, null, p, topo).setRackId(""));
            c.observe("join-no-rebalance-timeout", r, k, join(g, m, null, p, topo).setRebalanceTimeoutMs(-1));
            c.observe("join-active-tasks", r, k, join(g, m, null, p, topo).setActiveTasks(taskIds(tasks(0))));
            c.observe("join-standby-tasks", r, k, join(g, m, null, p, topo).setStandbyTasks(taskIds(tasks(0))));
            c.observe("join-warmup-tasks", r, k, join(g, m, null, p, topo).setWarmupTasks(taskIds(tasks(0))));
            c.observe("join-no-topology", r, k, join(g, m, null, p, null));
            StreamsGroupHeartbeatRequestData.Topology counted = stateful(t, c.name("store-changelog"));
            counted.subtopologies().get(0).stateChangelogTopics().get(0).setPartitions(3);
            c.observe("changelog-partition-count", r, k, join(g, m, null, p, counted));
            c.observe("topology-on-epoch-1", r, k, heartbeat(g, m, 1).setTopology(topology(t)));
            c.observe("active-tasks-only", r, k, heartbeat(g, m, 1).setActiveTasks(new ArrayList<>()));
            c.observe("standby-warmup-without-active", r, k, heartbeat(g, m, 1).setStandbyTasks(new ArrayList<>())
                .setWarmupTasks(new ArrayList<>()));
            // A join's task lists must be there and empty: null ones are refused too.
            c.observe("join-tasks-null", r, k, join(g, m, null, p, topo).setActiveTasks(null).setStandbyTasks(null).setWarmupTasks(null));
            c.observe("static-leave-without-instance-id", r, k, heartbeat(g, m, -2));
            c.observe("epoch-minus-3", r, k, heartbeat(g, m, -3));
            StreamsGroupHeartbeatRequestData.Topology regex = topology();
            regex.subtopologies().get(0).setSourceTopicRegex(new ArrayList<>(List.of(t + ".*")));
            c.observe("source-topic-regex", r, k, join(g, m, null, p, regex));
            c.observe("unknown-group-epoch-1", r, k, heartbeat(g, m, 1));
            c.observe("unknown-group-leave", r, k, heartbeat(g, m, -1));
            // Whatever was refused above, the group must not exist now: the unknown-group
            // heartbeats are GROUP_ID_NOT_FOUND, and so is this.
            describe(c, "describe-after", node, g);
            // An unknown member of a live group.
            String live = c.name("live");
            int nl = prepare(c, live);
            Member a = oneMember(c, nl, live, t);
            c.observe("unknown-member", Route.node(nl), k, heartbeat(live, memberId(c, "nobody"), a.epoch));
            c.observe("unknown-member-join-epoch-1", Route.node(nl), k, heartbeat(live, memberId(c, "nobody"), 1)
                .setActiveTasks(new ArrayList<>()).setStandbyTasks(new ArrayList<>()).setWarmupTasks(new ArrayList<>()));
            // New members with a topology of a newer epoch, and with another topology at the
            // group's epoch.
            StreamsGroupHeartbeatRequestData.Topology next = topology(t);
            next.setEpoch(1);
            c.observe("join-newer-topology-epoch", Route.node(nl), k, join(live, memberId(c, "newer"), null, p, next));
            StreamsGroupHeartbeatRequestData.Topology other = topology(t);
            other.subtopologies().get(0).setSubtopologyId("1");
            c.observe("join-other-topology-same-epoch", Route.node(nl), k, join(live, memberId(c, "other"), null, p, other));
            describe(c, "describe-live", nl, live);
            leaveQuietly(c, nl, a);
        }));
    }

    static void addMissingTopics(List<Scenario> s) {
        // The source topic does not exist: MISSING_SOURCE_TOPICS, no tasks; it is created and the
        // next heartbeat brings them. Then a topology of two copartitioned source topics of
        // different partition counts: INCORRECTLY_PARTITIONED_TOPICS.
        s.add(Scenario.of("streams-groups.missing-source-topics", ApiKeys.STREAMS_GROUP_HEARTBEAT, 0, 1, c -> {
            String t = c.name("later");
            String g = c.name("group");
            int node = prepare(c, g);
            Member a = new Member(g, memberId(c, "a"), null, c.name("process-a"));
            beat(c, "join-source-missing", node, a, join(g, a.id, null, a.process, topology(t)));
            beat(c, "heartbeat-source-missing", node, a, a.beat());
            describe(c, "describe-source-missing", node, g);
            c.createTopic(t, 3);
            Ctx.sleep(500);
            beat(c, "heartbeat-source-created", node, a, a.beat());
            beat(c, "heartbeat-stable", node, a, a.beat());
            describe(c, "describe-source-created", node, g);
            beat(c, "leave", node, null, heartbeat(g, a.id, -1));
            String one = c.name("one"), two = c.name("two");
            c.createTopic(one, 1);
            c.createTopic(two, 2);
            String gc = c.name("copartitioned");
            int nc = prepare(c, gc);
            StreamsGroupHeartbeatRequestData.Topology co = topology(one, two);
            co.subtopologies().get(0).copartitionGroups().add(new StreamsGroupHeartbeatRequestData.CopartitionGroup()
                .setSourceTopics(new ArrayList<>(List.of((short) 0, (short) 1))));
            Member x = new Member(gc, memberId(c, "x"), null, c.name("process-x"));
            beat(c, "join-incorrectly-partitioned", nc, x, join(gc, x.id, null, x.process, co));
            beat(c, "heartbeat-incorrectly-partitioned", nc, x, x.beat());
            describe(c, "describe-incorrectly-partitioned", nc, gc);
            beat(c, "leave-copartitioned", nc, null, heartbeat(gc, x.id, -1));
        }));
    }

    static void addStatic(List<Scenario> s) {
        // A static member (instance id) leaves with epoch -2, meaning it will be back: it keeps
        // its place and tasks; a new client with the same instance id and a new member id takes
        // them over; the old member id is gone; a second client with the instance id is refused
        // while the first holds it.
        s.add(Scenario.of("streams-groups.heartbeat.static-member", ApiKeys.STREAMS_GROUP_HEARTBEAT, 0, 1, c -> {
            String t = c.topic();
            c.createTopic(t, 2);
            String g = c.name("group");
            String instance = c.name("instance");
            int node = prepare(c, g);
            Member first = new Member(g, memberId(c, "first"), instance, c.name("process-1"));
            beat(c, "join", node, first, join(g, first.id, instance, first.process, topology(t)));
            beat(c, "heartbeat", node, first, first.beat());
            beat(c, "leave-static", node, null, heartbeat(g, first.id, -2).setInstanceId(instance));
            describe(c, "describe-after-static-leave", node, g);
            Member second = new Member(g, memberId(c, "second"), instance, c.name("process-2"));
            beat(c, "rejoin-new-member-id", node, second, join(g, second.id, instance, second.process, topology(t)));
            beat(c, "old-member-id", node, null, first.beat());
            beat(c, "second-heartbeat", node, second, second.beat());
            Member third = new Member(g, memberId(c, "third"), instance, c.name("process-3"));
            beat(c, "other-client-same-instance", node, null, join(g, third.id, instance, third.process, topology(t)));
            beat(c, "static-leave-other-instance", node, null, heartbeat(g, second.id, -2).setInstanceId(c.name("other-instance")));
            describe(c, "describe", node, g);
            beat(c, "leave", node, null, heartbeat(g, second.id, -1).setInstanceId(instance));
            describe(c, "describe-after-leave", node, g);
        }));
    }

    static void addNotAStreamsGroup(List<Scenario> s) {
        // Streams heartbeats to a consumer group's id and to a classic group's (one with a
        // member, one with offsets only), and a consumer heartbeat to a streams group's.
        s.add(Scenario.of("streams-groups.heartbeat.not-a-streams-group", ApiKeys.STREAMS_GROUP_HEARTBEAT, 0, 1, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            String consumer = c.name("consumer"), classic = c.name("classic"), offsets = c.name("offsets"), streams = c.name("streams");
            String m = memberId(c, "m"), p = c.name("process");
            ApiKeys k = ApiKeys.STREAMS_GROUP_HEARTBEAT;
            int nc = ConsumerGroupScenarios.prepare(c, consumer);
            ConsumerGroupScenarios.Member cm = ConsumerGroupScenarios.oneMember(c, nc, consumer, t);
            c.observe("consumer-group-join", Route.node(nc), k, join(consumer, m, null, p, topology(t)));
            c.observe("consumer-group-heartbeat", Route.node(nc), k, heartbeat(consumer, m, 1));
            c.observe("consumer-group-member-heartbeat", Route.node(nc), k, heartbeat(consumer, cm.id, cm.epoch));
            int nk = prepare(c, classic);
            ConsumerGroupScenarios.classicGroup(c, classic, GroupScenarios.TYPE, t);
            c.observe("classic-group-join", Route.node(nk), k, join(classic, m, null, p, topology(t)));
            c.observe("classic-group-heartbeat", Route.node(nk), k, heartbeat(classic, m, 1));
            int no = prepare(c, offsets);
            GroupScenarios.commitAdmin(c, offsets, t, 5, 0);
            Member o = new Member(offsets, m, null, p);
            beat(c, "offsets-only-group-join", no, o, join(offsets, m, null, p, topology(t)));
            describe(c, "offsets-only-group-describe", no, offsets);
            c.observe("offsets-only-group-offsets", Route.node(no), ApiKeys.OFFSET_FETCH, (short) 9,
                GroupScenarios.fetchOffsets(c, (short) 9, offsets, t, 0));
            int ns = prepare(c, streams);
            Member sm = oneMember(c, ns, streams, t);
            c.observe("consumer-heartbeat-to-streams-group", Route.node(ns), ApiKeys.CONSUMER_GROUP_HEARTBEAT, (short) 1,
                ConsumerGroupScenarios.join(streams, memberId(c, "consumer-member"), null, t));
            c.observe("consumer-heartbeat-streams-member", Route.node(ns), ApiKeys.CONSUMER_GROUP_HEARTBEAT, (short) 1,
                ConsumerGroupScenarios.heartbeat(streams, sm.id, sm.epoch));
            c.observe("classic-join-to-streams-group", Route.node(ns), ApiKeys.JOIN_GROUP, (short) 9,
                GroupScenarios.join((short) 9, streams, "", c.name("classic-instance"), GroupScenarios.TYPE, GroupScenarios.PROTOCOL,
                    GroupScenarios.subscription(t), GroupScenarios.SESSION_MS));
            c.observe("consumer-describe-of-streams-group", Route.node(ns), ApiKeys.CONSUMER_GROUP_DESCRIBE, (short) 1,
                ConsumerGroupScenarios.describe(streams));
            leaveQuietly(c, ns, sm);
            ConsumerGroupScenarios.leaveQuietly(c, nc, cm);
        }));
    }

    static void addDescribe(List<Scenario> s) {
        // A stable group of two members (one static, with a rack, tags and an endpoint), with and
        // without the authorized operations; then ids that are not streams groups, alone and
        // together.
        s.add(Scenario.of("streams-groups.describe", ApiKeys.STREAMS_GROUP_DESCRIBE, 0, 1, c -> {
            String t = c.topic();
            c.createTopic(t, 3);
            String g = c.name("group"), missing = c.name("missing"), classic = c.name("classic"), consumer = c.name("consumer");
            int node = prepare(c, g);
            Member a = new Member(g, memberId(c, "a"), c.name("instance-a"), c.name("process-a"));
            Member b = new Member(g, memberId(c, "b"), null, c.name("process-b"));
            quietly(c, node, a, join(g, a.id, a.instanceId, a.process, topology(t)).setRackId("rack-a")
                .setUserEndpoint(endpoint("host-a", 9090))
                .setClientTags(new ArrayList<>(List.of(new StreamsGroupHeartbeatRequestData.KeyValue().setKey("zone").setValue("z1")))));
            settle(c, node, a);
            joinQuietly(c, node, b, topology(t));
            settle(c, node, a, b);
            describeAt(c, "stable", node, c.version, describe(g));
            describeAt(c, "stable-with-operations", node, c.version, describe(g).setIncludeAuthorizedOperations(true));
            leaveQuietly(c, node, a);
            leaveQuietly(c, node, b);
            describeAt(c, "empty", node, c.version, describe(g));
            prepare(c, missing);
            describeAt(c, "unknown", c.coordinator((byte) 0, missing), c.version, describe(missing));
            int nk = prepare(c, classic);
            ConsumerGroupScenarios.classicGroup(c, classic, GroupScenarios.TYPE, t);
            describeAt(c, "classic", nk, c.version, describe(classic));
            int nc = ConsumerGroupScenarios.prepare(c, consumer);
            ConsumerGroupScenarios.Member cm = ConsumerGroupScenarios.oneMember(c, nc, consumer, t);
            describeAt(c, "consumer", nc, c.version, describe(consumer));
            c.observe("empty-id", Route.ANY, ApiKeys.STREAMS_GROUP_DESCRIBE, describe(""));
            // In a cluster the groups have coordinators of their own: one node's answer names
            // some as NOT_COORDINATOR, which the comparison reduces.
            describeAt(c, "several", node, c.version, describe(g, missing, classic, consumer));
            c.observe("none", Route.node(node), ApiKeys.STREAMS_GROUP_DESCRIBE, describe());
            ConsumerGroupScenarios.leaveQuietly(c, nc, cm);
        }));
        // A member pushes its topology's description (KIP-1331) to a broker without a
        // description plugin: both answer that none is configured.
        s.add(Scenario.of("streams-groups.topology-description-update", ApiKeys.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE, 0, 0, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            String g = c.name("group");
            int node = prepare(c, g);
            Member a = oneMember(c, node, g, t);
            StreamsGroupTopologyDescriptionUpdateRequestData r = new StreamsGroupTopologyDescriptionUpdateRequestData()
                .setGroupId(g).setMemberId(a.id).setTopologyEpoch(0);
            c.observe("push", Route.node(node), ApiKeys.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE, r);
            leaveQuietly(c, node, a);
        }));
    }

    static void addOtherApis(List<Scenario> s) {
        // ListGroups with the type filter "streams" (and every type, and the state filter).
        s.add(Scenario.of("streams-groups.list", ApiKeys.LIST_GROUPS, 5, 5, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            String stable = c.name("stable"), empty = c.name("empty"), consumer = c.name("consumer");
            int ns = prepare(c, stable);
            Member sm = oneMember(c, ns, stable, t);
            int ne = prepare(c, empty);
            leaveQuietly(c, ne, oneMember(c, ne, empty, t));
            int nc = ConsumerGroupScenarios.prepare(c, consumer);
            ConsumerGroupScenarios.Member cm = ConsumerGroupScenarios.oneMember(c, nc, consumer, t);
            GroupScenarios.keepOwn(c, c.observeEveryNode("all", ApiKeys.LIST_GROUPS, new ListGroupsRequestData(), "groups"), "groups", "groupId");
            GroupScenarios.keepOwn(c, c.observeEveryNode("types-streams", ApiKeys.LIST_GROUPS,
                new ListGroupsRequestData().setTypesFilter(List.of("streams")), "groups"), "groups", "groupId");
            GroupScenarios.keepOwn(c, c.observeEveryNode("types-streams-upper-case", ApiKeys.LIST_GROUPS,
                new ListGroupsRequestData().setTypesFilter(List.of("Streams")), "groups"), "groups", "groupId");
            GroupScenarios.keepOwn(c, c.observeEveryNode("types-streams-states-stable", ApiKeys.LIST_GROUPS,
                new ListGroupsRequestData().setTypesFilter(List.of("streams")).setStatesFilter(List.of("Stable")), "groups"), "groups", "groupId");
            GroupScenarios.keepOwn(c, c.observeEveryNode("types-streams-consumer", ApiKeys.LIST_GROUPS,
                new ListGroupsRequestData().setTypesFilter(List.of("streams", "consumer")), "groups"), "groups", "groupId");
            GroupScenarios.keepOwn(c, c.observeEveryNode("states-empty", ApiKeys.LIST_GROUPS,
                new ListGroupsRequestData().setStatesFilter(List.of("Empty")), "groups"), "groups", "groupId");
            leaveQuietly(c, ns, sm);
            ConsumerGroupScenarios.leaveQuietly(c, nc, cm);
        }));
        // DescribeGroups (the classic API) of a streams group, stable and empty.
        s.add(Scenario.of("streams-groups.describe-groups", ApiKeys.DESCRIBE_GROUPS, 5, 6, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            String g = c.name("group");
            int node = prepare(c, g);
            Member a = oneMember(c, node, g, t);
            c.observe("stable", Route.node(node), ApiKeys.DESCRIBE_GROUPS, GroupScenarios.describe(g));
            leaveQuietly(c, node, a);
            c.observe("empty", Route.node(node), ApiKeys.DESCRIBE_GROUPS, GroupScenarios.describe(g));
        }));
        // Commits of a streams group's members carry the member epoch (v9+): the current one, a
        // greater one, an unknown member, an admin commit to the live group, v8; after a second
        // member took a task, older epochs (checked per task); an admin commit once the group is
        // empty.
        s.add(Scenario.of("streams-groups.offset-commit", ApiKeys.OFFSET_COMMIT, 9, 10, c -> {
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
            // b joins: a keeps one task and moves on an epoch.
            Member b = new Member(g, memberId(c, "b"), null, c.name("process-b"));
            joinQuietly(c, node, b, topology(t));
            settle(c, node, a, b);
            int kept = a.active.get(SUBTOPOLOGY).first(), given = b.active.get(SUBTOPOLOGY).first();
            c.observe("current-epoch-after-rebalance", r, k, GroupScenarios.commit(c, c.version, g, a.epoch, a.id, t, 20, null, kept));
            // An older epoch: for the task a has held since then, for the one it gave away, and
            // b's for the task it got at its current epoch.
            c.observe("older-epoch-kept-task", r, k, GroupScenarios.commit(c, c.version, g, a.epoch - 1, a.id, t, 21, null, kept));
            c.observe("older-epoch-given-task", r, k, GroupScenarios.commit(c, c.version, g, a.epoch - 1, a.id, t, 22, null, given));
            c.observe("older-epoch-new-task", r, k, GroupScenarios.commit(c, c.version, g, b.epoch - 1, b.id, t, 23, null, given));
            c.observe("fetch", r, ApiKeys.OFFSET_FETCH, (short) 9, GroupScenarios.fetchOffsets(c, (short) 9, g, t, 0, 1));
            leaveQuietly(c, node, a);
            leaveQuietly(c, node, b);
            c.observe("admin-on-empty-group", r, k, GroupScenarios.commit(c, c.version, g, -1, "", t, 30, "admin", 0, 1));
            c.observe("left-member-on-empty-group", r, k, GroupScenarios.commit(c, c.version, g, a.epoch, a.id, t, 31, null, 0));
            c.observe("fetch-after", r, ApiKeys.OFFSET_FETCH, (short) 9, GroupScenarios.fetchOffsets(c, (short) 9, g, t, 0, 1));
        }));
        // OffsetFetch v9+ names the member and its epoch; without them it is an admin's fetch.
        s.add(Scenario.of("streams-groups.offset-fetch", ApiKeys.OFFSET_FETCH, 9, 10, c -> {
            String t = c.topic();
            c.createTopic(t, 2);
            String g = c.name("group");
            int node = prepare(c, g);
            Route r = Route.node(node);
            ApiKeys k = ApiKeys.OFFSET_FETCH;
            Member a = oneMember(c, node, g, t);
            c.call(r, ApiKeys.OFFSET_COMMIT, (short) 9, GroupScenarios.commit(c, (short) 9, g, a.epoch, a.id, t, 7, "m", 0, 1));
            c.observe("member-epoch", r, k, fetch(c, g, t, a.id, a.epoch));
            c.observe("greater-epoch", r, k, fetch(c, g, t, a.id, a.epoch + 1));
            c.observe("older-epoch", r, k, fetch(c, g, t, a.id, a.epoch - 1));
            c.observe("unknown-member", r, k, fetch(c, g, t, memberId(c, "nobody"), a.epoch));
            c.observe("member-id-epoch-minus-1", r, k, fetch(c, g, t, a.id, -1));
            c.observe("admin", r, k, GroupScenarios.fetchOffsets(c, c.version, g, t, 0, 1));
            OffsetFetchRequestData all = GroupScenarios.fetchOffsets(c, c.version, g, null);
            all.groups().get(0).setMemberId(a.id).setMemberEpoch(a.epoch);
            c.observe("member-epoch-all-topics", r, k, all);
            leaveQuietly(c, node, a);
        }));
        // DeleteGroups of a streams group with a member (refused), and once it is empty (its
        // offsets go with it); after that the id starts a new group.
        s.add(Scenario.of("streams-groups.delete", ApiKeys.DELETE_GROUPS, 0, 3, c -> {
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
            describe(c, "describe-live", nl, live);
            describe(c, "describe-deleted", ne, empty);
            c.observe("fetch-deleted", Route.node(ne), ApiKeys.OFFSET_FETCH, (short) 9, GroupScenarios.fetchOffsets(c, (short) 9, empty, t, 0));
            Member again = new Member(empty, memberId(c, "again"), null, c.name("process-again"));
            beat(c, "rejoin-after-delete", ne, again, join(empty, again.id, null, again.process, topology(t)));
            describe(c, "describe-new", ne, empty);
            leaveQuietly(c, nl, l);
            leaveQuietly(c, ne, again);
        }));
    }

    static OffsetFetchRequestData fetch(Ctx c, String g, String t, String member, int epoch) {
        OffsetFetchRequestData r = GroupScenarios.fetchOffsets(c, c.version, g, t, 0, 1);
        r.groups().get(0).setMemberId(member).setMemberEpoch(epoch);
        return r;
    }
}
