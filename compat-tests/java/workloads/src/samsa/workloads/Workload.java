package samsa.workloads;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The generators and checkers of scripts/compat/kafka-workloads.sh, one subcommand per call; each
 * prints what it found and exits 0, or prints "FAIL ..." and exits 1.
 *
 * <pre>
 *   create-topics BOOTSTRAP RF NAME:PARTITIONS ...
 *   produce-streams BOOTSTRAP TOPIC FROM TO [PER_SECOND]  records FROM..TO-1 of the Streams input
 *                                               (idempotent, acks=all), at most PER_SECOND a second
 *   progress BOOTSTRAP GROUP                    the sum of the group's committed offsets
 *   coordinator BOOTSTRAP GROUP                 the node id of the group's coordinator
 *   verify-streams BOOTSTRAP PREFIX N SECONDS   reads PREFIX-totals and PREFIX-windowed with read_committed
 *                                               until they hold every count of inputs 0..N-1 (or SECONDS pass)
 *   produce-plain BOOTSTRAP TOPIC PARTITIONS FROM TO   records FROM..TO-1, record i to partition i % PARTITIONS
 *   consume-commit BOOTSTRAP TOPIC GROUP COUNT  a classic group member reads COUNT records, commits, leaves
 *   group-offsets BOOTSTRAP GROUP               "partition offset" per committed partition, any topic
 *   check-copy BOOTSTRAP TOPIC PARTITIONS FROM TO SECONDS   the topic holds exactly produce-plain's records
 *                                               (same partitions, offsets, keys, values, headers, timestamps)
 *   resume BOOTSTRAP TOPIC GROUP                a group member reads from the committed offsets (no reset
 *                                               allowed) to the end; prints "partition first-offset count"
 * </pre>
 */
public final class Workload {
    /** Users of the Streams input; record i belongs to user(i). */
    static final int USERS = 13;
    /**
     * Record i has the timestamp BASE_TS + i * STEP_MS; BASE_TS is the runner's (WORKLOAD_BASE_TS,
     * the run's start): records far older than retention.ms would be deleted by the broker's
     * time-based retention while a test runs.
     */
    static final long BASE_TS = Long.parseLong(System.getenv("WORKLOAD_BASE_TS"));
    static final long STEP_MS = 37;

    static String user(long i) {
        return "u" + ((i * 7919) % USERS);
    }

    static long timestamp(long i) {
        return BASE_TS + i * STEP_MS;
    }

    public static void main(String[] args) throws Exception {
        String[] rest = Arrays.copyOfRange(args, 1, args.length);
        boolean ok;
        switch (args[0]) {
            case "create-topics": ok = createTopics(rest); break;
            case "produce-streams": ok = produceStreams(rest); break;
            case "progress": ok = progress(rest); break;
            case "coordinator": ok = coordinator(rest); break;
            case "verify-streams": ok = verifyStreams(rest); break;
            case "produce-plain": ok = producePlain(rest); break;
            case "consume-commit": ok = consumeCommit(rest); break;
            case "group-offsets": ok = groupOffsets(rest); break;
            case "check-copy": ok = checkCopy(rest); break;
            case "resume": ok = resume(rest); break;
            default: throw new IllegalArgumentException("unknown subcommand " + args[0]);
        }
        System.out.flush();
        System.exit(ok ? 0 : 1);
    }

