package differential;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;

/**
 * Kafka's messages as JSON trees, through the JSON converters Kafka generates beside every
 * message class (the same field names as Kafka's schemas, null kept apart from empty), with
 * record sets decoded into their batches and records so that they can be compared field by
 * field.
 */
final class Json {
    private Json() {}

    static final JsonNodeFactory F = JsonNodeFactory.instance;

    static JsonNode toJson(Message message, short version) {
        Class<?> type = message.getClass();
        String converter = type.getName() + "JsonConverter";
        try {
            Class<?> c = Class.forName(converter);
            JsonNode node;
            try {
                Method write = c.getMethod("write", type, short.class, boolean.class);
                node = (JsonNode) write.invoke(null, message, version, true);
            } catch (NoSuchMethodException noRecords) {
                Method write = c.getMethod("write", type, short.class);
                node = (JsonNode) write.invoke(null, message, version);
            }
            return decodeRecords(node);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("no JSON converter for " + type.getName(), e);
        }
    }

    /** Replaces every `records` field (base64 of a record set) by its batches. */
    static JsonNode decodeRecords(JsonNode node) {
        if (node instanceof ObjectNode o) {
            Iterator<Map.Entry<String, JsonNode>> fields = o.fields();
            List<String> names = new ArrayList<>();
            while (fields.hasNext()) names.add(fields.next().getKey());
            for (String name : names) {
                JsonNode child = o.get(name);
                if (name.equals("records") && (child.isBinary() || child.isTextual())) {
                    o.set("records", batches(child));
                } else {
                    decodeRecords(child);
                }
            }
        } else if (node instanceof ArrayNode a) {
            for (JsonNode child : a) decodeRecords(child);
        }
        return node;
    }

    private static JsonNode batches(JsonNode encoded) {
        byte[] bytes;
        try {
            bytes = encoded.isBinary() ? encoded.binaryValue() : Base64.getDecoder().decode(encoded.asText());
        } catch (java.io.IOException | IllegalArgumentException e) {
            return F.textNode("<undecodable records: " + e.getMessage() + ">");
        }
        ArrayNode out = F.arrayNode();
        if (bytes.length == 0) return out;
        try {
            MemoryRecords records = MemoryRecords.readableRecords(ByteBuffer.wrap(bytes));
            int valid = 0;
            for (MutableRecordBatch batch : records.batches()) {
                ObjectNode b = out.addObject();
                b.put("baseOffset", batch.baseOffset());
                b.put("lastOffset", batch.lastOffset());
                b.put("partitionLeaderEpoch", batch.partitionLeaderEpoch());
                b.put("magic", batch.magic());
                b.put("crcValid", batch.isValid());
                b.put("compression", batch.compressionType().name);
                b.put("timestampType", batch.timestampType().name);
                b.put("maxTimestamp", batch.maxTimestamp());
                b.put("producerId", batch.producerId());
                b.put("producerEpoch", batch.producerEpoch());
                b.put("baseSequence", batch.baseSequence());
                b.put("transactional", batch.isTransactional());
                b.put("control", batch.isControlBatch());
                ArrayNode recs = b.putArray("records");
                for (Record r : batch) {
                    ObjectNode rec = recs.addObject();
                    rec.put("offset", r.offset());
                    rec.put("timestamp", r.timestamp());
                    rec.put("key", text(r.key()));
                    rec.put("value", text(r.value()));
                    ArrayNode headers = rec.putArray("headers");
                    for (Header h : r.headers()) {
                        headers.addObject().put("key", h.key()).put("value", h.value() == null ? null : new String(h.value(), StandardCharsets.UTF_8));
                    }
                }
                valid += batch.sizeInBytes();
            }
            // A fetch may end in a partial batch (it is cut at the byte limit): show its size.
            if (valid < bytes.length) out.addObject().put("partialBatchBytes", bytes.length - valid);
        } catch (RuntimeException e) {
            out.add("<undecodable records: " + e.getMessage() + ">");
        }
        return out;
    }

    private static String text(ByteBuffer b) {
        if (b == null) return null;
        byte[] bytes = new byte[b.remaining()];
        b.duplicate().get(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }
}
