package differential;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;

/**
 * Kafka's messages as JSON trees, through the JSON converters Kafka generates beside every
 * message class (the same field names as Kafka's schemas, null kept apart from empty), with
 * record sets decoded into their batches and records (read from the message: the converters
 * leave them out) so that they can be compared field by field.
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
            fillRecords(message, node);
            return node;
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("no JSON converter for " + type.getName(), e);
        }
    }

    /**
     * Kafka's JSON converters write a record set as "" (or its size); its batches are read
     * from the message itself instead, walking its structure beside the JSON: each getter
     * named as a JSON field that returns records, a nested message or a list of them.
     */
    static void fillRecords(Object message, JsonNode node) throws ReflectiveOperationException {
        if (!(node instanceof ObjectNode o)) return;
        for (Method m : message.getClass().getMethods()) {
            if (m.getParameterCount() != 0 || !o.has(m.getName())) continue;
            Class<?> r = m.getReturnType();
            if (org.apache.kafka.common.record.internal.BaseRecords.class.isAssignableFrom(r)) {
                Object records = m.invoke(message);
                o.set(m.getName(), records == null ? F.nullNode() : batches(recordBytes(records)));
            } else if (Message.class.isAssignableFrom(r)) {
                Object child = m.invoke(message);
                if (child != null) fillRecords(child, o.get(m.getName()));
            } else if (java.util.Collection.class.isAssignableFrom(r)) {
                Object list = m.invoke(message);
                JsonNode array = o.get(m.getName());
                if (list == null || !array.isArray()) continue;
                int i = 0;
                for (Object item : (java.util.Collection<?>) list) {
                    if (item instanceof Message && i < array.size()) fillRecords(item, array.get(i));
                    i++;
                }
            }
        }
    }

    private static byte[] recordBytes(Object records) {
        if (records instanceof MemoryRecords mr) {
            ByteBuffer b = mr.buffer().duplicate();
            byte[] bytes = new byte[b.remaining()];
            b.get(bytes);
            return bytes;
        }
        if (records instanceof org.apache.kafka.common.record.internal.UnalignedMemoryRecords ur) {
            ByteBuffer b = ur.buffer().duplicate();
            byte[] bytes = new byte[b.remaining()];
            b.get(bytes);
            return bytes;
        }
        throw new IllegalStateException("records of type " + records.getClass().getName());
    }

    private static JsonNode batches(byte[] bytes) {
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
