// Prints Kafka 4.4's own encodings of the KIP-1071 streams group messages and coordinator
// records, as test vectors for protocol/tests/streams_vectors.rs and
// streams-group/tests/record_vectors.rs:
//
//   java -cp '.tools/kafka-4.4.0/libs/*' scripts/reference/vectors/StreamsVectors.java messages \
//       > protocol/tests/streams_vectors.txt
//   java -cp '.tools/kafka-4.4.0/libs/*' scripts/reference/vectors/StreamsVectors.java records \
//       > streams-group/tests/record_vectors.txt
//
// messages: each line is "<Message> <version> <hex of the body>", the body built by Kafka's
// generated JSON converter from the JSON below read at that version. Every field is set, to
// values other than its default, and to null where it is nullable (a second case).
//
// records: each line is "<CoordinatorRecordType> <hex of the key> <hex of the value>", both
// written by Kafka's GroupCoordinatorRecordSerde as they are written to __consumer_offsets;
// a tombstone's value is "null".
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde;
import org.apache.kafka.coordinator.group.generated.CoordinatorRecordType;
import org.apache.kafka.server.common.ApiMessageAndVersion;

import java.nio.ByteBuffer;

public class StreamsVectors {
    static final String TOPIC_INFO_CHANGELOG = "{\"name\":\"app-store-changelog\",\"partitions\":0,"
        + "\"replicationFactor\":3,\"topicConfigs\":[{\"key\":\"cleanup.policy\",\"value\":\"compact\"}]}";
    static final String HEARTBEAT_FULL = "{\"groupId\":\"app\",\"memberId\":\"m1\",\"memberEpoch\":0,"
        + "\"endpointInformationEpoch\":3,\"instanceId\":\"i\",\"rackId\":\"r\",\"rebalanceTimeoutMs\":30000,"
        + "\"topology\":{\"epoch\":2,\"subtopologies\":[{\"subtopologyId\":\"0\",\"sourceTopics\":[\"in\",\"in2\"],"
        + "\"sourceTopicRegex\":[\"in-.*\"],\"stateChangelogTopics\":[" + TOPIC_INFO_CHANGELOG + "],"
        + "\"repartitionSinkTopics\":[\"app-rep\"],\"repartitionSourceTopics\":[{\"name\":\"app-rep2\","
        + "\"partitions\":4,\"replicationFactor\":-1,\"topicConfigs\":[]}],\"copartitionGroups\":"
        + "[{\"sourceTopics\":[0,1],\"sourceTopicRegex\":[0],\"repartitionSourceTopics\":[0]}]}]},"
        + "\"activeTasks\":[{\"subtopologyId\":\"0\",\"partitions\":[0,1]}],"
        + "\"standbyTasks\":[{\"subtopologyId\":\"1\",\"partitions\":[2]}],\"warmupTasks\":[],"
        + "\"processId\":\"p\",\"userEndpoint\":{\"host\":\"h\",\"port\":65535},"
        + "\"clientTags\":[{\"key\":\"zone\",\"value\":\"a\"}],"
        + "\"taskOffsets\":[{\"subtopologyId\":\"0\",\"partition\":1,\"offset\":42}],"
        + "\"taskEndOffsets\":[{\"subtopologyId\":\"0\",\"partition\":1,\"offset\":9000000000}],"
        + "\"shutdownApplication\":true}";
    static final String HEARTBEAT_NULLS = "{\"groupId\":\"app\",\"memberId\":\"m1\",\"memberEpoch\":-1,"
        + "\"endpointInformationEpoch\":0,\"instanceId\":null,\"rackId\":null,\"rebalanceTimeoutMs\":-1,"
        + "\"topology\":null,\"activeTasks\":null,\"standbyTasks\":null,\"warmupTasks\":null,\"processId\":null,"
        + "\"userEndpoint\":null,\"clientTags\":null,\"taskOffsets\":null,\"taskEndOffsets\":null,"
        + "\"shutdownApplication\":false}";
    static final String HEARTBEAT_RESPONSE_COMMON = "\"throttleTimeMs\":5,\"errorCode\":0,\"errorMessage\":\"fine\","
        + "\"memberId\":\"m1\",\"memberEpoch\":7,\"heartbeatIntervalMs\":5000,\"taskOffsetIntervalMs\":60000,"
        + "\"status\":[{\"statusCode\":1,\"statusDetail\":\"missing: in\"},{\"statusCode\":6,\"statusDetail\":\"\"}],"
        + "\"activeTasks\":[{\"subtopologyId\":\"0\",\"partitions\":[0,1]}],\"standbyTasks\":[],"
        + "\"warmupTasks\":[{\"subtopologyId\":\"1\",\"partitions\":[3]}],\"endpointInformationEpoch\":2,"
        + "\"partitionsByUserEndpoint\":[{\"userEndpoint\":{\"host\":\"h\",\"port\":8080},"
        + "\"activePartitions\":[{\"topic\":\"in\",\"partitions\":[0,1]}],"
        + "\"standbyPartitions\":[{\"topic\":\"in\",\"partitions\":[2]}]}]";
    static final String HEARTBEAT_RESPONSE_NULLS = "{\"throttleTimeMs\":0,\"errorCode\":25,\"errorMessage\":null,"
        + "\"memberId\":\"\",\"memberEpoch\":-1,\"heartbeatIntervalMs\":0,\"taskOffsetIntervalMs\":0,"
        + "\"status\":null,\"activeTasks\":null,\"standbyTasks\":null,\"warmupTasks\":null,"
        + "\"endpointInformationEpoch\":0,\"partitionsByUserEndpoint\":null";

