import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Kafka's own Java producer running transactions against a broker, as a user's application
 * would: commit, abort, commit again, each with consumer offsets sent to the transaction, then
 * a read_committed consumer that must see the committed records only, in order.
 *
 * Usage: TransactionalProducer BOOTSTRAP TOPIC TRANSACTIONAL_ID GROUP
 * Prints "committed N" and "ok" on success; exits 1 with a message otherwise.
 */
public final class TransactionalProducer {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], txnId = args[2], group = args[3];
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) -1), new NewTopic(topic + "-source", 1, (short) -1)))
                .all().get();
        }
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        List<String> committed = new ArrayList<>();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            String[][] rounds = {{"commit", "a"}, {"abort", "b"}, {"commit", "c"}};
            long offset = 0;
            for (String[] round : rounds) {
                producer.beginTransaction();
                for (int i = 0; i < 5; i++) {
                    String v = round[1] + i;
                    producer.send(new ProducerRecord<>(topic, 0, "k" + i, v)).get();
                    if (round[0].equals("commit")) committed.add(v);
                }
                offset += 5;
                producer.sendOffsetsToTransaction(
                    Map.of(new TopicPartition(topic + "-source", 0), new OffsetAndMetadata(offset)),
                    new ConsumerGroupMetadata(group, -1, "", java.util.Optional.empty()));
                if (round[0].equals("commit")) producer.commitTransaction();
                else producer.abortTransaction();
            }
        }
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        List<String> read = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            consumer.assign(List.of(new TopicPartition(topic, 0)));
            long deadline = System.currentTimeMillis() + 30_000;
            while (read.size() < committed.size() && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) read.add(r.value());
            }
            // Nothing more arrives: the aborted records stay hidden.
            for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) read.add(r.value());
        }
        if (!read.equals(committed)) {
            System.err.println("read_committed saw " + read + ", expected " + committed);
            System.exit(1);
        }
        System.out.println("committed " + committed.size());
        System.out.println("ok");
    }
}
