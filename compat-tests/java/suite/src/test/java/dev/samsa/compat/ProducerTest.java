package dev.samsa.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** Producers: acks, idempotence, every codec, headers and timestamps, records near and beyond the size limits. */
class ProducerTest extends SuiteBase {
    static List<ConsumerRecord<String, String>> readAll(String topic, int partitions, int count) {
        try (KafkaConsumer<String, String> c = Env.consumer(null, Map.of("max.partition.fetch.bytes", "2000000"))) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < partitions; i++) {
                tps.add(new TopicPartition(topic, i));
            }
            c.assign(tps);
            c.seekToBeginning(tps);
            return Env.pollCount(c, count);
        }
    }

    @Test
    @Tag("quick")
    void codecNone() throws Exception {
        roundTrip("none");
    }

    @Test
    @Tag("quick")
    void codecGzip() throws Exception {
        roundTrip("gzip");
    }

    @Test
    @Tag("quick")
    void codecSnappy() throws Exception {
        roundTrip("snappy");
    }

    @Test
    @Tag("quick")
    void codecLz4() throws Exception {
        roundTrip("lz4");
    }

    @Test
    @Tag("quick")
    void codecZstd() throws Exception {
        roundTrip("zstd");
    }

    /** 500 records with keys, timestamps and headers, through the codec, read back exactly. */
    static void roundTrip(String codec) throws Exception {
        String topic = Env.name("codec-" + codec);
        Env.createTopic(admin, topic, 2);
        List<Future<RecordMetadata>> acks = new ArrayList<>();
        try (KafkaProducer<String, String> p = Env.producer(Map.of("compression.type", codec, "linger.ms", "20",
            "batch.size", "65536"))) {
            for (int i = 0; i < 500; i++) {
                ProducerRecord<String, String> r = new ProducerRecord<>(topic, null, 1_700_000_000_000L + i, "key-" + i,
                    ("value-" + i + "-").repeat(10));
                r.headers().add(new RecordHeader("h", ("header-" + i).getBytes(StandardCharsets.UTF_8)));
                acks.add(p.send(r));
            }
            p.flush();
        }
        for (Future<RecordMetadata> f : acks) {
            assertTrue(f.get().offset() >= 0);
        }
        List<ConsumerRecord<String, String>> got = readAll(topic, 2, 500);
        assertEquals(500, got.size());
        for (ConsumerRecord<String, String> r : got) {
            int i = Integer.parseInt(r.key().substring(4));
            assertEquals(("value-" + i + "-").repeat(10), r.value());
            assertEquals(1_700_000_000_000L + i, r.timestamp());
            assertEquals("header-" + i, new String(r.headers().lastHeader("h").value(), StandardCharsets.UTF_8));
        }
    }

    @Test
    void acks0() throws Exception {
        acks("0");
    }

    @Test
    void acks1() throws Exception {
        acks("1");
    }

    @Test
    void acksAll() throws Exception {
        acks("all");
    }

    static void acks(String acks) throws Exception {
        String topic = Env.name("acks");
        Env.createTopic(admin, topic, 1);
        try (KafkaProducer<String, String> p = Env.producer(Map.of("acks", acks, "enable.idempotence", "false"))) {
            for (int i = 0; i < 50; i++) {
                p.send(new ProducerRecord<>(topic, "k", "v" + i)).get();
            }
        }
        assertEquals(50, readAll(topic, 1, 50).size());
    }

    @Test
    @Tag("quick")
    void idempotentProducerKeepsOrderWithoutDuplicates() throws Exception {
        String topic = Env.name("idem");
        Env.createTopic(admin, topic, 1);
        try (KafkaProducer<String, String> p = Env.producer(Map.of("enable.idempotence", "true", "acks", "all",
            "max.in.flight.requests.per.connection", "5", "linger.ms", "0", "batch.size", "200"))) {
            List<Future<RecordMetadata>> acks = new ArrayList<>();
            for (int i = 0; i < 1000; i++) {
                acks.add(p.send(new ProducerRecord<>(topic, "k", String.valueOf(i))));
            }
            for (int i = 0; i < acks.size(); i++) {
                assertEquals(i, acks.get(i).get().offset());
            }
        }
        List<ConsumerRecord<String, String>> got = readAll(topic, 1, 1000);
        for (int i = 0; i < 1000; i++) {
            assertEquals(String.valueOf(i), got.get(i).value());
            assertEquals(i, got.get(i).offset());
        }
    }

    @Test
    @Tag("quick")
    void recordsNearTheTopicLimitPassAndLargerOnesFail() throws Exception {
        String topic = Env.name("large");
        int limit = 200_000;
        Env.createTopic(admin, topic, 1, Map.of("max.message.bytes", String.valueOf(limit)));
        try (KafkaProducer<String, String> p = Env.producer(Map.of("max.request.size", "2000000", "compression.type", "none",
            "batch.size", "16384"))) {
            String near = "x".repeat(limit - 200);
            p.send(new ProducerRecord<>(topic, "near", near)).get();
            String beyond = "y".repeat(limit + 1000);
            ExecutionException e = assertThrows(ExecutionException.class, () -> p.send(new ProducerRecord<>(topic, "big", beyond)).get());
            Env.cause(e, RecordTooLargeException.class);
            // The client refuses one beyond its own max.request.size without asking the broker.
            String huge = "z".repeat(2_100_000);
            e = assertThrows(ExecutionException.class, () -> p.send(new ProducerRecord<>(topic, "huge", huge)).get());
            Env.cause(e, RecordTooLargeException.class);
        }
        List<ConsumerRecord<String, String>> got = readAll(topic, 1, 1);
        assertEquals(limit - 200, got.get(0).value().length());
    }

    @Test
    void largeRecordsNearTheBrokerDefault() throws Exception {
        String topic = Env.name("large-default");
        Env.createTopic(admin, topic, 1);
        // message.max.bytes is 1048588 by default: a record of 1000000 bytes fits in a batch.
        try (KafkaProducer<String, String> p = Env.producer(Map.of("max.request.size", "1100000", "compression.type", "none"))) {
            p.send(new ProducerRecord<>(topic, "k", "a".repeat(1_000_000))).get();
            ExecutionException e = assertThrows(ExecutionException.class,
                () -> p.send(new ProducerRecord<>(topic, "k", "b".repeat(1_060_000))).get());
            Env.cause(e, RecordTooLargeException.class);
        }
        assertEquals(1_000_000, readAll(topic, 1, 1).get(0).value().length());
    }

    @Test
    void keyedRecordsGoToOnePartitionEach() throws Exception {
        String topic = Env.name("keyed");
        Env.createTopic(admin, topic, 4);
        Map<String, Integer> partitionOf = new java.util.HashMap<>();
        try (KafkaProducer<String, String> p = Env.producer()) {
            for (int i = 0; i < 100; i++) {
                String key = "key-" + (i % 10);
                int partition = p.send(new ProducerRecord<>(topic, key, "v")).get().partition();
                Integer before = partitionOf.putIfAbsent(key, partition);
                if (before != null) {
                    assertEquals(before, partition, key);
                }
            }
            // An explicit partition is honoured.
            assertEquals(3, p.send(new ProducerRecord<>(topic, 3, "key-0", "v")).get().partition());
        }
    }

    @Test
    void logAppendTimeTopics() throws Exception {
        String topic = Env.name("logappend");
        Env.createTopic(admin, topic, 1, Map.of("message.timestamp.type", "LogAppendTime"));
        long before = System.currentTimeMillis();
        RecordMetadata md;
        try (KafkaProducer<String, String> p = Env.producer()) {
            md = p.send(new ProducerRecord<>(topic, null, 1000L, "k", "v")).get();
        }
        assertTrue(md.timestamp() >= before - 1000, "the broker's time: " + md.timestamp());
        ConsumerRecord<String, String> r = readAll(topic, 1, 1).get(0);
        assertEquals(md.timestamp(), r.timestamp());
        assertEquals(org.apache.kafka.common.record.TimestampType.LOG_APPEND_TIME, r.timestampType());
    }
}