    static final String NODE_SOURCE = "{\"name\":\"KSTREAM-SOURCE-0000000000\",\"nodeType\":0,"
        + "\"sourceTopics\":[\"in\"],\"sinkTopic\":null,\"stores\":[],"
        + "\"successors\":[\"KSTREAM-AGGREGATE-0000000001\"]}";
    static final String NODE_SINK = "{\"name\":\"KSTREAM-SINK-0000000003\",\"nodeType\":2,"
        + "\"sourceTopics\":[],\"sinkTopic\":\"out\",\"stores\":[\"store\"],\"successors\":[]}";
    static final String DESCRIPTION = "{\"subtopologies\":[{\"subtopologyId\":\"0\",\"nodes\":["
        + NODE_SOURCE + "," + NODE_SINK + "]}],\"globalStores\":[{\"source\":" + NODE_SOURCE
        + ",\"processor\":" + NODE_SINK + "}]}";

    static final String MEMBER = "{\"memberId\":\"m1\",\"memberEpoch\":7,\"instanceId\":\"i\",\"rackId\":null,"
        + "\"clientId\":\"c\",\"clientHost\":\"/127.0.0.1\",\"topologyEpoch\":2,\"processId\":\"p\","
        + "\"userEndpoint\":{\"host\":\"h\",\"port\":65535},\"clientTags\":[{\"key\":\"zone\",\"value\":\"a\"}],"
        + "\"taskOffsets\":[{\"subtopologyId\":\"0\",\"partition\":0,\"offset\":5}],"
        + "\"taskEndOffsets\":[{\"subtopologyId\":\"0\",\"partition\":0,\"offset\":9}],"
        + "\"assignment\":{\"activeTasks\":[{\"subtopologyId\":\"0\",\"partitions\":[0]}],\"standbyTasks\":[],"
        + "\"warmupTasks\":[]},\"targetAssignment\":{\"activeTasks\":[{\"subtopologyId\":\"0\",\"partitions\":[0,1]}],"
        + "\"standbyTasks\":[{\"subtopologyId\":\"1\",\"partitions\":[1]}],"
        + "\"warmupTasks\":[{\"subtopologyId\":\"1\",\"partitions\":[0]}]},\"isClassic\":false}";
    static final String MEMBER_NULLS = "{\"memberId\":\"m2\",\"memberEpoch\":0,\"instanceId\":null,\"rackId\":\"r\","
        + "\"clientId\":\"\",\"clientHost\":\"\",\"topologyEpoch\":0,\"processId\":\"\",\"userEndpoint\":null,"
        + "\"clientTags\":[],\"taskOffsets\":[],\"taskEndOffsets\":[],\"assignment\":{\"activeTasks\":[],"
        + "\"standbyTasks\":[],\"warmupTasks\":[]},\"targetAssignment\":{\"activeTasks\":[],\"standbyTasks\":[],"
        + "\"warmupTasks\":[]},\"isClassic\":true}";
    static final String GROUP_STABLE = "\"errorCode\":0,\"errorMessage\":null,\"groupId\":\"app\","
        + "\"groupState\":\"Stable\",\"groupEpoch\":9,\"assignmentEpoch\":9,\"topology\":{\"epoch\":2,"
        + "\"subtopologies\":[{\"subtopologyId\":\"0\",\"sourceTopics\":[\"in\"],\"repartitionSinkTopics\":[\"app-rep\"],"
        + "\"stateChangelogTopics\":[" + TOPIC_INFO_CHANGELOG + "],\"repartitionSourceTopics\":[]}]},"
        + "\"members\":[" + MEMBER + "," + MEMBER_NULLS + "],\"authorizedOperations\":4096";
    static final String GROUP_DEAD = "\"errorCode\":69,\"errorMessage\":\"not found\",\"groupId\":\"x\","
        + "\"groupState\":\"Dead\",\"groupEpoch\":-1,\"assignmentEpoch\":-1,\"topology\":null,\"members\":[],"
        + "\"authorizedOperations\":-2147483648";
    static final String GROUP_UNCONFIGURED = "\"errorCode\":0,\"errorMessage\":null,\"groupId\":\"y\","
        + "\"groupState\":\"NotReady\",\"groupEpoch\":1,\"assignmentEpoch\":0,\"topology\":{\"epoch\":1,"
        + "\"subtopologies\":null},\"members\":[],\"authorizedOperations\":-2147483648";

