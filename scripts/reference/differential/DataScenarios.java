package differential;

import java.util.List;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.FetchRequestData;
import org.apache.kafka.common.message.InitProducerIdRequestData;
import org.apache.kafka.common.message.InitProducerIdResponseData;
import org.apache.kafka.common.message.ListOffsetsRequestData;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.record.internal.MemoryRecords;

/** Produce, Fetch and ListOffsets: the data path, with good and bad input. */
final class DataScenarios {
    private DataScenarios() {}

    static ProduceRequestData produce(Ctx c, short v, String topic, int partition, MemoryRecords records, short acks) {
        ProduceRequestData req = new ProduceRequestData().setAcks(acks).setTimeoutMs(10_000);
        req.topicData().add(produceTopic(c, v, topic).setPartitionData(
            new java.util.ArrayList<>(List.of(new ProduceRequestData.PartitionProduceData().setIndex(partition).setRecords(records)))));
        return req;
    }

    static ProduceRequestData.TopicProduceData produceTopic(Ctx c, short v, String topic) {
        ProduceRequestData.TopicProduceData td = new ProduceRequestData.TopicProduceData();
        if (v >= 13) td.setTopicId(c.topicIds.getOrDefault(topic, Uuid.ZERO_UUID));
        else td.setName(topic);
        return td;
    }

    static FetchRequestData fetch(Ctx c, short v, String topic, int partition, long offset, int maxBytes) {
        FetchRequestData req = new FetchRequestData().setReplicaId(-1).setMaxWaitMs(0).setMinBytes(1)
            .setMaxBytes(1 << 20).setIsolationLevel((byte) 0).setSessionId(0).setSessionEpoch(-1);
        if (v >= 15) req.setReplicaId(-1);
        FetchRequestData.FetchTopic ft = new FetchRequestData.FetchTopic();
        if (v >= 13) ft.setTopicId(c.topicIds.getOrDefault(topic, Uuid.ZERO_UUID));
        else ft.setTopic(topic);
        ft.partitions().add(new FetchRequestData.FetchPartition().setPartition(partition).setFetchOffset(offset)
            .setPartitionMaxBytes(maxBytes).setCurrentLeaderEpoch(-1).setLogStartOffset(-1).setLastFetchedEpoch(-1));
        req.topics().add(ft);
        return req;
    }

    static ListOffsetsRequestData listOffsets(String topic, int partition, long... timestamps) {
        ListOffsetsRequestData req = new ListOffsetsRequestData().setReplicaId(-1);
        ListOffsetsRequestData.ListOffsetsTopic t = new ListOffsetsRequestData.ListOffsetsTopic().setName(topic);
        for (long ts : timestamps) {
            t.partitions().add(new ListOffsetsRequestData.ListOffsetsPartition().setPartitionIndex(partition).setTimestamp(ts).setCurrentLeaderEpoch(-1));
        }
        req.topics().add(t);
        return req;
    }

    static InitProducerIdResponseData initProducerId(Ctx c, String transactionalId) throws java.io.IOException {
        Route route = transactionalId == null ? Route.ANY : Route.txn(transactionalId);
        InitProducerIdRequestData req = new InitProducerIdRequestData().setTransactionalId(transactionalId)
            .setTransactionTimeoutMs(60_000).setProducerId(-1).setProducerEpoch((short) -1);
        long deadline = System.currentTimeMillis() + Ctx.AWAIT_MS;
        while (true) {
            InitProducerIdResponseData r = (InitProducerIdResponseData) c.call(route, ApiKeys.INIT_PRODUCER_ID, (short) 4, req).message();
            if (r.errorCode() == 0) return r;
            if (!Ctx.retriable(r.errorCode()) || System.currentTimeMillis() > deadline) {
                throw new Ctx.ScenarioFailure("InitProducerId: error " + r.errorCode());
            }
            Ctx.sleep(50);
        }
    }

