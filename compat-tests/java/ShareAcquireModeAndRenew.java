import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Kafka 4.4's KafkaShareConsumer using ShareFetch and ShareAcknowledge v2, as an application
 * would:
 *
 * <ul>
 *   <li>{@code record-limit}: share.acquire.mode=record_limit with max.poll.records=3 (KIP-1206).
 *       Ten records are produced in one batch; member A's first poll gets exactly three of them,
 *       and while A still holds them member B of the same group gets records of the same batch:
 *       the broker acquired three records inside the batch, not the batch. A's client may have
 *       fetched the next three ahead; once A accepts its three and closes, B gets the rest.
 *       Every record is delivered to the application once.
 *   <li>{@code renew}: explicit acknowledgement with AcknowledgeType.RENEW (KIP-1222). The group's
 *       record lock lasts LOCK_MS; A holds its records for three locks' time, renewing them every
 *       tenth of one, and B is never given them; then A accepts them and they are done. The
 *       consumer reports the group's lock duration (AcquisitionLockTimeoutMs).
 * </ul>
 *
 * Usage: ShareAcquireModeAndRenew BOOTSTRAP record-limit|renew TOPIC GROUP [LOCK_MS]
 * Prints "ok" on success; exits 1 with a message otherwise.
 */
public final class ShareAcquireModeAndRenew {
    static final Duration AWAIT = Duration.ofSeconds(60);

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], mode = args[1], topic = args[2], group = args[3];
        int lockMs = args.length > 4 ? Integer.parseInt(args[4]) : 0;
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) -1))).all().get();
            List<AlterConfigOp> ops = new ArrayList<>();
            ops.add(new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET));
            if (lockMs > 0) {
                ops.add(new AlterConfigOp(new ConfigEntry("share.record.lock.duration.ms", Integer.toString(lockMs)),
                    AlterConfigOp.OpType.SET));
            }
            admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.GROUP, group), ops)).all().get();
        }
        switch (mode) {
            case "record-limit" -> recordLimit(bootstrap, topic, group);
            case "renew" -> renew(bootstrap, topic, group, lockMs);
            default -> throw new IllegalArgumentException(mode);
        }
        System.out.println("ok");
    }

    static void fail(String message) {
        System.err.println(message);
        System.exit(1);
    }

    /** `n` records in one batch (one send burst, flushed once, lingering until then). */
    static void produceOneBatch(String bootstrap, String topic, int n) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.LINGER_MS_CONFIG, "60000");
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, "1000000");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < n; i++) producer.send(new ProducerRecord<>(topic, 0, "k" + i, "v" + i));
            producer.flush();
        }
    }

    static KafkaShareConsumer<String, String> consumer(String bootstrap, String group, Map<String, String> extra) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "explicit");
        p.putAll(extra);
        return new KafkaShareConsumer<>(p);
    }

    static List<ConsumerRecord<String, String>> list(ConsumerRecords<String, String> records) {
        List<ConsumerRecord<String, String>> out = new ArrayList<>();
        records.forEach(out::add);
        return out;
    }

    static TreeSet<Long> offsets(Collection<ConsumerRecord<String, String>> records) {
        TreeSet<Long> out = new TreeSet<>();
        for (ConsumerRecord<String, String> r : records) out.add(r.offset());
        return out;
    }

    /** Polls until a poll returns records (or AWAIT passes). */
    static List<ConsumerRecord<String, String>> firstRecords(KafkaShareConsumer<String, String> c, String who) {
        long deadline = System.nanoTime() + AWAIT.toNanos();
        while (System.nanoTime() < deadline) {
            List<ConsumerRecord<String, String>> got = list(c.poll(Duration.ofMillis(500)));
            if (!got.isEmpty()) return got;
        }
        fail(who + " got no records within " + AWAIT);
        return null;
    }

    /**
     * B polls until it has accepted `want` records: none of them one A held, none twice, never
     * more than max.poll.records (3) in a poll.
     */
    static void pollB(KafkaShareConsumer<String, String> b, List<ConsumerRecord<String, String>> held,
                      TreeSet<Long> seenByB, int want) {
        long deadline = System.nanoTime() + AWAIT.toNanos();
        while (seenByB.size() < want && System.nanoTime() < deadline) {
            List<ConsumerRecord<String, String>> got = list(b.poll(Duration.ofMillis(500)));
            if (got.size() > 3) fail("B's poll returned " + got.size() + " records with max.poll.records=3");
            for (ConsumerRecord<String, String> r : got) {
                if (offsets(held).contains(r.offset())) fail("B got offset " + r.offset() + " which A held");
                if (!seenByB.add(r.offset())) fail("B got offset " + r.offset() + " twice");
                b.acknowledge(r, AcknowledgeType.ACCEPT);
            }
            if (!got.isEmpty()) b.commitSync();
        }
        if (seenByB.size() < want) fail("B got " + seenByB + " within " + AWAIT + ", not " + want + " records");
    }

    static void recordLimit(String bootstrap, String topic, String group) {
        produceOneBatch(bootstrap, topic, 10);
        Map<String, String> limit = Map.of(ConsumerConfig.SHARE_ACQUIRE_MODE_CONFIG, "record_limit",
            ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "3");
        try (KafkaShareConsumer<String, String> a = consumer(bootstrap, group, limit);
             KafkaShareConsumer<String, String> b = consumer(bootstrap, group, limit)) {
            a.subscribe(List.of(topic));
            b.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> held = firstRecords(a, "A");
            if (held.size() != 3) fail("A's first poll: " + offsets(held) + ", not three records");
            // A holds its three (no acknowledgement, no poll): B gets records of the same batch
            // meanwhile. A's client may have fetched ahead (its background thread acquires the
            // next three before the application polls again), so B is only sure to get some of
            // the other seven while A lives; A's close releases what it fetched ahead.
            TreeSet<Long> seenByB = new TreeSet<>();
            pollB(b, held, seenByB, 1);
            for (ConsumerRecord<String, String> r : held) a.acknowledge(r, AcknowledgeType.ACCEPT);
            a.commitSync().forEach((tp, error) -> error.ifPresent(e -> fail("A's accept of " + tp + ": " + e)));
            a.close();
            pollB(b, held, seenByB, 7);
            TreeSet<Long> all = new TreeSet<>(seenByB);
            all.addAll(offsets(held));
            if (seenByB.size() != 7 || all.size() != 10 || all.first() != 0 || all.last() != 9) {
                fail("A held " + offsets(held) + " and B got " + seenByB + ": not the ten records once each");
            }
            System.out.println("record_limit: A " + offsets(held) + ", B " + seenByB);
        }
    }

    static void renew(String bootstrap, String topic, String group, int lockMs) throws Exception {
        produceOneBatch(bootstrap, topic, 4);
        try (KafkaShareConsumer<String, String> a = consumer(bootstrap, group, Map.of());
             KafkaShareConsumer<String, String> b = consumer(bootstrap, group, Map.of())) {
            a.subscribe(List.of(topic));
            b.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> held = firstRecords(a, "A");
            TreeSet<Long> heldOffsets = offsets(held);
            if (a.acquisitionLockTimeoutMs().orElse(-1) != lockMs) {
                fail("A's acquisition lock timeout: " + a.acquisitionLockTimeoutMs() + ", not the group's " + lockMs);
            }
            int renewals = 0;
            long until = System.nanoTime() + Duration.ofMillis(3L * lockMs).toNanos();
            while (System.nanoTime() < until) {
                for (ConsumerRecord<String, String> r : held) a.acknowledge(r, AcknowledgeType.RENEW);
                a.commitSync().forEach((tp, error) -> error.ifPresent(e -> fail("A's renewal of " + tp + ": " + e)));
                renewals++;
                // The renewed records come back to A (same offsets, same delivery) on a later poll.
                long back = System.nanoTime() + AWAIT.toNanos();
                List<ConsumerRecord<String, String>> again = new ArrayList<>();
                while (offsets(again).size() < held.size() && System.nanoTime() < back) {
                    again.addAll(list(a.poll(Duration.ofMillis(lockMs / 10))));
                }
                if (!offsets(again).equals(heldOffsets)) fail("after renewal " + renewals + " A got " + offsets(again) + ", not " + heldOffsets);
                for (ConsumerRecord<String, String> r : again) {
                    if (r.deliveryCount().orElse((short) -1) != 1) fail("renewed offset " + r.offset() + " delivered " + r.deliveryCount() + " times");
                }
                held = again;
                for (ConsumerRecord<String, String> r : list(b.poll(Duration.ofMillis(lockMs / 10)))) {
                    fail("B got offset " + r.offset() + " (delivery " + r.deliveryCount() + ") while A renews its lock");
                }
            }
            if (renewals < 3) fail("only " + renewals + " renewals in three locks' time");
            for (ConsumerRecord<String, String> r : held) a.acknowledge(r, AcknowledgeType.ACCEPT);
            a.commitSync().forEach((tp, error) -> error.ifPresent(e -> fail("A's accept of " + tp + ": " + e)));
            // Accepted: B never gets them, even after another lock's time.
            long after = System.nanoTime() + Duration.ofMillis(lockMs + 1000L).toNanos();
            while (System.nanoTime() < after) {
                for (ConsumerRecord<String, String> r : list(b.poll(Duration.ofMillis(500)))) {
                    fail("B got offset " + r.offset() + " after A accepted it");
                }
            }
            System.out.println("renew: A held " + heldOffsets + " through " + renewals + " renewals of a " + lockMs + " ms lock");
        }
    }
}