    // {message, version, json}
    static final String[][] MESSAGES = {
        {"StreamsGroupHeartbeatRequest", "0", HEARTBEAT_FULL},
        {"StreamsGroupHeartbeatRequest", "1", HEARTBEAT_FULL},
        {"StreamsGroupHeartbeatRequest", "0", HEARTBEAT_NULLS},
        {"StreamsGroupHeartbeatRequest", "1", HEARTBEAT_NULLS},
        {"StreamsGroupHeartbeatResponse", "0", "{" + HEARTBEAT_RESPONSE_COMMON + ",\"acceptableRecoveryLagLegacy\":10000}"},
        {"StreamsGroupHeartbeatResponse", "1", "{" + HEARTBEAT_RESPONSE_COMMON
            + ",\"acceptableRecoveryLag\":10000000000,\"topologyDescriptionRequired\":true}"},
        {"StreamsGroupHeartbeatResponse", "0", HEARTBEAT_RESPONSE_NULLS + ",\"acceptableRecoveryLagLegacy\":0}"},
        {"StreamsGroupHeartbeatResponse", "1", HEARTBEAT_RESPONSE_NULLS
            + ",\"acceptableRecoveryLag\":-1,\"topologyDescriptionRequired\":false}"},
        {"StreamsGroupDescribeRequest", "0", "{\"groupIds\":[\"a\",\"b\"],\"includeAuthorizedOperations\":true}"},
        {"StreamsGroupDescribeRequest", "1",
            "{\"groupIds\":[\"a\",\"b\"],\"includeAuthorizedOperations\":true,\"includeTopologyDescription\":true}"},
        {"StreamsGroupDescribeRequest", "1",
            "{\"groupIds\":[],\"includeAuthorizedOperations\":false,\"includeTopologyDescription\":false}"},
        {"StreamsGroupDescribeResponse", "0", "{\"throttleTimeMs\":3,\"groups\":[{" + GROUP_STABLE + "},{"
            + GROUP_DEAD + "},{" + GROUP_UNCONFIGURED + "}]}"},
        {"StreamsGroupDescribeResponse", "1", "{\"throttleTimeMs\":3,\"groups\":[{" + GROUP_STABLE
            + ",\"topologyDescription\":" + DESCRIPTION + ",\"topologyDescriptionStatus\":3,\"assignorName\":\"sticky\"},{"
            + GROUP_DEAD + ",\"topologyDescription\":null,\"topologyDescriptionStatus\":2,\"assignorName\":null},{"
            + GROUP_UNCONFIGURED + ",\"topologyDescription\":null,\"topologyDescriptionStatus\":1,"
            + "\"assignorName\":\"sticky\"}]}"},
        {"StreamsGroupTopologyDescriptionUpdateRequest", "0",
            "{\"groupId\":\"app\",\"memberId\":\"m1\",\"topologyEpoch\":2,\"topologyDescription\":" + DESCRIPTION + "}"},
        {"StreamsGroupTopologyDescriptionUpdateResponse", "0",
            "{\"throttleTimeMs\":1,\"errorCode\":25,\"errorMessage\":\"unknown member\"}"},
        {"StreamsGroupTopologyDescriptionUpdateResponse", "0",
            "{\"throttleTimeMs\":0,\"errorCode\":0,\"errorMessage\":null}"},
    };