    static void add(List<Scenario> s) {
        // ---- Produce ---------------------------------------------------------------------
        s.add(Scenario.of("produce.acks-all", ApiKeys.PRODUCE, 3, 13, c -> {
            String t = c.topic();
            c.createTopic(t, 2);
            c.observe("first", Route.leader(t, 0), ApiKeys.PRODUCE, produce(c, c.version, t, 0, Records.batch(3), (short) -1));
            c.observe("second", Route.leader(t, 0), ApiKeys.PRODUCE, produce(c, c.version, t, 0, Records.batch(2), (short) -1));
        }));
        s.add(Scenario.of("produce.acks-1", ApiKeys.PRODUCE, 3, 13, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            c.observe("produce", Route.leader(t, 0), ApiKeys.PRODUCE, produce(c, c.version, t, 0, Records.batch(3), (short) 1));
        }));
        s.add(Scenario.of("produce.two-partitions", ApiKeys.PRODUCE, 3, 13, c -> {
            String t = c.topic();
            c.createTopic(t, 2);
            ProduceRequestData req = produce(c, c.version, t, 0, Records.batch(3), (short) -1);
            req.topicData().iterator().next().partitionData().add(new ProduceRequestData.PartitionProduceData().setIndex(1).setRecords(Records.batch(2)));
            c.observe("produce", Route.leader(t, 0), ApiKeys.PRODUCE, req);
        }));
        s.add(Scenario.of("produce.unknown-topic", ApiKeys.PRODUCE, 3, 13, c ->
            c.observe("produce", Route.ANY, ApiKeys.PRODUCE, produce(c, c.version, c.name("missing"), 0, Records.batch(1), (short) -1))));
        s.add(Scenario.of("produce.unknown-partition", ApiKeys.PRODUCE, 3, 13, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            c.observe("produce", Route.leader(t, 0), ApiKeys.PRODUCE, produce(c, c.version, t, 7, Records.batch(1), (short) -1));
        }));
        s.add(Scenario.of("produce.internal-topic", ApiKeys.PRODUCE, 3, 12, c -> {
            c.coordinator((byte) 0, c.name("group")); // __consumer_offsets exists from here on
            c.observe("produce", Route.leader("__consumer_offsets", 0), ApiKeys.PRODUCE,
                produce(c, c.version, "__consumer_offsets", 0, Records.batch(1), (short) -1));
        }));
        s.add(Scenario.of("produce.corrupt-crc", ApiKeys.PRODUCE, 3, 13, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            c.observe("produce", Route.leader(t, 0), ApiKeys.PRODUCE, produce(c, c.version, t, 0, Records.corruptCrc(2), (short) -1));
        }));
        s.add(Scenario.of("produce.garbage", ApiKeys.PRODUCE, 3, 13, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            c.observe("produce", Route.leader(t, 0), ApiKeys.PRODUCE, produce(c, c.version, t, 0, Records.raw(new byte[70]), (short) -1));
        }));
        s.add(Scenario.of("produce.empty-records", ApiKeys.PRODUCE, 3, 13, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            c.observe("produce", Route.leader(t, 0), ApiKeys.PRODUCE, produce(c, c.version, t, 0, MemoryRecords.EMPTY, (short) -1));
        }));
        s.add(Scenario.of("produce.magic-1", ApiKeys.PRODUCE, 3, 13, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            c.observe("produce", Route.leader(t, 0), ApiKeys.PRODUCE, produce(c, c.version, t, 0, Records.legacy((byte) 1, 2), (short) -1));
        }));
        s.add(Scenario.of("produce.magic-0", ApiKeys.PRODUCE, 3, 13, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            c.observe("produce", Route.leader(t, 0), ApiKeys.PRODUCE, produce(c, c.version, t, 0, Records.legacy((byte) 0, 2), (short) -1));
        }));
        s.add(Scenario.of("produce.two-batches-in-one-set", ApiKeys.PRODUCE, 3, 13, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            c.observe("produce", Route.leader(t, 0), ApiKeys.PRODUCE, produce(c, c.version, t, 0, Records.twoBatches(), (short) -1));
        }));
        s.add(Scenario.of("produce.same-partition-twice", ApiKeys.PRODUCE, 3, 13, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            ProduceRequestData req = produce(c, c.version, t, 0, Records.batch(1), (short) -1);
            req.topicData().iterator().next().partitionData().add(new ProduceRequestData.PartitionProduceData().setIndex(0).setRecords(Records.batch(2)));
            c.observe("produce", Route.leader(t, 0), ApiKeys.PRODUCE, req);
        }));
        s.add(Scenario.of("produce.invalid-acks", ApiKeys.PRODUCE, 3, 13, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            c.observe("produce", Route.leader(t, 0), ApiKeys.PRODUCE, produce(c, c.version, t, 0, Records.batch(1), (short) 2));
        }));
        s.add(Scenario.of("produce.message-too-large", ApiKeys.PRODUCE, 3, 13, c -> {
            String t = c.topic();
            c.createTopic(t, 1, "max.message.bytes", "100");
            c.observe("produce", Route.leader(t, 0), ApiKeys.PRODUCE, produce(c, c.version, t, 0, Records.batch(10), (short) -1));
        }));
        s.add(Scenario.of("produce.compressed", ApiKeys.PRODUCE, 3, 13, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            for (String codec : new String[] {"gzip", "snappy", "lz4", "zstd"}) {
                c.observe(codec, Route.leader(t, 0), ApiKeys.PRODUCE, produce(c, c.version, t, 0, Records.compressed(codec, 3), (short) -1));
            }
        }));
        s.add(Scenario.of("produce.idempotent", ApiKeys.PRODUCE, 3, 13, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            InitProducerIdResponseData pid = initProducerId(c, null);
            Route leader = Route.leader(t, 0);
            c.observe("first", leader, ApiKeys.PRODUCE, produce(c, c.version, t, 0, Records.idempotent(pid.producerId(), pid.producerEpoch(), 0, 3), (short) -1));
            c.observe("duplicate", leader, ApiKeys.PRODUCE, produce(c, c.version, t, 0, Records.idempotent(pid.producerId(), pid.producerEpoch(), 0, 3), (short) -1));
            c.observe("gap", leader, ApiKeys.PRODUCE, produce(c, c.version, t, 0, Records.idempotent(pid.producerId(), pid.producerEpoch(), 7, 1), (short) -1));
            c.observe("next", leader, ApiKeys.PRODUCE, produce(c, c.version, t, 0, Records.idempotent(pid.producerId(), pid.producerEpoch(), 3, 1), (short) -1));
            c.observe("unknown-producer", leader, ApiKeys.PRODUCE, produce(c, c.version, t, 0, Records.idempotent(pid.producerId() + 1000, (short) 0, 5, 1), (short) -1));
        }));
        s.add(Scenario.of("produce.transactional-outside-transaction", ApiKeys.PRODUCE, 3, 13, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            InitProducerIdResponseData pid = initProducerId(c, c.name("txn"));
            c.observe("produce", Route.leader(t, 0), ApiKeys.PRODUCE,
                produce(c, c.version, t, 0, Records.transactional(pid.producerId(), pid.producerEpoch(), 0, 1), (short) -1)
                    .setTransactionalId(c.version >= 3 ? c.name("txn") : null));
        }));

        // ---- Fetch -----------------------------------------------------------------------
        s.add(Scenario.of("fetch.records", ApiKeys.FETCH, 4, 18, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            c.produce(t, 0, Records.batch(3));
            c.produce(t, 0, Records.batch(2));
            c.observe("from-0", Route.leader(t, 0), ApiKeys.FETCH, fetch(c, c.version, t, 0, 0, 1 << 20));
            c.observe("from-4", Route.leader(t, 0), ApiKeys.FETCH, fetch(c, c.version, t, 0, 4, 1 << 20));
            c.observe("at-end", Route.leader(t, 0), ApiKeys.FETCH, fetch(c, c.version, t, 0, 5, 1 << 20));
        }));
        s.add(Scenario.of("fetch.partition-max-bytes", ApiKeys.FETCH, 4, 18, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            c.produce(t, 0, Records.batch(3));
            c.produce(t, 0, Records.batch(3));
            c.observe("smaller-than-a-batch", Route.leader(t, 0), ApiKeys.FETCH, fetch(c, c.version, t, 0, 0, 10));
            c.observe("one-and-a-half-batches", Route.leader(t, 0), ApiKeys.FETCH, fetch(c, c.version, t, 0, 0, 120));
        }));
        s.add(Scenario.of("fetch.offset-out-of-range", ApiKeys.FETCH, 4, 18, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            c.produce(t, 0, Records.batch(3));
            c.observe("past-end", Route.leader(t, 0), ApiKeys.FETCH, fetch(c, c.version, t, 0, 100, 1 << 20));
            c.observe("negative", Route.leader(t, 0), ApiKeys.FETCH, fetch(c, c.version, t, 0, -5, 1 << 20));
        }));
        s.add(Scenario.of("fetch.unknown-topic", ApiKeys.FETCH, 4, 18, c ->
            c.observe("fetch", Route.ANY, ApiKeys.FETCH, fetch(c, c.version, c.name("missing"), 0, 0, 1 << 20))));
        s.add(Scenario.of("fetch.unknown-partition", ApiKeys.FETCH, 4, 18, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            c.observe("fetch", Route.leader(t, 0), ApiKeys.FETCH, fetch(c, c.version, t, 5, 0, 1 << 20));
        }));
        s.add(Scenario.of("fetch.last-fetched-epoch-ahead", ApiKeys.FETCH, 12, 18, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            c.produce(t, 0, Records.batch(3));
            FetchRequestData req = fetch(c, c.version, t, 0, 2, 1 << 20);
            req.topics().get(0).partitions().get(0).setLastFetchedEpoch(5).setCurrentLeaderEpoch(0);
            c.observe("fetch", Route.leader(t, 0), ApiKeys.FETCH, req);
        }));
        s.add(Scenario.of("fetch.fenced-leader-epoch", ApiKeys.FETCH, 9, 18, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            FetchRequestData ahead = fetch(c, c.version, t, 0, 0, 1 << 20);
            ahead.topics().get(0).partitions().get(0).setCurrentLeaderEpoch(9);
            c.observe("epoch-ahead", Route.leader(t, 0), ApiKeys.FETCH, ahead);
        }));
        s.add(Scenario.of("fetch.session", ApiKeys.FETCH, 7, 18, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            c.produce(t, 0, Records.batch(2));
            FetchRequestData full = fetch(c, c.version, t, 0, 0, 1 << 20).setSessionEpoch(0);
            Observation first = c.observe("new-session", Route.leader(t, 0), ApiKeys.FETCH, full);
            int session = first.json().path("sessionId").asInt();
            FetchRequestData incremental = new FetchRequestData().setReplicaId(-1).setMaxWaitMs(0).setMinBytes(1)
                .setMaxBytes(1 << 20).setSessionId(session).setSessionEpoch(1);
            c.observe("incremental-nothing-new", Route.leader(t, 0), ApiKeys.FETCH, incremental);
            c.observe("wrong-epoch", Route.leader(t, 0), ApiKeys.FETCH, incremental.duplicate().setSessionEpoch(7));
            c.observe("unknown-session", Route.leader(t, 0), ApiKeys.FETCH, incremental.duplicate().setSessionId(123456).setSessionEpoch(1));
        }));
        s.add(Scenario.of("fetch.read-committed", ApiKeys.FETCH, 4, 18, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            c.produce(t, 0, Records.batch(2));
            FetchRequestData req = fetch(c, c.version, t, 0, 0, 1 << 20).setIsolationLevel((byte) 1);
            c.observe("fetch", Route.leader(t, 0), ApiKeys.FETCH, req);
        }));

        // ---- ListOffsets -----------------------------------------------------------------
        s.add(Scenario.of("list-offsets.special-timestamps", ApiKeys.LIST_OFFSETS, 1, 11, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            c.produce(t, 0, Records.batch(3));
            c.produce(t, 0, Records.batch(2, Records.T0 + 50));
            Route leader = Route.leader(t, 0);
            c.observe("latest", leader, ApiKeys.LIST_OFFSETS, listOffsets(t, 0, -1));
            c.observe("earliest", leader, ApiKeys.LIST_OFFSETS, listOffsets(t, 0, -2));
            if (c.version >= 7) c.observe("max-timestamp", leader, ApiKeys.LIST_OFFSETS, listOffsets(t, 0, -3));
            if (c.version >= 8) c.observe("earliest-local", leader, ApiKeys.LIST_OFFSETS, listOffsets(t, 0, -4));
            if (c.version >= 9) c.observe("latest-tiered", leader, ApiKeys.LIST_OFFSETS, listOffsets(t, 0, -5));
            if (c.version >= 11) c.observe("earliest-pending-upload", leader, ApiKeys.LIST_OFFSETS, listOffsets(t, 0, -6));
            c.observe("unknown-negative", leader, ApiKeys.LIST_OFFSETS, listOffsets(t, 0, -9));
        }));
        s.add(Scenario.of("list-offsets.by-time", ApiKeys.LIST_OFFSETS, 1, 11, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            c.produce(t, 0, Records.batch(3));
            c.produce(t, 0, Records.batch(2, Records.T0 + 50));
            Route leader = Route.leader(t, 0);
            c.observe("before-all", leader, ApiKeys.LIST_OFFSETS, listOffsets(t, 0, 5));
            c.observe("exact", leader, ApiKeys.LIST_OFFSETS, listOffsets(t, 0, Records.T0 + 1));
            c.observe("between", leader, ApiKeys.LIST_OFFSETS, listOffsets(t, 0, Records.T0 + 10));
            c.observe("after-all", leader, ApiKeys.LIST_OFFSETS, listOffsets(t, 0, Records.T0 + 1000));
        }));
        s.add(Scenario.of("list-offsets.empty-topic", ApiKeys.LIST_OFFSETS, 1, 11, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            Route leader = Route.leader(t, 0);
            c.observe("latest", leader, ApiKeys.LIST_OFFSETS, listOffsets(t, 0, -1));
            c.observe("by-time", leader, ApiKeys.LIST_OFFSETS, listOffsets(t, 0, Records.T0));
            if (c.version >= 7) c.observe("max-timestamp", leader, ApiKeys.LIST_OFFSETS, listOffsets(t, 0, -3));
        }));
        s.add(Scenario.of("list-offsets.duplicate-partitions", ApiKeys.LIST_OFFSETS, 1, 11, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            c.observe("twice", Route.leader(t, 0), ApiKeys.LIST_OFFSETS, listOffsets(t, 0, -1, -2));
        }));
        s.add(Scenario.of("list-offsets.unknown", ApiKeys.LIST_OFFSETS, 1, 11, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            c.observe("unknown-topic", Route.ANY, ApiKeys.LIST_OFFSETS, listOffsets(c.name("missing"), 0, -1));
            c.observe("unknown-partition", Route.leader(t, 0), ApiKeys.LIST_OFFSETS, listOffsets(t, 3, -1));
        }));
        s.add(Scenario.of("list-offsets.leader-epoch", ApiKeys.LIST_OFFSETS, 4, 11, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            ListOffsetsRequestData ahead = listOffsets(t, 0, -1);
            ahead.topics().get(0).partitions().get(0).setCurrentLeaderEpoch(5);
            c.observe("ahead", Route.leader(t, 0), ApiKeys.LIST_OFFSETS, ahead);
            ListOffsetsRequestData current = listOffsets(t, 0, -1);
            current.topics().get(0).partitions().get(0).setCurrentLeaderEpoch(0);
            c.observe("current", Route.leader(t, 0), ApiKeys.LIST_OFFSETS, current);
        }));
    }
}
