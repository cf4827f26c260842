import java.lang.reflect.Field;
import java.util.Map;

import org.apache.kafka.common.protocol.types.ArrayOf;
import org.apache.kafka.common.protocol.types.BoundField;
import org.apache.kafka.common.protocol.types.CompactArrayOf;
import org.apache.kafka.common.protocol.types.Schema;
import org.apache.kafka.common.protocol.types.TaggedFields;
import org.apache.kafka.common.protocol.types.Type;

/**
 * Prints the wire schema of each version of Kafka's generated message or record classes, as
 * the classes themselves define them (field names, types, nullability, tagged fields with their
 * tags): the reference for an API or a record Samsa implements. Names are a message
 * ("StreamsGroupHeartbeatRequest", org.apache.kafka.common.message.*Data), a coordinator record
 * ("StreamsGroupMetadataValue", org.apache.kafka.coordinator.group.generated.*) or a class name.
 */
public final class SchemaDump {
    private SchemaDump() {
    }

    static String describe(Type type, String indent) throws ReflectiveOperationException {
        if (type instanceof Schema s) {
            StringBuilder b = new StringBuilder(s.isNullable() ? "nullable {\n" : "{\n");
            for (BoundField f : s.fields()) {
                b.append(indent).append("  ").append(f.def.name).append(": ")
                    .append(describe(f.def.type, indent + "  ")).append('\n');
            }
            return b.append(indent).append('}').toString();
        }
        if (type instanceof TaggedFields tagged) {
            Field inner = TaggedFields.class.getDeclaredField("fields");
            inner.setAccessible(true);
            @SuppressWarnings("unchecked")
            Map<Integer, org.apache.kafka.common.protocol.types.Field> fields =
                (Map<Integer, org.apache.kafka.common.protocol.types.Field>) inner.get(tagged);
            if (fields.isEmpty()) {
                return "tagged {}";
            }
            StringBuilder b = new StringBuilder("tagged {\n");
            for (var e : fields.entrySet()) {
                b.append(indent).append("  tag ").append(e.getKey()).append(' ').append(e.getValue().name)
                    .append(": ").append(describe(e.getValue().type, indent + "  ")).append('\n');
            }
            return b.append(indent).append('}').toString();
        }
        if (type instanceof CompactArrayOf a) {
            return (a.isNullable() ? "nullable compact array of " : "compact array of ")
                + describe(a.arrayElementType().orElseThrow(), indent);
        }
        if (type instanceof ArrayOf a) {
            return (a.isNullable() ? "nullable array of " : "array of ")
                + describe(a.arrayElementType().orElseThrow(), indent);
        }
        return type.toString();
    }

    static Class<?> find(String name) throws ClassNotFoundException {
        for (String candidate : new String[] {
            name, "org.apache.kafka.common.message." + name + "Data", "org.apache.kafka.common.message." + name,
            "org.apache.kafka.coordinator.group.generated." + name}) {
            try {
                return Class.forName(candidate);
            } catch (ClassNotFoundException e) {
                // The next one.
            }
        }
        throw new ClassNotFoundException(name);
    }

    public static void main(String[] args) throws Exception {
        for (String name : args) {
            Class<?> c = find(name);
            Schema[] schemas = (Schema[]) c.getField("SCHEMAS").get(null);
            short lowest = c.getField("LOWEST_SUPPORTED_VERSION").getShort(null);
            short highest = c.getField("HIGHEST_SUPPORTED_VERSION").getShort(null);
            for (int v = lowest; v <= highest; v++) {
                System.out.println(c.getSimpleName() + " v" + v + " " + describe(schemas[v], ""));
            }
        }
    }
}
