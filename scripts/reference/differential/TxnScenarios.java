package differential;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.message.AddOffsetsToTxnRequestData;
import org.apache.kafka.common.message.AddPartitionsToTxnRequestData;
import org.apache.kafka.common.message.DescribeTransactionsRequestData;
import org.apache.kafka.common.message.EndTxnRequestData;
import org.apache.kafka.common.message.FetchRequestData;
import org.apache.kafka.common.message.InitProducerIdRequestData;
import org.apache.kafka.common.message.InitProducerIdResponseData;
import org.apache.kafka.common.message.ListOffsetsRequestData;
import org.apache.kafka.common.message.ListOffsetsResponseData;
import org.apache.kafka.common.message.ListTransactionsRequestData;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.message.TxnOffsetCommitRequestData;
import org.apache.kafka.common.message.WriteTxnMarkersRequestData;
import org.apache.kafka.common.protocol.ApiKeys;

/**
 * Transactions: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn,
 * DescribeTransactions, ListTransactions, WriteTxnMarkers, and whole transactions seen through
 * Produce, Fetch and ListOffsets.
 *
 * Kafka 4.4 finalizes transaction.version 2 (KIP-890 part 2): a client that sends EndTxn v5
 * and Produce v12+ runs a "TV2" transaction (no AddPartitionsToTxn: Produce adds partitions
 * itself; every EndTxn bumps the epoch and returns it). A client of transaction version 1 sends
 * AddPartitionsToTxn (v0-3), Produce v11 at most and EndTxn v4 at most. The scenarios follow the
 * client that each version stands for, so that both behaviours show.
 */
final class TxnScenarios {
    private TxnScenarios() {}

    static final int TIMEOUT_MS = 60_000;

    // ---- request builders ----------------------------------------------------------------

    static InitProducerIdRequestData init(short v, String txn, int timeoutMs, long producerId, short epoch) {
        InitProducerIdRequestData r = new InitProducerIdRequestData().setTransactionalId(txn).setTransactionTimeoutMs(timeoutMs);
        if (v >= 3) r.setProducerId(producerId).setProducerEpoch(epoch);
        return r;
    }

    static AddPartitionsToTxnRequestData.AddPartitionsToTxnTopicCollection topics(String topic, int... partitions) {
        AddPartitionsToTxnRequestData.AddPartitionsToTxnTopicCollection out = new AddPartitionsToTxnRequestData.AddPartitionsToTxnTopicCollection();
        AddPartitionsToTxnRequestData.AddPartitionsToTxnTopic t = new AddPartitionsToTxnRequestData.AddPartitionsToTxnTopic().setName(topic);
        for (int p : partitions) t.partitions().add(p);
        out.add(t);
        return out;
    }

    /** AddPartitionsToTxn in the form of the version: v0-3 the client's, v4+ one transaction of
     *  the broker's batched form. */
    static AddPartitionsToTxnRequestData addPartitions(short v, String txn, long pid, short epoch, boolean verifyOnly, String topic, int... partitions) {
        AddPartitionsToTxnRequestData r = new AddPartitionsToTxnRequestData();
        if (v <= 3) {
            r.setV3AndBelowTransactionalId(txn).setV3AndBelowProducerId(pid).setV3AndBelowProducerEpoch(epoch)
                .setV3AndBelowTopics(topics(topic, partitions));
        } else {
            r.transactions().add(transaction(txn, pid, epoch, verifyOnly, topic, partitions));
        }
        return r;
    }

    static AddPartitionsToTxnRequestData.AddPartitionsToTxnTransaction transaction(String txn, long pid, short epoch, boolean verifyOnly,
                                                                                String topic, int... partitions) {
        return new AddPartitionsToTxnRequestData.AddPartitionsToTxnTransaction().setTransactionalId(txn)
            .setProducerId(pid).setProducerEpoch(epoch).setVerifyOnly(verifyOnly).setTopics(topics(topic, partitions));
    }

    static AddOffsetsToTxnRequestData addOffsets(String txn, long pid, short epoch, String group) {
        return new AddOffsetsToTxnRequestData().setTransactionalId(txn).setProducerId(pid).setProducerEpoch(epoch).setGroupId(group);
    }

    static EndTxnRequestData endTxn(String txn, long pid, short epoch, boolean commit) {
        return new EndTxnRequestData().setTransactionalId(txn).setProducerId(pid).setProducerEpoch(epoch).setCommitted(commit);
    }

    static TxnOffsetCommitRequestData txnCommit(Ctx c, short v, String txn, String group, long pid, short epoch, String topic, long offset, int... partitions) {
        TxnOffsetCommitRequestData r = new TxnOffsetCommitRequestData().setTransactionalId(txn).setGroupId(group)
            .setProducerId(pid).setProducerEpoch(epoch);
        TxnOffsetCommitRequestData.TxnOffsetCommitRequestTopic t = new TxnOffsetCommitRequestData.TxnOffsetCommitRequestTopic().setName(topic)
            .setTopicId(GroupScenarios.topicId(c, topic));
        for (int p : partitions) {
            t.partitions().add(new TxnOffsetCommitRequestData.TxnOffsetCommitRequestPartition().setPartitionIndex(p)
                .setCommittedOffset(offset + p).setCommittedMetadata("txn"));
        }
        r.topics().add(t);
        return r;
    }

    static DescribeTransactionsRequestData describe(String... ids) {
        return new DescribeTransactionsRequestData().setTransactionalIds(new ArrayList<>(List.of(ids)));
    }

    static ProduceRequestData produce(Ctx c, short v, String txn, String topic, int partition, long pid, short epoch, int seq, int n) {
        return DataScenarios.produce(c, v, topic, partition, Records.transactional(pid, epoch, seq, n), (short) -1).setTransactionalId(txn);
    }

    static ListOffsetsRequestData latest(String topic, int partition, byte isolation) {
        return DataScenarios.listOffsets(topic, partition, -1).setIsolationLevel(isolation);
    }

