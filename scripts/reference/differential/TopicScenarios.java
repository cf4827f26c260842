package differential;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.AlterPartitionReassignmentsRequestData;
import org.apache.kafka.common.message.AlterReplicaLogDirsRequestData;
import org.apache.kafka.common.message.CreatePartitionsRequestData;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.DeleteRecordsRequestData;
import org.apache.kafka.common.message.DeleteTopicsRequestData;
import org.apache.kafka.common.message.DescribeLogDirsRequestData;
import org.apache.kafka.common.message.DescribeLogDirsResponseData;
import org.apache.kafka.common.message.DescribeProducersRequestData;
import org.apache.kafka.common.message.ElectLeadersRequestData;
import org.apache.kafka.common.message.InitProducerIdResponseData;
import org.apache.kafka.common.message.ListPartitionReassignmentsRequestData;
import org.apache.kafka.common.message.MetadataResponseData;
import org.apache.kafka.common.message.OffsetForLeaderEpochRequestData;
import org.apache.kafka.common.protocol.ApiKeys;

/**
 * Topic administration: creating and deleting topics and partitions, deleting records, leader
 * epochs, elections, reassignments, log directories and producer state, with good and bad input.
 */
final class TopicScenarios {
    private TopicScenarios() {}

    static final int TIMEOUT_MS = 30_000;

    // ---- request builders --------------------------------------------------------------------

    static CreateTopicsRequestData.CreatableTopic creatable(String name, int partitions, int replicationFactor, String... configs) {
        CreateTopicsRequestData.CreatableTopic t = new CreateTopicsRequestData.CreatableTopic()
            .setName(name).setNumPartitions(partitions).setReplicationFactor((short) replicationFactor);
        for (int i = 0; i + 1 < configs.length; i += 2) {
            t.configs().add(new CreateTopicsRequestData.CreatableTopicConfig().setName(configs[i]).setValue(configs[i + 1]));
        }
        return t;
    }

    static CreateTopicsRequestData createTopics(CreateTopicsRequestData.CreatableTopic... topics) {
        CreateTopicsRequestData req = new CreateTopicsRequestData().setTimeoutMs(TIMEOUT_MS);
        for (CreateTopicsRequestData.CreatableTopic t : topics) req.topics().add(t);
        return req;
    }

    static CreateTopicsRequestData.CreatableReplicaAssignment assignment(int partition, Integer... brokers) {
        return new CreateTopicsRequestData.CreatableReplicaAssignment().setPartitionIndex(partition)
            .setBrokerIds(new ArrayList<>(Arrays.asList(brokers)));
    }

    /** DeleteTopics by name: TopicNames before v6, Topics from v6. */
    static DeleteTopicsRequestData deleteTopics(short v, String... names) {
        DeleteTopicsRequestData req = new DeleteTopicsRequestData().setTimeoutMs(TIMEOUT_MS);
        for (String n : names) {
            if (v >= 6) req.topics().add(new DeleteTopicsRequestData.DeleteTopicState().setName(n));
            else req.topicNames().add(n);
        }
        return req;
    }

    static CreatePartitionsRequestData.CreatePartitionsTopic grow(String name, int count) {
        return new CreatePartitionsRequestData.CreatePartitionsTopic().setName(name).setCount(count).setAssignments(null);
    }

    static CreatePartitionsRequestData createPartitions(boolean validateOnly, CreatePartitionsRequestData.CreatePartitionsTopic... topics) {
        CreatePartitionsRequestData req = new CreatePartitionsRequestData().setTimeoutMs(TIMEOUT_MS).setValidateOnly(validateOnly);
        for (CreatePartitionsRequestData.CreatePartitionsTopic t : topics) req.topics().add(t);
        return req;
    }

    static CreatePartitionsRequestData.CreatePartitionsAssignment brokers(Integer... ids) {
        return new CreatePartitionsRequestData.CreatePartitionsAssignment().setBrokerIds(new ArrayList<>(Arrays.asList(ids)));
    }

    static DeleteRecordsRequestData deleteRecords(String topic, int partition, long offset) {
        DeleteRecordsRequestData req = new DeleteRecordsRequestData().setTimeoutMs(TIMEOUT_MS);
        req.topics().add(new DeleteRecordsRequestData.DeleteRecordsTopic().setName(topic).setPartitions(new ArrayList<>(List.of(
            new DeleteRecordsRequestData.DeleteRecordsPartition().setPartitionIndex(partition).setOffset(offset)))));
        return req;
    }

    static OffsetForLeaderEpochRequestData offsetForLeaderEpoch(short v, String topic, int partition, int currentLeaderEpoch, int leaderEpoch) {
        OffsetForLeaderEpochRequestData req = new OffsetForLeaderEpochRequestData();
        if (v >= 3) req.setReplicaId(-1); // a consumer asks
        req.topics().add(new OffsetForLeaderEpochRequestData.OffsetForLeaderTopic().setTopic(topic).setPartitions(new ArrayList<>(List.of(
            new OffsetForLeaderEpochRequestData.OffsetForLeaderPartition().setPartition(partition)
                .setCurrentLeaderEpoch(currentLeaderEpoch).setLeaderEpoch(leaderEpoch)))));
        return req;
    }

