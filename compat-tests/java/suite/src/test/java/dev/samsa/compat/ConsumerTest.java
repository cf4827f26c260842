package dev.samsa.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.NoOffsetForPartitionException;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** Classic consumers: assign, seek, pause/resume, commits, committed offsets, offsetsForTimes. */
class ConsumerTest extends SuiteBase {
    @Test
    @Tag("quick")
    void seekSeekToBeginningAndEnd() throws Exception {
        String topic = Env.name("seek");
        Env.createTopic(admin, topic, 1);
        Env.produce(topic, 20, "v");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<String, String> c = Env.consumer(null, Map.of())) {
            c.assign(List.of(tp));
            c.seek(tp, 15);
            List<ConsumerRecord<String, String>> got = Env.pollCount(c, 5);
            assertEquals(15, got.get(0).offset());
            assertEquals("v-15", got.get(0).value());
            assertEquals(20, c.position(tp));
            c.seekToBeginning(List.of(tp));
            assertEquals(0, c.position(tp));
            assertEquals("v-0", Env.pollCount(c, 1).get(0).value());
            c.seekToEnd(List.of(tp));
            assertEquals(20, c.position(tp));
            assertTrue(c.poll(Duration.ofMillis(500)).isEmpty());
            assertEquals(Map.of(tp, 0L), c.beginningOffsets(List.of(tp)));
            assertEquals(Map.of(tp, 20L), c.endOffsets(List.of(tp)));
            // Seek to an offset beyond the end: auto.offset.reset (earliest) applies.
            c.seek(tp, 1000);
            assertEquals("v-0", Env.pollCount(c, 1).get(0).value());
        }
    }

    @Test
    void noResetPolicyFails() throws Exception {
        String topic = Env.name("noreset");
        Env.createTopic(admin, topic, 1);
        try (KafkaConsumer<String, String> c = Env.consumer(Env.name("g-none"), Map.of("auto.offset.reset", "none"))) {
            c.assign(List.of(new TopicPartition(topic, 0)));
            assertThrows(NoOffsetForPartitionException.class, () -> c.poll(Duration.ofSeconds(5)));
        }
    }

    @Test
    @Tag("quick")
    void pauseAndResume() throws Exception {
        String topic = Env.name("pause");
        Env.createTopic(admin, topic, 2);
        TopicPartition p0 = new TopicPartition(topic, 0), p1 = new TopicPartition(topic, 1);
        try (KafkaProducer<String, String> p = Env.producer()) {
            for (int i = 0; i < 10; i++) {
                p.send(new ProducerRecord<>(topic, 0, "k", "p0-" + i));
                p.send(new ProducerRecord<>(topic, 1, "k", "p1-" + i));
            }
            p.flush();
        }
        try (KafkaConsumer<String, String> c = Env.consumer(null, Map.of())) {
            c.assign(List.of(p0, p1));
            c.pause(List.of(p1));
            assertEquals(Set.of(p1), c.paused());
            List<ConsumerRecord<String, String>> got = Env.pollCount(c, 10);
            assertTrue(got.stream().allMatch(r -> r.partition() == 0), got.toString());
            // Nothing more while p1 is paused.
            for (int i = 0; i < 3; i++) {
                assertTrue(c.poll(Duration.ofMillis(300)).isEmpty());
            }
            c.resume(List.of(p1));
            got = Env.pollCount(c, 10);
            assertTrue(got.stream().allMatch(r -> r.partition() == 1), got.toString());
        }
    }

    @Test
    @Tag("quick")
    void commitSyncAsyncAndCommitted() throws Exception {
        String topic = Env.name("commit");
        String group = Env.name("g-commit");
        Env.createTopic(admin, topic, 2);
        Env.produce(topic, 20, "v");
        TopicPartition p0 = new TopicPartition(topic, 0), p1 = new TopicPartition(topic, 1);
        try (KafkaConsumer<String, String> c = Env.consumer(group, Map.of())) {
            c.subscribe(List.of(topic));
            Env.pollCount(c, 20);
            c.commitSync();
            Map<TopicPartition, OffsetAndMetadata> committed = c.committed(Set.of(p0, p1));
            assertEquals(20, committed.get(p0).offset() + committed.get(p1).offset());
            // Explicit offsets with metadata, synchronously and asynchronously (with a callback).
            c.commitSync(Map.of(p0, new OffsetAndMetadata(1, "sync")));
            assertEquals("sync", c.committed(Set.of(p0)).get(p0).metadata());
            CompletableFuture<Map<TopicPartition, OffsetAndMetadata>> done = new CompletableFuture<>();
            c.commitAsync(Map.of(p1, new OffsetAndMetadata(2, "async")), (offsets, error) -> {
                if (error != null) {
                    done.completeExceptionally(error);
                } else {
                    done.complete(offsets);
                }
            });
            while (!done.isDone()) {
                c.poll(Duration.ofMillis(100));
            }
            assertEquals(2, done.get(1, TimeUnit.SECONDS).get(p1).offset());
            assertEquals("async", c.committed(Set.of(p1)).get(p1).metadata());
        }
        // A new member of the group resumes from the committed offsets.
        try (KafkaConsumer<String, String> c = Env.consumer(group, Map.of())) {
            c.assign(List.of(p0, p1));
            assertEquals(1, c.position(p0));
            assertEquals(2, c.position(p1));
        }
    }

    @Test
    void autoCommit() throws Exception {
        String topic = Env.name("autocommit");
        String group = Env.name("g-auto");
        Env.createTopic(admin, topic, 1);
        Env.produce(topic, 10, "v");
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<String, String> c = Env.consumer(group, Map.of("enable.auto.commit", "true",
            "auto.commit.interval.ms", "100"))) {
            c.subscribe(List.of(topic));
            Env.pollCount(c, 10);
            Env.waitUntil("auto-committed", () -> {
                c.poll(Duration.ofMillis(100));
                OffsetAndMetadata o = c.committed(Set.of(tp)).get(tp);
                return o != null && o.offset() == 10;
            });
        }
    }

    @Test
    @Tag("quick")
    void offsetsForTimes() throws Exception {
        String topic = Env.name("times");
        Env.createTopic(admin, topic, 1);
        long base = 1_700_000_000_000L;
        try (KafkaProducer<String, String> p = Env.producer()) {
            for (int i = 0; i < 10; i++) {
                p.send(new ProducerRecord<>(topic, 0, base + i * 1000L, "k", "v" + i));
            }
            p.flush();
        }
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<String, String> c = Env.consumer(null, Map.of())) {
            Map<TopicPartition, OffsetAndTimestamp> found = c.offsetsForTimes(Map.of(tp, base + 3500L));
            assertEquals(4, found.get(tp).offset());
            assertEquals(base + 4000L, found.get(tp).timestamp());
            assertEquals(0, c.offsetsForTimes(Map.of(tp, 0L)).get(tp).offset());
            assertNull(c.offsetsForTimes(Map.of(tp, base + 60_000L)).get(tp));
        }
    }

    @Test
    void partitionsForAndListTopics() throws Exception {
        String topic = Env.name("meta");
        Env.createTopic(admin, topic, 3);
        try (KafkaConsumer<String, String> c = Env.consumer(null, Map.of())) {
            assertEquals(3, c.partitionsFor(topic).size());
            assertTrue(c.listTopics().containsKey(topic));
            assertEquals(3, c.listTopics().get(topic).size());
        }
    }
}
