package differential;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.common.message.ApiVersionsRequestData;
import org.apache.kafka.common.message.ApiVersionsResponseData;
import org.apache.kafka.common.message.MetadataRequestData;
import org.apache.kafka.common.message.MetadataResponseData;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.message.ResponseHeaderData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.requests.RequestUtils;

/**
 * One side of the comparison, Kafka or Samsa: its nodes (found through Metadata), a
 * connection per node opened on first use, and the API version ranges it advertises. Requests
 * are Kafka's own message classes encoded by Kafka's own code; answers are decoded the way
 * Kafka's Java client decodes them.
 */
final class Peer implements AutoCloseable {
    static final int READ_TIMEOUT_MS = 30_000;

    final String name;
    final List<InetSocketAddress> bootstrap;
    /** Node id to its broker listener, from the first node's Metadata. */
    final Map<Integer, InetSocketAddress> nodes = new TreeMap<>();
    /** Each listener port to its node id (ports differ between the peers; node ids do not). */
    final Map<Integer, Integer> portToNode = new HashMap<>();
    /** Ports of this peer's controller listeners, for the answers that name them. */
    final Map<Integer, Integer> controllerPortToNode = new HashMap<>();
    /** The version range of each API the peer's brokers advertise. */
    final Map<ApiKeys, short[]> versions = new TreeMap<>();
    /** Each feature the peer's first broker reports: its supported range and finalized level
     *  (`1-25, finalized 25`; `0-1, not finalized`). */
    final Map<String, String> features = new TreeMap<>();
    private final Map<Integer, Conn> conns = new HashMap<>();

    Peer(String name, List<InetSocketAddress> bootstrap, List<InetSocketAddress> controllers) throws IOException {
        this.name = name;
        this.bootstrap = bootstrap;
        for (int i = 0; i < controllers.size(); i++) controllerPortToNode.put(controllers.get(i).getPort(), i + 1);
        Conn first = new Conn(bootstrap.get(0));
        Answer versionsAnswer = first.call(ApiKeys.API_VERSIONS, (short) 3, new ApiVersionsRequestData()
            .setClientSoftwareName("samsa-differential").setClientSoftwareVersion("1"));
        for (ApiVersionsResponseData.ApiVersion v : ((ApiVersionsResponseData) versionsAnswer.message()).apiKeys()) {
            ApiKeys key;
            try {
                key = ApiKeys.forId(v.apiKey());
            } catch (IllegalArgumentException unknown) {
                continue;
            }
            versions.put(key, new short[] {v.minVersion(), v.maxVersion()});
        }
        // v4: v3 leaves out the features whose supported range starts at 0 (old clients
        // could not read them).
        ApiVersionsResponseData va = (ApiVersionsResponseData) first.call(ApiKeys.API_VERSIONS, (short) 4, new ApiVersionsRequestData()
            .setClientSoftwareName("samsa-differential").setClientSoftwareVersion("1")).message();
        for (ApiVersionsResponseData.SupportedFeatureKey f : va.supportedFeatures()) {
            ApiVersionsResponseData.FinalizedFeatureKey fin = va.finalizedFeatures().find(f.name());
            features.put(f.name(), f.minVersion() + "-" + f.maxVersion()
                + (fin == null ? ", not finalized" : ", finalized " + fin.maxVersionLevel()));
        }
        Answer metadata = first.call(ApiKeys.METADATA, (short) 12, new MetadataRequestData().setTopics(List.of()));
        for (MetadataResponseData.MetadataResponseBroker b : ((MetadataResponseData) metadata.message()).brokers()) {
            InetSocketAddress address = new InetSocketAddress(b.host(), b.port());
            nodes.put(b.nodeId(), address);
            portToNode.put(b.port(), b.nodeId());
        }
        first.close();
    }

    /** The lowest node id: where requests that any broker may answer go. */
    int anyNode() {
        return nodes.keySet().iterator().next();
    }

    boolean serves(ApiKeys key, short version) {
        short[] range = versions.get(key);
        return range != null && range[0] <= version && version <= range[1];
    }

    Answer call(int node, ApiKeys key, short version, ApiMessage body) throws IOException {
        Conn conn = conns.get(node);
        if (conn == null || conn.closed) {
            InetSocketAddress address = nodes.get(node);
            if (address == null) throw new IllegalArgumentException(name + " has no node " + node);
            conn = new Conn(address);
            conns.put(node, conn);
        }
        return conn.call(key, version, body);
    }