    /** ElectLeaders: preferred (0) or unclean (1) from v1; v0 knows only preferred. */
    static ElectLeadersRequestData electLeaders(short v, int type, String topic, Integer... partitions) {
        ElectLeadersRequestData req = new ElectLeadersRequestData().setTimeoutMs(TIMEOUT_MS);
        if (v >= 1) req.setElectionType((byte) type);
        if (topic == null) {
            req.setTopicPartitions(null);
        } else {
            req.topicPartitions().add(new ElectLeadersRequestData.TopicPartitions().setTopic(topic)
                .setPartitions(new ArrayList<>(Arrays.asList(partitions))));
        }
        return req;
    }

    static AlterPartitionReassignmentsRequestData reassign(String topic, int partition, List<Integer> replicas) {
        AlterPartitionReassignmentsRequestData req = new AlterPartitionReassignmentsRequestData().setTimeoutMs(TIMEOUT_MS);
        req.topics().add(new AlterPartitionReassignmentsRequestData.ReassignableTopic().setName(topic).setPartitions(new ArrayList<>(List.of(
            new AlterPartitionReassignmentsRequestData.ReassignablePartition().setPartitionIndex(partition)
                .setReplicas(replicas == null ? null : new ArrayList<>(replicas))))));
        return req;
    }

    static ListPartitionReassignmentsRequestData listReassignments(String topic, Integer... partitions) {
        ListPartitionReassignmentsRequestData req = new ListPartitionReassignmentsRequestData().setTimeoutMs(TIMEOUT_MS);
        if (topic == null) {
            req.setTopics(null);
        } else {
            req.setTopics(new ArrayList<>());
            req.topics().add(new ListPartitionReassignmentsRequestData.ListPartitionReassignmentsTopics().setName(topic)
                .setPartitionIndexes(new ArrayList<>(Arrays.asList(partitions))));
        }
        return req;
    }

    static DescribeLogDirsRequestData describeLogDirs(String topic, Integer... partitions) {
        DescribeLogDirsRequestData req = new DescribeLogDirsRequestData();
        if (topic == null) {
            req.setTopics(null);
        } else {
            req.topics().add(new DescribeLogDirsRequestData.DescribableLogDirTopic().setTopic(topic)
                .setPartitions(new ArrayList<>(Arrays.asList(partitions))));
        }
        return req;
    }

    static AlterReplicaLogDirsRequestData alterReplicaLogDir(String path, String topic, Integer... partitions) {
        AlterReplicaLogDirsRequestData req = new AlterReplicaLogDirsRequestData();
        AlterReplicaLogDirsRequestData.AlterReplicaLogDir dir = new AlterReplicaLogDirsRequestData.AlterReplicaLogDir().setPath(path);
        dir.topics().add(new AlterReplicaLogDirsRequestData.AlterReplicaLogDirTopic().setName(topic)
            .setPartitions(new ArrayList<>(Arrays.asList(partitions))));
        req.dirs().add(dir);
        return req;
    }

    static DescribeProducersRequestData describeProducers(String topic, Integer... partitions) {
        DescribeProducersRequestData req = new DescribeProducersRequestData();
        req.topics().add(new DescribeProducersRequestData.TopicRequest().setName(topic)
            .setPartitionIndexes(new ArrayList<>(Arrays.asList(partitions))));
        return req;
    }

    /** The log directory this peer keeps `topic`-`partition` in (each broker has its own path). */
    static String logDirOf(Ctx c, String topic, int partition) throws IOException {
        DescribeLogDirsResponseData r = (DescribeLogDirsResponseData) c.call(Route.leader(topic, partition),
            ApiKeys.DESCRIBE_LOG_DIRS, (short) 4, describeLogDirs(topic, partition)).message();
        for (DescribeLogDirsResponseData.DescribeLogDirsResult d : r.results()) {
            for (DescribeLogDirsResponseData.DescribeLogDirsTopic t : d.topics()) {
                if (t.name().equals(topic) && !t.partitions().isEmpty()) return d.logDir();
            }
        }
        throw new Ctx.ScenarioFailure("no log dir holds " + topic + "-" + partition);
    }

    static final String EVERY_TOPIC = "one entry per topic of the cluster: which topics exist depends on the scenarios run before "
        + "and on deletions in progress";

    /** Waits until this peer's Metadata no longer knows `topic` (a deletion has reached the broker). */
    static void awaitGone(Ctx c, String topic) throws IOException {
        long deadline = System.currentTimeMillis() + Ctx.AWAIT_MS;
        while (true) {
            MetadataResponseData r = (MetadataResponseData) c.call(Route.ANY, ApiKeys.METADATA, (short) 12,
                MetadataScenarios.metadata((short) 12, false, topic)).message();
            if (r.topics().iterator().next().errorCode() == 3) return;
            if (System.currentTimeMillis() > deadline) throw new Ctx.ScenarioFailure(topic + " still exists " + Ctx.AWAIT_MS + " ms after its deletion");
            Ctx.sleep(50);
        }
    }

    static final String LOG_DIR_PATH = "each broker keeps its logs under a directory of its own";
    static final String DISK_BYTES = "the size and free space of the disk under the log directory are the host's";
    static final String SEGMENT_BYTES = "bytes on disk of the partition's log: Samsa's files need not be laid out as Kafka's segments";

