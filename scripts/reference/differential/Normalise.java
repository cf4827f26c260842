package differential;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * The rules that make two brokers' answers comparable: each replaces a value that legitimately
 * differs between two clusters by what it stands for, and says why. Everything else is
 * compared as it is, error codes and null versus empty included.
 */
final class Normalise {
    /** The rules, for the report. */
    static final String[] RULES = {
        "topicId: the id each cluster drew at random for a topic is shown as the topic's name",
        "clusterId: each cluster drew its own",
        "port: each peer listens on ports of its own; shown as the node (and listener) it belongs to",
        "memberId, leader (of JoinGroup), producerId: drawn by the broker; numbered in the order the scenario met them",
        "sessionId (Fetch): fetch session ids are random",
        "a number within a day of now (a timestamp the broker took from its clock): <now>",
        "errorMessage: compared as null, empty or text (the wording is the broker's own)",
        "arrays of entries are sorted by their identifying fields (name, partition, node, group, ...): "
            + "Kafka builds many answers from hash maps, whose order it does not define; clients match entries by those fields",
        "in a cluster of several nodes, which node leads a partition, the quorum or a coordinator is the cluster's own "
            + "choice: leaderId, controllerId, a coordinator's nodeId, replica and ISR lists (their length kept), "
            + "leader hints (nodeEndpoints) and the ports that name those nodes are shown as <node>; an entry of a "
            + "batched answer that either broker answers NOT_COORDINATOR or NOT_LEADER_OR_FOLLOWER is reduced to its "
            + "identity on both sides",
    };
    /** Fields that name the node chosen to lead or coordinate something. */
    private static final java.util.Set<String> PLACEMENT = java.util.Set.of(
        "leaderId", "controllerId", "coordinatorId");
    /** Lists of the nodes chosen to hold something. */
    private static final java.util.Set<String> PLACEMENT_LISTS = java.util.Set.of(
        "replicaNodes", "isrNodes", "offlineReplicas", "eligibleLeaderReplicas", "lastKnownElr",
        "replicas", "addingReplicas", "removingReplicas");

    private static final String ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA";
    private static final long DAY_MS = 24L * 3600 * 1000;
    private static final String[] IDENTITY = {
        "name", "topic", "topicName", "topicId", "partitionIndex", "partition", "index", "nodeId", "brokerId",
        "replicaId", "voterId", "groupId", "transactionalId", "apiKey", "resourceType", "resourceName", "key",
        "memberId", "logDir", "path", "principal", "host", "operation", "patternType", "user", "mechanism",
    };

    private final Ctx ctx;
    private final Map<String, String> members = new HashMap<>();
    private final Map<Long, String> producers = new HashMap<>();
    private final long now = System.currentTimeMillis();

    Normalise(Ctx ctx) {
        this.ctx = ctx;
    }

    JsonNode apply(Observation o) {
        JsonNode copy = o.json().deepCopy();
        copy = walk(copy, "");
        for (Observation.Mask m : o.masks) {
            for (String path : m.paths()) copy = Paths.replace(copy, path, Json.F.textNode("<masked>"));
        }
        return copy;
    }

    private boolean cluster() {
        return ctx.peer.nodes.size() > 1;
    }

    private JsonNode walk(JsonNode node, String field) {
        if (cluster() && node instanceof ArrayNode a && PLACEMENT_LISTS.contains(field)) {
            ArrayNode out = Json.F.arrayNode();
            for (int i = 0; i < a.size(); i++) out.add("<node>");
            return out;
        }
        if (cluster() && node instanceof ObjectNode o && o.has("nodeId") && o.has("host") && o.has("port")
            && !field.equals("brokers") && !field.equals("nodes")) {
            // A coordinator (FindCoordinator's answer, or one of its coordinators): which node
            // it is, is placement; the cluster's node lists (brokers, quorum nodes) are not.
            if (o.get("nodeId").asInt() >= 0) {
                o.put("nodeId", "<node>");
                o.put("port", "<node>");
            }
        }
        if (cluster() && field.equals("nodeEndpoints") && node instanceof ArrayNode a) {
            ArrayNode out = Json.F.arrayNode();
            out.add("<" + a.size() + " leader hints>");
            return out;
        }
        if (node instanceof ObjectNode o) {
            List<String> names = new ArrayList<>();
            o.fieldNames().forEachRemaining(names::add);
            for (String name : names) o.set(name, walk(o.get(name), name));
            return o;
        }
        if (node instanceof ArrayNode a) {
            List<JsonNode> items = new ArrayList<>();
            for (JsonNode child : a) items.add(walk(child, field));
            if (!items.isEmpty() && items.stream().allMatch(JsonNode::isObject)) {
                items.sort(Comparator.comparing(Normalise::identity));
            }
            ArrayNode out = Json.F.arrayNode();
            items.forEach(out::add);
            return out;
        }
        return leaf(node, field);
    }