    static final String GROUP = "{\"groupId\":\"app\"}";
    static final String MEMBER_KEY = "{\"groupId\":\"app\",\"memberId\":\"m1\"}";
    // {CoordinatorRecordType, key json, value json or null for a tombstone}
    static final String[][] RECORDS = {
        {"STREAMS_GROUP_METADATA", GROUP, "{\"epoch\":9,\"metadataHash\":-1234567890123,"
            + "\"validatedTopologyEpoch\":2,\"lastAssignmentConfigs\":[{\"key\":\"num.standby.replicas\","
            + "\"value\":\"1\"}],\"storedDescriptionTopologyEpoch\":2,\"failedDescriptionTopologyEpoch\":-2}"},
        {"STREAMS_GROUP_METADATA", GROUP, "{\"epoch\":1,\"metadataHash\":0,\"validatedTopologyEpoch\":-1,"
            + "\"lastAssignmentConfigs\":null,\"storedDescriptionTopologyEpoch\":-1,\"failedDescriptionTopologyEpoch\":-1}"},
        {"STREAMS_GROUP_METADATA", GROUP, "{\"epoch\":1,\"metadataHash\":7,\"validatedTopologyEpoch\":-1,"
            + "\"lastAssignmentConfigs\":[],\"storedDescriptionTopologyEpoch\":-1,\"failedDescriptionTopologyEpoch\":-1}"},
        {"STREAMS_GROUP_METADATA", GROUP, null},
        {"STREAMS_GROUP_MEMBER_METADATA", MEMBER_KEY, "{\"instanceId\":\"i\",\"rackId\":null,\"clientId\":\"c\","
            + "\"clientHost\":\"/127.0.0.1\",\"rebalanceTimeoutMs\":30000,\"topologyEpoch\":2,\"processId\":\"p\","
            + "\"userEndpoint\":{\"host\":\"h\",\"port\":65535},\"clientTags\":[{\"key\":\"rack\",\"value\":\"r1\"},"
            + "{\"key\":\"zone\",\"value\":\"a\"}]}"},
        {"STREAMS_GROUP_MEMBER_METADATA", MEMBER_KEY, "{\"instanceId\":null,\"rackId\":\"r\",\"clientId\":\"\","
            + "\"clientHost\":\"\",\"rebalanceTimeoutMs\":-1,\"topologyEpoch\":0,\"processId\":\"\","
            + "\"userEndpoint\":null,\"clientTags\":[]}"},
        {"STREAMS_GROUP_MEMBER_METADATA", MEMBER_KEY, null},
        {"STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA", GROUP, "{\"assignmentEpoch\":9,\"assignmentTimestamp\":1733500000000}"},
        {"STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA", GROUP, "{\"assignmentEpoch\":0,\"assignmentTimestamp\":0}"},
        {"STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA", GROUP, null},
        {"STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER", MEMBER_KEY, "{\"activeTasks\":[{\"subtopologyId\":\"0\","
            + "\"partitions\":[0,1]},{\"subtopologyId\":\"1\",\"partitions\":[2]}],\"standbyTasks\":"
            + "[{\"subtopologyId\":\"1\",\"partitions\":[0]}],\"warmupTasks\":[]}"},
        {"STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER", MEMBER_KEY, null},
        {"STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT", MEMBER_KEY, "{\"memberEpoch\":9,\"previousMemberEpoch\":8,"
            + "\"state\":1,\"activeTasks\":[{\"subtopologyId\":\"0\",\"partitions\":[0,1],\"assignmentEpochs\":[7,9]}],"
            + "\"standbyTasks\":[{\"subtopologyId\":\"1\",\"partitions\":[0],\"assignmentEpochs\":null}],"
            + "\"warmupTasks\":[{\"subtopologyId\":\"1\",\"partitions\":[1],\"assignmentEpochs\":[]}],"
            + "\"activeTasksPendingRevocation\":[{\"subtopologyId\":\"1\",\"partitions\":[2],\"assignmentEpochs\":[5]}],"
            + "\"standbyTasksPendingRevocation\":[],\"warmupTasksPendingRevocation\":[]}"},
        {"STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT", MEMBER_KEY, null},
        {"STREAMS_GROUP_TOPOLOGY", GROUP, "{\"epoch\":2,\"subtopologies\":[{\"subtopologyId\":\"0\","
            + "\"sourceTopics\":[\"in\"],\"sourceTopicRegex\":[\"in-.*\"],\"stateChangelogTopics\":[{\"name\":"
            + "\"app-store-changelog\",\"partitions\":0,\"replicationFactor\":3,\"topicConfigs\":[{\"key\":"
            + "\"cleanup.policy\",\"value\":\"compact\"},{\"key\":\"retention.ms\",\"value\":\"1\"}]}],"
            + "\"repartitionSinkTopics\":[\"app-rep\"],\"repartitionSourceTopics\":[],\"copartitionGroups\":[]},"
            + "{\"subtopologyId\":\"1\",\"sourceTopics\":[],\"sourceTopicRegex\":[],\"stateChangelogTopics\":[],"
            + "\"repartitionSinkTopics\":[],\"repartitionSourceTopics\":[{\"name\":\"app-rep\",\"partitions\":4,"
            + "\"replicationFactor\":-1,\"topicConfigs\":[]}],\"copartitionGroups\":[{\"sourceTopics\":[],"
            + "\"sourceTopicRegex\":[],\"repartitionSourceTopics\":[0]}]}]}"},
        {"STREAMS_GROUP_TOPOLOGY", GROUP, null},
    };

