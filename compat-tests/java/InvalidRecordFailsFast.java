import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Kafka's own Java producer meeting INVALID_RECORD, as a user's application would: a record
 * without a key sent to a compacted topic is refused, and the producer gives up on it at once
 * (INVALID_RECORD is not retriable) instead of retrying until its delivery timeout; a keyed
 * record sent afterwards is written.
 *
 * Usage: InvalidRecordFailsFast BOOTSTRAP TOPIC
 * Prints "failed fast: <exception>", "retries 0" and "ok" on success; exits 1 with a message otherwise.
 */
public final class InvalidRecordFailsFast {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) -1).configs(Map.of("cleanup.policy", "compact"))))
                .all().get();
        }
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "120000");
        p.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, "100");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            try {
                producer.send(new ProducerRecord<>(topic, null, "no key")).get();
                fail("a keyless record was accepted by a compacted topic");
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof InvalidRecordException)) {
                    fail("expected InvalidRecordException, got " + e.getCause());
                }
                System.out.println("failed fast: " + e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage());
            }
            double retries = metric(producer, "record-retry-total");
            System.out.println("retries " + (long) retries);
            if (retries != 0) fail("the producer retried INVALID_RECORD " + retries + " times");
            long offset = producer.send(new ProducerRecord<>(topic, "k", "keyed")).get().offset();
            System.out.println("keyed record at offset " + offset);
        }
        System.out.println("ok");
    }

    private static double metric(KafkaProducer<String, String> producer, String name) {
        for (Map.Entry<MetricName, ? extends Metric> m : producer.metrics().entrySet()) {
            if (m.getKey().name().equals(name) && m.getKey().group().equals("producer-metrics")) {
                return ((Number) m.getValue().metricValue()).doubleValue();
            }
        }
        fail("no producer metric " + name);
        return -1;
    }

    private static void fail(String why) {
        System.err.println(why);
        System.exit(1);
    }
}
