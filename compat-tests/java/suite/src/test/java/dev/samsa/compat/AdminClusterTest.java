package dev.samsa.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.PartitionReassignment;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.errors.ElectionNotNeededException;
import org.apache.kafka.common.errors.InvalidReplicaAssignmentException;
import org.apache.kafka.common.errors.NoReassignmentInProgressException;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Admin: the cluster (describeCluster, features, the metadata quorum), log dirs, listOffsets,
 * deleteRecords, leader elections, reassignments, and ACLs (the runner configures an authorizer).
 */
class AdminClusterTest extends SuiteBase {
    @Test
    @Tag("quick")
    void describeCluster() throws Exception {
        DescribeClusterResult r = admin.describeCluster(new DescribeClusterOptions().includeAuthorizedOperations(true));
        Collection<Node> nodes = r.nodes().get();
        assertEquals(Env.NODES, nodes.size());
        for (Node n : nodes) {
            assertEquals("127.0.0.1", n.host());
            assertTrue(n.port() > 0);
        }
        assertNotNull(r.controller().get());
        String id = r.clusterId().get();
        assertNotNull(id);
        assertFalse(id.isEmpty());
        if (Env.AUTHORIZER) {
            Set<AclOperation> ops = r.authorizedOperations().get();
            assertNotNull(ops, "the authorizer answers the operations allowed on the cluster");
            assertTrue(ops.contains(AclOperation.DESCRIBE), ops.toString());
        }
    }

    @Test
    @Tag("quick")
    void describeFeatures() throws Exception {
        FeatureMetadata f = admin.describeFeatures().featureMetadata().get();
        assertTrue(f.finalizedFeatures().containsKey("metadata.version"), f.toString());
        assertTrue(f.supportedFeatures().containsKey("metadata.version"), f.toString());
        assertTrue(f.finalizedFeatures().get("metadata.version").maxVersionLevel() > 0);
        assertTrue(f.finalizedFeatures().containsKey("transaction.version"), f.toString());
        assertTrue(f.finalizedFeaturesEpoch().isPresent());
    }

    @Test
    @Tag("quick")
    void describeMetadataQuorum() throws Exception {
        QuorumInfo q = admin.describeMetadataQuorum().quorumInfo().get();
        assertEquals(Env.NODES, q.voters().size());
        assertTrue(q.leaderId() >= 0);
        assertTrue(q.voters().stream().anyMatch(v -> v.replicaId() == q.leaderId()));
        assertTrue(q.highWatermark() > 0);
        assertTrue(q.leaderEpoch() > 0);
    }

    @Test
    @Tag("quick")
    void describeLogDirs() throws Exception {
        String topic = Env.name("logdirs");
        Env.createTopic(admin, topic, 2);
        Env.produce(topic, 10, "v");
        List<Integer> ids = admin.describeCluster().nodes().get().stream().map(Node::id).toList();
        Map<Integer, Map<String, LogDirDescription>> dirs = admin.describeLogDirs(ids).allDescriptions().get();
        assertEquals(Set.copyOf(ids), dirs.keySet());
        int replicas = 0;
        long size = 0;
        for (Map<String, LogDirDescription> perBroker : dirs.values()) {
            assertFalse(perBroker.isEmpty());
            for (LogDirDescription d : perBroker.values()) {
                assertEquals(null, d.error());
                assertTrue(d.totalBytes().isPresent() && d.usableBytes().isPresent());
                for (Map.Entry<TopicPartition, ReplicaInfo> e : d.replicaInfos().entrySet()) {
                    if (e.getKey().topic().equals(topic)) {
                        replicas++;
                        size += e.getValue().size();
                    }
                }
            }
        }
        assertEquals(2 * Env.rf(), replicas);
        assertTrue(size > 0);
        TopicPartitionReplica r = new TopicPartitionReplica(topic, 0, ids.get(0));
        var replicaDirs = admin.describeReplicaLogDirs(List.of(r)).all().get();
        if (Env.NODES == 1) {
            assertNotNull(replicaDirs.get(r).getCurrentReplicaLogDir());
        }
    }