    static void add(List<Scenario> s) {
        // ---- CreateTopics ----------------------------------------------------------------
        s.add(Scenario.of("topics.create", ApiKeys.CREATE_TOPICS, c -> {
            String t = c.topic();
            c.observe("with-configs", Route.ANY, ApiKeys.CREATE_TOPICS, createTopics(
                creatable(t, 3, 1, "cleanup.policy", "compact", "retention.ms", "123456", "max.message.bytes", "200000")));
            c.awaitTopic(t, 3);
            c.observe("metadata", Route.ANY, ApiKeys.METADATA, (short) 12, MetadataScenarios.metadata((short) 12, false, t));
        }));
        s.add(Scenario.of("topics.create-defaults", ApiKeys.CREATE_TOPICS, c -> {
            String t = c.topic();
            c.observe("default-partitions-and-replicas", Route.ANY, ApiKeys.CREATE_TOPICS, createTopics(creatable(t, -1, -1)));
            c.awaitTopic(t, 1);
            c.observe("metadata", Route.ANY, ApiKeys.METADATA, (short) 12, MetadataScenarios.metadata((short) 12, false, t));
        }));
        s.add(Scenario.of("topics.create-validate-only", ApiKeys.CREATE_TOPICS, c -> {
            String t = c.topic();
            c.observe("validate", Route.ANY, ApiKeys.CREATE_TOPICS, createTopics(creatable(t, 2, 1, "retention.ms", "1000")).setValidateOnly(true));
            c.observe("invalid-validate", Route.ANY, ApiKeys.CREATE_TOPICS, createTopics(creatable(c.name("bad"), 0, 1)).setValidateOnly(true));
            c.observe("not-created", Route.ANY, ApiKeys.METADATA, (short) 12, MetadataScenarios.metadata((short) 12, false, t));
        }));
        s.add(Scenario.of("topics.create-already-exists", ApiKeys.CREATE_TOPICS, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            c.observe("again", Route.ANY, ApiKeys.CREATE_TOPICS, createTopics(creatable(t, 1, 1)));
            c.observe("again-validate-only", Route.ANY, ApiKeys.CREATE_TOPICS, createTopics(creatable(t, 1, 1)).setValidateOnly(true));
        }));
        s.add(Scenario.of("topics.create-duplicate-in-request", ApiKeys.CREATE_TOPICS, c -> {
            String t = c.topic();
            c.observe("twice", Route.ANY, ApiKeys.CREATE_TOPICS, createTopics(creatable(t, 1, 1), creatable(t, 2, 1)));
            c.observe("not-created", Route.ANY, ApiKeys.METADATA, (short) 12, MetadataScenarios.metadata((short) 12, false, t));
        }));
        s.add(Scenario.of("topics.create-invalid-name", ApiKeys.CREATE_TOPICS, c -> {
            c.observe("space-and-bang", Route.ANY, ApiKeys.CREATE_TOPICS, createTopics(creatable("bad name!", 1, 1)));
            c.observe("empty", Route.ANY, ApiKeys.CREATE_TOPICS, createTopics(creatable("", 1, 1)));
            c.observe("dot-dot", Route.ANY, ApiKeys.CREATE_TOPICS, createTopics(creatable("..", 1, 1)));
            c.observe("too-long", Route.ANY, ApiKeys.CREATE_TOPICS, createTopics(creatable("d-" + "x".repeat(248), 1, 1)));
            // '.' and '_' collide in metric names: Kafka refuses a topic that differs from one
            // that exists only there.
            c.createTopic(c.name("dot.x"), 1);
            c.observe("collides-with-dot", Route.ANY, ApiKeys.CREATE_TOPICS, createTopics(creatable(c.name("dot_x"), 1, 1)));
        }));
        s.add(Scenario.of("topics.create-invalid-counts", ApiKeys.CREATE_TOPICS, c -> {
            c.observe("zero-partitions", Route.ANY, ApiKeys.CREATE_TOPICS, createTopics(creatable(c.name("p0"), 0, 1)));
            c.observe("minus-two-partitions", Route.ANY, ApiKeys.CREATE_TOPICS, createTopics(creatable(c.name("pm2"), -2, 1)));
            c.observe("zero-replicas", Route.ANY, ApiKeys.CREATE_TOPICS, createTopics(creatable(c.name("r0"), 1, 0)));
            c.observe("minus-two-replicas", Route.ANY, ApiKeys.CREATE_TOPICS, createTopics(creatable(c.name("rm2"), 1, -2)));
            c.observe("more-replicas-than-brokers", Route.ANY, ApiKeys.CREATE_TOPICS, createTopics(creatable(c.name("r3"), 1, 3)));
            c.observe("many-partitions-too-many-replicas", Route.ANY, ApiKeys.CREATE_TOPICS, createTopics(creatable(c.name("p5r2"), 5, 2)));
        }));
        s.add(Scenario.of("topics.create-assignments", ApiKeys.CREATE_TOPICS, c -> {
            String t = c.topic();
            CreateTopicsRequestData.CreatableTopic manual = creatable(t, -1, -1);
            manual.assignments().add(assignment(0, 1));
            manual.assignments().add(assignment(1, 1));
            c.observe("manual", Route.ANY, ApiKeys.CREATE_TOPICS, createTopics(manual));
            c.awaitTopic(t, 2);
            c.observe("metadata", Route.ANY, ApiKeys.METADATA, (short) 12, MetadataScenarios.metadata((short) 12, false, t));

            CreateTopicsRequestData.CreatableTopic unknownBroker = creatable(c.name("b99"), -1, -1);
            unknownBroker.assignments().add(assignment(0, 99));
            c.observe("unknown-broker", Route.ANY, ApiKeys.CREATE_TOPICS, createTopics(unknownBroker));

            CreateTopicsRequestData.CreatableTopic withCount = creatable(c.name("count"), 1, -1);
            withCount.assignments().add(assignment(0, 1));
            c.observe("with-partition-count", Route.ANY, ApiKeys.CREATE_TOPICS, createTopics(withCount));

            CreateTopicsRequestData.CreatableTopic gap = creatable(c.name("gap"), -1, -1);
            gap.assignments().add(assignment(0, 1));
            gap.assignments().add(assignment(2, 1));
            c.observe("partition-gap", Route.ANY, ApiKeys.CREATE_TOPICS, createTopics(gap));

            CreateTopicsRequestData.CreatableTopic repeated = creatable(c.name("repeated"), -1, -1);
            repeated.assignments().add(assignment(0, 1, 1));
            c.observe("broker-twice", Route.ANY, ApiKeys.CREATE_TOPICS, createTopics(repeated));

            CreateTopicsRequestData.CreatableTopic empty = creatable(c.name("empty"), -1, -1);
            empty.assignments().add(assignment(0));
            c.observe("no-brokers", Route.ANY, ApiKeys.CREATE_TOPICS, createTopics(empty));
        }));
        s.add(Scenario.of("topics.create-invalid-config", ApiKeys.CREATE_TOPICS, c -> {
            c.observe("not-a-number", Route.ANY, ApiKeys.CREATE_TOPICS, createTopics(creatable(c.name("nan"), 1, 1, "retention.ms", "abc")));
            c.observe("bad-enum", Route.ANY, ApiKeys.CREATE_TOPICS, createTopics(creatable(c.name("enum"), 1, 1, "cleanup.policy", "sometimes")));
            c.observe("out-of-range", Route.ANY, ApiKeys.CREATE_TOPICS, createTopics(creatable(c.name("range"), 1, 1, "min.insync.replicas", "0")));
            c.observe("unknown-key", Route.ANY, ApiKeys.CREATE_TOPICS, createTopics(creatable(c.name("key"), 1, 1, "no.such.config", "1")));
            c.observe("broker-only-key", Route.ANY, ApiKeys.CREATE_TOPICS, createTopics(creatable(c.name("broker"), 1, 1, "log.retention.hours", "1")));
            CreateTopicsRequestData.CreatableTopic nullValue = creatable(c.name("null"), 1, 1);
            nullValue.configs().add(new CreateTopicsRequestData.CreatableTopicConfig().setName("retention.ms").setValue(null));
            c.observe("null-value", Route.ANY, ApiKeys.CREATE_TOPICS, createTopics(nullValue));
            c.observe("none-created", Route.ANY, ApiKeys.METADATA, (short) 12, MetadataScenarios.metadata((short) 12, false,
                c.name("nan"), c.name("enum"), c.name("range"), c.name("key"), c.name("broker"), c.name("null")));
        }));
        s.add(Scenario.of("topics.create-several", ApiKeys.CREATE_TOPICS, c -> {
            String good = c.name("good");
            c.observe("good-and-bad", Route.ANY, ApiKeys.CREATE_TOPICS, createTopics(
                creatable(good, 1, 1), creatable(c.name("bad"), 0, 1), creatable("bad name!", 1, 1)));
            c.awaitTopic(good, 1);
        }));
        s.add(Scenario.of("topics.create-internal-name", ApiKeys.CREATE_TOPICS, c -> {
            c.coordinator((byte) 0, c.name("g"));
            c.observe("consumer-offsets", Route.ANY, ApiKeys.CREATE_TOPICS, createTopics(creatable("__consumer_offsets", 1, 1)));
        }));

