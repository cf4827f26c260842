package differential;

import java.util.List;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.ApiVersionsRequestData;
import org.apache.kafka.common.message.ListTransactionsRequestData;
import org.apache.kafka.common.message.OffsetCommitRequestData;
import org.apache.kafka.common.message.OffsetFetchRequestData;
import org.apache.kafka.common.protocol.ApiKeys;

/**
 * The fields of versions newer than kafka-protocol 0.18 knows (Samsa serves them through
 * protocol/src/newer): topic ids in OffsetCommit and OffsetFetch v10, ApiVersions v5's cluster
 * and node (KIP-1242), ListTransactions v2's pattern (KIP-1152). The older fields of these
 * APIs are the other files' scenarios, which run at the new versions too where their ranges
 * reach them.
 */
final class VersionScenarios {
    private VersionScenarios() {}

    /** An id no topic has, the same for both peers. */
    static final Uuid UNKNOWN = Uuid.fromString("c2Ftc2Etbm8tc3VjaC10bw");

    static void add(List<Scenario> s) {
        s.add(Scenario.of("versions.offset-commit.topic-ids", ApiKeys.OFFSET_COMMIT, 10, 10, c -> {
            String t = c.topic();
            Uuid id = c.createTopic(t, 2);
            String g = c.name("group");
            c.coordinator((byte) 0, g);
            OffsetCommitRequestData r = new OffsetCommitRequestData().setGroupId(g).setGenerationIdOrMemberEpoch(-1).setMemberId("");
            r.topics().add(topic(id, 10, 0, 1));
            r.topics().add(topic(UNKNOWN, 10, 0));
            r.topics().add(topic(id, 20, 7));
            c.observe("known-unknown-and-missing-partition", Route.group(g), ApiKeys.OFFSET_COMMIT, r);
            c.observe("fetch-by-id", Route.group(g), ApiKeys.OFFSET_FETCH, (short) 10, fetch(g, id, UNKNOWN));
            OffsetFetchRequestData all = new OffsetFetchRequestData().setRequireStable(false);
            all.groups().add(new OffsetFetchRequestData.OffsetFetchRequestGroup().setGroupId(g).setTopics(null));
            c.observe("fetch-all", Route.group(g), ApiKeys.OFFSET_FETCH, (short) 10, all);
            c.observe("fetch-v9-by-name", Route.group(g), ApiKeys.OFFSET_FETCH, (short) 9,
                GroupScenarios.fetchOffsets((short) 9, g, t, 0, 1));
        }));
        s.add(Scenario.of("versions.offset-fetch.topic-ids", ApiKeys.OFFSET_FETCH, 10, 10, c -> {
            String t = c.topic();
            Uuid id = c.createTopic(t, 1);
            String g = c.name("group");
            c.coordinator((byte) 0, g);
            c.observe("no-offsets", Route.group(g), ApiKeys.OFFSET_FETCH, fetch(g, id));
            c.observe("unknown-id-only", Route.group(g), ApiKeys.OFFSET_FETCH, fetch(g, UNKNOWN));
            c.call(Route.group(g), ApiKeys.OFFSET_COMMIT, (short) 9,
                GroupScenarios.commit((short) 9, g, -1, "", t, 5, "m", 0));
            c.observe("committed-by-name-fetched-by-id", Route.group(g), ApiKeys.OFFSET_FETCH, fetch(g, id, UNKNOWN));
            c.observe("unknown-group", Route.group(c.name("nobody")), ApiKeys.OFFSET_FETCH, fetch(c.name("nobody"), id));
        }));
        s.add(Scenario.of("versions.api-versions.addressed", ApiKeys.API_VERSIONS, 5, 5, c -> {
            ApiVersionsRequestData r = new ApiVersionsRequestData().setClientSoftwareName("samsa-differential")
                .setClientSoftwareVersion("1.0");
            c.observe("no-cluster-named", Route.ANY, ApiKeys.API_VERSIONS, r.duplicate().setClusterId(null).setNodeId(7));
            c.observe("another-cluster", Route.ANY, ApiKeys.API_VERSIONS, r.duplicate().setClusterId("bm90LXRoaXMtY2x1c3Rlcg").setNodeId(1));
        }));
        s.add(Scenario.of("versions.list-transactions.pattern", ApiKeys.LIST_TRANSACTIONS, 2, 2, c -> {
            c.observe("matches-nothing", Route.ANY, ApiKeys.LIST_TRANSACTIONS,
                new ListTransactionsRequestData().setTransactionalIdPattern(c.name("none") + ".*"));
            c.observe("empty-pattern", Route.ANY, ApiKeys.LIST_TRANSACTIONS,
                new ListTransactionsRequestData().setTransactionalIdPattern("").setStateFilters(List.of("Bogus")));
            c.observe("invalid", Route.ANY, ApiKeys.LIST_TRANSACTIONS,
                new ListTransactionsRequestData().setTransactionalIdPattern("(unclosed"));
        }));
    }

    static OffsetCommitRequestData.OffsetCommitRequestTopic topic(Uuid id, long offset, int... partitions) {
        OffsetCommitRequestData.OffsetCommitRequestTopic t = new OffsetCommitRequestData.OffsetCommitRequestTopic().setTopicId(id);
        for (int p : partitions) {
            t.partitions().add(new OffsetCommitRequestData.OffsetCommitRequestPartition().setPartitionIndex(p)
                .setCommittedOffset(offset + p).setCommittedMetadata("m"));
        }
        return t;
    }

    static OffsetFetchRequestData fetch(String group, Uuid... ids) {
        OffsetFetchRequestData.OffsetFetchRequestGroup g = new OffsetFetchRequestData.OffsetFetchRequestGroup().setGroupId(group);
        for (Uuid id : ids) {
            g.topics().add(new OffsetFetchRequestData.OffsetFetchRequestTopics().setTopicId(id).setPartitionIndexes(List.of(0, 1)));
        }
        OffsetFetchRequestData r = new OffsetFetchRequestData();
        r.groups().add(g);
        return r;
    }
}
