package dev.samsa.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.InvalidReplicationFactorException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicIdException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.TopicCollection;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** Admin: topics created, described, listed, grown and deleted, and Kafka's errors for bad input. */
class AdminTopicsTest extends SuiteBase {
    @Test
    @Tag("quick")
    void createDescribeListDelete() throws Exception {
        String topic = Env.name("admin-topic");
        CreateTopicsResult created = admin.createTopics(List.of(
            new NewTopic(topic, 3, Env.rf()).configs(Map.of("cleanup.policy", "compact", "retention.ms", "3600000"))));
        created.all().get();
        assertEquals(3, created.numPartitions(topic).get());
        assertEquals(Env.rf(), created.replicationFactor(topic).get());
        Uuid id = created.topicId(topic).get();
        assertFalse(Uuid.ZERO_UUID.equals(id));
        assertEquals("compact", created.config(topic).get().get("cleanup.policy").value());
        Env.awaitTopic(admin, topic, 3);

        TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
        assertEquals(topic, d.name());
        assertEquals(id, d.topicId());
        assertFalse(d.isInternal());
        assertEquals(3, d.partitions().size());
        for (TopicPartitionInfo p : d.partitions()) {
            assertEquals(Env.rf(), p.replicas().size(), p.toString());
            assertEquals(Env.rf(), p.isr().size(), p.toString());
            assertTrue(p.replicas().contains(p.leader()), p.toString());
        }
        // By id, as Kafka's tools describe them too.
        TopicDescription byId = admin.describeTopics(TopicCollection.ofTopicIds(List.of(id))).allTopicIds().get().get(id);
        assertEquals(topic, byId.name());

        assertTrue(admin.listTopics().names().get().contains(topic));
        assertTrue(admin.listTopics().listings().get().stream().anyMatch(l -> l.name().equals(topic) && l.topicId().equals(id)));

        admin.deleteTopics(List.of(topic)).all().get();
        Env.waitUntil("deleted topic leaves the listing", () -> {
            try {
                return !admin.listTopics().names().get().contains(topic);
            } catch (Exception e) {
                return false;
            }
        });
        ExecutionException e = assertThrows(ExecutionException.class,
            () -> admin.describeTopics(List.of(topic)).allTopicNames().get());
        Env.cause(e, UnknownTopicOrPartitionException.class);
    }

    @Test
    void internalTopicsAreListedOnlyWhenAsked() throws Exception {
        // A consumer-group commit makes __consumer_offsets exist.
        String topic = Env.name("internal");
        Env.createTopic(admin, topic, 1);
        try (var c = Env.consumer(Env.name("g-internal"), Map.of())) {
            c.assign(List.of(new org.apache.kafka.common.TopicPartition(topic, 0)));
            c.commitSync(Map.of(new org.apache.kafka.common.TopicPartition(topic, 0),
                new org.apache.kafka.clients.consumer.OffsetAndMetadata(0)));
        }
        assertFalse(admin.listTopics().names().get().contains("__consumer_offsets"));
        assertTrue(admin.listTopics(new ListTopicsOptions().listInternal(true)).names().get().contains("__consumer_offsets"));
        TopicDescription d = admin.describeTopics(List.of("__consumer_offsets")).allTopicNames().get().get("__consumer_offsets");
        assertTrue(d.isInternal());
    }

    @Test
    @Tag("quick")
    void createExistingTopicFailsWithTopicExists() throws Exception {
        String topic = Env.name("exists");
        Env.createTopic(admin, topic, 1);
        ExecutionException e = assertThrows(ExecutionException.class,
            () -> admin.createTopics(List.of(new NewTopic(topic, 1, Env.rf()))).all().get());
        Env.cause(e, TopicExistsException.class);
    }

    @Test
    void validateOnlyCreatesNothing() throws Exception {
        String topic = Env.name("validate");
        admin.createTopics(List.of(new NewTopic(topic, 2, Env.rf())), new CreateTopicsOptions().validateOnly(true)).all().get();
        assertFalse(admin.listTopics().names().get().contains(topic));
    }

    @Test
    void replicationFactorAboveTheBrokersFails() {
        ExecutionException e = assertThrows(ExecutionException.class, () -> admin.createTopics(
            List.of(new NewTopic(Env.name("rf"), 1, (short) (Env.NODES + 1)))).all().get());
        Env.cause(e, InvalidReplicationFactorException.class);
    }

    @Test
    void zeroPartitionsFail() {
        ExecutionException e = assertThrows(ExecutionException.class, () -> admin.createTopics(
            List.of(new NewTopic(Env.name("zero"), Optional.of(0), Optional.of(Env.rf())))).all().get());
        Env.cause(e, InvalidPartitionsException.class);
    }

