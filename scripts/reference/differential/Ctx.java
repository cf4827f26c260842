package differential;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.message.FindCoordinatorRequestData;
import org.apache.kafka.common.message.FindCoordinatorResponseData;
import org.apache.kafka.common.message.ListOffsetsRequestData;
import org.apache.kafka.common.message.ListOffsetsResponseData;
import org.apache.kafka.common.message.MetadataRequestData;
import org.apache.kafka.common.message.MetadataResponseData;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.message.ProduceResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.record.internal.MemoryRecords;

/**
 * What a scenario sees of one peer while it runs: requests go out through it, the answers it
 * observes are kept for the comparison, and the names it makes are the same on both peers.
 * A scenario runs once with a context on Kafka and once with one on Samsa.
 */
final class Ctx {
    static final long AWAIT_MS = 15_000;

    final Peer peer;
    /** The version under test of the scenario's API. */
    final short version;
    final String id;
    final List<Observation> observed = new ArrayList<>();
    /** Topic ids this peer gave, to their names: answers show ids as the names they stand for. */
    final Map<String, String> topicNames = new HashMap<>();
    final Map<String, Uuid> topicIds = new HashMap<>();

    Ctx(Peer peer, short version, String id) {
        this.peer = peer;
        this.version = version;
        this.id = id;
    }

    /** A name of this scenario's own, the same on both peers. */
    String name(String suffix) {
        return suffix.isEmpty() ? "d-" + id : "d-" + id + "-" + suffix;
    }

    String topic() {
        return name("");
    }

    /** A request whose answer is not compared (setting up); it must be answered. */
    Peer.Answer call(Route route, ApiKeys key, short version, ApiMessage body) throws IOException {
        Peer.Answer a = peer.call(route.node(this), key, version, body);
        if (!a.ok()) throw new ScenarioFailure(key.name + " v" + version + ": " + a.failure());
        learnTopicIds(a.json());
        return a;
    }

    /** A request whose answer is compared with the other peer's. */
    Observation observe(String label, Route route, ApiKeys key, short version, ApiMessage body) throws IOException {
        Peer.Answer a = peer.call(route.node(this), key, version, body);
        learnTopicIds(a.json());
        Observation o = new Observation(label, key, version, Json.toJson(body, version), a);
        observed.add(o);
        return o;
    }

    /** `observe` at the version under test of the scenario's API. */
    Observation observe(String label, Route route, ApiKeys key, ApiMessage body) throws IOException {
        return observe(label, route, key, version, body);
    }

    /**
     * A request every node answers about what it holds itself (ListGroups, ListTransactions),
     * asked of each node and answered as one, as Kafka's admin client lists them: the entries of
     * `array` from every node's answer, and the first node's other fields. With one node, `observe`.
     */
    Observation observeEveryNode(String label, ApiKeys key, ApiMessage body, String array) throws IOException {
        Observation o = observe(label, Route.ANY, key, version, body);
        if (!(o.json() instanceof com.fasterxml.jackson.databind.node.ObjectNode first)
            || !(first.get(array) instanceof com.fasterxml.jackson.databind.node.ArrayNode all)) {
            return o;
        }
        for (int node : peer.nodes.keySet()) {
            if (node == peer.anyNode()) continue;
            Peer.Answer a = peer.call(node, key, version, body);
            learnTopicIds(a.json());
            for (JsonNode item : a.json().path(array)) all.add(item);
        }
        return o;
    }

    /** Raw bytes as the request body (malformed input); the header is well formed. */
    Observation observeRaw(String label, Route route, ApiKeys key, short version, byte[] body) throws IOException {
        Peer.Answer a = peer.callRaw(route.node(this), key, version, body);
        Observation o = new Observation(label, key, version, Json.F.textNode(hex(body)), a);
        observed.add(o);
        return o;
    }