    private JsonNode leaf(JsonNode v, String field) {
        if (cluster() && PLACEMENT.contains(field) && v.isNumber() && v.asInt() >= 0) {
            return Json.F.textNode("<node>");
        }
        switch (field) {
            case "topicId":
                if (v.isTextual() && !v.asText().equals(ZERO_UUID)) {
                    String name = ctx.topicNames.get(v.asText());
                    return Json.F.textNode(name == null ? "<unknown topic id>" : "<id of " + name + ">");
                }
                return v;
            case "clusterId":
                return v.isTextual() ? Json.F.textNode("<cluster id>") : v;
            case "port": {
                if (!v.isNumber()) return v;
                Integer broker = ctx.peer.portToNode.get(v.asInt());
                if (broker != null) return Json.F.textNode("<broker port of node " + broker + ">");
                Integer controller = ctx.peer.controllerPortToNode.get(v.asInt());
                if (controller != null) return Json.F.textNode("<controller port of node " + controller + ">");
                return Json.F.textNode("<port>");
            }
            case "memberId":
            case "leader":
                if (v.isTextual() && !v.asText().isEmpty()) {
                    return Json.F.textNode(members.computeIfAbsent(v.asText(), k -> "<member #" + (members.size() + 1) + ">"));
                }
                return v;
            case "producerId":
                if (v.isNumber() && v.asLong() >= 0) {
                    return Json.F.textNode(producers.computeIfAbsent(v.asLong(), k -> "<producer #" + (producers.size() + 1) + ">"));
                }
                return v;
            case "sessionId":
                return v.isNumber() && v.asInt() > 0 ? Json.F.textNode("<session>") : v;
            case "errorMessage":
                return v.isTextual() && !v.asText().isEmpty() ? Json.F.textNode("<text>") : v;
            default:
                if (v.isNumber() && Math.abs(v.asLong() - now) < DAY_MS) return Json.F.textNode("<now>");
                return v;
        }
    }

    private static String identity(JsonNode item) {
        StringBuilder key = new StringBuilder();
        for (String field : IDENTITY) {
            JsonNode v = item.get(field);
            if (v != null && !v.isContainerNode()) {
                // Numbers sort by value: pad them.
                key.append(v.isNumber() ? String.format("%020d", v.asLong() + Long.MAX_VALUE / 2) : v.asText()).append('\u0000');
            }
        }
        return key.toString();
    }

    /** Paths into a tree: `/a/b`, `*` for any field or index, `**` for any depth. */
    static final class Paths {
        private Paths() {}

        static JsonNode replace(JsonNode root, String path, JsonNode with) {
            String[] parts = path.startsWith("/") ? path.substring(1).split("/") : path.split("/");
            return replace(root, parts, 0, with);
        }

        private static JsonNode replace(JsonNode node, String[] parts, int i, JsonNode with) {
            if (i == parts.length) return with;
            String part = parts[i];
            if (part.equals("**")) {
                // Zero levels, or one level and still `**`.
                node = replace(node, parts, i + 1, with);
                if (node.isContainerNode()) forEachChild(node, (child) -> replace(child, parts, i, with));
                return node;
            }
            if (node instanceof ObjectNode o) {
                List<String> names = new ArrayList<>();
                o.fieldNames().forEachRemaining(names::add);
                for (String name : names) {
                    if (part.equals("*") || part.equals(name)) o.set(name, replace(o.get(name), parts, i + 1, with));
                }
            } else if (node instanceof ArrayNode a) {
                for (int k = 0; k < a.size(); k++) {
                    if (part.equals("*") || part.equals(Integer.toString(k))) a.set(k, replace(a.get(k), parts, i + 1, with));
                }
            }
            return node;
        }

        private interface Child {
            JsonNode map(JsonNode child);
        }

        private static void forEachChild(JsonNode node, Child f) {
            if (node instanceof ObjectNode o) {
                List<String> names = new ArrayList<>();
                o.fieldNames().forEachRemaining(names::add);
                for (String name : names) o.set(name, f.map(o.get(name)));
            } else if (node instanceof ArrayNode a) {
                for (int k = 0; k < a.size(); k++) a.set(k, f.map(a.get(k)));
            }
        }

        /** Whether a concrete path (`/topics/0/errorCode`) matches a pattern. */
        static boolean matches(String pattern, String path) {
            String[] p = pattern.startsWith("/") ? pattern.substring(1).split("/") : pattern.split("/");
            String[] s = path.startsWith("/") ? path.substring(1).split("/") : path.split("/");
            return matches(p, 0, s, 0);
        }

        private static boolean matches(String[] p, int i, String[] s, int j) {
            if (i == p.length) return j == s.length;
            if (p[i].equals("**")) {
                for (int k = j; k <= s.length; k++) if (matches(p, i + 1, s, k)) return true;
                return false;
            }
            if (j == s.length) return false;
            return (p[i].equals("*") || p[i].equals(s[j])) && matches(p, i + 1, s, j + 1);
        }
    }

