package dev.samsa.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.DescribeProducersResult.PartitionProducerState;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.ListTransactionsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TransactionalIdNotFoundException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Transactions: commit and abort, read_committed consumers (aborted records invisible, the last stable
 * offset), offsets sent to transactions, and the Admin calls for transactions (describe, list, describe
 * producers, abort a hanging transaction, fence producers).
 */
class TransactionsTest extends SuiteBase {
    static KafkaProducer<String, String> transactional(String id) {
        KafkaProducer<String, String> p = Env.producer(Map.of("transactional.id", id, "transaction.timeout.ms", "60000"));
        p.initTransactions();
        return p;
    }

    static KafkaConsumer<String, String> reader(IsolationLevel level) {
        return Env.consumer(null, Map.of("isolation.level", level.toString()));
    }

    @Test
    @Tag("quick")
    void committedVisibleAbortedInvisibleToReadCommitted() throws Exception {
        String topic = Env.name("txn");
        Env.createTopic(admin, topic, 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaProducer<String, String> p = transactional(Env.name("txn-id"))) {
            p.beginTransaction();
            for (int i = 0; i < 5; i++) {
                p.send(new ProducerRecord<>(topic, "k", "committed-" + i));
            }
            p.commitTransaction();
            p.beginTransaction();
            for (int i = 0; i < 5; i++) {
                p.send(new ProducerRecord<>(topic, "k", "aborted-" + i));
            }
            p.flush();
            p.abortTransaction();
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, "k", "committed-last"));
            p.commitTransaction();
        }
        try (KafkaConsumer<String, String> c = reader(IsolationLevel.READ_COMMITTED)) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            List<ConsumerRecord<String, String>> got = Env.pollCount(c, 6);
            assertEquals(List.of("committed-0", "committed-1", "committed-2", "committed-3", "committed-4", "committed-last"),
                got.stream().map(ConsumerRecord::value).toList());
            assertTrue(c.poll(Duration.ofMillis(500)).isEmpty());
            // 5 + 1 commit marker + 5 + 1 abort marker + 1 + 1 commit marker.
            assertEquals(14, c.position(tp));
        }
        try (KafkaConsumer<String, String> c = reader(IsolationLevel.READ_UNCOMMITTED)) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            List<ConsumerRecord<String, String>> got = Env.pollCount(c, 11);
            assertEquals(5, got.stream().filter(r -> r.value().startsWith("aborted")).count());
        }
    }

    @Test
    @Tag("quick")
    void lastStableOffsetHoldsReadCommittedBack() throws Exception {
        String topic = Env.name("lso");
        Env.createTopic(admin, topic, 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        Env.produce(topic, 3, "plain");
        try (KafkaProducer<String, String> p = transactional(Env.name("lso-id"))) {
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, "k", "open-0"));
            p.send(new ProducerRecord<>(topic, "k", "open-1"));
            p.flush();
            Env.produce(topic, 2, "after");
            try (KafkaConsumer<String, String> committed = reader(IsolationLevel.READ_COMMITTED);
                 KafkaConsumer<String, String> uncommitted = reader(IsolationLevel.READ_UNCOMMITTED)) {
                assertEquals(3L, committed.endOffsets(List.of(tp)).get(tp), "the LSO: the open transaction's first offset");
                assertEquals(7L, uncommitted.endOffsets(List.of(tp)).get(tp));
                ListOffsetsResult.ListOffsetsResultInfo lso = admin.listOffsets(Map.of(tp, OffsetSpec.latest()),
                    new org.apache.kafka.clients.admin.ListOffsetsOptions(IsolationLevel.READ_COMMITTED)).partitionResult(tp).get();
                assertEquals(3, lso.offset());
                committed.assign(List.of(tp));
                committed.seekToBeginning(List.of(tp));
                List<ConsumerRecord<String, String>> got = Env.pollCount(committed, 3);
                assertEquals(3, got.size());
                for (int i = 0; i < 5; i++) {
                    assertTrue(committed.poll(Duration.ofMillis(200)).isEmpty(), "nothing past the LSO");
                }
                p.commitTransaction();
                got = Env.pollCount(committed, 4);
                assertEquals(List.of("open-0", "open-1", "after-0", "after-1"), got.stream().map(ConsumerRecord::value).toList());
                assertEquals(8L, committed.endOffsets(List.of(tp)).get(tp));
            }
        }
    }

    @Test
    @Tag("quick")
    void consumeTransformProduceWithOffsetsInTheTransaction() throws Exception {
        consumeTransformProduce("classic");
    }

    /** The same with a KIP-848 consumer: TxnOffsetCommit carries its member id and epoch. */
    @Test
    @Tag("quick")
    void consumeTransformProduceWithAConsumerProtocolMember() throws Exception {
        consumeTransformProduce("consumer");
    }

    private void consumeTransformProduce(String protocol) throws Exception {
        String in = Env.name("ctp-in"), out = Env.name("ctp-out");
        String group = Env.name("g-ctp");
        Env.createTopic(admin, in, 1);
        Env.createTopic(admin, out, 1);
        Env.produce(in, 10, "in");
        TopicPartition inTp = new TopicPartition(in, 0);
        try (KafkaProducer<String, String> p = transactional(Env.name("ctp-id"));
             KafkaConsumer<String, String> c = Env.consumer(group, Map.of("isolation.level", "read_committed",
                 "group.protocol", protocol))) {
            c.subscribe(List.of(in));
            List<ConsumerRecord<String, String>> got = Env.pollCount(c, 10);
            p.beginTransaction();
            for (ConsumerRecord<String, String> r : got.subList(0, 5)) {
                p.send(new ProducerRecord<>(out, r.key(), r.value().toUpperCase()));
            }
            p.sendOffsetsToTransaction(Map.of(inTp, new OffsetAndMetadata(5)), c.groupMetadata());
            p.commitTransaction();
            p.beginTransaction();
            for (ConsumerRecord<String, String> r : got.subList(5, 10)) {
                p.send(new ProducerRecord<>(out, r.key(), r.value().toUpperCase()));
            }
            p.sendOffsetsToTransaction(Map.of(inTp, new OffsetAndMetadata(10)), c.groupMetadata());
            p.abortTransaction();
        }
        assertEquals(5, admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().get(inTp).offset());
        try (KafkaConsumer<String, String> c = reader(IsolationLevel.READ_COMMITTED)) {
            TopicPartition outTp = new TopicPartition(out, 0);
            c.assign(List.of(outTp));
            c.seekToBeginning(List.of(outTp));
            List<ConsumerRecord<String, String>> got = Env.pollCount(c, 5);
            assertEquals(List.of("IN-0", "IN-1", "IN-2", "IN-3", "IN-4"), got.stream().map(ConsumerRecord::value).toList());
            assertTrue(c.poll(Duration.ofMillis(500)).isEmpty());
        }
    }

    @Test
    @Tag("quick")
    void adminDescribesAndListsTransactions() throws Exception {
        String topic = Env.name("txn-admin");
        String id = Env.name("txn-admin-id");
        Env.createTopic(admin, topic, 2);
        try (KafkaProducer<String, String> p = transactional(id)) {
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, 0, "k", "v")).get();
            p.send(new ProducerRecord<>(topic, 1, "k", "v")).get();
            TransactionDescription d = admin.describeTransactions(List.of(id)).description(id).get();
            assertEquals(TransactionState.ONGOING, d.state());
            assertEquals(Set.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1)), d.topicPartitions());
            assertEquals(60000, d.transactionTimeoutMs());
            assertTrue(d.producerId() >= 0);
            assertTrue(d.transactionStartTimeMs().isPresent());

            Collection<TransactionListing> listed = admin.listTransactions().all().get();
            TransactionListing mine = listed.stream().filter(l -> l.transactionalId().equals(id)).findFirst().orElseThrow();
            assertEquals(TransactionState.ONGOING, mine.state());
            assertEquals(d.producerId(), mine.producerId());
            assertTrue(admin.listTransactions(new ListTransactionsOptions().filterStates(Set.of(TransactionState.ONGOING)))
                .all().get().stream().anyMatch(l -> l.transactionalId().equals(id)));
            assertFalse(admin.listTransactions(new ListTransactionsOptions().filterStates(Set.of(TransactionState.COMPLETE_COMMIT)))
                .all().get().stream().anyMatch(l -> l.transactionalId().equals(id)));
            assertTrue(admin.listTransactions(new ListTransactionsOptions().filterProducerIds(Set.of(d.producerId())))
                .all().get().stream().anyMatch(l -> l.transactionalId().equals(id)));

            PartitionProducerState state = admin.describeProducers(List.of(new TopicPartition(topic, 0)))
                .partitionResult(new TopicPartition(topic, 0)).get();
            ProducerState ps = state.activeProducers().stream().filter(s -> s.producerId() == d.producerId()).findFirst().orElseThrow();
            assertEquals(0L, ps.currentTransactionStartOffset().orElseThrow());
            p.commitTransaction();
        }
        Env.waitUntil("transaction complete", () -> {
            try {
                return admin.describeTransactions(List.of(id)).description(id).get().state() == TransactionState.COMPLETE_COMMIT;
            } catch (Exception e) {
                return false;
            }
        });
        ExecutionException e = assertThrows(ExecutionException.class,
            () -> admin.describeTransactions(List.of(Env.name("no-such-txn"))).all().get());
        Env.cause(e, TransactionalIdNotFoundException.class);
    }

    @Test
    void adminAbortsAHangingTransaction() throws Exception {
        String topic = Env.name("hanging");
        Env.createTopic(admin, topic, 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        // An idempotent producer's records written as a transaction that no coordinator knows of is what
        // `kafka-transactions.sh abort` is for; here a transactional producer is left open and its
        // transaction aborted through the partition leader (WriteTxnMarkers), as the tool does.
        KafkaProducer<String, String> p = transactional(Env.name("hanging-id"));
        try {
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, "k", "hanging")).get();
            PartitionProducerState state = admin.describeProducers(List.of(tp)).partitionResult(tp).get();
            ProducerState ps = state.activeProducers().get(0);
            assertTrue(ps.currentTransactionStartOffset().isPresent());
            admin.abortTransaction(new AbortTransactionSpec(tp, ps.producerId(), (short) ps.producerEpoch(),
                ps.coordinatorEpoch().orElse(-1))).all().get();
            Env.waitUntil("no open transaction on the partition", () -> {
                try {
                    return admin.describeProducers(List.of(tp)).partitionResult(tp).get().activeProducers().stream()
                        .noneMatch(s -> s.currentTransactionStartOffset().isPresent());
                } catch (Exception e) {
                    return false;
                }
            });
            try (KafkaConsumer<String, String> c = reader(IsolationLevel.READ_COMMITTED)) {
                assertEquals(2L, c.endOffsets(List.of(tp)).get(tp), "the record and the abort marker, stable");
                c.assign(List.of(tp));
                c.seekToBeginning(List.of(tp));
                assertTrue(c.poll(Duration.ofSeconds(1)).isEmpty());
            }
        } finally {
            p.close(Duration.ZERO);
        }
    }

    @Test
    @Tag("quick")
    void fenceProducers() throws Exception {
        String topic = Env.name("fence");
        String id = Env.name("fence-id");
        Env.createTopic(admin, topic, 1);
        KafkaProducer<String, String> p = transactional(id);
        try {
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, "k", "v")).get();
            admin.fenceProducers(List.of(id)).all().get();
            KafkaException e = assertThrows(KafkaException.class, p::commitTransaction);
            assertTrue(e instanceof ProducerFencedException || e.getCause() instanceof ProducerFencedException
                || e instanceof org.apache.kafka.common.errors.InvalidProducerEpochException, e.toString());
        } finally {
            p.close(Duration.ZERO);
        }
        // A new producer of the same id starts cleanly, and the fenced transaction was aborted.
        try (KafkaProducer<String, String> p2 = transactional(id)) {
            p2.beginTransaction();
            p2.send(new ProducerRecord<>(topic, "k", "after"));
            p2.commitTransaction();
        }
        try (KafkaConsumer<String, String> c = reader(IsolationLevel.READ_COMMITTED)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            assertEquals(List.of("after"), Env.pollCount(c, 1).stream().map(ConsumerRecord::value).toList());
        }
    }

    @Test
    void newProducerWithTheSameIdFencesTheOld() throws Exception {
        String topic = Env.name("zombie");
        String id = Env.name("zombie-id");
        Env.createTopic(admin, topic, 1);
        KafkaProducer<String, String> old = transactional(id);
        try {
            old.beginTransaction();
            old.send(new ProducerRecord<>(topic, "k", "old")).get();
            try (KafkaProducer<String, String> fresh = transactional(id)) {
                fresh.beginTransaction();
                fresh.send(new ProducerRecord<>(topic, "k", "new"));
                fresh.commitTransaction();
            }
            assertThrows(KafkaException.class, old::commitTransaction);
        } finally {
            old.close(Duration.ZERO);
        }
        try (KafkaConsumer<String, String> c = reader(IsolationLevel.READ_COMMITTED)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            assertEquals(List.of("new"), Env.pollCount(c, 1).stream().map(ConsumerRecord::value).toList());
        }
    }
}