    /** Sends raw bytes as a request body (bad input): the header is still Kafka's. */
    Answer callRaw(int node, ApiKeys key, short version, byte[] body) throws IOException {
        Conn conn = new Conn(nodes.get(node));
        try {
            return conn.exchange(key, version, header -> {
                ByteBuffer h = RequestUtils.serialize(header, key.requestHeaderVersion(version), new ApiVersionsRequestData(), (short) 0);
                // The header alone: serialize() appended an empty ApiVersions v0 body (no bytes).
                ByteBuffer frame = ByteBuffer.allocate(h.remaining() + body.length);
                frame.put(h).put(body).flip();
                return frame;
            });
        } finally {
            conn.close();
        }
    }

    /** Closes the connection to `node`; the next call opens a new one. */
    void reconnect(int node) {
        Conn conn = conns.remove(node);
        if (conn != null) conn.close();
    }

    @Override
    public void close() {
        for (Conn c : conns.values()) c.close();
        conns.clear();
    }

    /** What a request got back: the decoded message and its JSON, or why there is none. */
    record Answer(ApiMessage message, JsonNode json, String failure) {
        static Answer failed(String why) {
            ObjectNode n = JsonNodeFactory.instance.objectNode();
            n.put("<no answer>", why);
            return new Answer(null, n, why);
        }

        boolean ok() {
            return failure == null;
        }

        short errorCode() {
            JsonNode e = json.get("errorCode");
            return e == null ? 0 : (short) e.asInt();
        }
    }

    interface Framer {
        ByteBuffer frame(RequestHeaderData header) throws IOException;
    }

    /** One connection; requests on it are answered in order, one at a time here. */
    static final class Conn implements AutoCloseable {
        private final Socket socket;
        private final DataInputStream in;
        private final DataOutputStream out;
        private int correlation = 1;
        boolean closed;

        Conn(InetSocketAddress address) throws IOException {
            socket = new Socket();
            socket.connect(address, 10_000);
            socket.setSoTimeout(READ_TIMEOUT_MS);
            socket.setTcpNoDelay(true);
            in = new DataInputStream(socket.getInputStream());
            out = new DataOutputStream(socket.getOutputStream());
        }

        Answer call(ApiKeys key, short version, ApiMessage body) throws IOException {
            return exchange(key, version, header -> RequestUtils.serialize(header, key.requestHeaderVersion(version), body, version));
        }

        Answer exchange(ApiKeys key, short version, Framer framer) throws IOException {
            if (closed) return Answer.failed("connection closed");
            int id = correlation++;
            RequestHeaderData header = new RequestHeaderData()
                .setRequestApiKey(key.id)
                .setRequestApiVersion(version)
                .setClientId("differential")
                .setCorrelationId(id);
            ByteBuffer frame = framer.frame(header);
            byte[] bytes = new byte[frame.remaining()];
            frame.get(bytes);
            byte[] answer;
            try {
                out.writeInt(bytes.length);
                out.write(bytes);
                out.flush();
                int size = in.readInt();
                answer = new byte[size];
                in.readFully(answer);
            } catch (EOFException | java.net.SocketException e) {
                close();
                return Answer.failed("connection closed");
            } catch (SocketTimeoutException e) {
                close();
                return Answer.failed("no answer within " + READ_TIMEOUT_MS + " ms");
            }
            ByteBuffer buffer = ByteBuffer.wrap(answer);
            ByteBufferAccessor accessor = new ByteBufferAccessor(buffer);
            // ApiVersions answers always carry header v0 (KIP-511).
            short headerVersion = key == ApiKeys.API_VERSIONS ? 0 : key.responseHeaderVersion(version);
            ResponseHeaderData responseHeader = new ResponseHeaderData(accessor, headerVersion);
            if (responseHeader.correlationId() != id) {
                close();
                return Answer.failed("correlation id " + responseHeader.correlationId() + " for request " + id);
            }
            int bodyStart = buffer.position();
            ApiMessage message = key.messageType.newResponse();
            try {
                message.read(accessor, version);
            } catch (RuntimeException e) {
                // An ApiVersions answer to a version the broker does not serve is a v0 body
                // (error 35 with the supported range), which clients read again at v0.
                if (key == ApiKeys.API_VERSIONS) {
                    buffer.position(bodyStart);
                    message = key.messageType.newResponse();
                    message.read(new ByteBufferAccessor(buffer), (short) 0);
                    ObjectNode json = (ObjectNode) Json.toJson(message, (short) 0);
                    json.put("<decoded at>", 0);
                    return new Answer(message, json, null);
                }
                return Answer.failed("undecodable answer: " + e.getMessage());
            }
            JsonNode json = Json.toJson(message, version);
            if (buffer.hasRemaining()) ((ObjectNode) json).put("<trailing bytes>", buffer.remaining());
            return new Answer(message, json, null);
        }

        @Override
        public void close() {
            closed = true;
            try {
                socket.close();
            } catch (IOException ignored) {
                // closing
            }
        }
    }
}
