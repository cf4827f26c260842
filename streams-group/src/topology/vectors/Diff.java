// Runs Kafka 4.4's InternalTopicManager.configureTopics over the cases on stdin (gen.py's form) and prints its answers (see regen.sh).
import java.io.*;
import java.util.*;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.coordinator.common.runtime.CoordinatorMetadataImage;
import org.apache.kafka.coordinator.common.runtime.CoordinatorMetadataDelta;
import org.apache.kafka.coordinator.group.generated.StreamsGroupTopologyValue;
import org.apache.kafka.coordinator.group.streams.StreamsTopology;
import org.apache.kafka.coordinator.group.streams.topics.*;

public class Diff {
    record TM(String name, int count) implements CoordinatorMetadataImage.TopicMetadata {
        public Uuid id() { return Uuid.ZERO_UUID; }
        public int partitionCount() { return count; }
        public List<String> partitionRacks(int p) { return List.of(); }
    }
    static class Img implements CoordinatorMetadataImage {
        final Map<String, Integer> topics;
        Img(Map<String, Integer> t) { topics = t; }
        public Set<Uuid> topicIds() { return Set.of(); }
        public Set<String> topicNames() { return topics.keySet(); }
        public Optional<TopicMetadata> topicMetadata(String n) { Integer c = topics.get(n); return c == null ? Optional.empty() : Optional.of(new TM(n, c)); }
        public Optional<TopicMetadata> topicMetadata(Uuid id) { return Optional.empty(); }
        public CoordinatorMetadataDelta emptyDelta() { return null; }
        public long version() { return 0; }
        public boolean isEmpty() { return topics.isEmpty(); }
    }
    static List<Short> idx(String s) {
        List<Short> out = new ArrayList<>();
        if (s.equals("-")) return out;
        for (String p : s.split(",")) out.add(Short.parseShort(p));
        return out;
    }
    public static void main(String[] args) throws Exception {
        BufferedReader r = new BufferedReader(new InputStreamReader(System.in));
        PrintStream out = System.out;
        String line;
        Map<String, Integer> topics = null;
        List<StreamsGroupTopologyValue.Subtopology> subs = null;
        StreamsGroupTopologyValue.Subtopology cur = null;
        org.slf4j.Logger log = org.slf4j.helpers.NOPLogger.NOP_LOGGER;
        while ((line = r.readLine()) != null) {
            String[] f = line.split(" ");
            switch (f[0]) {
                case "case": topics = new HashMap<>(); subs = new ArrayList<>(); cur = null; break;
                case "topic": topics.put(f[1], Integer.parseInt(f[2])); break;
                case "sub": cur = new StreamsGroupTopologyValue.Subtopology().setSubtopologyId(f[1])
                        .setSourceTopics(new ArrayList<>()).setRepartitionSourceTopics(new ArrayList<>())
                        .setRepartitionSinkTopics(new ArrayList<>()).setStateChangelogTopics(new ArrayList<>())
                        .setCopartitionGroups(new ArrayList<>()).setSourceTopicRegex(new ArrayList<>());
                    subs.add(cur); break;
                case "src": cur.sourceTopics().add(f[1]); break;
                case "rsrc": cur.repartitionSourceTopics().add(new StreamsGroupTopologyValue.TopicInfo().setName(f[1]).setPartitions(Integer.parseInt(f[2]))); break;
                case "sink": cur.repartitionSinkTopics().add(f[1]); break;
                case "cl": cur.stateChangelogTopics().add(new StreamsGroupTopologyValue.TopicInfo().setName(f[1]).setPartitions(Integer.parseInt(f[2]))); break;
                case "group": cur.copartitionGroups().add(new StreamsGroupTopologyValue.CopartitionGroup().setSourceTopics(idx(f[1])).setRepartitionSourceTopics(idx(f[2]))); break;
                case "end": {
                    out.println("result");
                    try {
                        // As StreamsTopology.fromRecord builds it: Collectors.toMap over the list.
                        Map<String, StreamsGroupTopologyValue.Subtopology> byId = subs.stream().collect(java.util.stream.Collectors.toMap(StreamsGroupTopologyValue.Subtopology::subtopologyId, x -> x));
                        StreamsTopology t = new StreamsTopology(3, byId);
                        ConfiguredTopology c = InternalTopicManager.configureTopics(log, "g", "m", 0L, t, new Img(topics), Time.SYSTEM);
                        if (c.topicConfigurationException().isPresent()) {
                            var e = c.topicConfigurationException().get();
                            out.println("error " + e.status() + " " + e.getMessage());
                        }
                        if (c.subtopologies().isPresent()) {
                            for (var e : c.subtopologies().get().entrySet()) {
                                var s = e.getValue();
                                StringBuilder b = new StringBuilder("subtopology " + e.getKey() + " tasks " + s.numberOfTasks() + " rsrc");
                                new TreeMap<>(s.repartitionSourceTopics()).forEach((k, v) -> b.append(" " + k + "=" + v.numberOfPartitions()));
                                b.append(" cl");
                                new TreeMap<>(s.stateChangelogTopics()).forEach((k, v) -> b.append(" " + k + "=" + v.numberOfPartitions()));
                                out.println(b);
                            }
                        }
                        StringBuilder b = new StringBuilder("create");
                        new TreeMap<>(c.internalTopicsToBeCreated()).forEach((k, v) -> b.append(" " + k + "=" + v.numPartitions()));
                        out.println(b);
                    } catch (org.apache.kafka.common.errors.StreamsInvalidTopologyException e) {
                        out.println("invalid StreamsInvalidTopology " + e.getMessage());
                    } catch (org.apache.kafka.common.errors.InvalidTopicException e) {
                        out.println("invalid InvalidTopic " + e.getMessage());
                    } catch (RuntimeException e) {
                        out.println("invalid Internal");
                    }
                    out.println("end");
                    break;
                }
            }
        }
    }
}