    static String hex(ByteBuffer b) {
        StringBuilder hex = new StringBuilder();
        while (b.hasRemaining()) hex.append(String.format("%02x", b.get()));
        return hex.toString();
    }

    static String hex(byte[] b) {
        return b == null ? "null" : hex(ByteBuffer.wrap(b));
    }

    static Object read(String className, String json, short version) throws Exception {
        JsonNode node = new ObjectMapper().readTree(json);
        try {
            return Class.forName(className + "JsonConverter").getMethod("read", JsonNode.class, short.class)
                .invoke(null, node, version);
        } catch (java.lang.reflect.InvocationTargetException e) {
            throw new RuntimeException(className + " v" + version + ": " + e.getCause(), e.getCause());
        }
    }

    static String camel(String upperSnake) {
        StringBuilder b = new StringBuilder();
        for (String part : upperSnake.toLowerCase().split("_")) {
            b.append(Character.toUpperCase(part.charAt(0))).append(part.substring(1));
        }
        return b.toString();
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 1 && args[0].equals("messages")) {
            for (String[] c : MESSAGES) {
                short version = Short.parseShort(c[1]);
                Message m = (Message) read("org.apache.kafka.common.message." + c[0] + "Data", c[2], version);
                System.out.println(c[0] + " " + version + " " + hex(MessageUtil.toByteBufferAccessor(m, version).buffer()));
            }
        } else if (args.length == 1 && args[0].equals("records")) {
            GroupCoordinatorRecordSerde serde = new GroupCoordinatorRecordSerde();
            for (String[] c : RECORDS) {
                CoordinatorRecordType type = CoordinatorRecordType.valueOf(c[0]);
                String name = "org.apache.kafka.coordinator.group.generated." + camel(c[0]);
                ApiMessage key = (ApiMessage) read(name + "Key", c[1], (short) 0);
                CoordinatorRecord record = c[2] == null
                    ? CoordinatorRecord.tombstone(key)
                    : CoordinatorRecord.record(key,
                        new ApiMessageAndVersion((ApiMessage) read(name + "Value", c[2], (short) 0), (short) 0));
                System.out.println(type.id() + " " + hex(serde.serializeKey(record)) + " "
                    + hex(serde.serializeValue(record)));
            }
        } else {
            throw new IllegalArgumentException("usage: StreamsVectors messages|records");
        }
    }
}