    private static String hex(byte[] body) {
        StringBuilder s = new StringBuilder("0x");
        for (int i = 0; i < Math.min(body.length, 64); i++) s.append(String.format("%02x", body[i]));
        if (body.length > 64) s.append("... (").append(body.length).append(" bytes)");
        return s.toString();
    }

    private void learnTopicIds(JsonNode node) {
        if (node == null) return;
        if (node.isObject()) {
            JsonNode id = node.get("topicId");
            JsonNode name = node.has("name") ? node.get("name") : node.get("topic");
            if (id != null && id.isTextual() && name != null && name.isTextual() && !id.asText().equals(Uuid.ZERO_UUID.toString())) {
                topicNames.put(id.asText(), name.asText());
                topicIds.put(name.asText(), Uuid.fromString(id.asText()));
            }
        }
        for (JsonNode child : node) learnTopicIds(child);
    }

    // ---- helpers for setting up -------------------------------------------------------------

    /** Creates a topic with the broker's default replication factor and waits until every
     *  partition's leader answers ListOffsets, as a client would before producing (Kafka
     *  answers CreateTopics before its replica manager has the partitions). */
    Uuid createTopic(String name, int partitions, String... configs) throws IOException {
        CreateTopicsRequestData.CreatableTopic t = new CreateTopicsRequestData.CreatableTopic()
            .setName(name).setNumPartitions(partitions).setReplicationFactor((short) -1);
        for (int i = 0; i + 1 < configs.length; i += 2) {
            t.configs().add(new CreateTopicsRequestData.CreatableTopicConfig().setName(configs[i]).setValue(configs[i + 1]));
        }
        CreateTopicsRequestData req = new CreateTopicsRequestData().setTimeoutMs(30_000);
        req.topics().add(t);
        Peer.Answer a = call(Route.ANY, ApiKeys.CREATE_TOPICS, (short) 7, req);
        CreateTopicsResponseData.CreatableTopicResult r = ((CreateTopicsResponseData) a.message()).topics().iterator().next();
        if (r.errorCode() != 0) throw new ScenarioFailure("create topic " + name + ": error " + r.errorCode() + " " + r.errorMessage());
        awaitTopic(name, partitions);
        return topicIds.get(name);
    }

    void awaitTopic(String name, int partitions) throws IOException {
        long deadline = System.currentTimeMillis() + AWAIT_MS;
        for (int p = 0; p < partitions; p++) {
            while (true) {
                int leader = leaderOrNone(name, p);
                if (leader >= 0) {
                    ListOffsetsRequestData lo = new ListOffsetsRequestData().setReplicaId(-1);
                    lo.topics().add(new ListOffsetsRequestData.ListOffsetsTopic().setName(name)
                        .setPartitions(List.of(new ListOffsetsRequestData.ListOffsetsPartition().setPartitionIndex(p).setTimestamp(-1))));
                    Peer.Answer a = peer.call(leader, ApiKeys.LIST_OFFSETS, (short) 7, lo);
                    if (a.ok() && ((ListOffsetsResponseData) a.message()).topics().get(0).partitions().get(0).errorCode() == 0) break;
                }
                if (System.currentTimeMillis() > deadline) throw new ScenarioFailure(name + "-" + p + " has no serving leader after " + AWAIT_MS + " ms");
                sleep(20);
            }
        }
        // Every node learns of the topic from the metadata log in its own time; a coordinator
        // that has not would answer UNKNOWN_TOPIC_OR_PARTITION for it.
        for (int node : peer.nodes.keySet()) {
            while (!knows(node, name, partitions)) {
                if (System.currentTimeMillis() > deadline) throw new ScenarioFailure("node " + node + " does not know " + name + " after " + AWAIT_MS + " ms");
                sleep(20);
            }
        }
    }

