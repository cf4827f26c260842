package dev.samsa.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** group.protocol=consumer (KIP-848): the broker assigns. */
class ConsumerProtocolTest extends SuiteBase {
    static Map<String, Object> consumerProtocol() {
        return Map.of("group.protocol", "consumer");
    }

    @Test
    @Tag("quick")
    void twoMembersSplitThePartitionsAndCommit() throws Exception {
        String topic = Env.name("kip848");
        String group = Env.name("g-kip848");
        Env.createTopic(admin, topic, 4);
        Env.produce(topic, 40, "v");
        Set<String> seen = new HashSet<>();
        try (KafkaConsumer<String, String> a = Env.consumer(group, consumerProtocol());
             KafkaConsumer<String, String> b = Env.consumer(group, consumerProtocol())) {
            a.subscribe(List.of(topic));
            b.subscribe(List.of(topic));
            Env.waitUntil("both members assigned and every record consumed", () -> {
                a.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
                b.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
                return seen.size() == 40 && a.assignment().size() == 2 && b.assignment().size() == 2
                    && atEnd(a) && atEnd(b);
            });
            a.commitSync();
            b.commitSync();
            ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
            assertEquals(GroupType.CONSUMER, d.type());
            assertEquals(GroupState.STABLE, d.groupState());
            assertEquals(2, d.members().size());
            d.members().forEach(m -> assertEquals(2, m.assignment().topicPartitions().size()));
            GroupListing l = admin.listGroups(ListGroupsOptions.forConsumerGroups()).all().get().stream()
                .filter(g -> g.groupId().equals(group)).findFirst().orElseThrow();
            assertEquals(GroupType.CONSUMER, l.type().orElseThrow());
        }
        Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
        assertEquals(40, offsets.values().stream().mapToLong(OffsetAndMetadata::offset).sum());
    }