        // ---- DeleteTopics ----------------------------------------------------------------
        s.add(Scenario.of("topics.delete", ApiKeys.DELETE_TOPICS, c -> {
            String t = c.topic();
            c.createTopic(t, 2);
            c.observe("existing", Route.ANY, ApiKeys.DELETE_TOPICS, deleteTopics(c.version, t));
            c.observe("again", Route.ANY, ApiKeys.DELETE_TOPICS, deleteTopics(c.version, t));
        }));
        s.add(Scenario.of("topics.delete-missing", ApiKeys.DELETE_TOPICS, c -> {
            c.observe("missing", Route.ANY, ApiKeys.DELETE_TOPICS, deleteTopics(c.version, c.name("missing")));
            c.observe("invalid-name", Route.ANY, ApiKeys.DELETE_TOPICS, deleteTopics(c.version, "bad name!"));
        }));
        s.add(Scenario.of("topics.delete-several", ApiKeys.DELETE_TOPICS, c -> {
            String a = c.name("a");
            c.createTopic(a, 1);
            c.observe("existing-and-missing", Route.ANY, ApiKeys.DELETE_TOPICS, deleteTopics(c.version, a, c.name("missing")));
            String b = c.name("b");
            c.createTopic(b, 1);
            c.observe("same-twice", Route.ANY, ApiKeys.DELETE_TOPICS, deleteTopics(c.version, b, b));
        }));
        s.add(Scenario.of("topics.delete-by-id", ApiKeys.DELETE_TOPICS, 6, Short.MAX_VALUE, c -> {
            String t = c.topic();
            Uuid id = c.createTopic(t, 1);
            DeleteTopicsRequestData byId = new DeleteTopicsRequestData().setTimeoutMs(TIMEOUT_MS);
            byId.topics().add(new DeleteTopicsRequestData.DeleteTopicState().setName(null).setTopicId(id));
            c.observe("known-id", Route.ANY, ApiKeys.DELETE_TOPICS, byId);
            c.observe("deleted-id", Route.ANY, ApiKeys.DELETE_TOPICS, byId.duplicate());
            DeleteTopicsRequestData unknown = new DeleteTopicsRequestData().setTimeoutMs(TIMEOUT_MS);
            unknown.topics().add(new DeleteTopicsRequestData.DeleteTopicState().setName(null).setTopicId(Uuid.fromString("AAAAAAAAAAAAAAAAAAAAAQ")));
            c.observe("unknown-id", Route.ANY, ApiKeys.DELETE_TOPICS, unknown);
            String u = c.name("both");
            Uuid uid = c.createTopic(u, 1);
            DeleteTopicsRequestData both = new DeleteTopicsRequestData().setTimeoutMs(TIMEOUT_MS);
            both.topics().add(new DeleteTopicsRequestData.DeleteTopicState().setName(u).setTopicId(uid));
            c.observe("name-and-id", Route.ANY, ApiKeys.DELETE_TOPICS, both);
            DeleteTopicsRequestData neither = new DeleteTopicsRequestData().setTimeoutMs(TIMEOUT_MS);
            neither.topics().add(new DeleteTopicsRequestData.DeleteTopicState().setName(null).setTopicId(Uuid.ZERO_UUID));
            c.observe("neither", Route.ANY, ApiKeys.DELETE_TOPICS, neither);
        }));
        // Kafka deletes an internal topic when asked (the controller does not refuse it): run
        // once, wait until it is gone, then have it made again for the scenarios after this.
        s.add(Scenario.of("topics.delete-internal", ApiKeys.DELETE_TOPICS, 6, 6, c -> {
            String g = c.name("g");
            c.coordinator((byte) 0, g);
            c.observe("consumer-offsets", Route.ANY, ApiKeys.DELETE_TOPICS, deleteTopics(c.version, "__consumer_offsets"));
            awaitGone(c, "__consumer_offsets");
            c.observe("gone", Route.ANY, ApiKeys.METADATA, (short) 12, MetadataScenarios.metadata((short) 12, false, "__consumer_offsets"));
            c.coordinator((byte) 0, g);
            c.observe("made-again", Route.ANY, ApiKeys.METADATA, (short) 12, MetadataScenarios.metadata((short) 12, false, "__consumer_offsets"))
                .mask("the partitions of __consumer_offsets are compared in metadata.internal-topic", "/topics/*/partitions");
        }));