    private boolean knows(int node, String topic, int partitions) throws IOException {
        MetadataRequestData req = new MetadataRequestData().setAllowAutoTopicCreation(false);
        req.topics().add(new MetadataRequestData.MetadataRequestTopic().setName(topic));
        Peer.Answer a = peer.call(node, ApiKeys.METADATA, (short) 12, req);
        if (!a.ok()) return false;
        for (MetadataResponseData.MetadataResponseTopic t : ((MetadataResponseData) a.message()).topics()) {
            if (t.errorCode() == 0 && t.partitions().size() == partitions) return true;
        }
        return false;
    }

    private int leaderOrNone(String topic, int partition) throws IOException {
        MetadataRequestData req = new MetadataRequestData().setAllowAutoTopicCreation(false);
        req.topics().add(new MetadataRequestData.MetadataRequestTopic().setName(topic));
        Peer.Answer a = call(Route.ANY, ApiKeys.METADATA, (short) 12, req);
        for (MetadataResponseData.MetadataResponseTopic t : ((MetadataResponseData) a.message()).topics()) {
            for (MetadataResponseData.MetadataResponsePartition p : t.partitions()) {
                if (p.partitionIndex() == partition && p.errorCode() == 0) return p.leaderId();
            }
        }
        return -1;
    }

    int leader(String topic, int partition) throws IOException {
        int leader = leaderOrNone(topic, partition);
        if (leader < 0) throw new ScenarioFailure("no leader for " + topic + "-" + partition);
        return leader;
    }

    /** The coordinator of a group (type 0) or transactional id (type 1), waiting while it loads. */
    int coordinator(byte type, String key) throws IOException {
        long deadline = System.currentTimeMillis() + AWAIT_MS;
        while (true) {
            FindCoordinatorRequestData req = new FindCoordinatorRequestData().setKeyType(type);
            req.coordinatorKeys().add(key);
            Peer.Answer a = call(Route.ANY, ApiKeys.FIND_COORDINATOR, (short) 4, req);
            FindCoordinatorResponseData.Coordinator c = ((FindCoordinatorResponseData) a.message()).coordinators().get(0);
            if (c.errorCode() == 0) return c.nodeId();
            if (System.currentTimeMillis() > deadline) throw new ScenarioFailure("no coordinator for " + key + ": error " + c.errorCode());
            sleep(50);
        }
    }

    /** Produces with acks=all to the partition's leader and expects success. */
    long produce(String topic, int partition, MemoryRecords records) throws IOException {
        ProduceRequestData req = new ProduceRequestData().setAcks((short) -1).setTimeoutMs(10_000);
        ProduceRequestData.TopicProduceData td = new ProduceRequestData.TopicProduceData().setName(topic);
        td.partitionData().add(new ProduceRequestData.PartitionProduceData().setIndex(partition).setRecords(records));
        req.topicData().add(td);
        long deadline = System.currentTimeMillis() + AWAIT_MS;
        while (true) {
            Peer.Answer a = call(Route.leader(topic, partition), ApiKeys.PRODUCE, (short) 12, req);
            ProduceResponseData.PartitionProduceResponse p = ((ProduceResponseData) a.message()).responses().iterator().next().partitionResponses().get(0);
            if (p.errorCode() == 0) return p.baseOffset();
            if (System.currentTimeMillis() > deadline || !retriable(p.errorCode())) {
                throw new ScenarioFailure("produce to " + topic + "-" + partition + ": error " + p.errorCode());
            }
            sleep(20);
        }
    }

    static boolean retriable(short error) {
        // NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE,
        // NOT_ENOUGH_REPLICAS, COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR, UNKNOWN_TOPIC_ID
        return error == 6 || error == 3 || error == 5 || error == 19 || error == 14 || error == 16 || error == 100;
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ScenarioFailure("interrupted");
        }
    }

    static ByteBuffer utf8(String s) {
        return ByteBuffer.wrap(s.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    /** A setup step went wrong on this peer: the scenario stops there. */
    static final class ScenarioFailure extends RuntimeException {
        ScenarioFailure(String message) {
            super(message);
        }
    }
}