    @Test
    @Tag("quick")
    void listOffsetsOfEverySpec() throws Exception {
        String topic = Env.name("listoffsets");
        Env.createTopic(admin, topic, 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        long base = 1_700_000_000_000L;
        try (KafkaProducer<String, String> p = Env.producer()) {
            for (int i = 0; i < 10; i++) {
                // The largest timestamp at offset 7.
                long ts = i == 7 ? base + 100_000 : base + i * 1000L;
                p.send(new ProducerRecord<>(topic, 0, ts, "k", "v" + i));
            }
            p.flush();
        }
        assertEquals(0, offset(tp, OffsetSpec.earliest()));
        assertEquals(10, offset(tp, OffsetSpec.latest()));
        assertEquals(7, offset(tp, OffsetSpec.maxTimestamp()));
        assertEquals(3, offset(tp, OffsetSpec.forTimestamp(base + 2500)));
        assertEquals(-1, offset(tp, OffsetSpec.forTimestamp(base + 200_000)));
        assertEquals(0, offset(tp, OffsetSpec.earliestLocal()));
        ListOffsetsResultInfo info = admin.listOffsets(Map.of(tp, OffsetSpec.maxTimestamp())).partitionResult(tp).get();
        assertEquals(base + 100_000, info.timestamp());
    }

    static long offset(TopicPartition tp, OffsetSpec spec) throws Exception {
        return admin.listOffsets(Map.of(tp, spec)).partitionResult(tp).get().offset();
    }

    @Test
    @Tag("quick")
    void deleteRecords() throws Exception {
        String topic = Env.name("delrec");
        Env.createTopic(admin, topic, 1);
        Env.produce(topic, 10, "v");
        TopicPartition tp = new TopicPartition(topic, 0);
        long low = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(4))).lowWatermarks().get(tp).get().lowWatermark();
        assertEquals(4, low);
        assertEquals(4, offset(tp, OffsetSpec.earliest()));
        try (var c = Env.consumer(null, Map.of())) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            assertEquals("v-4", Env.pollCount(c, 1).get(0).value());
        }
        // -1: up to the high watermark.
        assertEquals(10, admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(-1))).lowWatermarks().get(tp).get().lowWatermark());
        ExecutionException e = assertThrows(ExecutionException.class,
            () -> admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(20))).all().get());
        Env.cause(e, OffsetOutOfRangeException.class);
    }

    @Test
    void preferredElectionNotNeededWhenLeadersArePreferred() throws Exception {
        String topic = Env.name("elect");
        Env.createTopic(admin, topic, 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        Map<TopicPartition, Optional<Throwable>> r = admin.electLeaders(ElectionType.PREFERRED, Set.of(tp)).partitions().get();
        assertTrue(r.get(tp).isPresent());
        assertTrue(r.get(tp).get() instanceof ElectionNotNeededException, r.toString());
        ExecutionException e = assertThrows(ExecutionException.class,
            () -> admin.electLeaders(ElectionType.PREFERRED, Set.of(new TopicPartition(Env.name("nope"), 0))).all().get());
        Env.cause(e, UnknownTopicOrPartitionException.class);
        // Unclean: the leader is in the ISR, nothing to do either.
        r = admin.electLeaders(ElectionType.UNCLEAN, Set.of(tp)).partitions().get();
        assertTrue(r.get(tp).isPresent() && r.get(tp).get() instanceof ElectionNotNeededException, r.toString());
    }

    @Test
    void reassignmentsAndPreferredElection() throws Exception {
        String topic = Env.name("reassign");
        Env.createTopic(admin, topic, 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        List<Integer> ids = admin.describeCluster().nodes().get().stream().map(Node::id).sorted().toList();
        assertTrue(admin.listPartitionReassignments().reassignments().get().isEmpty()
            || !admin.listPartitionReassignments().reassignments().get().containsKey(tp));
        // A broker that does not exist.
        ExecutionException e = assertThrows(ExecutionException.class, () -> admin.alterPartitionReassignments(
            Map.of(tp, Optional.of(new NewPartitionReassignment(List.of(9999))))).all().get());
        Env.cause(e, InvalidReplicaAssignmentException.class);
        // Cancelling none.
        e = assertThrows(ExecutionException.class,
            () -> admin.alterPartitionReassignments(Map.of(tp, Optional.empty())).all().get());
        Env.cause(e, NoReassignmentInProgressException.class);
        e = assertThrows(ExecutionException.class, () -> admin.alterPartitionReassignments(
            Map.of(new TopicPartition(Env.name("nope"), 0), Optional.of(new NewPartitionReassignment(List.of(ids.get(0)))))).all().get());
        Env.cause(e, UnknownTopicOrPartitionException.class);
        if (Env.NODES < 3) {
            return;
        }
        TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
        List<Integer> replicas = d.partitions().get(0).replicas().stream().map(Node::id).toList();
        // The same replicas in another order: the first becomes the preferred leader.
        List<Integer> rotated = List.of(replicas.get(1), replicas.get(2), replicas.get(0));
        admin.alterPartitionReassignments(Map.of(tp, Optional.of(new NewPartitionReassignment(rotated)))).all().get();
        Env.waitUntil("reassignment done", () -> {
            try {
                Map<TopicPartition, PartitionReassignment> inFlight = admin.listPartitionReassignments(Set.of(tp)).reassignments().get();
                List<Integer> now = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().get(0)
                    .replicas().stream().map(Node::id).toList();
                return inFlight.isEmpty() && now.equals(rotated);
            } catch (Exception ex) {
                return false;
            }
        });
        Map<TopicPartition, Optional<Throwable>> r = admin.electLeaders(ElectionType.PREFERRED, Set.of(tp)).partitions().get();
        assertTrue(r.get(tp).isEmpty() || r.get(tp).get() instanceof ElectionNotNeededException, r.toString());
        Env.waitUntil("preferred leader elected", () -> {
            try {
                return admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().get(0).leader().id()
                    == rotated.get(0);
            } catch (Exception ex) {
                return false;
            }
        });
        // Down to one replica, then the reassignment listed while the data moves is not asserted (timing).
        admin.alterPartitionReassignments(Map.of(tp, Optional.of(new NewPartitionReassignment(List.of(rotated.get(0)))))).all().get();
        Env.waitUntil("shrunk to one replica", () -> {
            try {
                return admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().get(0).replicas().size() == 1;
            } catch (Exception ex) {
                return false;
            }
        });
    }

    @Test
    @Tag("quick")
    void acls() throws Exception {
        assumeTrue(Env.AUTHORIZER, "no authorizer configured");
        String topic = Env.name("acl");
        ResourcePattern literal = new ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL);
        ResourcePattern prefixed = new ResourcePattern(ResourceType.TOPIC, topic + "-pre", PatternType.PREFIXED);
        AclBinding read = new AclBinding(literal, new AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW));
        AclBinding write = new AclBinding(prefixed, new AccessControlEntry("User:bob", "127.0.0.1", AclOperation.WRITE, AclPermissionType.DENY));
        admin.createAcls(List.of(read, write)).all().get();
        AclBindingFilter mine = new AclBindingFilter(new ResourcePatternFilter(ResourceType.TOPIC, null, PatternType.ANY),
            AccessControlEntryFilter.ANY);
        Env.waitUntil("ACLs visible", () -> {
            try {
                Collection<AclBinding> all = admin.describeAcls(mine).values().get();
                return all.contains(read) && all.contains(write);
            } catch (Exception ex) {
                return false;
            }
        });
        // Filter by resource: a MATCH filter finds the prefixed ACL for a topic it covers.
        Collection<AclBinding> matching = admin.describeAcls(new AclBindingFilter(
            new ResourcePatternFilter(ResourceType.TOPIC, topic + "-pre-x", PatternType.MATCH), AccessControlEntryFilter.ANY)).values().get();
        assertEquals(Set.of(write), Set.copyOf(matching));
        Collection<AclBinding> byPrincipal = admin.describeAcls(new AclBindingFilter(ResourcePatternFilter.ANY,
            new AccessControlEntryFilter("User:alice", null, AclOperation.ANY, AclPermissionType.ANY))).values().get();
        assertTrue(byPrincipal.contains(read) && !byPrincipal.contains(write), byPrincipal.toString());
        Collection<AclBinding> deleted = admin.deleteAcls(List.of(read.toFilter(), write.toFilter())).all().get();
        assertEquals(Set.of(read, write), Set.copyOf(deleted));
        Env.waitUntil("ACLs gone", () -> {
            try {
                Collection<AclBinding> all = admin.describeAcls(mine).values().get();
                return !all.contains(read) && !all.contains(write);
            } catch (Exception ex) {
                return false;
            }
        });
        // Invalid: a principal without a type.
        ExecutionException e = assertThrows(ExecutionException.class, () -> admin.createAcls(List.of(new AclBinding(literal,
            new AccessControlEntry("alice", "*", AclOperation.READ, AclPermissionType.ALLOW)))).all().get());
        assertTrue(e.getCause() instanceof org.apache.kafka.common.errors.InvalidRequestException, e.getCause().toString());
    }
}