    static Properties common(String bootstrap) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        return p;
    }

    static KafkaProducer<String, String> producer(String bootstrap) {
        Properties p = common(bootstrap);
        p.put("acks", "all");
        p.put("enable.idempotence", "true");
        p.put("linger.ms", "5");
        return new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
    }

    static KafkaConsumer<String, String> consumer(String bootstrap, String group, boolean committed) {
        Properties p = common(bootstrap);
        if (group != null) {
            p.put("group.id", group);
        }
        p.put("enable.auto.commit", "false");
        p.put("allow.auto.create.topics", "false");
        p.put("auto.offset.reset", group == null ? "earliest" : "none");
        if (committed) {
            p.put("isolation.level", "read_committed");
        }
        return new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer());
    }

    static boolean fail(String message) {
        System.out.println("FAIL " + message);
        return false;
    }

    static boolean createTopics(String[] a) throws Exception {
        short rf = Short.parseShort(a[1]);
        List<NewTopic> topics = new ArrayList<>();
        for (int i = 2; i < a.length; i++) {
            String[] nameParts = a[i].split(":");
            topics.add(new NewTopic(nameParts[0], Integer.parseInt(nameParts[1]), rf));
        }
        try (Admin admin = Admin.create(common(a[0]))) {
            for (NewTopic t : topics) {
                try {
                    admin.createTopics(List.of(t)).all().get();
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof TopicExistsException)) {
                        throw e;
                    }
                }
            }
            // Wait until every partition has a leader in the metadata a client sees.
            for (NewTopic t : topics) {
                while (true) {
                    try {
                        TopicDescription d = admin.describeTopics(List.of(t.name())).allTopicNames().get().get(t.name());
                        if (d.partitions().size() == t.numPartitions()
                                && d.partitions().stream().allMatch(x -> x.leader() != null)) {
                            break;
                        }
                    } catch (ExecutionException e) {
                        // not known yet
                    }
                    Thread.sleep(100);
                }
            }
        }
        System.out.println("created " + topics.stream().map(NewTopic::name).collect(Collectors.joining(" ")));
        return true;
    }

    static boolean produceStreams(String[] a) throws Exception {
        String topic = a[1];
        long from = Long.parseLong(a[2]), to = Long.parseLong(a[3]);
        long perSecond = a.length > 4 ? Long.parseLong(a[4]) : 0;
        long started = System.currentTimeMillis();
        try (KafkaProducer<String, String> producer = producer(a[0])) {
            for (long i = from; i < to; i++) {
                producer.send(new ProducerRecord<>(topic, null, timestamp(i), "r" + i, user(i)));
                // At most perSecond records a second, so that a kill meets the application mid-stream.
                while (perSecond > 0 && (i - from + 1) * 1000 / perSecond > System.currentTimeMillis() - started) {
                    Thread.sleep(1);
                }
            }
            producer.flush();
        }
        System.out.println("produced " + (to - from));
        return true;
    }

    static Map<TopicPartition, OffsetAndMetadata> committed(Admin admin, String group) throws Exception {
        Map<TopicPartition, OffsetAndMetadata> out = new TreeMap<>((x, y) -> x.toString().compareTo(y.toString()));
        admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().forEach((tp, om) -> {
            if (om != null) {
                out.put(tp, om);
            }
        });
        return out;
    }

    static boolean progress(String[] a) throws Exception {
        try (Admin admin = Admin.create(common(a[0]))) {
            long sum = committed(admin, a[1]).values().stream().mapToLong(OffsetAndMetadata::offset).sum();
            System.out.println(sum);
        }
        return true;
    }

    static boolean coordinator(String[] a) throws Exception {
        try (Admin admin = Admin.create(common(a[0]))) {
            try {
                System.out.println(admin.describeConsumerGroups(List.of(a[1])).all().get().get(a[1]).coordinator().id());
            } catch (java.util.concurrent.ExecutionException e) {
                // A streams group (group.protocol=streams) is not a consumer group.
                if (!(e.getCause() instanceof org.apache.kafka.common.errors.GroupIdNotFoundException)) throw e;
                System.out.println(admin.describeStreamsGroups(List.of(a[1])).all().get().get(a[1]).coordinator().id());
            }
        }
        return true;
    }

    /** Per key, the counts seen so far; a count out of sequence is a duplicate or a loss for good. */
    static final class Sequences {
        final String topic;
        final Map<String, Long> expected;
        final Map<String, Long> last = new HashMap<>();
        String error;

        Sequences(String topic, Map<String, Long> expected) {
            this.topic = topic;
            this.expected = expected;
        }

        void add(ConsumerRecord<String, String> r) {
            if (error != null) {
                return;
            }
            long count = Long.parseLong(r.value());
            long before = last.getOrDefault(r.key(), 0L);
            if (!expected.containsKey(r.key())) {
                error = topic + ": key " + r.key() + " that no input gives (count " + count + ")";
            } else if (count == before) {
                error = topic + ": key " + r.key() + " count " + count + " twice (a duplicate) at " + r.partition() + "@" + r.offset();
            } else if (count != before + 1) {
                error = topic + ": key " + r.key() + " count " + count + " after " + before + " (lost or reordered) at "
                        + r.partition() + "@" + r.offset();
            } else if (count > expected.get(r.key())) {
                error = topic + ": key " + r.key() + " count " + count + " above the " + expected.get(r.key()) + " inputs give";
            }
            last.put(r.key(), count);
        }

        long missing() {
            long m = 0;
            for (Map.Entry<String, Long> e : expected.entrySet()) {
                m += e.getValue() - last.getOrDefault(e.getKey(), 0L);
            }
            return m;
        }
    }

    static boolean verifyStreams(String[] a) throws Exception {
        String prefix = a[1];
        long n = Long.parseLong(a[2]);
        long seconds = Long.parseLong(a[3]);
        Map<String, Long> totals = new HashMap<>(), windowed = new HashMap<>();
        for (long i = 0; i < n; i++) {
            totals.merge(user(i), 1L, Long::sum);
            long ts = timestamp(i);
            windowed.merge(user(i) + "@" + (ts - ts % StreamsApp.WINDOW_MS), 1L, Long::sum);
        }
        Map<String, Sequences> seqs = Map.of(prefix + "-totals", new Sequences(prefix + "-totals", totals),
                prefix + "-windowed", new Sequences(prefix + "-windowed", windowed));
        long records = 0;
        try (KafkaConsumer<String, String> c = consumer(a[0], null, true)) {
            List<TopicPartition> parts = new ArrayList<>();
            for (String topic : seqs.keySet()) {
                c.partitionsFor(topic).forEach(pi -> parts.add(new TopicPartition(pi.topic(), pi.partition())));
            }
            c.assign(parts);
            c.seekToBeginning(parts);
            long deadline = System.currentTimeMillis() + seconds * 1000;
            boolean complete = false;
            while (System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> batch = c.poll(Duration.ofMillis(500));
                for (ConsumerRecord<String, String> r : batch) {
                    seqs.get(r.topic()).add(r);
                    records++;
                }
                for (Sequences s : seqs.values()) {
                    if (s.error != null) {
                        return fail(s.error);
                    }
                }
                if (seqs.values().stream().allMatch(s -> s.missing() == 0)) {
                    // Everything is there: read on to the last stable offset, to see nothing more comes.
                    if (complete && batch.isEmpty() && atEnd(c, parts)) {
                        System.out.println("exact: " + records + " updates, " + totals.size() + " users, "
                                + windowed.size() + " windows, from " + n + " inputs");
                        return true;
                    }
                    complete = true;
                }
            }
        }
        StringBuilder why = new StringBuilder("incomplete after " + seconds + " s:");
        for (Sequences s : seqs.values()) {
            why.append(" ").append(s.topic).append(" lacks ").append(s.missing()).append(" updates;");
        }
        return fail(why.toString());
    }

    static boolean atEnd(KafkaConsumer<String, String> c, Collection<TopicPartition> parts) {
        Map<TopicPartition, Long> end = c.endOffsets(parts);
        return parts.stream().allMatch(tp -> c.position(tp) >= end.get(tp));
    }

    static boolean producePlain(String[] a) throws Exception {
        String topic = a[1];
        int partitions = Integer.parseInt(a[2]);
        long from = Long.parseLong(a[3]), to = Long.parseLong(a[4]);
        try (KafkaProducer<String, String> producer = producer(a[0])) {
            for (long i = from; i < to; i++) {
                ProducerRecord<String, String> r = new ProducerRecord<>(topic, (int) (i % partitions), timestamp(i), "k" + i, "v" + i);
                r.headers().add("seq", Long.toString(i).getBytes(StandardCharsets.UTF_8));
                producer.send(r);
            }
            producer.flush();
        }
        System.out.println("produced " + (to - from));
        return true;
    }

    static boolean consumeCommit(String[] a) throws Exception {
        String topic = a[1], group = a[2];
        long count = Long.parseLong(a[3]);
        Properties p = common(a[0]);
        p.put("group.id", group);
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("max.poll.records", "1");
        long read = 0;
        Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
            c.subscribe(List.of(topic));
            while (read < count) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    commit.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    read++;
                }
            }
            c.commitSync(commit);
        }
        System.out.println("committed " + new TreeMap<>(commit.entrySet().stream().collect(
                Collectors.toMap(e -> e.getKey().partition(), e -> e.getValue().offset()))));
        return true;
    }

    static boolean groupOffsets(String[] a) throws Exception {
        try (Admin admin = Admin.create(common(a[0]))) {
            committed(admin, a[1]).forEach((tp, om) -> System.out.println(tp.topic() + " " + tp.partition() + " " + om.offset()));
        }
        return true;
    }

    static boolean checkCopy(String[] a) throws Exception {
        String topic = a[1];
        int partitions = Integer.parseInt(a[2]);
        long from = Long.parseLong(a[3]), to = Long.parseLong(a[4]);
        long deadline = System.currentTimeMillis() + Long.parseLong(a[5]) * 1000;
        long want = to - from, got = 0;
        Map<Integer, Long> next = new HashMap<>();  // per partition, the next i expected there
        for (int q = 0; q < partitions; q++) {
            long first = from + Math.floorMod(q - from, partitions);
            next.put(q, first);
        }
        try (KafkaConsumer<String, String> c = consumer(a[0], null, false)) {
            while (c.partitionsFor(topic).size() < partitions && System.currentTimeMillis() < deadline) {
                Thread.sleep(500);
            }
            List<TopicPartition> parts = c.partitionsFor(topic).stream()
                    .map(pi -> new TopicPartition(pi.topic(), pi.partition())).collect(Collectors.toList());
            if (parts.size() != partitions) {
                return fail(topic + " has " + parts.size() + " partitions, not " + partitions);
            }
            c.assign(parts);
            c.seekToBeginning(parts);
            while (got < want && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    long i = next.get(r.partition());
                    Header h = r.headers().lastHeader("seq");
                    String seq = h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
                    long offset = (i - from) / partitions;
                    if (i >= to || !("k" + i).equals(r.key()) || !("v" + i).equals(r.value())
                            || !Long.toString(i).equals(seq) || r.timestamp() != timestamp(i) || r.offset() != offset) {
                        return fail(topic + " " + r.partition() + "@" + r.offset() + " holds " + r.key() + "=" + r.value()
                                + " seq=" + seq + " ts=" + r.timestamp() + "; expected record " + i + " at offset " + offset);
                    }
                    next.put(r.partition(), i + partitions);
                    got++;
                }
            }
            if (got < want) {
                return fail(topic + " holds " + got + " of the " + want + " records");
            }
            Map<TopicPartition, Long> end = c.endOffsets(parts);
            long total = end.values().stream().mapToLong(Long::longValue).sum();
            if (total != want) {
                return fail(topic + " ends at offsets " + end + " (" + total + " records), not " + want);
            }
        }
        System.out.println("copied exactly: " + want + " records");
        return true;
    }

    static boolean resume(String[] a) throws Exception {
        String topic = a[1], group = a[2];
        Map<Integer, long[]> seen = new TreeMap<>();  // partition -> {first offset, count, last offset}
        try (KafkaConsumer<String, String> c = consumer(a[0], group, false)) {
            c.subscribe(List.of(topic));
            // Until the assignment is known and every partition read to its end.
            Map<TopicPartition, Long> end = null;
            while (true) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    long[] s = seen.computeIfAbsent(r.partition(), q -> new long[] {r.offset(), 0, r.offset() - 1});
                    if (r.offset() != s[2] + 1) {
                        return fail(topic + " " + r.partition() + ": offset " + r.offset() + " after " + s[2]);
                    }
                    s[1]++;
                    s[2] = r.offset();
                }
                if (c.assignment().isEmpty()) {
                    continue;
                }
                if (end == null) {
                    end = c.endOffsets(c.assignment());
                }
                final Map<TopicPartition, Long> e = end;
                if (c.assignment().stream().allMatch(tp -> c.position(tp) >= e.get(tp))) {
                    break;
                }
            }
        }
        seen.forEach((q, s) -> System.out.println(q + " " + s[0] + " " + s[1]));
        return true;
    }
}