        // ---- CreatePartitions ------------------------------------------------------------
        s.add(Scenario.of("topics.create-partitions", ApiKeys.CREATE_PARTITIONS, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            c.observe("grow-to-3", Route.ANY, ApiKeys.CREATE_PARTITIONS, createPartitions(false, grow(t, 3)));
            c.awaitTopic(t, 3);
            c.observe("metadata", Route.ANY, ApiKeys.METADATA, (short) 12, MetadataScenarios.metadata((short) 12, false, t));
            c.observe("same-count", Route.ANY, ApiKeys.CREATE_PARTITIONS, createPartitions(false, grow(t, 3)));
            c.observe("shrink", Route.ANY, ApiKeys.CREATE_PARTITIONS, createPartitions(false, grow(t, 2)));
            c.observe("zero", Route.ANY, ApiKeys.CREATE_PARTITIONS, createPartitions(false, grow(t, 0)));
        }));
        s.add(Scenario.of("topics.create-partitions-validate-only", ApiKeys.CREATE_PARTITIONS, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            c.observe("grow-to-4", Route.ANY, ApiKeys.CREATE_PARTITIONS, createPartitions(true, grow(t, 4)));
            c.observe("shrink", Route.ANY, ApiKeys.CREATE_PARTITIONS, createPartitions(true, grow(t, 0)));
            c.observe("unchanged", Route.ANY, ApiKeys.METADATA, (short) 12, MetadataScenarios.metadata((short) 12, false, t));
        }));
        s.add(Scenario.of("topics.create-partitions-bad", ApiKeys.CREATE_PARTITIONS, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            c.observe("missing-topic", Route.ANY, ApiKeys.CREATE_PARTITIONS, createPartitions(false, grow(c.name("missing"), 2)));
            c.observe("duplicate-topic", Route.ANY, ApiKeys.CREATE_PARTITIONS, createPartitions(false, grow(t, 2), grow(t, 3)));
            c.observe("unknown-broker", Route.ANY, ApiKeys.CREATE_PARTITIONS, createPartitions(false,
                grow(t, 2).setAssignments(new ArrayList<>(List.of(brokers(99))))));
            c.observe("too-few-assignments", Route.ANY, ApiKeys.CREATE_PARTITIONS, createPartitions(false,
                grow(t, 3).setAssignments(new ArrayList<>(List.of(brokers(1))))));
            c.observe("too-many-replicas", Route.ANY, ApiKeys.CREATE_PARTITIONS, createPartitions(false,
                grow(t, 2).setAssignments(new ArrayList<>(List.of(brokers(1, 1))))));
            c.observe("unchanged", Route.ANY, ApiKeys.METADATA, (short) 12, MetadataScenarios.metadata((short) 12, false, t));
            c.observe("with-assignments", Route.ANY, ApiKeys.CREATE_PARTITIONS, createPartitions(false,
                grow(t, 3).setAssignments(new ArrayList<>(List.of(brokers(1), brokers(1))))));
            c.awaitTopic(t, 3);
            c.observe("grown", Route.ANY, ApiKeys.METADATA, (short) 12, MetadataScenarios.metadata((short) 12, false, t));
        }));
        s.add(Scenario.of("topics.create-partitions-internal", ApiKeys.CREATE_PARTITIONS, c -> {
            c.coordinator((byte) 0, c.name("g"));
            c.observe("consumer-offsets", Route.ANY, ApiKeys.CREATE_PARTITIONS, createPartitions(true, grow("__consumer_offsets", 60)));
        }));

        // ---- DeleteRecords ---------------------------------------------------------------
        s.add(Scenario.of("topics.delete-records", ApiKeys.DELETE_RECORDS, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            c.produce(t, 0, Records.batch(3));
            c.produce(t, 0, Records.batch(2, Records.T0 + 50));
            Route leader = Route.leader(t, 0);
            c.observe("to-2", leader, ApiKeys.DELETE_RECORDS, deleteRecords(t, 0, 2));
            c.observe("earliest-after", leader, ApiKeys.LIST_OFFSETS, (short) 7, DataScenarios.listOffsets(t, 0, -2));
            c.observe("backwards-to-1", leader, ApiKeys.DELETE_RECORDS, deleteRecords(t, 0, 1));
            c.observe("to-high-watermark", leader, ApiKeys.DELETE_RECORDS, deleteRecords(t, 0, -1));
            c.observe("earliest-after-all", leader, ApiKeys.LIST_OFFSETS, (short) 7, DataScenarios.listOffsets(t, 0, -2));
            c.observe("fetch-deleted", leader, ApiKeys.FETCH, (short) 12, DataScenarios.fetch(c, (short) 12, t, 0, 0, 1 << 20));
            c.observe("beyond-high-watermark", leader, ApiKeys.DELETE_RECORDS, deleteRecords(t, 0, 10));
            c.observe("minus-two", leader, ApiKeys.DELETE_RECORDS, deleteRecords(t, 0, -2));
        }));
        s.add(Scenario.of("topics.delete-records-unknown", ApiKeys.DELETE_RECORDS, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            c.observe("unknown-partition", Route.leader(t, 0), ApiKeys.DELETE_RECORDS, deleteRecords(t, 4, 0));
            c.observe("unknown-topic", Route.ANY, ApiKeys.DELETE_RECORDS, deleteRecords(c.name("missing"), 0, 0));
            c.observe("empty-partition-to-0", Route.leader(t, 0), ApiKeys.DELETE_RECORDS, deleteRecords(t, 0, 0));
        }));

        // ---- OffsetForLeaderEpoch --------------------------------------------------------
        s.add(Scenario.of("topics.offset-for-leader-epoch", ApiKeys.OFFSET_FOR_LEADER_EPOCH, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            Route leader = Route.leader(t, 0);
            c.observe("empty-epoch-0", leader, ApiKeys.OFFSET_FOR_LEADER_EPOCH, offsetForLeaderEpoch(c.version, t, 0, -1, 0));
            c.produce(t, 0, Records.batch(3));
            c.observe("epoch-0", leader, ApiKeys.OFFSET_FOR_LEADER_EPOCH, offsetForLeaderEpoch(c.version, t, 0, -1, 0));
            c.observe("epoch-0-current-0", leader, ApiKeys.OFFSET_FOR_LEADER_EPOCH, offsetForLeaderEpoch(c.version, t, 0, 0, 0));
            c.observe("unknown-epoch-5", leader, ApiKeys.OFFSET_FOR_LEADER_EPOCH, offsetForLeaderEpoch(c.version, t, 0, -1, 5));
            c.observe("negative-epoch", leader, ApiKeys.OFFSET_FOR_LEADER_EPOCH, offsetForLeaderEpoch(c.version, t, 0, -1, -1));
            c.observe("current-epoch-ahead", leader, ApiKeys.OFFSET_FOR_LEADER_EPOCH, offsetForLeaderEpoch(c.version, t, 0, 3, 0));
            c.observe("unknown-partition", leader, ApiKeys.OFFSET_FOR_LEADER_EPOCH, offsetForLeaderEpoch(c.version, t, 5, -1, 0));
            c.observe("unknown-topic", Route.ANY, ApiKeys.OFFSET_FOR_LEADER_EPOCH, offsetForLeaderEpoch(c.version, c.name("missing"), 0, -1, 0));
        }));
        // A current leader epoch below the leader's: with one broker nothing moves the epoch
        // past 0, so the one below it is -2 (-1 means "not given").
        s.add(Scenario.of("topics.offset-for-leader-epoch-fenced", ApiKeys.OFFSET_FOR_LEADER_EPOCH, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            c.produce(t, 0, Records.batch(2));
            c.observe("current-epoch-minus-2", Route.leader(t, 0), ApiKeys.OFFSET_FOR_LEADER_EPOCH, offsetForLeaderEpoch(c.version, t, 0, -2, 0));
        }));

        // ---- ElectLeaders ----------------------------------------------------------------
        s.add(Scenario.of("topics.elect-leaders", ApiKeys.ELECT_LEADERS, c -> {
            String t = c.topic();
            c.createTopic(t, 2);
            c.observe("preferred", Route.ANY, ApiKeys.ELECT_LEADERS, electLeaders(c.version, 0, t, 0, 1));
            if (c.version >= 1) c.observe("unclean", Route.ANY, ApiKeys.ELECT_LEADERS, electLeaders(c.version, 1, t, 0));
            c.observe("unknown-partition", Route.ANY, ApiKeys.ELECT_LEADERS, electLeaders(c.version, 0, t, 7));
            c.observe("unknown-topic", Route.ANY, ApiKeys.ELECT_LEADERS, electLeaders(c.version, 0, c.name("missing"), 0));
            c.observe("no-partitions", Route.ANY, ApiKeys.ELECT_LEADERS, electLeaders(c.version, 0, t));
            if (c.version >= 1) c.observe("unknown-election-type", Route.ANY, ApiKeys.ELECT_LEADERS, electLeaders(c.version, 7, t, 0));
            Observation all = c.observe("all-partitions", Route.ANY, ApiKeys.ELECT_LEADERS, electLeaders(c.version, 0, null))
                .mask(EVERY_TOPIC + "; the view all-partitions-own compares this scenario's entry and the entries with results",
                    "/replicaElectionResults");
            // This scenario's topic, and every entry that has partition results (none needs an election).
            ObjectNode view = Json.F.objectNode();
            ArrayNode own = view.putArray("ownTopic");
            ArrayNode withResults = view.putArray("entriesWithPartitionResults");
            for (JsonNode r : all.json().path("replicaElectionResults")) {
                if (r.path("topic").asText().equals(t)) own.add(r);
                if (r.path("partitionResult").size() > 0) withResults.add(r);
            }
            view.put("errorCode", all.json().path("errorCode").asInt(0));
            MetadataScenarios.derived(c, "all-partitions-own", all, view);
        }));

        // ---- AlterPartitionReassignments / ListPartitionReassignments --------------------
        s.add(Scenario.of("topics.alter-partition-reassignments", ApiKeys.ALTER_PARTITION_REASSIGNMENTS, c -> {
            String t = c.topic();
            c.createTopic(t, 2);
            c.observe("same-replicas", Route.ANY, ApiKeys.ALTER_PARTITION_REASSIGNMENTS, reassign(t, 0, List.of(1)));
            c.observe("cancel-none", Route.ANY, ApiKeys.ALTER_PARTITION_REASSIGNMENTS, reassign(t, 1, null));
            c.observe("unknown-broker", Route.ANY, ApiKeys.ALTER_PARTITION_REASSIGNMENTS, reassign(t, 0, List.of(99)));
            c.observe("broker-twice", Route.ANY, ApiKeys.ALTER_PARTITION_REASSIGNMENTS, reassign(t, 0, List.of(1, 1)));
            c.observe("no-replicas", Route.ANY, ApiKeys.ALTER_PARTITION_REASSIGNMENTS, reassign(t, 0, List.of()));
            c.observe("unknown-partition", Route.ANY, ApiKeys.ALTER_PARTITION_REASSIGNMENTS, reassign(t, 5, List.of(1)));
            c.observe("unknown-topic", Route.ANY, ApiKeys.ALTER_PARTITION_REASSIGNMENTS, reassign(c.name("missing"), 0, List.of(1)));
            if (c.version >= 1) {
                c.observe("rf-change-refused", Route.ANY, ApiKeys.ALTER_PARTITION_REASSIGNMENTS,
                    reassign(t, 0, List.of(1, 2)).setAllowReplicationFactorChange(false));
                c.observe("same-rf-allowed", Route.ANY, ApiKeys.ALTER_PARTITION_REASSIGNMENTS,
                    reassign(t, 0, List.of(1)).setAllowReplicationFactorChange(false));
            }
            c.observe("list-after", Route.ANY, ApiKeys.LIST_PARTITION_REASSIGNMENTS, (short) 0, listReassignments(t, 0, 1));
        }));
        s.add(Scenario.of("topics.list-partition-reassignments", ApiKeys.LIST_PARTITION_REASSIGNMENTS, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            c.observe("all", Route.ANY, ApiKeys.LIST_PARTITION_REASSIGNMENTS, listReassignments(null));
            c.observe("one-topic", Route.ANY, ApiKeys.LIST_PARTITION_REASSIGNMENTS, listReassignments(t, 0));
            c.observe("unknown-partition", Route.ANY, ApiKeys.LIST_PARTITION_REASSIGNMENTS, listReassignments(t, 3));
            c.observe("unknown-topic", Route.ANY, ApiKeys.LIST_PARTITION_REASSIGNMENTS, listReassignments(c.name("missing"), 0));
        }));

        // ---- DescribeLogDirs -------------------------------------------------------------
        s.add(Scenario.of("topics.describe-log-dirs", ApiKeys.DESCRIBE_LOG_DIRS, c -> {
            String t = c.topic();
            c.createTopic(t, 2);
            Route leader = Route.leader(t, 0);
            c.observe("one-topic-empty", leader, ApiKeys.DESCRIBE_LOG_DIRS, describeLogDirs(t, 0, 1))
                .mask(LOG_DIR_PATH, "/results/*/logDir")
                .mask(DISK_BYTES, "/results/*/totalBytes", "/results/*/usableBytes");
            c.produce(t, 0, Records.batch(3));
            c.observe("one-topic-after-produce", leader, ApiKeys.DESCRIBE_LOG_DIRS, describeLogDirs(t, 0, 1))
                .mask(LOG_DIR_PATH, "/results/*/logDir")
                .mask(DISK_BYTES, "/results/*/totalBytes", "/results/*/usableBytes")
                .mask(SEGMENT_BYTES, "/results/*/topics/*/partitions/*/partitionSize");
            c.observe("one-partition", leader, ApiKeys.DESCRIBE_LOG_DIRS, describeLogDirs(t, 1))
                .mask(LOG_DIR_PATH, "/results/*/logDir")
                .mask(DISK_BYTES, "/results/*/totalBytes", "/results/*/usableBytes");
            c.observe("unknown-partition", leader, ApiKeys.DESCRIBE_LOG_DIRS, describeLogDirs(t, 9))
                .mask(LOG_DIR_PATH, "/results/*/logDir")
                .mask(DISK_BYTES, "/results/*/totalBytes", "/results/*/usableBytes");
            c.observe("unknown-topic", leader, ApiKeys.DESCRIBE_LOG_DIRS, describeLogDirs(c.name("missing"), 0))
                .mask(LOG_DIR_PATH, "/results/*/logDir")
                .mask(DISK_BYTES, "/results/*/totalBytes", "/results/*/usableBytes");
            c.observe("no-topics", leader, ApiKeys.DESCRIBE_LOG_DIRS, new DescribeLogDirsRequestData())
                .mask(LOG_DIR_PATH, "/results/*/logDir")
                .mask(DISK_BYTES, "/results/*/totalBytes", "/results/*/usableBytes");
            c.observe("all", leader, ApiKeys.DESCRIBE_LOG_DIRS, describeLogDirs(null))
                .mask(LOG_DIR_PATH, "/results/*/logDir")
                .mask(DISK_BYTES, "/results/*/totalBytes", "/results/*/usableBytes")
                .mask(EVERY_TOPIC + "; the one-topic observations compare the entries", "/results/*/topics");
        }));

        // ---- AlterReplicaLogDirs ---------------------------------------------------------
        s.add(Scenario.of("topics.alter-replica-log-dirs", ApiKeys.ALTER_REPLICA_LOG_DIRS, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            Route leader = Route.leader(t, 0);
            c.observe("unknown-dir", leader, ApiKeys.ALTER_REPLICA_LOG_DIRS, alterReplicaLogDir("/nonexistent/samsa-differential", t, 0));
            c.observe("relative-dir", leader, ApiKeys.ALTER_REPLICA_LOG_DIRS, alterReplicaLogDir("not-absolute", t, 0));
            String dir = logDirOf(c, t, 0);
            c.observe("current-dir", leader, ApiKeys.ALTER_REPLICA_LOG_DIRS, alterReplicaLogDir(dir, t, 0));
            c.observe("current-dir-unknown-partition", leader, ApiKeys.ALTER_REPLICA_LOG_DIRS, alterReplicaLogDir(dir, t, 4));
            c.observe("current-dir-unknown-topic", leader, ApiKeys.ALTER_REPLICA_LOG_DIRS, alterReplicaLogDir(dir, c.name("missing"), 0));
        }));

        // ---- DescribeProducers -----------------------------------------------------------
        s.add(Scenario.of("topics.describe-producers", ApiKeys.DESCRIBE_PRODUCERS, c -> {
            String t = c.topic();
            c.createTopic(t, 2);
            Route leader = Route.leader(t, 0);
            c.observe("none-yet", leader, ApiKeys.DESCRIBE_PRODUCERS, describeProducers(t, 0));
            InitProducerIdResponseData pid = DataScenarios.initProducerId(c, null);
            c.produce(t, 0, Records.idempotent(pid.producerId(), pid.producerEpoch(), 0, 3));
            c.produce(t, 0, Records.idempotent(pid.producerId(), pid.producerEpoch(), 3, 2));
            c.observe("after-idempotent-produce", leader, ApiKeys.DESCRIBE_PRODUCERS, describeProducers(t, 0, 1));
            c.produce(t, 1, Records.batch(2));
            c.observe("plain-produce", leader, ApiKeys.DESCRIBE_PRODUCERS, describeProducers(t, 1));
            c.observe("unknown-partition", leader, ApiKeys.DESCRIBE_PRODUCERS, describeProducers(t, 6));
            c.observe("unknown-topic", Route.ANY, ApiKeys.DESCRIBE_PRODUCERS, describeProducers(c.name("missing"), 0));
        }));
    }
}