    /**
     * A classic member (JoinGroup/SyncGroup, eager range) joins a group the consumer protocol
     * runs: it lives in the consumer group beside the other member (KIP-848's migration path),
     * both get two partitions, every record is read once; when it leaves, the other gets all.
     */
    @Test
    @Tag("quick")
    void aClassicMemberJoinsAConsumerGroupAndLeavesIt() throws Exception {
        String topic = Env.name("kip848mixed");
        String group = Env.name("g-kip848mixed");
        Env.createTopic(admin, topic, 4);
        Env.produce(topic, 40, "v");
        Set<String> seen = new HashSet<>();
        try (KafkaConsumer<String, String> a = Env.consumer(group, consumerProtocol())) {
            a.subscribe(List.of(topic));
            Env.waitUntil("the consumer-protocol member has every partition", () -> {
                a.poll(Duration.ofMillis(100));
                return a.assignment().size() == 4;
            });
            try (KafkaConsumer<String, String> b = Env.consumer(group, Map.of("group.protocol", "classic"))) {
                b.subscribe(List.of(topic));
                Env.waitUntil("both members assigned and every record consumed", () -> {
                    // Records a read before the partitions moved are read again by b (nothing
                    // was committed yet): at least once, each counted once.
                    a.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.partition() + "@" + r.offset()));
                    b.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.partition() + "@" + r.offset()));
                    return seen.size() == 40 && a.assignment().size() == 2 && b.assignment().size() == 2
                        && atEnd(a) && atEnd(b);
                });
                a.commitSync();
                b.commitSync();
                ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
                assertEquals(GroupType.CONSUMER, d.type());
                assertEquals(2, d.members().size());
            }
            Env.waitUntil("the consumer-protocol member has every partition again", () -> {
                a.poll(Duration.ofMillis(100));
                return a.assignment().size() == 4;
            });
            assertEquals(1, admin.describeConsumerGroups(List.of(group)).all().get().get(group).members().size());
        }
        Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
        assertEquals(40, offsets.values().stream().mapToLong(OffsetAndMetadata::offset).sum());
    }

    /**
     * The online upgrade (KIP-848, group.consumer.migration.policy=bidirectional): a classic
     * group of two members is converted when a consumer-protocol member joins it; the classic
     * members go on inside the consumer group, the three share the partitions, every record is
     * read, and the group is a consumer group of three.
     */
    @Test
    @Tag("quick")
    void aClassicGroupUpgradesOnlineWhenAConsumerProtocolMemberJoins() throws Exception {
        String topic = Env.name("kip848up");
        String group = Env.name("g-kip848up");
        Env.createTopic(admin, topic, 4);
        Env.produce(topic, 40, "v");
        Set<String> seen = new HashSet<>();
        Map<String, Object> classic = Map.of("group.protocol", "classic");
        try (KafkaConsumer<String, String> b = Env.consumer(group, classic);
             KafkaConsumer<String, String> c = Env.consumer(group, classic)) {
            b.subscribe(List.of(topic));
            c.subscribe(List.of(topic));
            Env.waitUntil("the classic group shares the partitions", () -> {
                b.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.partition() + "@" + r.offset()));
                c.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.partition() + "@" + r.offset()));
                return b.assignment().size() == 2 && c.assignment().size() == 2;
            });
            assertEquals(GroupType.CLASSIC, admin.describeConsumerGroups(List.of(group)).all().get().get(group).type());
            try (KafkaConsumer<String, String> a = Env.consumer(group, consumerProtocol())) {
                a.subscribe(List.of(topic));
                Env.waitUntil("three members share the partitions and every record is read", () -> {
                    for (KafkaConsumer<String, String> k : List.of(a, b, c)) {
                        k.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.partition() + "@" + r.offset()));
                    }
                    return seen.size() == 40 && a.assignment().size() >= 1 && b.assignment().size() >= 1
                        && c.assignment().size() >= 1
                        && a.assignment().size() + b.assignment().size() + c.assignment().size() == 4;
                });
                ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
                assertEquals(GroupType.CONSUMER, d.type());
                assertEquals(3, d.members().size());
            }
        }
    }

    /**
     * KIP-848's rolling migration both ways, under load: a classic group of three whose members
     * restart one by one with group.protocol=consumer (the group is upgraded when the first
     * comes, and runs its classic members beside the new ones), then one by one back with
     * group.protocol=classic (the group is downgraded when the last consumer-protocol member
     * leaves); a producer writes throughout, and every record it had acknowledged is read.
     */
    @Test
    @Tag("quick")
    void aRollingMigrationToTheConsumerProtocolAndBackLosesNothing() throws Exception {
        rollingMigration(false);
    }

    /**
     * The same with static members (group.instance.id): each restarted member takes its own
     * place without leaving (classic static members never leave), and the classic member that
     * takes the last consumer-protocol member's place downgrades the group.
     */
    @Test
    @Tag("quick")
    void aRollingMigrationOfStaticMembersToTheConsumerProtocolAndBackLosesNothing() throws Exception {
        rollingMigration(true);
    }

    void rollingMigration(boolean staticMembers) throws Exception {
        String topic = Env.name("kip848roll");
        String group = Env.name("g-kip848roll");
        Env.createTopic(admin, topic, 4);
        Set<String> acked = java.util.concurrent.ConcurrentHashMap.newKeySet();
        Set<String> seen = java.util.concurrent.ConcurrentHashMap.newKeySet();
        java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
        java.util.concurrent.atomic.AtomicReference<Exception> failed = new java.util.concurrent.atomic.AtomicReference<>();
        Thread producer = new Thread(() -> {
            try (org.apache.kafka.clients.producer.KafkaProducer<String, String> p = Env.producer()) {
                for (int i = 0; !stop.get(); i++) {
                    String v = "r" + i;
                    p.send(new org.apache.kafka.clients.producer.ProducerRecord<>(topic, v, v), (md, e) -> {
                        if (e == null) {
                            acked.add(v);
                        }
                    });
                    Thread.sleep(5);
                }
                p.flush();
            } catch (Exception e) {
                failed.set(e);
            }
        });
        producer.start();
        Map<String, Object> autoCommit = Map.of("enable.auto.commit", "true", "auto.commit.interval.ms", "200");
        java.util.function.BiFunction<String, Integer, KafkaConsumer<String, String>> member = (protocol, i) -> {
            Map<String, Object> config = new java.util.HashMap<>(autoCommit);
            config.put("group.protocol", protocol);
            if (staticMembers) {
                config.put("group.instance.id", group + "-" + i);
            }
            KafkaConsumer<String, String> k = Env.consumer(group, config);
            k.subscribe(List.of(topic));
            return k;
        };
        List<KafkaConsumer<String, String>> members = new java.util.ArrayList<>();
        java.util.function.Consumer<String> settle = what -> Env.waitUntil(what, () -> {
            int total = 0;
            boolean each = true;
            for (KafkaConsumer<String, String> k : members) {
                k.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
                total += k.assignment().size();
                each &= !k.assignment().isEmpty();
            }
            return total == 4 && each;
        });
        try {
            for (int i = 0; i < 3; i++) {
                members.add(member.apply("classic", i));
            }
            settle.accept("the classic group of three shares the partitions");
            assertEquals(GroupType.CLASSIC, describe(group).type());
            for (int i = 0; i < 3; i++) {
                members.get(i).close();
                members.set(i, member.apply("consumer", i));
                settle.accept("member " + i + " upgraded and the partitions shared");
                assertEquals(GroupType.CONSUMER, describe(group).type(), "after member " + i + " upgraded");
            }
            assertEquals(3, describe(group).members().size());
            for (int i = 0; i < 3; i++) {
                members.get(i).close();
                members.set(i, member.apply("classic", i));
                settle.accept("member " + i + " downgraded and the partitions shared");
                GroupType expected = i < 2 ? GroupType.CONSUMER : GroupType.CLASSIC;
                assertEquals(expected, describe(group).type(), "after member " + i + " downgraded");
            }
            ConsumerGroupDescription d = describe(group);
            assertEquals(3, d.members().size());
            assertEquals(GroupState.STABLE, d.groupState());
            stop.set(true);
            producer.join();
            assertEquals(null, failed.get());
            assertTrue(acked.size() > 100, "the producer ran: " + acked.size());
            Env.waitUntil(() -> "every acknowledged record read: " + acked.size() + " acknowledged, "
                + acked.stream().filter(v -> !seen.contains(v)).count() + " not read", () -> {
                    for (KafkaConsumer<String, String> k : members) {
                        k.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
                    }
                    return seen.containsAll(acked);
                });
        } finally {
            stop.set(true);
            producer.join();
            members.forEach(KafkaConsumer::close);
        }
    }

    /**
     * A consumer-protocol member SIGKILLed (in a JVM of its own): it cannot leave, so the group
     * fences it when its session (group.consumer.session.timeout.ms, 45 s) expires, and the
     * member left gets its partitions and reads what was produced after the kill.
     */
    @Test
    void aKilledMemberIsFencedAtItsSessionTimeoutAndTheOtherTakesOver() throws Exception {
        String topic = Env.name("kip848kill");
        String group = Env.name("g-kip848kill");
        Env.createTopic(admin, topic, 4);
        Process child = new ProcessBuilder(
            java.nio.file.Paths.get(System.getProperty("java.home"), "bin", "java").toString(),
            "-cp", System.getProperty("java.class.path"), ChildConsumer.class.getName(),
            Env.BOOTSTRAP, group, topic, "consumer")
            .redirectErrorStream(true).start();
        java.io.BufferedReader out = new java.io.BufferedReader(new java.io.InputStreamReader(child.getInputStream()));
        java.util.concurrent.atomic.AtomicInteger childAssigned = new java.util.concurrent.atomic.AtomicInteger();
        Thread reader = new Thread(() -> {
            try {
                for (String line; (line = out.readLine()) != null; ) {
                    if (line.startsWith("assigned ")) {
                        childAssigned.set(Integer.parseInt(line.substring(9).trim()));
                    }
                }
            } catch (java.io.IOException e) {
                // The child is gone.
            }
        });
        reader.setDaemon(true);
        reader.start();
        Set<String> seen = new HashSet<>();
        try (KafkaConsumer<String, String> a = Env.consumer(group, consumerProtocol())) {
            a.subscribe(List.of(topic));
            Env.waitUntil(() -> "the two members share the partitions: " + a.assignment().size() + " + "
                + childAssigned.get(), () -> {
                    a.poll(Duration.ofMillis(100));
                    return a.assignment().size() >= 1 && childAssigned.get() >= 1
                        && a.assignment().size() + childAssigned.get() == 4;
                });
            assertEquals(2, describe(group).members().size());
            child.destroyForcibly().waitFor();
            Env.produce(topic, 40, "after");
            long killed = System.nanoTime();
            long limit = System.nanoTime() + Duration.ofSeconds(120).toNanos();
            while (!(a.assignment().size() == 4 && seen.size() == 40)) {
                a.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
                assertTrue(System.nanoTime() < limit, "the survivor has " + a.assignment().size()
                    + " partitions and read " + seen.size() + " records");
            }
            long tookMs = Duration.ofNanos(System.nanoTime() - killed).toMillis();
            // Not before the session timeout: a member that said nothing is not fenced early.
            assertTrue(tookMs > 30_000, "took over after " + tookMs + " ms");
            ConsumerGroupDescription d = describe(group);
            assertEquals(1, d.members().size());
            assertEquals(4, d.members().iterator().next().assignment().topicPartitions().size());
        } finally {
            child.destroyForcibly();
        }
    }

    ConsumerGroupDescription describe(String group) throws Exception {
        return admin.describeConsumerGroups(List.of(group)).all().get().get(group);
    }

    /** Every assigned partition read to its end (a member may own partitions the other one read before). */
    static boolean atEnd(KafkaConsumer<String, String> c) {
        Map<TopicPartition, Long> ends = c.endOffsets(c.assignment());
        return ends.entrySet().stream().allMatch(e -> c.position(e.getKey()) == e.getValue());
    }

    @Test
    @Tag("quick")
    void serverSideAssignorAndRegex() throws Exception {
        String prefix = Env.name("kip848re");
        String group = Env.name("g-kip848re");
        Env.createTopic(admin, prefix + "-a", 1);
        Env.createTopic(admin, prefix + "-b", 1);
        Env.produce(prefix + "-a", 5, "a");
        Env.produce(prefix + "-b", 5, "b");
        Set<String> seen = new HashSet<>();
        try (KafkaConsumer<String, String> c = Env.consumer(group, Map.of("group.protocol", "consumer",
            "group.remote.assignor", "range"))) {
            c.subscribe(new org.apache.kafka.clients.consumer.SubscriptionPattern(prefix + "-.*"));
            Env.waitUntil("records of both topics", () -> {
                c.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
                return seen.size() == 10;
            });
            assertTrue(c.assignment().size() == 2);
        }
    }
    /** An empty classic group becomes a consumer group when a consumer-protocol member joins, and
     *  back when a classic member joins the emptied consumer group; committed offsets carry over. */
    @Test
    @Tag("quick")
    void anEmptyGroupChangesProtocolBothWaysAndKeepsItsOffsets() throws Exception {
        String topic = Env.name("kip848mig");
        String group = Env.name("g-kip848mig");
        Env.createTopic(admin, topic, 2);
        Env.produce(topic, 30, "v");
        List<String> seen = new java.util.ArrayList<>();
        String[] protocols = {"classic", "consumer", "classic"};
        GroupType[] types = {GroupType.CLASSIC, GroupType.CONSUMER, GroupType.CLASSIC};
        for (int round = 0; round < 3; round++) {
            int want = 10 * (round + 1);
            try (KafkaConsumer<String, String> c = Env.consumer(group, Map.of("group.protocol", protocols[round],
                "max.poll.records", 1))) {
                c.subscribe(List.of(topic));
                Env.waitUntil("round " + round + " consumed", () -> {
                    c.poll(Duration.ofMillis(100)).forEach(r -> seen.add(r.value()));
                    return seen.size() >= want;
                });
                // One record per poll: the positions are exactly what was read.
                c.commitSync();
                GroupListing l = admin.listGroups(ListGroupsOptions.forConsumerGroups()).all().get().stream()
                    .filter(g -> g.groupId().equals(group)).findFirst().orElseThrow();
                assertEquals(types[round], l.type().orElseThrow(), "round " + round);
            }
        }
        // Every record came once across the three rounds: the offsets carried over.
        assertEquals(30, seen.size(), seen.toString());
        assertEquals(30, new HashSet<>(seen).size(), seen.toString());
    }
}
