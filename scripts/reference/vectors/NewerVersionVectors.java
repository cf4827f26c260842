// Prints Kafka 4.4's own encodings of the message bodies Samsa serves beyond kafka-protocol's
// versions (protocol/src/newer), as test vectors for protocol/tests/newer_vectors.rs:
//
//   java -cp '.tools/kafka-4.4.0/libs/*' scripts/reference/vectors/NewerVersionVectors.java \
//       > protocol/tests/newer_vectors.txt
//
// Each line is "<Message> <version> <hex of the body>". A body is built by Kafka's generated
// JSON converter from the JSON below, read at the version it is written at, so fields a
// version lacks are left out as Kafka leaves them out. The JSON for a pair of versions is
// the same, so the newer version's body translated down is the older one's bytes (a fourth
// element names top-level fields Kafka refuses to leave out silently, removed for the older
// version).
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.MessageUtil;

import java.nio.ByteBuffer;

public class NewerVersionVectors {
    static final String ID = "\"YWJjZGVmZ2hpamtsbW5vcA\"";
    static final String ID2 = "\"cXJzdHV2d3h5ejAxMjM0NQ\"";

    static final String[][] CASES = {
        {"ApiVersionsRequest", "4,5",
            "{\"clientSoftwareName\":\"apache-kafka-java\",\"clientSoftwareVersion\":\"4.4.0\","
                + "\"clusterId\":\"MkU3OEVBNTcwNTJENDM2Qg\",\"nodeId\":3}"},
        {"ApiVersionsRequest", "4,5",
            "{\"clientSoftwareName\":\"x\",\"clientSoftwareVersion\":\"1\",\"clusterId\":null,\"nodeId\":-1}"},
        {"DeleteGroupsResponse", "2,3",
            "{\"throttleTimeMs\":5,\"results\":[{\"groupId\":\"g\",\"errorCode\":0,\"errorMessage\":null},"
                + "{\"groupId\":\"h\",\"errorCode\":35,\"errorMessage\":\"not deleted\"}]}"},
        {"DescribeLogDirsResponse", "4,5",
            "{\"throttleTimeMs\":0,\"errorCode\":0,\"results\":[{\"errorCode\":0,\"logDir\":\"/d1\","
                + "\"topics\":[{\"name\":\"t\",\"partitions\":[{\"partitionIndex\":0,\"partitionSize\":10,"
                + "\"offsetLag\":0,\"isFutureKey\":false}]}],\"totalBytes\":100,\"usableBytes\":50,"
                + "\"isCordoned\":true},{\"errorCode\":0,\"logDir\":\"/d2\",\"topics\":[],"
                + "\"totalBytes\":-1,\"usableBytes\":-1,\"isCordoned\":false}]}"},
        {"WriteTxnMarkersRequest", "1,2",
            "{\"markers\":[{\"producerId\":7,\"producerEpoch\":1,\"transactionResult\":true,"
                + "\"topics\":[{\"name\":\"t\",\"partitionIndexes\":[0,2]}],\"coordinatorEpoch\":4,"
                + "\"transactionVersion\":2}]}"},
        {"AddRaftVoterRequest", "0,1",
            "{\"clusterId\":\"c\",\"timeoutMs\":30000,\"voterId\":2,\"voterDirectoryId\":" + ID + ","
                + "\"listeners\":[{\"name\":\"CONTROLLER\",\"host\":\"localhost\",\"port\":9093}],"
                + "\"ackWhenCommitted\":true}"},
        {"BrokerHeartbeatRequest", "1,2",
            "{\"brokerId\":1,\"brokerEpoch\":12,\"currentMetadataOffset\":99,\"wantFence\":false,"
                + "\"wantShutDown\":false,\"offlineLogDirs\":[" + ID + "],\"cordonedLogDirs\":[" + ID2 + "]}",
            "cordonedLogDirs"},
        {"OffsetCommitRequest", "9,10",
            "{\"groupId\":\"g\",\"generationIdOrMemberEpoch\":3,\"memberId\":\"m\",\"groupInstanceId\":null,"
                + "\"topics\":[{\"name\":\"\",\"topicId\":" + ID + ",\"partitions\":[{\"partitionIndex\":0,"
                + "\"committedOffset\":42,\"committedLeaderEpoch\":-1,\"committedMetadata\":\"meta\"}]},"
                + "{\"name\":\"\",\"topicId\":" + ID2 + ",\"partitions\":[]}]}"},
        {"OffsetFetchRequest", "9,10",
            "{\"groups\":[{\"groupId\":\"g\",\"memberId\":null,\"memberEpoch\":-1,\"topics\":[{\"name\":\"\","
                + "\"topicId\":" + ID + ",\"partitionIndexes\":[0,1]}]},{\"groupId\":\"all\",\"memberId\":\"m\","
                + "\"memberEpoch\":5,\"topics\":null}],\"requireStable\":true}"},
        {"TxnOffsetCommitRequest", "5,6",
            "{\"transactionalId\":\"tx\",\"groupId\":\"g\",\"producerId\":7,\"producerEpoch\":0,"
                + "\"generationIdOrMemberEpoch\":-1,\"memberId\":\"\",\"groupInstanceId\":null,"
                + "\"topics\":[{\"name\":\"\",\"topicId\":" + ID + ",\"partitions\":[{\"partitionIndex\":1,"
                + "\"committedOffset\":5,\"committedLeaderEpoch\":2,\"committedMetadata\":null}]}]}"},
        {"TxnOffsetCommitResponse", "5,6",
            "{\"throttleTimeMs\":0,\"topics\":[{\"name\":\"\",\"topicId\":" + ID + ",\"partitions\":"
                + "[{\"partitionIndex\":1,\"errorCode\":0}]},{\"name\":\"\",\"topicId\":" + ID2 + ","
                + "\"partitions\":[{\"partitionIndex\":0,\"errorCode\":100}]}]}"},
        {"DescribeShareGroupOffsetsResponse", "0,1",
            "{\"throttleTimeMs\":0,\"groups\":[{\"groupId\":\"sg\",\"topics\":[{\"topicName\":\"t\","
                + "\"topicId\":" + ID + ",\"partitions\":[{\"partitionIndex\":0,\"startOffset\":3,"
                + "\"leaderEpoch\":0,\"lag\":7,\"errorCode\":0,\"errorMessage\":null},{\"partitionIndex\":1,"
                + "\"startOffset\":-1,\"leaderEpoch\":0,\"lag\":-1,\"errorCode\":0,\"errorMessage\":null}]}],"
                + "\"errorCode\":0,\"errorMessage\":null}]}"},
        {"ReadShareGroupStateSummaryResponse", "0,1",
            "{\"results\":[{\"topicId\":" + ID + ",\"partitions\":[{\"partition\":0,\"errorCode\":0,"
                + "\"errorMessage\":null,\"stateEpoch\":1,\"leaderEpoch\":0,\"startOffset\":3,"
                + "\"deliveryCompleteCount\":2}]}]}"},
        {"WriteShareGroupStateRequest", "0,1",
            "{\"groupId\":\"sg\",\"topics\":[{\"topicId\":" + ID + ",\"partitions\":[{\"partition\":0,"
                + "\"stateEpoch\":1,\"leaderEpoch\":0,\"startOffset\":3,\"deliveryCompleteCount\":4,"
                + "\"stateBatches\":[{\"firstOffset\":3,\"lastOffset\":5,\"deliveryState\":2,"
                + "\"deliveryCount\":1}]}]}]}"},
        {"ShareFetchRequest", "1,2",
            "{\"groupId\":\"sg\",\"memberId\":\"m\",\"shareSessionEpoch\":3,\"maxWaitMs\":0,"
                + "\"minBytes\":0,\"maxBytes\":0,\"maxRecords\":0,\"batchSize\":0,\"shareAcquireMode\":1,"
                + "\"isRenewAck\":true,\"topics\":[{\"topicId\":" + ID + ",\"partitions\":[{\"partitionIndex\":0,"
                + "\"acknowledgementBatches\":[{\"firstOffset\":5,\"lastOffset\":7,\"acknowledgeTypes\":[4,1,4]}]}]}],"
                + "\"forgottenTopicsData\":[{\"topicId\":" + ID2 + ",\"partitions\":[1,2]}]}",
            "shareAcquireMode,isRenewAck"},
        {"ShareFetchRequest", "1,2",
            "{\"groupId\":\"sg\",\"memberId\":\"m\",\"shareSessionEpoch\":0,\"maxWaitMs\":500,"
                + "\"minBytes\":1,\"maxBytes\":52428800,\"maxRecords\":500,\"batchSize\":500,"
                + "\"shareAcquireMode\":0,\"isRenewAck\":false,\"topics\":[{\"topicId\":" + ID + ","
                + "\"partitions\":[{\"partitionIndex\":0,\"acknowledgementBatches\":[]}]}],\"forgottenTopicsData\":[]}"},
        {"ShareFetchResponse", "1,2",
            "{\"throttleTimeMs\":0,\"errorCode\":0,\"errorMessage\":null,\"acquisitionLockTimeoutMs\":30000,"
                + "\"responses\":[{\"topicId\":" + ID + ",\"partitions\":[{\"partitionIndex\":0,\"errorCode\":0,"
                + "\"errorMessage\":null,\"acknowledgeErrorCode\":0,\"acknowledgeErrorMessage\":null,"
                + "\"currentLeader\":{\"leaderId\":-1,\"leaderEpoch\":-1},\"records\":\"AAEC\","
                + "\"acquiredRecords\":[{\"firstOffset\":0,\"lastOffset\":4,\"deliveryCount\":1}]}]}],"
                + "\"nodeEndpoints\":[]}"},
        {"ShareAcknowledgeRequest", "1,2",
            "{\"groupId\":\"sg\",\"memberId\":\"m\",\"shareSessionEpoch\":2,\"isRenewAck\":true,"
                + "\"topics\":[{\"topicId\":" + ID + ",\"partitions\":[{\"partitionIndex\":1,"
                + "\"acknowledgementBatches\":[{\"firstOffset\":0,\"lastOffset\":2,\"acknowledgeTypes\":[4]},"
                + "{\"firstOffset\":3,\"lastOffset\":3,\"acknowledgeTypes\":[1]}]}]}]}",
            "isRenewAck"},
        {"ShareAcknowledgeResponse", "1,2",
            "{\"throttleTimeMs\":0,\"errorCode\":0,\"errorMessage\":null,\"acquisitionLockTimeoutMs\":15000,"
                + "\"responses\":[{\"topicId\":" + ID + ",\"partitions\":[{\"partitionIndex\":1,\"errorCode\":124,"
                + "\"errorMessage\":\"not acquired\",\"currentLeader\":{\"leaderId\":2,\"leaderEpoch\":7}}]}],"
                + "\"nodeEndpoints\":[{\"nodeId\":2,\"host\":\"h\",\"port\":9092,\"rack\":null}]}",
            "acquisitionLockTimeoutMs"},
        {"ListOffsetsRequest", "10,11",
            "{\"replicaId\":-1,\"isolationLevel\":1,\"topics\":[{\"name\":\"t\",\"partitions\":"
                + "[{\"partitionIndex\":0,\"currentLeaderEpoch\":-1,\"timestamp\":-6}]}],\"timeoutMs\":1000}"},
        {"ListOffsetsResponse", "10,11",
            "{\"throttleTimeMs\":0,\"topics\":[{\"name\":\"t\",\"partitions\":[{\"partitionIndex\":0,"
                + "\"errorCode\":0,\"timestamp\":-1,\"offset\":-1,\"leaderEpoch\":-1}]}]}"},
        {"ApiVersionsResponse", "4,5",
            "{\"errorCode\":0,\"apiKeys\":[{\"apiKey\":18,\"minVersion\":0,\"maxVersion\":5}],"
                + "\"throttleTimeMs\":0,\"supportedFeatures\":[],\"finalizedFeaturesEpoch\":-1,"
                + "\"finalizedFeatures\":[],\"zkMigrationReady\":false}"},
    };

    public static void main(String[] args) throws Exception {
        ObjectMapper mapper = new ObjectMapper();
        for (String[] c : CASES) {
            String[] versions = c[1].split(",");
            Class<?> converter = Class.forName("org.apache.kafka.common.message." + c[0] + "DataJsonConverter");
            for (String v : versions) {
                short version = Short.parseShort(v);
                JsonNode json = mapper.readTree(c[2]);
                if (c.length > 3 && !v.equals(versions[versions.length - 1])) {
                    for (String field : c[3].split(",")) ((ObjectNode) json).remove(field);
                }
                Message m;
                try {
                    m = (Message) converter.getMethod("read", JsonNode.class, short.class)
                        .invoke(null, json, version);
                } catch (java.lang.reflect.InvocationTargetException e) {
                    throw new RuntimeException(c[0] + " v" + version + ": " + e.getCause(), e.getCause());
                }
                ByteBuffer b = MessageUtil.toByteBufferAccessor(m, version).buffer();
                StringBuilder hex = new StringBuilder();
                while (b.hasRemaining()) hex.append(String.format("%02x", b.get()));
                System.out.println(c[0] + " " + version + " " + hex);
            }
        }
    }
}
