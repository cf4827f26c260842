package dev.samsa.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;

import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Classic consumer groups with two members: eager (range, round robin) and cooperative-sticky
 * rebalances seen through rebalance listeners, static members (group.instance.id).
 * Both consumers are polled from this one thread, as each KafkaConsumer must only be used by one thread.
 */
class RebalanceTest extends SuiteBase {
    /** Records every callback of a rebalance listener. */
    static final class Recorder implements ConsumerRebalanceListener {
        final ConcurrentLinkedQueue<String> events = new ConcurrentLinkedQueue<>();
        final Set<TopicPartition> revokedAll = new HashSet<>();

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            events.add("revoked" + sorted(partitions));
            revokedAll.addAll(partitions);
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            events.add("assigned" + sorted(partitions));
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            events.add("lost" + sorted(partitions));
        }

        static List<Integer> sorted(Collection<TopicPartition> ps) {
            return ps.stream().map(TopicPartition::partition).sorted().toList();
        }
    }

    static void pollUntil(String what, List<KafkaConsumer<String, String>> consumers, java.util.function.BooleanSupplier cond) {
        Env.waitUntil(what, () -> {
            for (KafkaConsumer<String, String> c : consumers) {
                c.poll(Duration.ofMillis(50));
            }
            return cond.getAsBoolean();
        });
    }

    static boolean splitEvenly(KafkaConsumer<String, String> a, KafkaConsumer<String, String> b, int partitions) {
        Set<TopicPartition> all = new HashSet<>(a.assignment());
        all.addAll(b.assignment());
        return a.assignment().size() == partitions / 2 && b.assignment().size() == partitions / 2 && all.size() == partitions;
    }

    void twoMembers(String assignor, boolean cooperative) throws Exception {
        String topic = Env.name("rebalance");
        String group = Env.name("g-" + (cooperative ? "coop" : "eager"));
        Env.createTopic(admin, topic, 4);
        Env.produce(topic, 40, "v");
        Recorder ra = new Recorder(), rb = new Recorder();
        Map<String, Object> cfg = Map.of("partition.assignment.strategy", assignor, "session.timeout.ms", "30000",
            "heartbeat.interval.ms", "1000");
        try (KafkaConsumer<String, String> a = Env.consumer(group, cfg); KafkaConsumer<String, String> b = Env.consumer(group, cfg)) {
            a.subscribe(List.of(topic), ra);
            pollUntil("first member owns every partition", List.of(a), () -> a.assignment().size() == 4);
            assertTrue(ra.events.contains("assigned[0, 1, 2, 3]"), ra.events.toString());
            ra.events.clear();
            b.subscribe(List.of(topic), rb);
            pollUntil("two members share the partitions", List.of(a, b), () -> splitEvenly(a, b, 4));
            ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
            assertEquals(2, d.members().size());
            String expected = assignor.equals(RangeAssignor.class.getName()) ? "range"
                : assignor.equals(RoundRobinAssignor.class.getName()) ? "roundrobin" : "cooperative-sticky";
            assertEquals(expected, d.partitionAssignor());
            Set<TopicPartition> described = new HashSet<>();
            for (MemberDescription m : d.members()) {
                described.addAll(m.assignment().topicPartitions());
            }
            assertEquals(4, described.size());
            Set<TopicPartition> kept = new HashSet<>(a.assignment());
            if (cooperative) {
                // Incremental: the first member gives up only what moves, and never all at once.
                assertFalse(ra.events.contains("revoked[0, 1, 2, 3]"), ra.events.toString());
                Set<TopicPartition> moved = new HashSet<>(b.assignment());
                assertEquals(moved, ra.revokedAll, ra.events.toString());
            } else {
                // Eager: everything revoked first, then the new share assigned.
                assertTrue(ra.events.contains("revoked[0, 1, 2, 3]"), ra.events.toString());
                assertTrue(ra.events.stream().anyMatch(e -> e.equals("assigned" + Recorder.sorted(kept))), ra.events.toString());
            }
            // The second member leaves: the first gets everything back.
            b.close();
            pollUntil("first member owns every partition again", List.of(a), () -> a.assignment().size() == 4);
            assertTrue(rb.events.stream().anyMatch(e -> e.startsWith("revoked")), rb.events.toString());
        }
    }

    @Test
    @Tag("quick")
    void eagerRange() throws Exception {
        twoMembers(RangeAssignor.class.getName(), false);
    }

    @Test
    void eagerRoundRobin() throws Exception {
        twoMembers(RoundRobinAssignor.class.getName(), false);
    }

    @Test
    @Tag("quick")
    void cooperativeSticky() throws Exception {
        twoMembers(CooperativeStickyAssignor.class.getName(), true);
    }

    @Test
    @Tag("quick")
    void staticMemberRejoinsWithoutARebalance() throws Exception {
        String topic = Env.name("static");
        String group = Env.name("g-static");
        Env.createTopic(admin, topic, 2);
        Map<String, Object> base = Map.of("session.timeout.ms", "60000", "heartbeat.interval.ms", "1000");
        Recorder ra = new Recorder();
        KafkaConsumer<String, String> a = Env.consumer(group, with(base, "group.instance.id", "static-a"));
        KafkaConsumer<String, String> b = Env.consumer(group, with(base, "group.instance.id", "static-b"));
        KafkaConsumer<String, String> again = null;
        try {
            a.subscribe(List.of(topic), ra);
            b.subscribe(List.of(topic));
            pollUntil("both static members assigned", List.of(a, b), () -> splitEvenly(a, b, 2));
            ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
            Set<String> instances = new HashSet<>();
            d.members().forEach(m -> instances.add(m.groupInstanceId().orElse("")));
            assertEquals(Set.of("static-a", "static-b"), instances);
            Set<TopicPartition> bHad = new HashSet<>(b.assignment());
            ra.events.clear();
            int generation = a.groupMetadata().generationId();
            // A static member's close does not leave the group: it comes back with the same instance id.
            b.close();
            again = Env.consumer(group, with(base, "group.instance.id", "static-b"));
            again.subscribe(List.of(topic));
            KafkaConsumer<String, String> b2 = again;
            pollUntil("the static member back with its partitions", List.of(a, b2), () -> b2.assignment().equals(bHad));
            for (int i = 0; i < 10; i++) {
                a.poll(Duration.ofMillis(50));
            }
            assertEquals(generation, a.groupMetadata().generationId(), "no rebalance: " + ra.events);
            assertFalse(ra.events.stream().anyMatch(e -> e.startsWith("revoked")), ra.events.toString());
            assertEquals(2, admin.describeConsumerGroups(List.of(group)).all().get().get(group).members().size());
        } finally {
            a.close();
            b.close();
            if (again != null) {
                again.close();
            }
        }
    }

    static Map<String, Object> with(Map<String, Object> base, String k, Object v) {
        Map<String, Object> m = new java.util.HashMap<>(base);
        m.put(k, v);
        return m;
    }

    @Test
    void everyRecordConsumedOnceAcrossARebalanceWithCommits() throws Exception {
        String topic = Env.name("rebal-commit");
        String group = Env.name("g-rc");
        Env.createTopic(admin, topic, 4);
        Env.produce(topic, 100, "v");
        Set<String> seen = new HashSet<>();
        Map<String, Object> cfg = Map.of("max.poll.records", "5", "heartbeat.interval.ms", "1000");
        try (KafkaConsumer<String, String> a = Env.consumer(group, cfg); KafkaConsumer<String, String> b = Env.consumer(group, cfg)) {
            a.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    a.commitSync();
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {}
            });
            // A takes a few records, then B joins and they finish together.
            Env.waitUntil("first records", () -> {
                a.poll(Duration.ofMillis(100)).forEach(r -> assertTrue(seen.add(r.value()), "twice: " + r.value()));
                return seen.size() >= 10;
            });
            b.subscribe(List.of(topic));
            Env.waitUntil("every record consumed", () -> {
                a.poll(Duration.ofMillis(50)).forEach(r -> assertTrue(seen.add(r.value()), "twice: " + r.value()));
                a.commitSync();
                b.poll(Duration.ofMillis(50)).forEach(r -> assertTrue(seen.add(r.value()), "twice: " + r.value()));
                b.commitSync();
                return seen.size() == 100;
            });
        }
    }
}
