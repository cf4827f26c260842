package dev.samsa.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.GroupNotEmptyException;
import org.apache.kafka.common.errors.GroupSubscribedToTopicException;
import org.apache.kafka.common.errors.UnknownMemberIdException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** Admin: classic consumer groups listed, described, their offsets listed, altered and deleted, and the groups deleted. */
class AdminGroupsTest extends SuiteBase {
    static ConsumerGroupDescription describe(String group) throws Exception {
        return admin.describeConsumerGroups(List.of(group)).all().get().get(group);
    }

    @Test
    @Tag("quick")
    void activeGroupListedDescribedAndNotDeletable() throws Exception {
        String topic = Env.name("grp");
        String group = Env.name("g-active");
        Env.createTopic(admin, topic, 2);
        Env.produce(topic, 10, "v");
        try (KafkaConsumer<String, String> c = Env.consumer(group, Map.of("client.id", "compat-client"))) {
            c.subscribe(List.of(topic));
            Env.pollCount(c, 10);
            c.commitSync();

            Collection<GroupListing> groups = admin.listGroups(ListGroupsOptions.forConsumerGroups()).all().get();
            GroupListing listing = groups.stream().filter(g -> g.groupId().equals(group)).findFirst().orElseThrow();
            assertEquals(GroupType.CLASSIC, listing.type().orElseThrow());
            assertEquals("consumer", listing.protocol());
            assertEquals(GroupState.STABLE, listing.groupState().orElseThrow());
            assertTrue(admin.listGroups(ListGroupsOptions.forConsumerGroups().inGroupStates(Set.of(GroupState.STABLE)))
                .all().get().stream().anyMatch(g -> g.groupId().equals(group)));
            assertFalse(admin.listGroups(ListGroupsOptions.forConsumerGroups().inGroupStates(Set.of(GroupState.EMPTY)))
                .all().get().stream().anyMatch(g -> g.groupId().equals(group)));

            ConsumerGroupDescription d = describe(group);
            assertEquals(GroupState.STABLE, d.groupState());
            assertEquals(GroupType.CLASSIC, d.type());
            assertFalse(d.isSimpleConsumerGroup());
            assertEquals("range", d.partitionAssignor());
            assertEquals(1, d.members().size());
            MemberDescription m = d.members().iterator().next();
            assertEquals("compat-client", m.clientId());
            assertEquals(Set.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1)), m.assignment().topicPartitions());
            assertTrue(d.coordinator() != null && d.coordinator().id() >= 0);

            Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            assertEquals(10, offsets.values().stream().mapToLong(OffsetAndMetadata::offset).sum());

            ExecutionException e = assertThrows(ExecutionException.class, () -> admin.deleteConsumerGroups(List.of(group)).all().get());
            Env.cause(e, GroupNotEmptyException.class);
            // Offsets of an active member's subscribed topic cannot be deleted either.
            e = assertThrows(ExecutionException.class, () -> admin.deleteConsumerGroupOffsets(group,
                Set.of(new TopicPartition(topic, 0))).all().get());
            Env.cause(e, GroupSubscribedToTopicException.class);
            // Nor altered while the group has members.
            e = assertThrows(ExecutionException.class, () -> admin.alterConsumerGroupOffsets(group,
                Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(0))).all().get());
            Env.cause(e, UnknownMemberIdException.class);
        }
        Env.waitUntil("group empty after the consumer left", () -> {
            try {
                return describe(group).groupState() == GroupState.EMPTY;
            } catch (Exception ex) {
                return false;
            }
        });
    }

    @Test
    @Tag("quick")
    void emptyGroupOffsetsAlteredDeletedThenGroupDeleted() throws Exception {
        String topic = Env.name("grp-off");
        String group = Env.name("g-offsets");
        Env.createTopic(admin, topic, 3);
        Env.produce(topic, 30, "v");
        TopicPartition p0 = new TopicPartition(topic, 0), p1 = new TopicPartition(topic, 1), p2 = new TopicPartition(topic, 2);
        admin.alterConsumerGroupOffsets(group, Map.of(p0, new OffsetAndMetadata(1, "first"), p1, new OffsetAndMetadata(2),
            p2, new OffsetAndMetadata(0))).all().get();
        Map<TopicPartition, OffsetAndMetadata> got = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
        assertEquals(1, got.get(p0).offset());
        assertEquals("first", got.get(p0).metadata());
        assertEquals(2, got.get(p1).offset());
        // Only some partitions, through the spec.
        Map<TopicPartition, OffsetAndMetadata> some = admin.listConsumerGroupOffsets(Map.of(group,
            new ListConsumerGroupOffsetsSpec().topicPartitions(List.of(p1)))).partitionsToOffsetAndMetadata(group).get();
        assertEquals(Set.of(p1), some.keySet());
        ConsumerGroupDescription d = describe(group);
        assertEquals(GroupState.EMPTY, d.groupState());
        assertTrue(d.members().isEmpty());

        admin.deleteConsumerGroupOffsets(group, Set.of(p0)).all().get();
        got = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
        assertFalse(got.containsKey(p0), got.toString());
        assertTrue(got.containsKey(p1));

        // A consumer of the group starts where the offsets say.
        try (KafkaConsumer<String, String> c = Env.consumer(group, Map.of())) {
            c.assign(List.of(p1));
            assertEquals(2, c.position(p1));
        }

        admin.deleteConsumerGroups(List.of(group)).all().get();
        ExecutionException e = assertThrows(ExecutionException.class, () -> admin.deleteConsumerGroups(List.of(group)).all().get());
        Env.cause(e, GroupIdNotFoundException.class);
        assertTrue(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().isEmpty());
    }

    @Test
    void unknownGroupsAreNotFound() throws Exception {
        String group = Env.name("g-none");
        ExecutionException e = assertThrows(ExecutionException.class, () -> describe(group));
        Env.cause(e, GroupIdNotFoundException.class);
        e = assertThrows(ExecutionException.class, () -> admin.deleteConsumerGroups(List.of(group)).all().get());
        Env.cause(e, GroupIdNotFoundException.class);
        e = assertThrows(ExecutionException.class,
            () -> admin.deleteConsumerGroupOffsets(group, Set.of(new TopicPartition("t", 0))).all().get());
        Env.cause(e, GroupIdNotFoundException.class);
    }

    @Test
    void removeMembersFromStaticGroup() throws Exception {
        String topic = Env.name("grp-static");
        String group = Env.name("g-remove");
        Env.createTopic(admin, topic, 1);
        KafkaConsumer<String, String> c = Env.consumer(group, Map.of("group.instance.id", "instance-1", "session.timeout.ms", "60000"));
        try {
            c.subscribe(List.of(topic));
            Env.waitUntil("member joined", () -> {
                c.poll(java.time.Duration.ofMillis(100));
                return !c.assignment().isEmpty();
            });
            assertEquals("instance-1", describe(group).members().iterator().next().groupInstanceId().orElseThrow());
            admin.removeMembersFromConsumerGroup(group, new org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions(
                List.of(new org.apache.kafka.clients.admin.MemberToRemove("instance-1")))).all().get();
            assertTrue(describe(group).members().isEmpty());
        } finally {
            c.close(org.apache.kafka.clients.consumer.CloseOptions.timeout(java.time.Duration.ofSeconds(5)));
        }
    }
}