    static FetchRequestData fetch(Ctx c, String topic, int partition, byte isolation) {
        return DataScenarios.fetch(c, (short) 12, topic, partition, 0, 1 << 20).setIsolationLevel(isolation);
    }

    // ---- set-up steps --------------------------------------------------------------------

    record Pid(long id, short epoch) {
        Pid bumped() {
            return new Pid(id, (short) (epoch + 1));
        }
    }

    static Pid initPid(Ctx c, String txn) throws IOException {
        InitProducerIdResponseData r = DataScenarios.initProducerId(c, txn);
        return new Pid(r.producerId(), r.producerEpoch());
    }

    /** Begins a transaction of transaction version 1: AddPartitionsToTxn v3. Not compared. */
    static void begin(Ctx c, String txn, Pid p, String topic, int... partitions) throws IOException {
        Peer.Answer a = c.call(Route.txn(txn), ApiKeys.ADD_PARTITIONS_TO_TXN, (short) 3, addPartitions((short) 3, txn, p.id, p.epoch, false, topic, partitions));
        if (a.json().toString().matches(".*\"partitionErrorCode\":[1-9].*")) throw new Ctx.ScenarioFailure("AddPartitionsToTxn: " + a.json());
    }

    /** Transactional records as a transaction version 1 client sends them (Produce v11). */
    static void produceTv1(Ctx c, String txn, String topic, int partition, Pid p, int seq, int n) throws IOException {
        Peer.Answer a = c.call(Route.leader(topic, partition), ApiKeys.PRODUCE, (short) 11, produce(c, (short) 11, txn, topic, partition, p.id, p.epoch, seq, n));
        if (a.json().toString().matches(".*\"errorCode\":[1-9].*")) throw new Ctx.ScenarioFailure("transactional produce: " + a.json());
    }

    /** Waits until the last stable offset of the partition reaches its high watermark: the
     *  markers of a completed transaction are written (asynchronously, after EndTxn answers). */
    static void awaitStable(Ctx c, String topic, int partition) throws IOException {
        long deadline = System.currentTimeMillis() + Ctx.AWAIT_MS;
        while (true) {
            long hw = offset(c, topic, partition, (byte) 0);
            long lso = offset(c, topic, partition, (byte) 1);
            if (hw == lso) return;
            if (System.currentTimeMillis() > deadline) throw new Ctx.ScenarioFailure(topic + "-" + partition + ": LSO " + lso + " stays below HW " + hw);
            Ctx.sleep(20);
        }
    }

    static long offset(Ctx c, String topic, int partition, byte isolation) throws IOException {
        Peer.Answer a = c.call(Route.leader(topic, partition), ApiKeys.LIST_OFFSETS, (short) 7, latest(topic, partition, isolation));
        ListOffsetsResponseData r = (ListOffsetsResponseData) a.message();
        return r.topics().get(0).partitions().get(0).offset();
    }

    /** Until the coordinator has completed the transaction (state not Prepare*): a new request of
     *  the producer would get CONCURRENT_TRANSACTIONS meanwhile. */
    static void awaitComplete(Ctx c, String txn) throws IOException {
        long deadline = System.currentTimeMillis() + Ctx.AWAIT_MS;
        while (true) {
            Peer.Answer a = c.call(Route.txn(txn), ApiKeys.DESCRIBE_TRANSACTIONS, (short) 0, describe(txn));
            String state = a.json().path("transactionStates").path(0).path("transactionState").asText("");
            if (!state.startsWith("Prepare")) return;
            if (System.currentTimeMillis() > deadline) throw new Ctx.ScenarioFailure(txn + " stays in " + state);
            Ctx.sleep(20);
        }
    }

    /** Waits until the coordinator of `txn` serves it (FindCoordinator answers before the
     *  coordinator has loaded the id's __transaction_state partition; meanwhile Kafka answers
     *  NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS). */
    static void awaitTxnCoordinator(Ctx c, String txn) throws IOException {
        long deadline = System.currentTimeMillis() + Ctx.AWAIT_MS;
        while (true) {
            Peer.Answer a = c.call(Route.txn(txn), ApiKeys.DESCRIBE_TRANSACTIONS, (short) 0, describe(txn));
            short error = (short) a.json().path("transactionStates").path(0).path("errorCode").asInt();
            if (!GroupScenarios.coordinatorBusy(error)) break;
            if (System.currentTimeMillis() > deadline) throw new Ctx.ScenarioFailure("transaction coordinator of " + txn + ": error " + error);
            Ctx.sleep(50);
        }
        // A Kafka broker fetches its first block of producer ids from the controller when it is
        // first asked for one, and answers COORDINATOR_LOAD_IN_PROGRESS meanwhile: the
        // coordinator's node is asked for an idempotent producer id first (not compared), as a
        // client would have retried.
        int node = Route.txn(txn).node(c);
        InitProducerIdRequestData idempotent = new InitProducerIdRequestData().setTransactionalId(null)
            .setTransactionTimeoutMs(60_000).setProducerId(-1).setProducerEpoch((short) -1);
        while (true) {
            short error = ((InitProducerIdResponseData) c.call(Route.node(node), ApiKeys.INIT_PRODUCER_ID, (short) 4, idempotent).message()).errorCode();
            if (error != 14) return;
            if (System.currentTimeMillis() > deadline) throw new Ctx.ScenarioFailure("producer ids on node " + node + ": error " + error);
            Ctx.sleep(50);
        }
    }

    /** Sorts the partition numbers of a DescribeTransactions answer: Kafka keeps a
     *  transaction's partitions in a hash set and lists them in its order. */
    static Observation sorted(Observation o) {
        for (JsonNode state : o.json().path("transactionStates")) {
            for (JsonNode topic : state.path("topics")) {
                if (topic instanceof ObjectNode t && t.get("partitions") instanceof ArrayNode ps) {
                    List<Integer> xs = new ArrayList<>();
                    ps.forEach(x -> xs.add(x.asInt()));
                    xs.sort(null);
                    ArrayNode out = Json.F.arrayNode();
                    xs.forEach(out::add);
                    t.set("partitions", out);
                }
            }
        }
        return o;
    }