    /** The differences between two normalised answers, each a path with both values. */
    static void diff(String path, JsonNode kafka, JsonNode samsa, List<String[]> out) {
        if (kafka == null || samsa == null || kafka.getNodeType() != samsa.getNodeType()
            || (!kafka.isContainerNode() && !kafka.equals(samsa))) {
            if (kafka == null || samsa == null || !kafka.equals(samsa)) {
                out.add(new String[] {path.isEmpty() ? "/" : path, show(kafka), show(samsa)});
            }
            return;
        }
        if (kafka.isObject()) {
            List<String> names = new ArrayList<>();
            kafka.fieldNames().forEachRemaining(names::add);
            Iterator<String> more = samsa.fieldNames();
            while (more.hasNext()) {
                String n = more.next();
                if (!kafka.has(n)) names.add(n);
            }
            for (String n : names) diff(path + "/" + n, kafka.get(n), samsa.get(n), out);
        } else if (kafka.isArray()) {
            Map<String, JsonNode> keyedKafka = keyed(kafka);
            Map<String, JsonNode> keyedSamsa = keyed(samsa);
            if (keyedKafka != null && keyedSamsa != null) {
                // Entries with identities (a feature, a config, a topic) are matched by them, so
                // one missing entry is one difference rather than a shift of all that follow.
                java.util.TreeSet<String> keys = new java.util.TreeSet<>(keyedKafka.keySet());
                keys.addAll(keyedSamsa.keySet());
                for (String k : keys) diff(path + "/" + k, keyedKafka.get(k), keyedSamsa.get(k), out);
                return;
            }
            int n = Math.max(kafka.size(), samsa.size());
            for (int i = 0; i < n; i++) diff(path + "/" + i, kafka.get(i), samsa.get(i), out);
        }
    }

    /** NOT_LEADER_OR_FOLLOWER and NOT_COORDINATOR: the entry belongs to another node. */
    private static final java.util.Set<Integer> ELSEWHERE = java.util.Set.of(6, 16);

    /**
     * In a cluster of several nodes, an entry of a batched answer (a group, a transaction, a
     * partition) that either broker answers as another node's (NOT_COORDINATOR,
     * NOT_LEADER_OR_FOLLOWER) is reduced to its identity on both sides: which node coordinates or
     * leads it is placement, and the other broker may well own it. Called on the normalised
     * answers of both peers before {@link #diff}.
     */
    static void placement(JsonNode kafka, JsonNode samsa) {
        if (kafka == null || samsa == null || kafka.getNodeType() != samsa.getNodeType()) return;
        if (kafka.isObject()) {
            kafka.fieldNames().forEachRemaining(n -> placement(kafka.get(n), samsa.get(n)));
        } else if (kafka.isArray()) {
            Map<String, JsonNode> k = keyed(kafka);
            Map<String, JsonNode> s = keyed(samsa);
            if (k == null || s == null) return;
            for (Map.Entry<String, JsonNode> e : k.entrySet()) {
                JsonNode other = s.get(e.getKey());
                if (other == null) continue;
                if (elsewhere(e.getValue()) || elsewhere(other)) {
                    reduce((ObjectNode) e.getValue());
                    reduce((ObjectNode) other);
                } else {
                    placement(e.getValue(), other);
                }
            }
        }
    }

    private static boolean elsewhere(JsonNode entry) {
        JsonNode e = entry.get("errorCode");
        return e != null && e.isNumber() && ELSEWHERE.contains(e.asInt());
    }

    private static void reduce(ObjectNode entry) {
        List<String> names = new ArrayList<>();
        entry.fieldNames().forEachRemaining(names::add);
        for (String n : names) {
            if (!java.util.Arrays.asList(IDENTITY).contains(n)) entry.remove(n);
        }
        entry.put("placement", "<another node's, on one broker or both>");
    }

    /** An array's entries by their identifying fields (`name`, `name,partitionIndex`, ...), or
     *  null when some entry has none or two share one. */
    private static Map<String, JsonNode> keyed(JsonNode array) {
        Map<String, JsonNode> out = new java.util.LinkedHashMap<>();
        for (JsonNode item : array) {
            if (!item.isObject()) return null;
            StringBuilder key = new StringBuilder();
            for (String field : IDENTITY) {
                JsonNode v = item.get(field);
                if (v != null && !v.isContainerNode() && !v.isNull()) {
                    if (key.length() > 0) key.append(',');
                    key.append(v.asText().replace("/", "%2F"));
                }
            }
            if (key.length() == 0 && java.util.Arrays.stream(IDENTITY).anyMatch(f -> item.has(f) && item.get(f).isTextual() && item.get(f).asText().isEmpty())) {
                key.append("\"\""); // group "", a topic named "": an identity too
            }
            if (key.length() == 0 || out.put(key.toString(), item) != null) return null;
        }
        return out;
    }

    private static String show(JsonNode n) {
        if (n == null) return "(absent)";
        String s = n.toString();
        return s.length() > 300 ? s.substring(0, 300) + "..." : s;
    }
}
