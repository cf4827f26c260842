package dev.samsa.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.GroupNotEmptyException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Share groups (KIP-932) through KafkaShareConsumer: implicit and explicit acknowledgement with ACCEPT,
 * RELEASE, REJECT and RENEW, and the Admin calls for share groups. Each group reads from the earliest
 * offset (the group config share.auto.offset.reset=earliest, set through incrementalAlterConfigs as
 * Kafka's own tests do).
 */
class ShareConsumerTest extends SuiteBase {
    static String group() throws Exception {
        String group = Env.name("share-g");
        ConfigResource r = new ConfigResource(ConfigResource.Type.GROUP, group);
        admin.incrementalAlterConfigs(Map.of(r, List.of(new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"),
            AlterConfigOp.OpType.SET)))).all().get();
        return group;
    }

    static KafkaShareConsumer<String, String> consumer(String group, boolean explicit) {
        Properties p = Env.common();
        p.put("group.id", group);
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        p.put("share.acknowledgement.mode", explicit ? "explicit" : "implicit");
        p.put("request.timeout.ms", "60000");
        p.put("default.api.timeout.ms", "120000");
        return new KafkaShareConsumer<>(p);
    }

    /** Polls until at least `count` records arrived in total. */
    static List<ConsumerRecord<String, String>> pollAtLeast(KafkaShareConsumer<String, String> c, int count,
                                                            java.util.function.Consumer<ConsumerRecords<String, String>> each) {
        List<ConsumerRecord<String, String>> out = new ArrayList<>();
        Env.waitUntil("share consumer received " + count + " records", () -> {
            ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(500));
            rs.forEach(out::add);
            each.accept(rs);
            return out.size() >= count;
        });
        return out;
    }

    @Test
    @Tag("quick")
    void implicitAcknowledgementDeliversEachRecordOnce() throws Exception {
        String topic = Env.name("share-implicit");
        Env.createTopic(admin, topic, 2);
        String group = group();
        Env.produce(topic, 20, "v");
        try (KafkaShareConsumer<String, String> c = consumer(group, false)) {
            c.subscribe(List.of(topic));
            assertEquals(Set.of(topic), c.subscription());
            List<ConsumerRecord<String, String>> got = pollAtLeast(c, 20, rs -> {});
            assertEquals(20, got.size());
            Set<String> values = Env.values(got);
            assertEquals(20, values.size());
            for (ConsumerRecord<String, String> r : got) {
                assertEquals(Optional.of((short) 1), r.deliveryCount());
            }
            // The records of the last poll are accepted by the next poll or by commitSync.
            Map<TopicIdPartition, Optional<KafkaException>> results = c.commitSync();
            results.values().forEach(e -> assertTrue(e.isEmpty(), e.toString()));
            for (int i = 0; i < 4; i++) {
                assertTrue(c.poll(Duration.ofMillis(300)).isEmpty(), "nothing is delivered twice");
            }
        }
        // A new member of the same group gets nothing: all were accepted.
        try (KafkaShareConsumer<String, String> c = consumer(group, false)) {
            c.subscribe(List.of(topic));
            for (int i = 0; i < 6; i++) {
                assertTrue(c.poll(Duration.ofMillis(500)).isEmpty());
            }
        }
    }

    @Test
    @Tag("quick")
    void explicitAcceptReleaseReject() throws Exception {
        String topic = Env.name("share-explicit");
        Env.createTopic(admin, topic, 1);
        String group = group();
        Env.produce(topic, 9, "v");
        Map<String, Integer> deliveries = new HashMap<>();
        Set<String> accepted = new HashSet<>(), rejected = new HashSet<>();
        try (KafkaShareConsumer<String, String> c = consumer(group, true)) {
            c.subscribe(List.of(topic));
            // v-0, v-3, v-6 accepted; v-1, v-4, v-7 released once then accepted; v-2, v-5, v-8 rejected.
            Env.waitUntil("every record accepted or rejected", () -> {
                ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(500));
                for (ConsumerRecord<String, String> r : rs) {
                    int n = deliveries.merge(r.value(), 1, Integer::sum);
                    assertEquals(Optional.of((short) n), r.deliveryCount(), r.value());
                    int i = Integer.parseInt(r.value().substring(2));
                    if (i % 3 == 0 || (i % 3 == 1 && n == 2)) {
                        c.acknowledge(r, AcknowledgeType.ACCEPT);
                        accepted.add(r.value());
                    } else if (i % 3 == 1) {
                        c.acknowledge(r, AcknowledgeType.RELEASE);
                    } else {
                        c.acknowledge(r, AcknowledgeType.REJECT);
                        rejected.add(r.value());
                    }
                }
                if (!rs.isEmpty()) {
                    c.commitSync().values().forEach(e -> assertTrue(e.isEmpty(), e.toString()));
                }
                return accepted.size() + rejected.size() == 9;
            });
            assertEquals(Set.of("v-0", "v-3", "v-6", "v-1", "v-4", "v-7"), accepted);
            assertEquals(Set.of("v-2", "v-5", "v-8"), rejected);
            for (String v : List.of("v-1", "v-4", "v-7")) {
                assertEquals(2, deliveries.get(v), v);
            }
            for (int i = 0; i < 4; i++) {
                assertTrue(c.poll(Duration.ofMillis(300)).isEmpty(), "rejected records are not delivered again");
            }
        }
    }

    @Test
    void explicitModeRequiresAcknowledgingEveryRecord() throws Exception {
        String topic = Env.name("share-unacked");
        Env.createTopic(admin, topic, 1);
        String group = group();
        Env.produce(topic, 3, "v");
        try (KafkaShareConsumer<String, String> c = consumer(group, true)) {
            c.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> got = pollAtLeast(c, 1, rs -> {});
            assertFalse(got.isEmpty());
            // Polling again without acknowledging the delivered records is the application's error.
            assertThrows(IllegalStateException.class, () -> c.poll(Duration.ofMillis(100)));
            got.forEach(r -> c.acknowledge(r, AcknowledgeType.ACCEPT));
            c.commitSync();
        }
    }

    @Test
    void renewKeepsTheLock() throws Exception {
        String topic = Env.name("share-renew");
        Env.createTopic(admin, topic, 1);
        String group = group();
        Env.produce(topic, 1, "v");
        try (KafkaShareConsumer<String, String> c = consumer(group, true)) {
            c.subscribe(List.of(topic));
            ConsumerRecord<String, String> r = pollAtLeast(c, 1, rs -> {}).get(0);
            c.acknowledge(r, AcknowledgeType.RENEW);
            Map<TopicIdPartition, Optional<KafkaException>> results = c.commitSync();
            results.values().forEach(e -> assertTrue(e.isEmpty(), e.toString()));
            // Still ours: the next poll hands the renewed record back, not delivered again (same count).
            ConsumerRecord<String, String> again = pollAtLeast(c, 1, rs -> {}).get(0);
            assertEquals(r.offset(), again.offset());
            assertEquals(Optional.of((short) 1), again.deliveryCount());
            c.acknowledge(again, AcknowledgeType.ACCEPT);
            c.commitSync().values().forEach(e -> assertTrue(e.isEmpty(), e.toString()));
            for (int i = 0; i < 4; i++) {
                assertTrue(c.poll(Duration.ofMillis(300)).isEmpty());
            }
        }
    }

    @Test
    @Tag("quick")
    void twoMembersShareOnePartition() throws Exception {
        String topic = Env.name("share-two");
        Env.createTopic(admin, topic, 1);
        String group = group();
        Env.produce(topic, 200, "v");
        Set<String> seen = new HashSet<>();
        try (KafkaShareConsumer<String, String> a = consumer(group, false);
             KafkaShareConsumer<String, String> b = consumer(group, false)) {
            a.subscribe(List.of(topic));
            b.subscribe(List.of(topic));
            Env.waitUntil("every record delivered", () -> {
                for (KafkaShareConsumer<String, String> c : List.of(a, b)) {
                    c.poll(Duration.ofMillis(200)).forEach(r -> assertTrue(seen.add(r.value()), "twice: " + r.value()));
                }
                return seen.size() == 200;
            });
            // Both members are assigned the one partition (the describe may come before the second
            // member's assignment is reconciled: waited for).
            Env.waitUntil("both members assigned the partition", () -> {
                try {
                    ShareGroupDescription d = admin.describeShareGroups(List.of(group)).all().get().get(group);
                    return d.members().size() == 2 && d.members().stream()
                        .allMatch(m -> m.assignment().topicPartitions().equals(Set.of(new TopicPartition(topic, 0))));
                } catch (Exception e) {
                    return false;
                }
            });
        }
    }

    @Test
    @Tag("quick")
    void adminListsDescribesAltersAndDeletesShareGroups() throws Exception {
        String topic = Env.name("share-admin");
        Env.createTopic(admin, topic, 2);
        String group = group();
        Env.produce(topic, 10, "v");
        TopicPartition p0 = new TopicPartition(topic, 0), p1 = new TopicPartition(topic, 1);
        try (KafkaShareConsumer<String, String> c = consumer(group, false)) {
            c.subscribe(List.of(topic));
            pollAtLeast(c, 10, rs -> {});
            c.commitSync();
            ShareGroupDescription d = admin.describeShareGroups(List.of(group)).all().get().get(group);
            assertEquals(GroupState.STABLE, d.groupState());
            assertEquals(1, d.members().size());
            assertEquals(Set.of(p0, p1), d.members().iterator().next().assignment().topicPartitions());
            GroupListing listing = admin.listGroups(ListGroupsOptions.forShareGroups()).all().get().stream()
                .filter(g -> g.groupId().equals(group)).findFirst().orElseThrow();
            assertEquals(GroupType.SHARE, listing.type().orElseThrow());
            assertFalse(admin.listGroups(ListGroupsOptions.forConsumerGroups()).all().get().stream()
                .anyMatch(g -> g.groupId().equals(group)));
            java.util.concurrent.atomic.AtomicReference<Object> last = new java.util.concurrent.atomic.AtomicReference<>();
            // Kafka answers the lag of each share partition (0: every record acknowledged); the start offset
            // it reports is the persisted one, which may lag behind.
            Env.waitUntil(() -> "share-group lag 0; last seen " + last.get(), () -> {
                try {
                    Map<TopicPartition, SharePartitionOffsetInfo> o = admin.listShareGroupOffsets(
                        Map.of(group, new ListShareGroupOffsetsSpec())).partitionsToOffsetInfo(group).get();
                    last.set(o);
                    return List.of(p0, p1).stream().allMatch(tp -> o.get(tp) != null && o.get(tp).lag().equals(Optional.of(0L)));
                } catch (Exception e) {
                    last.set(e);
                    return false;
                }
            });
            ExecutionException e = assertThrows(ExecutionException.class, () -> admin.deleteShareGroups(List.of(group)).all().get());
            Env.cause(e, GroupNotEmptyException.class);
        }
        Env.waitUntil("share group empty", () -> {
            try {
                return admin.describeShareGroups(List.of(group)).all().get().get(group).groupState() == GroupState.EMPTY;
            } catch (Exception ex) {
                return false;
            }
        });
        // Offsets of an empty group moved back: the records are delivered again.
        admin.alterShareGroupOffsets(group, Map.of(p0, 0L, p1, 0L)).all().get();
        try (KafkaShareConsumer<String, String> c = consumer(group, false)) {
            c.subscribe(List.of(topic));
            assertEquals(10, Env.values(pollAtLeast(c, 10, rs -> {})).size());
            c.commitSync();
        }
        Env.waitUntil("share group empty again", () -> {
            try {
                return admin.describeShareGroups(List.of(group)).all().get().get(group).groupState() == GroupState.EMPTY;
            } catch (Exception ex) {
                return false;
            }
        });
        admin.deleteShareGroupOffsets(group, Set.of(topic)).all().get();
        Map<TopicPartition, SharePartitionOffsetInfo> after = admin.listShareGroupOffsets(
            Map.of(group, new ListShareGroupOffsetsSpec())).partitionsToOffsetInfo(group).get();
        assertTrue(after.values().stream().allMatch(x -> x == null), after.toString());
        admin.deleteShareGroups(List.of(group)).all().get();
        ExecutionException e = assertThrows(ExecutionException.class, () -> admin.deleteShareGroups(List.of(group)).all().get());
        Env.cause(e, GroupIdNotFoundException.class);
        e = assertThrows(ExecutionException.class, () -> admin.describeShareGroups(List.of(Env.name("no-share"))).all().get());
        Env.cause(e, GroupIdNotFoundException.class);
    }
}
