package dev.samsa.compat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.function.BooleanSupplier;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * What every test reads from the runner (system properties set by scripts/compat/run_java_client.py):
 * the bootstrap servers, how many nodes the cluster has, which broker it is (samsa or kafka), whether
 * an authorizer is configured, and the skip file. Also the clients and topics the tests use.
 */
final class Env {
    private Env() {}

    static final String BOOTSTRAP = prop("compat.bootstrap", "127.0.0.1:9092");
    static final int NODES = Integer.parseInt(prop("compat.nodes", "1"));
    static final String BROKER = prop("compat.broker", "samsa");
    static final boolean AUTHORIZER = Boolean.parseBoolean(prop("compat.authorizer", "false"));
    /** Generous bounds for conditions that the cluster reaches on its own; never asserted as timings. */
    static final Duration WAIT = Duration.ofSeconds(60);

    static String prop(String name, String dflt) {
        String v = System.getProperty(name);
        if (v == null || v.isEmpty()) {
            v = System.getenv(name.toUpperCase().replace('.', '_'));
        }
        return v == null || v.isEmpty() ? dflt : v;
    }

    static boolean isKafka() {
        return BROKER.equals("kafka");
    }

    /** The replication factor of the tests' topics: every node's (3 on three nodes). */
    static short rf() {
        return (short) Math.min(NODES, 3);
    }

    static String name(String prefix) {
        return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    static Properties common() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        return p;
    }

    static Admin admin() {
        Properties p = common();
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "120000");
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "60000");
        return Admin.create(p);
    }

    static KafkaProducer<String, String> producer(Map<String, Object> extra) {
        Properties p = common();
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "120000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "60000");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.putAll(extra);
        return new KafkaProducer<>(p);
    }

    static KafkaProducer<String, String> producer() {
        return producer(Map.of());
    }

    static KafkaConsumer<String, String> consumer(String group, Map<String, Object> extra) {
        Properties p = common();
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, "60000");
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "120000");
        if (group != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        p.putAll(extra);
        return new KafkaConsumer<>(p);
    }

    /** Creates the topic and waits until every node's metadata knows all its partitions' leaders. */
    static void createTopic(Admin admin, String topic, int partitions, Map<String, String> configs) throws Exception {
        admin.createTopics(List.of(new NewTopic(topic, Optional.of(partitions), Optional.of(rf())).configs(configs)))
            .all().get();
        awaitTopic(admin, topic, partitions);
    }

    static void createTopic(Admin admin, String topic, int partitions) throws Exception {
        createTopic(admin, topic, partitions, Map.of());
    }

    static void awaitTopic(Admin admin, String topic, int partitions) {
        waitUntil("topic " + topic + " with " + partitions + " partitions and their leaders", () -> {
            try {
                TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
                return d.partitions().size() == partitions
                    && d.partitions().stream().allMatch(p -> p.leader() != null && !p.leader().isEmpty());
            } catch (InterruptedException | ExecutionException e) {
                return false;
            }
        });
    }

    static void waitUntil(String what, BooleanSupplier condition) {
        waitUntil(() -> what, condition);
    }

    /** `what` is asked only on failure: it may describe the last state seen. */
    static void waitUntil(java.util.function.Supplier<String> what, BooleanSupplier condition) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not reached within " + WAIT.toSeconds() + " s: " + what.get());
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }
    }

    /** Polls until `count` records arrived (or the bound passed: then fails naming how many came). */
    static List<ConsumerRecord<String, String>> pollCount(KafkaConsumer<String, String> consumer, int count) {
        List<ConsumerRecord<String, String>> out = new ArrayList<>();
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (out.size() < count) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("received " + out.size() + " of " + count + " records");
            }
            ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
            records.forEach(out::add);
        }
        return out;
    }

    /** Produces `count` records "prefix-i" keyed "k-i" and waits for their acknowledgements. */
    static void produce(String topic, int count, String prefix) throws Exception {
        try (KafkaProducer<String, String> p = producer()) {
            for (int i = 0; i < count; i++) {
                p.send(new ProducerRecord<>(topic, "k-" + i, prefix + "-" + i));
            }
            p.flush();
        }
    }

    static <T extends Throwable> T cause(ExecutionException e, Class<T> type) {
        if (!type.isInstance(e.getCause())) {
            throw new AssertionError("expected " + type.getSimpleName() + " but got " + e.getCause(), e);
        }
        return type.cast(e.getCause());
    }

    static Map<String, String> skips() {
        Map<String, String> out = new HashMap<>();
        String file = prop("compat.skip.file", "");
        if (file.isEmpty() || !Files.exists(Path.of(file))) {
            return out;
        }
        try {
            for (String line : Files.readAllLines(Path.of(file))) {
                line = line.strip();
                if (line.isEmpty() || line.startsWith("#")) {
                    continue;
                }
                String[] parts = line.split("\\s+", 2);
                out.put(parts[0], parts.length > 1 ? parts[1] : "");
            }
        } catch (java.io.IOException e) {
            throw new RuntimeException(e);
        }
        return out;
    }

    static Set<String> values(Collection<ConsumerRecord<String, String>> records) {
        Set<String> out = new java.util.TreeSet<>();
        records.forEach(r -> out.add(r.value()));
        return out;
    }

    /**
     * Skips a test listed in the skip file (`Class#method reason` or `Class reason`) on Samsa;
     * against the reference Kafka everything runs.
     */
    static final class SkipList implements ExecutionCondition {
        private static final Map<String, String> SKIPS = skips();

        @Override
        public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext ctx) {
            if (isKafka()) {
                return ConditionEvaluationResult.enabled("the reference Kafka runs everything");
            }
            String cls = ctx.getRequiredTestClass().getSimpleName();
            String id = ctx.getTestMethod().map(m -> cls + "#" + m.getName()).orElse(cls);
            String reason = SKIPS.get(id);
            return reason == null ? ConditionEvaluationResult.enabled("not in the skip file")
                : ConditionEvaluationResult.disabled(reason);
        }
    }
}