    // ---- scenarios -----------------------------------------------------------------------

    static void add(List<Scenario> s) {
        addInitProducerId(s);
        addAddPartitions(s);
        addAddOffsets(s);
        addTxnOffsetCommit(s);
        addEndTxn(s);
        addWholeTransactions(s);
        addDescribeAndList(s);
        addWriteTxnMarkers(s);
    }

    static void addInitProducerId(List<Scenario> s) {
        s.add(Scenario.of("txn.init-producer-id.idempotent", ApiKeys.INIT_PRODUCER_ID, 0, 5, c -> {
            DataScenarios.initProducerId(c, null); // Kafka has producer ids once the controller gave it a block
            c.observe("first", Route.ANY, ApiKeys.INIT_PRODUCER_ID, init(c.version, null, TIMEOUT_MS, -1, (short) -1));
            c.observe("second", Route.ANY, ApiKeys.INIT_PRODUCER_ID, init(c.version, null, TIMEOUT_MS, -1, (short) -1));
            c.observe("zero-timeout", Route.ANY, ApiKeys.INIT_PRODUCER_ID, init(c.version, null, 0, -1, (short) -1));
        }));
        s.add(Scenario.of("txn.init-producer-id.transactional", ApiKeys.INIT_PRODUCER_ID, 0, 5, c -> {
            String txn = c.name("txn");
            awaitTxnCoordinator(c, txn);
            c.observe("first", Route.txn(txn), ApiKeys.INIT_PRODUCER_ID, init(c.version, txn, TIMEOUT_MS, -1, (short) -1));
            c.observe("again-bumps-epoch", Route.txn(txn), ApiKeys.INIT_PRODUCER_ID, init(c.version, txn, TIMEOUT_MS, -1, (short) -1));
            sorted(c.observe("describe", Route.txn(txn), ApiKeys.DESCRIBE_TRANSACTIONS, (short) 0, describe(txn)));
        }));
        s.add(Scenario.of("txn.init-producer-id.invalid-timeout", ApiKeys.INIT_PRODUCER_ID, 0, 5, c -> {
            String txn = c.name("txn");
            awaitTxnCoordinator(c, txn);
            // transaction.max.timeout.ms is 900000 by default on both.
            c.observe("above-max", Route.txn(txn), ApiKeys.INIT_PRODUCER_ID, init(c.version, txn, 900_001, -1, (short) -1));
            c.observe("max", Route.txn(txn), ApiKeys.INIT_PRODUCER_ID, init(c.version, txn, 900_000, -1, (short) -1));
            c.observe("zero", Route.txn(txn), ApiKeys.INIT_PRODUCER_ID, init(c.version, txn, 0, -1, (short) -1));
            c.observe("negative", Route.txn(txn), ApiKeys.INIT_PRODUCER_ID, init(c.version, txn, -1, -1, (short) -1));
        }));
        s.add(Scenario.of("txn.init-producer-id.empty-transactional-id", ApiKeys.INIT_PRODUCER_ID, 0, 5, c ->
            c.observe("init", Route.ANY, ApiKeys.INIT_PRODUCER_ID, init(c.version, "", TIMEOUT_MS, -1, (short) -1))));
        // v3+ (KIP-360): the producer names the id and epoch it has, to resume after an error.
        s.add(Scenario.of("txn.init-producer-id.resume", ApiKeys.INIT_PRODUCER_ID, 3, 5, c -> {
            String txn = c.name("txn");
            Pid p = initPid(c, txn);
            Route r = Route.txn(txn);
            c.observe("current-epoch", r, ApiKeys.INIT_PRODUCER_ID, init(c.version, txn, TIMEOUT_MS, p.id, p.epoch));
            c.observe("stale-epoch", r, ApiKeys.INIT_PRODUCER_ID, init(c.version, txn, TIMEOUT_MS, p.id, p.epoch));
            c.observe("future-epoch", r, ApiKeys.INIT_PRODUCER_ID, init(c.version, txn, TIMEOUT_MS, p.id, (short) (p.epoch + 5)));
            c.observe("other-producer-id", r, ApiKeys.INIT_PRODUCER_ID, init(c.version, txn, TIMEOUT_MS, p.id + 1000, (short) 0));
            c.observe("producer-id-without-epoch", r, ApiKeys.INIT_PRODUCER_ID, init(c.version, txn, TIMEOUT_MS, p.id, (short) -1));
            c.observe("idempotent-with-producer-id", Route.ANY, ApiKeys.INIT_PRODUCER_ID, init(c.version, null, TIMEOUT_MS, p.id, (short) 0));
        }));
        // InitProducerId while a transaction is open: the coordinator aborts it (fencing the old
        // epoch) and answers CONCURRENT_TRANSACTIONS until the abort completes.
        s.add(Scenario.of("txn.init-producer-id.ongoing", ApiKeys.INIT_PRODUCER_ID, 0, 5, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            String txn = c.name("txn");
            Pid p = initPid(c, txn);
            begin(c, txn, p, t, 0);
            produceTv1(c, txn, t, 0, p, 0, 2);
            Route r = Route.txn(txn);
            c.observe("while-ongoing", r, ApiKeys.INIT_PRODUCER_ID, init(c.version, txn, TIMEOUT_MS, -1, (short) -1));
            awaitComplete(c, txn);
            awaitStable(c, t, 0);
            c.observe("after-abort", r, ApiKeys.INIT_PRODUCER_ID, init(c.version, txn, TIMEOUT_MS, -1, (short) -1));
            sorted(c.observe("describe", r, ApiKeys.DESCRIBE_TRANSACTIONS, (short) 0, describe(txn)));
            c.observe("read-committed", Route.leader(t, 0), ApiKeys.FETCH, (short) 12, fetch(c, t, 0, (byte) 1));
        }));
    }

    static void addAddPartitions(List<Scenario> s) {
        // The client's form (v0-3): add, add again, unknown topic and partition, describe.
        s.add(Scenario.of("txn.add-partitions.client", ApiKeys.ADD_PARTITIONS_TO_TXN, 0, 5, c -> {
            String t = c.topic();
            c.createTopic(t, 2);
            String txn = c.name("txn");
            Pid p = initPid(c, txn);
            Route r = Route.txn(txn);
            c.observe("add", r, ApiKeys.ADD_PARTITIONS_TO_TXN, addPartitions(c.version, txn, p.id, p.epoch, false, t, 0, 1));
            c.observe("add-again", r, ApiKeys.ADD_PARTITIONS_TO_TXN, addPartitions(c.version, txn, p.id, p.epoch, false, t, 0));
            sorted(c.observe("describe", r, ApiKeys.DESCRIBE_TRANSACTIONS, (short) 0, describe(txn)));
            c.observe("unknown-topic", r, ApiKeys.ADD_PARTITIONS_TO_TXN, addPartitions(c.version, txn, p.id, p.epoch, false, c.name("missing"), 0));
            c.observe("unknown-partition", r, ApiKeys.ADD_PARTITIONS_TO_TXN, addPartitions(c.version, txn, p.id, p.epoch, false, t, 9));
            AddPartitionsToTxnRequestData mixed = addPartitions(c.version, txn, p.id, p.epoch, false, t, 1);
            AddPartitionsToTxnRequestData.AddPartitionsToTxnTopic missing = new AddPartitionsToTxnRequestData.AddPartitionsToTxnTopic()
                .setName(c.name("missing"));
            missing.partitions().add(0);
            if (c.version <= 3) mixed.v3AndBelowTopics().add(missing);
            else mixed.transactions().iterator().next().topics().add(missing);
            c.observe("known-and-unknown-topic", r, ApiKeys.ADD_PARTITIONS_TO_TXN, mixed);
            GroupScenarios.awaitGroupCoordinator(c, c.name("group")); // __consumer_offsets exists from here on
            c.observe("internal-topic", r, ApiKeys.ADD_PARTITIONS_TO_TXN, addPartitions(c.version, txn, p.id, p.epoch, false, "__consumer_offsets", 0));
        }));
        s.add(Scenario.of("txn.add-partitions.errors", ApiKeys.ADD_PARTITIONS_TO_TXN, 0, 5, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            String txn = c.name("txn");
            Pid p = initPid(c, txn);
            Route r = Route.txn(txn);
            c.observe("unknown-producer-id", r, ApiKeys.ADD_PARTITIONS_TO_TXN, addPartitions(c.version, txn, p.id + 1000, p.epoch, false, t, 0));
            c.observe("epoch-ahead", r, ApiKeys.ADD_PARTITIONS_TO_TXN, addPartitions(c.version, txn, p.id, (short) (p.epoch + 1), false, t, 0));
            String unknown = c.name("unknown-txn");
            awaitTxnCoordinator(c, unknown);
            c.observe("unknown-transactional-id", Route.txn(unknown), ApiKeys.ADD_PARTITIONS_TO_TXN, addPartitions(c.version, unknown, p.id, p.epoch, false, t, 0));
            // A new epoch fences the old one.
            initPid(c, txn);
            c.observe("fenced-epoch", r, ApiKeys.ADD_PARTITIONS_TO_TXN, addPartitions(c.version, txn, p.id, p.epoch, false, t, 0));
            c.observe("empty-topics", r, ApiKeys.ADD_PARTITIONS_TO_TXN, addPartitions(c.version, txn, p.id, (short) (p.epoch + 1), false, t));
        }));
        // The broker's batched form (v4+), sent by a client: two transactions in one request,
        // one only verifying (as a partition leader does before appending transactional data).
        s.add(Scenario.of("txn.add-partitions.batched", ApiKeys.ADD_PARTITIONS_TO_TXN, 4, 5, c -> {
            String t = c.topic();
            c.createTopic(t, 2);
            String a = c.name("a"), b = c.name("b");
            Pid pa = initPid(c, a);
            Pid pb = initPid(c, b);
            begin(c, a, pa, t, 0);
            AddPartitionsToTxnRequestData verify = new AddPartitionsToTxnRequestData();
            verify.transactions().add(transaction(a, pa.id, pa.epoch, true, t, 0, 1));
            c.observe("verify-only", Route.txn(a), ApiKeys.ADD_PARTITIONS_TO_TXN, verify);
            AddPartitionsToTxnRequestData two = new AddPartitionsToTxnRequestData();
            two.transactions().add(transaction(a, pa.id, pa.epoch, false, t, 1));
            two.transactions().add(transaction(b, pb.id, pb.epoch, false, t, 0));
            // One node: both transactional ids have their coordinator there.
            c.observe("two-transactions", Route.txn(a), ApiKeys.ADD_PARTITIONS_TO_TXN, two);
            c.observe("verify-after-add", Route.txn(a), ApiKeys.ADD_PARTITIONS_TO_TXN, verify.duplicate());
            sorted(c.observe("describe", Route.txn(a), ApiKeys.DESCRIBE_TRANSACTIONS, (short) 0, describe(a, b)));
            AddPartitionsToTxnRequestData wrong = new AddPartitionsToTxnRequestData();
            wrong.transactions().add(transaction(a, pa.id + 1000, pa.epoch, true, t, 0));
            c.observe("verify-unknown-producer", Route.txn(a), ApiKeys.ADD_PARTITIONS_TO_TXN, wrong);
            // Not sent: Kafka 4.4 never answers an AddPartitionsToTxn v4+ without transactions
            // (the client's read times out after 30 s); Samsa answers NONE with no results.
        }));
    }

    static void addAddOffsets(List<Scenario> s) {
        s.add(Scenario.of("txn.add-offsets", ApiKeys.ADD_OFFSETS_TO_TXN, 0, 4, c -> {
            String txn = c.name("txn");
            String g = c.name("group");
            Pid p = initPid(c, txn);
            Route r = Route.txn(txn);
            c.observe("add", r, ApiKeys.ADD_OFFSETS_TO_TXN, addOffsets(txn, p.id, p.epoch, g));
            c.observe("add-again", r, ApiKeys.ADD_OFFSETS_TO_TXN, addOffsets(txn, p.id, p.epoch, g));
            sorted(c.observe("describe", r, ApiKeys.DESCRIBE_TRANSACTIONS, (short) 0, describe(txn)))
                .mask("which __consumer_offsets partition a group maps to is the broker's hash of the group id "
                    + "(Kafka: Java String.hashCode; the partition number itself is no client contract)", "/transactionStates/*/topics/*/partitions");
            c.observe("unknown-producer-id", r, ApiKeys.ADD_OFFSETS_TO_TXN, addOffsets(txn, p.id + 1000, p.epoch, g));
            c.observe("epoch-ahead", r, ApiKeys.ADD_OFFSETS_TO_TXN, addOffsets(txn, p.id, (short) (p.epoch + 1), g));
            c.observe("empty-group-id", r, ApiKeys.ADD_OFFSETS_TO_TXN, addOffsets(txn, p.id, p.epoch, ""));
            String unknown = c.name("unknown-txn");
            awaitTxnCoordinator(c, unknown);
            c.observe("unknown-transactional-id", Route.txn(unknown), ApiKeys.ADD_OFFSETS_TO_TXN, addOffsets(unknown, p.id, p.epoch, g));
        }));
    }

    static void addTxnOffsetCommit(List<Scenario> s) {
        // Without AddOffsetsToTxn first: transaction version 1 requires it; from TxnOffsetCommit
        // v5 (transaction version 2) the commit adds the group to the transaction itself.
        s.add(Scenario.of("txn.txn-offset-commit.before-add-offsets", ApiKeys.TXN_OFFSET_COMMIT, 0, 6, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            String txn = c.name("txn");
            String g = c.name("group");
            Pid p = initPid(c, txn);
            GroupScenarios.awaitGroupCoordinator(c, g);
            c.observe("commit", Route.group(g), ApiKeys.TXN_OFFSET_COMMIT, txnCommit(c, c.version, txn, g, p.id, p.epoch, t, 10, 0));
            sorted(c.observe("describe", Route.txn(txn), ApiKeys.DESCRIBE_TRANSACTIONS, (short) 0, describe(txn)))
                .mask("which __consumer_offsets partition a group maps to is the broker's hash of the group id", "/transactionStates/*/topics/*/partitions");
            c.observe("fetch", Route.group(g), ApiKeys.OFFSET_FETCH, (short) 7, GroupScenarios.fetchOffsets(c, (short) 7, g, t, 0));
        }));
        s.add(Scenario.of("txn.txn-offset-commit.after-add-offsets", ApiKeys.TXN_OFFSET_COMMIT, 0, 6, c -> {
            String t = c.topic();
            c.createTopic(t, 2);
            String txn = c.name("txn");
            String g = c.name("group");
            Pid p = initPid(c, txn);
            c.call(Route.txn(txn), ApiKeys.ADD_OFFSETS_TO_TXN, (short) 3, addOffsets(txn, p.id, p.epoch, g));
            Route r = Route.group(g);
            c.observe("commit", r, ApiKeys.TXN_OFFSET_COMMIT, txnCommit(c, c.version, txn, g, p.id, p.epoch, t, 10, 0, 1));
            c.observe("fetch-require-stable", r, ApiKeys.OFFSET_FETCH, (short) 7, GroupScenarios.fetchOffsets(c, (short) 7, g, t, 0, 1).setRequireStable(true));
            c.observe("fetch-pending", r, ApiKeys.OFFSET_FETCH, (short) 7, GroupScenarios.fetchOffsets(c, (short) 7, g, t, 0, 1));
            c.observe("unknown-topic", r, ApiKeys.TXN_OFFSET_COMMIT, txnCommit(c, c.version, txn, g, p.id, p.epoch, c.name("missing"), 1, 0));
            c.observe("wrong-epoch", r, ApiKeys.TXN_OFFSET_COMMIT, txnCommit(c, c.version, txn, g, p.id, (short) (p.epoch + 1), t, 11, 0));
            c.observe("unknown-producer-id", r, ApiKeys.TXN_OFFSET_COMMIT, txnCommit(c, c.version, txn, g, p.id + 1000, p.epoch, t, 12, 0));
            c.observe("end-commit", Route.txn(txn), ApiKeys.END_TXN, (short) 3, endTxn(txn, p.id, p.epoch, true));
            awaitComplete(c, txn);
            long deadline = System.currentTimeMillis() + Ctx.AWAIT_MS;
            while (System.currentTimeMillis() < deadline) {
                Peer.Answer a = c.call(r, ApiKeys.OFFSET_FETCH, (short) 7, GroupScenarios.fetchOffsets(c, (short) 7, g, t, 0, 1).setRequireStable(true));
                if (!a.json().toString().contains("\"errorCode\":88")) break;
                Ctx.sleep(20);
            }
            c.observe("fetch-after-commit", r, ApiKeys.OFFSET_FETCH, (short) 7, GroupScenarios.fetchOffsets(c, (short) 7, g, t, 0, 1).setRequireStable(true));
        }));
        // v3+: the member's generation and id are checked against a live group.
        s.add(Scenario.of("txn.txn-offset-commit.member", ApiKeys.TXN_OFFSET_COMMIT, 3, 6, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            String txn = c.name("txn");
            String g = c.name("group");
            GroupScenarios.Member m = GroupScenarios.joinAndSync(c, g, null, GroupScenarios.subscription(t), GroupScenarios.assignment(t, 0));
            Pid p = initPid(c, txn);
            c.call(Route.txn(txn), ApiKeys.ADD_OFFSETS_TO_TXN, (short) 3, addOffsets(txn, p.id, p.epoch, g));
            Route r = Route.group(g);
            c.observe("member", r, ApiKeys.TXN_OFFSET_COMMIT, txnCommit(c, c.version, txn, g, p.id, p.epoch, t, 1, 0)
                .setGenerationIdOrMemberEpoch(m.generation()).setMemberId(m.id()));
            c.observe("wrong-generation", r, ApiKeys.TXN_OFFSET_COMMIT, txnCommit(c, c.version, txn, g, p.id, p.epoch, t, 2, 0)
                .setGenerationIdOrMemberEpoch(m.generation() + 1).setMemberId(m.id()));
            c.observe("unknown-member", r, ApiKeys.TXN_OFFSET_COMMIT, txnCommit(c, c.version, txn, g, p.id, p.epoch, t, 3, 0)
                .setGenerationIdOrMemberEpoch(m.generation()).setMemberId(m.id() + "-other"));
            c.observe("unknown-instance-id", r, ApiKeys.TXN_OFFSET_COMMIT, txnCommit(c, c.version, txn, g, p.id, p.epoch, t, 4, 0)
                .setGenerationIdOrMemberEpoch(m.generation()).setMemberId(m.id()).setGroupInstanceId(c.name("instance")));
            c.observe("no-member-info", r, ApiKeys.TXN_OFFSET_COMMIT, txnCommit(c, c.version, txn, g, p.id, p.epoch, t, 5, 0));
        }));
    }

    static void addEndTxn(List<Scenario> s) {
        for (boolean commit : new boolean[] {true, false}) {
            String what = commit ? "commit" : "abort";
            // A transaction of transaction version 1 (AddPartitionsToTxn v3, Produce v11) ended
            // at each EndTxn version; v5 asks for the transaction version 2 ending (epoch bump).
            s.add(Scenario.of("txn.end-txn." + what, ApiKeys.END_TXN, 0, 5, c -> {
                String t = c.topic();
                c.createTopic(t, 1);
                String txn = c.name("txn");
                Pid p = initPid(c, txn);
                begin(c, txn, p, t, 0);
                c.observe("produce", Route.leader(t, 0), ApiKeys.PRODUCE, (short) 11, produce(c, (short) 11, txn, t, 0, p.id, p.epoch, 0, 2));
                c.observe("end", Route.txn(txn), ApiKeys.END_TXN, endTxn(txn, p.id, p.epoch, commit));
                awaitComplete(c, txn);
                c.observe("end-again", Route.txn(txn), ApiKeys.END_TXN, endTxn(txn, p.id, p.epoch, commit));
                c.observe("end-the-other-way", Route.txn(txn), ApiKeys.END_TXN, endTxn(txn, p.id, p.epoch, !commit));
                awaitComplete(c, txn);
                sorted(c.observe("describe", Route.txn(txn), ApiKeys.DESCRIBE_TRANSACTIONS, (short) 0, describe(txn)));
            }));
        }
        s.add(Scenario.of("txn.end-txn.no-partitions", ApiKeys.END_TXN, 0, 5, c -> {
            String txn = c.name("txn");
            Pid p = initPid(c, txn);
            c.observe("commit", Route.txn(txn), ApiKeys.END_TXN, endTxn(txn, p.id, p.epoch, true));
            c.observe("abort", Route.txn(txn), ApiKeys.END_TXN, endTxn(txn, p.id, p.epoch, false));
            awaitComplete(c, txn);
            sorted(c.observe("describe", Route.txn(txn), ApiKeys.DESCRIBE_TRANSACTIONS, (short) 0, describe(txn)));
        }));
        s.add(Scenario.of("txn.end-txn.errors", ApiKeys.END_TXN, 0, 5, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            String txn = c.name("txn");
            Pid p = initPid(c, txn);
            begin(c, txn, p, t, 0);
            Route r = Route.txn(txn);
            c.observe("epoch-ahead", r, ApiKeys.END_TXN, endTxn(txn, p.id, (short) (p.epoch + 1), true));
            c.observe("epoch-behind", r, ApiKeys.END_TXN, endTxn(txn, p.id, (short) (p.epoch - 1), true));
            c.observe("unknown-producer-id", r, ApiKeys.END_TXN, endTxn(txn, p.id + 1000, p.epoch, true));
            String unknown = c.name("unknown-txn");
            awaitTxnCoordinator(c, unknown);
            c.observe("unknown-transactional-id", Route.txn(unknown), ApiKeys.END_TXN, endTxn(unknown, p.id, p.epoch, true));
            sorted(c.observe("describe", r, ApiKeys.DESCRIBE_TRANSACTIONS, (short) 0, describe(txn)));
        }));
    }

    /** A whole transaction as a client of transaction version 1 runs it; read back. */
    static void wholeTv1(Ctx c, boolean commit) throws IOException {
        String t = c.topic();
        c.createTopic(t, 1);
        String txn = c.name("txn");
        c.produce(t, 0, Records.batch(1));
        Pid p = initPid(c, txn);
        Route r = Route.txn(txn);
        c.observe("add-partitions", r, ApiKeys.ADD_PARTITIONS_TO_TXN, (short) 3, addPartitions((short) 3, txn, p.id, p.epoch, false, t, 0));
        c.observe("produce", Route.leader(t, 0), ApiKeys.PRODUCE, (short) 11, produce(c, (short) 11, txn, t, 0, p.id, p.epoch, 0, 3));
        c.observe("last-stable-offset-while-open", Route.leader(t, 0), ApiKeys.LIST_OFFSETS, (short) 7, latest(t, 0, (byte) 1));
        c.observe("fetch-read-committed-while-open", Route.leader(t, 0), ApiKeys.FETCH, (short) 12, fetch(c, t, 0, (byte) 1));
        c.observe("end", r, ApiKeys.END_TXN, endTxn(txn, p.id, p.epoch, commit));
        awaitComplete(c, txn);
        awaitStable(c, t, 0);
        readBack(c, t);
        sorted(c.observe("describe", r, ApiKeys.DESCRIBE_TRANSACTIONS, (short) 0, describe(txn)));
        // A second transaction with the same epoch (transaction version 1 keeps it).
        c.observe("second-add-partitions", r, ApiKeys.ADD_PARTITIONS_TO_TXN, (short) 3, addPartitions((short) 3, txn, p.id, p.epoch, false, t, 0));
        c.observe("second-produce", Route.leader(t, 0), ApiKeys.PRODUCE, (short) 11, produce(c, (short) 11, txn, t, 0, p.id, p.epoch, 3, 1));
        c.observe("second-end", r, ApiKeys.END_TXN, endTxn(txn, p.id, p.epoch, commit));
    }

    static void readBack(Ctx c, String t) throws IOException {
        c.observe("high-watermark", Route.leader(t, 0), ApiKeys.LIST_OFFSETS, (short) 7, latest(t, 0, (byte) 0));
        c.observe("last-stable-offset", Route.leader(t, 0), ApiKeys.LIST_OFFSETS, (short) 7, latest(t, 0, (byte) 1));
        c.observe("fetch-read-uncommitted", Route.leader(t, 0), ApiKeys.FETCH, (short) 12, fetch(c, t, 0, (byte) 0));
        c.observe("fetch-read-committed", Route.leader(t, 0), ApiKeys.FETCH, (short) 12, fetch(c, t, 0, (byte) 1));
    }

    static void addWholeTransactions(List<Scenario> s) {
        // Transaction version 1 clients: EndTxn v0-4 (the scenario's API), AddPartitionsToTxn v3,
        // Produce v11; one record before, three in the transaction, its marker, then read back.
        s.add(Scenario.of("txn.whole.tv1-commit", ApiKeys.END_TXN, 0, 4, c -> wholeTv1(c, true)));
        s.add(Scenario.of("txn.whole.tv1-abort", ApiKeys.END_TXN, 0, 4, c -> wholeTv1(c, false)));
        // A transaction version 2 client (Kafka's Java client when the cluster finalizes
        // transaction.version 2): no AddPartitionsToTxn, Produce v12 adds the partition, EndTxn v5
        // bumps the epoch and answers it; the next transaction uses the new epoch.
        s.add(Scenario.of("txn.whole.tv2", ApiKeys.END_TXN, 5, 5, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            String txn = c.name("txn");
            c.produce(t, 0, Records.batch(1));
            Pid p = initPid(c, txn);
            Route r = Route.txn(txn);
            c.observe("produce-without-add-partitions", Route.leader(t, 0), ApiKeys.PRODUCE, (short) 12, produce(c, (short) 12, txn, t, 0, p.id, p.epoch, 0, 3));
            sorted(c.observe("describe-open", r, ApiKeys.DESCRIBE_TRANSACTIONS, (short) 0, describe(txn)));
            Observation end = c.observe("end-commit", r, ApiKeys.END_TXN, endTxn(txn, p.id, p.epoch, true));
            short next = (short) end.json().path("producerEpoch").asInt(p.epoch);
            if (next < 0) next = p.epoch;
            awaitComplete(c, txn);
            awaitStable(c, t, 0);
            readBack(c, t);
            sorted(c.observe("describe", r, ApiKeys.DESCRIBE_TRANSACTIONS, (short) 0, describe(txn)));
            c.observe("old-epoch-produce", Route.leader(t, 0), ApiKeys.PRODUCE, (short) 12, produce(c, (short) 12, txn, t, 0, p.id, p.epoch, 3, 1));
            c.observe("next-epoch-produce", Route.leader(t, 0), ApiKeys.PRODUCE, (short) 12, produce(c, (short) 12, txn, t, 0, p.id, next, 0, 1));
            c.observe("next-end-abort", r, ApiKeys.END_TXN, endTxn(txn, p.id, next, false));
            awaitComplete(c, txn);
            awaitStable(c, t, 0);
            c.observe("fetch-read-committed-after-abort", Route.leader(t, 0), ApiKeys.FETCH, (short) 12, fetch(c, t, 0, (byte) 1));
        }));
        // Transaction version 1 steps ended with EndTxn v5 (the version a transaction version 2
        // client sends) and the reverse: Produce v12 after AddPartitionsToTxn v3.
        s.add(Scenario.of("txn.whole.mixed", ApiKeys.END_TXN, 5, 5, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            String txn = c.name("txn");
            Pid p = initPid(c, txn);
            Route r = Route.txn(txn);
            c.observe("add-partitions-v3", r, ApiKeys.ADD_PARTITIONS_TO_TXN, (short) 3, addPartitions((short) 3, txn, p.id, p.epoch, false, t, 0));
            c.observe("produce-v12", Route.leader(t, 0), ApiKeys.PRODUCE, (short) 12, produce(c, (short) 12, txn, t, 0, p.id, p.epoch, 0, 2));
            c.observe("end-v5", r, ApiKeys.END_TXN, endTxn(txn, p.id, p.epoch, true));
            awaitComplete(c, txn);
            sorted(c.observe("describe", r, ApiKeys.DESCRIBE_TRANSACTIONS, (short) 0, describe(txn)));
        }));
    }

    static void addDescribeAndList(List<Scenario> s) {
        s.add(Scenario.of("txn.describe", ApiKeys.DESCRIBE_TRANSACTIONS, 0, 0, c -> {
            String t = c.topic();
            c.createTopic(t, 2);
            String empty = c.name("empty"), ongoing = c.name("ongoing"), complete = c.name("complete"), unknown = c.name("unknown");
            initPid(c, empty);
            Pid po = initPid(c, ongoing);
            begin(c, ongoing, po, t, 0, 1);
            Pid pc = initPid(c, complete);
            begin(c, complete, pc, t, 0);
            c.call(Route.txn(complete), ApiKeys.END_TXN, (short) 3, endTxn(complete, pc.id, pc.epoch, true));
            awaitComplete(c, complete);
            awaitTxnCoordinator(c, unknown);
            sorted(c.observe("empty", Route.txn(empty), ApiKeys.DESCRIBE_TRANSACTIONS, describe(empty)));
            sorted(c.observe("ongoing", Route.txn(ongoing), ApiKeys.DESCRIBE_TRANSACTIONS, describe(ongoing)));
            sorted(c.observe("complete", Route.txn(complete), ApiKeys.DESCRIBE_TRANSACTIONS, describe(complete)));
            sorted(c.observe("unknown", Route.txn(unknown), ApiKeys.DESCRIBE_TRANSACTIONS, describe(unknown)));
            sorted(c.observe("none", Route.ANY, ApiKeys.DESCRIBE_TRANSACTIONS, describe()));
            sorted(c.observe("empty-id", Route.ANY, ApiKeys.DESCRIBE_TRANSACTIONS, describe("")));
            c.call(Route.txn(ongoing), ApiKeys.END_TXN, (short) 3, endTxn(ongoing, po.id, po.epoch, false));
        }));
        // ListTransactions lists every transactional id the broker knows; each observation keeps
        // only this scenario's (see GroupScenarios.keepOwn).
        s.add(Scenario.of("txn.list", ApiKeys.LIST_TRANSACTIONS, 0, 2, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            String empty = c.name("empty"), ongoing = c.name("ongoing"), complete = c.name("complete");
            initPid(c, empty);
            Pid po = initPid(c, ongoing);
            begin(c, ongoing, po, t, 0);
            Pid pc = initPid(c, complete);
            begin(c, complete, pc, t, 0);
            c.call(Route.txn(complete), ApiKeys.END_TXN, (short) 3, endTxn(complete, pc.id, pc.epoch, false));
            awaitComplete(c, complete);
            String a = "transactionStates", f = "transactionalId";
            GroupScenarios.keepOwn(c, c.observeEveryNode("all", ApiKeys.LIST_TRANSACTIONS,
                new ListTransactionsRequestData(), a), a, f);
            GroupScenarios.keepOwn(c, c.observeEveryNode("ongoing", ApiKeys.LIST_TRANSACTIONS,
                new ListTransactionsRequestData().setStateFilters(List.of("Ongoing")), a), a, f);
            GroupScenarios.keepOwn(c, c.observeEveryNode("empty-and-complete-abort", ApiKeys.LIST_TRANSACTIONS,
                new ListTransactionsRequestData().setStateFilters(List.of("Empty", "CompleteAbort")), a), a, f);
            GroupScenarios.keepOwn(c, c.observeEveryNode("unknown-state", ApiKeys.LIST_TRANSACTIONS,
                new ListTransactionsRequestData().setStateFilters(List.of("NoSuchState", "Ongoing")), a), a, f);
            GroupScenarios.keepOwn(c, c.observeEveryNode("producer-id", ApiKeys.LIST_TRANSACTIONS,
                new ListTransactionsRequestData().setProducerIdFilters(List.of(po.id)), a), a, f);
            GroupScenarios.keepOwn(c, c.observeEveryNode("unknown-producer-id", ApiKeys.LIST_TRANSACTIONS,
                new ListTransactionsRequestData().setProducerIdFilters(List.of(po.id + 100_000)), a), a, f);
            if (c.version >= 1) {
                GroupScenarios.keepOwn(c, c.observeEveryNode("duration-0", ApiKeys.LIST_TRANSACTIONS,
                new ListTransactionsRequestData().setDurationFilter(0), a), a, f);
                GroupScenarios.keepOwn(c, c.observeEveryNode("duration-an-hour", ApiKeys.LIST_TRANSACTIONS,
                new ListTransactionsRequestData().setDurationFilter(3_600_000), a), a, f);
            }
            if (c.version >= 2) {
                GroupScenarios.keepOwn(c, c.observeEveryNode("pattern", ApiKeys.LIST_TRANSACTIONS,
                new ListTransactionsRequestData().setTransactionalIdPattern(".*-ongoing$"), a), a, f);
                GroupScenarios.keepOwn(c, c.observeEveryNode("bad-pattern", ApiKeys.LIST_TRANSACTIONS,
                new ListTransactionsRequestData().setTransactionalIdPattern("("), a), a, f);
            }
            c.call(Route.txn(ongoing), ApiKeys.END_TXN, (short) 3, endTxn(ongoing, po.id, po.epoch, false));
        }));
    }

    static void addWriteTxnMarkers(List<Scenario> s) {
        // An inter-broker request (the coordinator writes markers to partition leaders), sent by
        // a client; neither broker runs an authorizer here.
        s.add(Scenario.of("txn.write-txn-markers", ApiKeys.WRITE_TXN_MARKERS, 1, 2, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            String txn = c.name("txn");
            Pid p = initPid(c, txn);
            begin(c, txn, p, t, 0);
            produceTv1(c, txn, t, 0, p, 0, 2);
            WriteTxnMarkersRequestData req = new WriteTxnMarkersRequestData();
            WriteTxnMarkersRequestData.WritableTxnMarker m = new WriteTxnMarkersRequestData.WritableTxnMarker()
                .setProducerId(p.id).setProducerEpoch(p.epoch).setTransactionResult(true).setCoordinatorEpoch(0);
            m.topics().add(new WriteTxnMarkersRequestData.WritableTxnMarkerTopic().setName(t).setPartitionIndexes(List.of(0)));
            req.markers().add(m);
            c.observe("commit-marker", Route.leader(t, 0), ApiKeys.WRITE_TXN_MARKERS, req);
            c.observe("last-stable-offset", Route.leader(t, 0), ApiKeys.LIST_OFFSETS, (short) 7, latest(t, 0, (byte) 1));
            WriteTxnMarkersRequestData unknown = new WriteTxnMarkersRequestData();
            WriteTxnMarkersRequestData.WritableTxnMarker u = new WriteTxnMarkersRequestData.WritableTxnMarker()
                .setProducerId(p.id).setProducerEpoch(p.epoch).setTransactionResult(false).setCoordinatorEpoch(0);
            u.topics().add(new WriteTxnMarkersRequestData.WritableTxnMarkerTopic().setName(c.name("missing")).setPartitionIndexes(List.of(0)));
            unknown.markers().add(u);
            c.observe("unknown-topic", Route.leader(t, 0), ApiKeys.WRITE_TXN_MARKERS, unknown);
            sorted(c.observe("describe", Route.txn(txn), ApiKeys.DESCRIBE_TRANSACTIONS, (short) 0, describe(txn)));
            c.call(Route.txn(txn), ApiKeys.END_TXN, (short) 3, endTxn(txn, p.id, p.epoch, false));
        }));
    }
}
