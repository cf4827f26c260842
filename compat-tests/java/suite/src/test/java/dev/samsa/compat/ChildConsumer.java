package dev.samsa.compat;

import java.time.Duration;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * A consumer in a JVM of its own, for tests that SIGKILL a group member: subscribes GROUP to
 * TOPIC with group.protocol=PROTOCOL and prints "assigned N" whenever its partition count
 * changes, until it is killed. Arguments: bootstrap, group, topic, protocol.
 */
public final class ChildConsumer {
    private ChildConsumer() {
    }

    public static void main(String[] args) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, args[1]);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, args[3]);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            c.subscribe(List.of(args[2]));
            int last = -1;
            while (true) {
                c.poll(Duration.ofMillis(100));
                if (c.assignment().size() != last) {
                    last = c.assignment().size();
                    System.out.println("assigned " + last);
                    System.out.flush();
                }
            }
        }
    }
}