    @Test
    void invalidNamesFail() {
        for (String bad : List.of("bad name", "..", "a/b", "x".repeat(250))) {
            ExecutionException e = assertThrows(ExecutionException.class,
                () -> admin.createTopics(List.of(new NewTopic(bad, 1, Env.rf()))).all().get(), bad);
            Env.cause(e, InvalidTopicException.class);
        }
    }

    @Test
    void invalidConfigsFail() {
        ExecutionException e = assertThrows(ExecutionException.class, () -> admin.createTopics(List.of(
            new NewTopic(Env.name("badcfg"), 1, Env.rf()).configs(Map.of("cleanup.policy", "sometimes")))).all().get());
        Env.cause(e, InvalidConfigurationException.class);
        e = assertThrows(ExecutionException.class, () -> admin.createTopics(List.of(
            new NewTopic(Env.name("badcfg"), 1, Env.rf()).configs(Map.of("retention.ms", "soon")))).all().get());
        Env.cause(e, InvalidConfigurationException.class);
        e = assertThrows(ExecutionException.class, () -> admin.createTopics(List.of(
            new NewTopic(Env.name("badcfg"), 1, Env.rf()).configs(Map.of("no.such.config", "1")))).all().get());
        Env.cause(e, InvalidConfigurationException.class);
    }

    @Test
    void manualAssignment() throws Exception {
        String topic = Env.name("assigned");
        Map<Integer, List<Integer>> assignment;
        List<Integer> ids = admin.describeCluster().nodes().get().stream().map(n -> n.id()).sorted().toList();
        if (Env.NODES >= 3) {
            assignment = Map.of(0, List.of(ids.get(0), ids.get(1), ids.get(2)), 1, List.of(ids.get(2), ids.get(0), ids.get(1)));
        } else {
            assignment = Map.of(0, List.of(ids.get(0)), 1, List.of(ids.get(0)));
        }
        admin.createTopics(List.of(new NewTopic(topic, assignment))).all().get();
        Env.awaitTopic(admin, topic, 2);
        TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
        for (TopicPartitionInfo p : d.partitions()) {
            assertEquals(assignment.get(p.partition()), p.replicas().stream().map(n -> n.id()).toList());
            assertEquals(assignment.get(p.partition()).get(0), p.leader().id());
        }
        // A replica on a broker that does not exist.
        ExecutionException e = assertThrows(ExecutionException.class, () -> admin.createTopics(List.of(
            new NewTopic(Env.name("assigned"), Map.of(0, List.of(9999))))).all().get());
        assertTrue(e.getCause() instanceof org.apache.kafka.common.errors.InvalidReplicaAssignmentException
            || e.getCause() instanceof InvalidReplicationFactorException, e.getCause().toString());
    }

    @Test
    @Tag("quick")
    void createPartitions() throws Exception {
        String topic = Env.name("grow");
        Env.createTopic(admin, topic, 1);
        admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(4))).all().get();
        Env.awaitTopic(admin, topic, 4);
        // Shrinking or staying the same fails; so does an unknown topic.
        ExecutionException e = assertThrows(ExecutionException.class,
            () -> admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(2))).all().get());
        Env.cause(e, InvalidPartitionsException.class);
        e = assertThrows(ExecutionException.class,
            () -> admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(4))).all().get());
        Env.cause(e, InvalidPartitionsException.class);
        e = assertThrows(ExecutionException.class,
            () -> admin.createPartitions(Map.of(Env.name("nope"), NewPartitions.increaseTo(4))).all().get());
        Env.cause(e, UnknownTopicOrPartitionException.class);
        // Too many replicas in an explicit assignment.
        e = assertThrows(ExecutionException.class, () -> admin.createPartitions(Map.of(topic,
            NewPartitions.increaseTo(6, List.of(List.of(1))))).all().get());
        assertTrue(e.getCause() instanceof org.apache.kafka.common.errors.InvalidReplicaAssignmentException
            || e.getCause() instanceof InvalidPartitionsException, e.getCause().toString());
    }

    @Test
    void deleteUnknownTopicsFail() {
        ExecutionException e = assertThrows(ExecutionException.class,
            () -> admin.deleteTopics(List.of(Env.name("unknown"))).all().get());
        Env.cause(e, UnknownTopicOrPartitionException.class);
        e = assertThrows(ExecutionException.class,
            () -> admin.deleteTopics(TopicCollection.ofTopicIds(List.of(Uuid.randomUuid()))).all().get());
        Env.cause(e, UnknownTopicIdException.class);
    }

    @Test
    void deleteById() throws Exception {
        String topic = Env.name("byid");
        Env.createTopic(admin, topic, 1);
        Uuid id = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).topicId();
        admin.deleteTopics(TopicCollection.ofTopicIds(List.of(id))).all().get();
        Env.waitUntil("deleted by id", () -> {
            try {
                return !admin.listTopics().names().get().contains(topic);
            } catch (Exception ex) {
                return false;
            }
        });
        assertFalse(admin.listTopics().names().get().containsAll(Set.of(topic)));
    }
}
