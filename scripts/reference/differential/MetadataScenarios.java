package differential;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.ApiVersionsRequestData;
import org.apache.kafka.common.message.DescribeTopicPartitionsRequestData;
import org.apache.kafka.common.message.MetadataRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.ObjectSerializationCache;

/**
 * Metadata, ApiVersions and DescribeTopicPartitions: what a client learns of the cluster
 * before it does anything else, for known, missing, invalid and internal topics.
 */
final class MetadataScenarios {
    private MetadataScenarios() {}

    /** A Metadata request for `names`, with auto-creation where the version has the flag. */
    static MetadataRequestData metadata(short v, boolean autoCreate, String... names) {
        MetadataRequestData req = new MetadataRequestData();
        for (String n : names) req.topics().add(new MetadataRequestData.MetadataRequestTopic().setName(n));
        if (v >= 4) req.setAllowAutoTopicCreation(autoCreate);
        return req;
    }

    static ApiVersionsRequestData apiVersions(short v, String software, String softwareVersion) {
        ApiVersionsRequestData req = new ApiVersionsRequestData();
        if (v >= 3) req.setClientSoftwareName(software).setClientSoftwareVersion(softwareVersion);
        return req;
    }

    static DescribeTopicPartitionsRequestData describeTopicPartitions(int limit, String... names) {
        DescribeTopicPartitionsRequestData req = new DescribeTopicPartitionsRequestData().setResponsePartitionLimit(limit);
        for (String n : names) req.topics().add(new DescribeTopicPartitionsRequestData.TopicRequest().setName(n));
        return req;
    }

    /** A view of an answer computed here (a property of a value that itself legitimately differs). */
    static Observation derived(Ctx c, String label, Observation from, JsonNode view) {
        Observation o = new Observation(label, from.key, from.version, from.request,
            from.answer.ok() ? new Peer.Answer(from.answer.message(), view, null) : from.answer);
        c.observed.add(o);
        return o;
    }

    static void add(List<Scenario> s) {
        // ---- Metadata --------------------------------------------------------------------
        s.add(Scenario.of("metadata.topic", ApiKeys.METADATA, c -> {
            String t = c.topic();
            c.createTopic(t, 2);
            c.observe("by-name", Route.ANY, ApiKeys.METADATA, metadata(c.version, false, t));
        }));
        s.add(Scenario.of("metadata.several-topics", ApiKeys.METADATA, c -> {
            String a = c.name("a"), b = c.name("b");
            c.createTopic(a, 1);
            c.createTopic(b, 3, "cleanup.policy", "compact");
            c.observe("two", Route.ANY, ApiKeys.METADATA, metadata(c.version, false, a, b));
            c.observe("same-twice", Route.ANY, ApiKeys.METADATA, metadata(c.version, false, a, a));
            if (c.version >= 4) {
                c.observe("known-and-missing", Route.ANY, ApiKeys.METADATA, metadata(c.version, false, a, c.name("missing")));
            }
        }));
        s.add(Scenario.of("metadata.missing-topic", ApiKeys.METADATA, 4, Short.MAX_VALUE, c ->
            c.observe("no-auto-create", Route.ANY, ApiKeys.METADATA, metadata(c.version, false, c.name("missing")))));
        // v0-3 have no flag: they always ask for auto-creation, which test.properties enables.
        s.add(Scenario.of("metadata.auto-create", ApiKeys.METADATA, c -> {
            String t = c.topic();
            c.observe("first", Route.ANY, ApiKeys.METADATA, metadata(c.version, true, t));
            c.awaitTopic(t, 1);
            c.observe("created", Route.ANY, ApiKeys.METADATA, metadata(c.version, true, t));
        }));
        s.add(Scenario.of("metadata.invalid-name", ApiKeys.METADATA, c -> {
            String longName = "d-" + "x".repeat(248); // 250 characters: one past Kafka's limit
            c.observe("auto-create", Route.ANY, ApiKeys.METADATA, metadata(c.version, true, "bad name!"));
            c.observe("auto-create-dot", Route.ANY, ApiKeys.METADATA, metadata(c.version, true, ".."));
            c.observe("auto-create-too-long", Route.ANY, ApiKeys.METADATA, metadata(c.version, true, longName));
            if (c.version >= 4) {
                c.observe("no-auto-create", Route.ANY, ApiKeys.METADATA, metadata(c.version, false, "bad name!"));
            }
        }));
        s.add(Scenario.of("metadata.internal-topic", ApiKeys.METADATA, c -> {
            c.coordinator((byte) 0, c.name("g")); // __consumer_offsets exists from here on
            c.observe("consumer-offsets", Route.ANY, ApiKeys.METADATA, metadata(c.version, false, "__consumer_offsets"));
        }));
        s.add(Scenario.of("metadata.no-topics", ApiKeys.METADATA, 1, Short.MAX_VALUE, c ->
            c.observe("empty-list", Route.ANY, ApiKeys.METADATA, metadata(c.version, false))));
        s.add(Scenario.of("metadata.topic-id", ApiKeys.METADATA, 10, Short.MAX_VALUE, c -> {
            String t = c.topic();
            Uuid id = c.createTopic(t, 1);
            MetadataRequestData known = metadata(c.version, false);
            known.topics().add(new MetadataRequestData.MetadataRequestTopic().setTopicId(id).setName(null));
            c.observe("known-id", Route.ANY, ApiKeys.METADATA, known);
            MetadataRequestData unknown = metadata(c.version, false);
            unknown.topics().add(new MetadataRequestData.MetadataRequestTopic().setTopicId(Uuid.fromString("AAAAAAAAAAAAAAAAAAAAAQ")).setName(null));
            c.observe("unknown-id", Route.ANY, ApiKeys.METADATA, unknown);
            MetadataRequestData both = metadata(c.version, false);
            both.topics().add(new MetadataRequestData.MetadataRequestTopic().setTopicId(id).setName(t));
            c.observe("id-and-name", Route.ANY, ApiKeys.METADATA, both);
        }));
        s.add(Scenario.of("metadata.authorized-operations", ApiKeys.METADATA, 8, Short.MAX_VALUE, c -> {
            String t = c.topic();
            c.createTopic(t, 1);
            MetadataRequestData req = metadata(c.version, false, t).setIncludeTopicAuthorizedOperations(true);
            if (c.version <= 10) req.setIncludeClusterAuthorizedOperations(true);
            c.observe("topic-and-cluster", Route.ANY, ApiKeys.METADATA, req);
            c.observe("not-asked", Route.ANY, ApiKeys.METADATA, metadata(c.version, false, t));
        }));

        // ---- ApiVersions -----------------------------------------------------------------
        s.add(Scenario.of("api-versions.basic", ApiKeys.API_VERSIONS, c -> {
            Observation o = c.observe("versions", Route.ANY, ApiKeys.API_VERSIONS, apiVersions(c.version, "samsa-differential", "1.0"));
            o.mask("compared separately in the version table", "/apiKeys");
            o.mask("the offset of the metadata log at which the broker read its finalized features: it grows with every "
                + "metadata record, so it depends on timing; the observation finalized-features-epoch compares what it is", "/finalizedFeaturesEpoch");
            if (c.version >= 3) {
                // The ranges are for the version table; that each API is named once with
                // min <= max, and what kind of number the features epoch is, are compared here.
                ObjectNode view = Json.F.objectNode();
                JsonNode keys = o.json().path("apiKeys");
                List<Integer> ids = new ArrayList<>();
                boolean wellFormed = true;
                for (JsonNode k : keys) {
                    ids.add(k.path("apiKey").asInt());
                    if (k.path("minVersion").asInt() > k.path("maxVersion").asInt()) wellFormed = false;
                }
                view.put("everyApiKeyOnce", ids.stream().distinct().count() == ids.size());
                view.put("everyMinAtMostMax", wellFormed);
                long epoch = o.json().path("finalizedFeaturesEpoch").asLong(-1);
                view.put("finalizedFeaturesEpoch", epoch < 0 ? "" + epoch : "an offset >= 0");
                derived(c, "finalized-features-epoch", o, view);
            }
        }));
        s.add(Scenario.of("api-versions.client-software", ApiKeys.API_VERSIONS, 3, Short.MAX_VALUE, c -> {
            c.observe("dotted-name", Route.ANY, ApiKeys.API_VERSIONS, apiVersions(c.version, "a.b-c", "1.2.3-SNAPSHOT"))
                .mask("compared separately in the version table", "/apiKeys")
                .mask("timing-dependent metadata log offset (see api-versions.basic)", "/finalizedFeaturesEpoch");
            // Kafka refuses these (INVALID_REQUEST, no APIs): where a broker answers them in
            // full, its API list and features are the difference.
            for (String[] bad : new String[][] {{"bad-name", "bad name!", "1.0"}, {"bad-version", "samsa-differential", "1.0 beta"},
                                                {"empty-name", "", "1.0"}, {"trailing-dash", "client-", "1.0"}}) {
                c.observe(bad[0], Route.ANY, ApiKeys.API_VERSIONS, apiVersions(c.version, bad[1], bad[2]))
                    .mask("timing-dependent metadata log offset (see api-versions.basic)", "/finalizedFeaturesEpoch");
            }
        }));
        // A version past what either serves: Kafka answers error 35 with a v0 body that names
        // its ApiVersions range, so that the client can retry at a version it serves.
        s.add(Scenario.of("api-versions.unsupported-version", ApiKeys.API_VERSIONS, 3, 3, c -> {
            c.observeRaw("v9-empty-body", Route.ANY, ApiKeys.API_VERSIONS, (short) 9, new byte[0])
                .mask("each broker's ApiVersions range is compared in the version table", "/apiKeys/*/maxVersion");
            c.observeRaw("v9-v3-body", Route.ANY, ApiKeys.API_VERSIONS, (short) 9, v3Body("samsa-differential", "1.0"))
                .mask("each broker's ApiVersions range is compared in the version table", "/apiKeys/*/maxVersion");
            c.observeRaw("v32767", Route.ANY, ApiKeys.API_VERSIONS, Short.MAX_VALUE, new byte[0])
                .mask("each broker's ApiVersions range is compared in the version table", "/apiKeys/*/maxVersion");
        }));
        s.add(Scenario.of("api-versions.malformed", ApiKeys.API_VERSIONS, 3, 3, c ->
            c.observeRaw("truncated-v3-body", Route.ANY, ApiKeys.API_VERSIONS, (short) 3, new byte[] {0x05, 'a'})));

        // ---- DescribeTopicPartitions -----------------------------------------------------
        s.add(Scenario.of("metadata.describe-topic-partitions", ApiKeys.DESCRIBE_TOPIC_PARTITIONS, c -> {
            String t = c.topic(), u = c.name("other");
            c.createTopic(t, 3);
            c.createTopic(u, 2);
            c.observe("existing", Route.ANY, ApiKeys.DESCRIBE_TOPIC_PARTITIONS, describeTopicPartitions(2000, t));
            c.observe("missing", Route.ANY, ApiKeys.DESCRIBE_TOPIC_PARTITIONS, describeTopicPartitions(2000, c.name("missing")));
            c.observe("existing-and-missing", Route.ANY, ApiKeys.DESCRIBE_TOPIC_PARTITIONS, describeTopicPartitions(2000, t, c.name("missing")));
            c.observe("invalid-name", Route.ANY, ApiKeys.DESCRIBE_TOPIC_PARTITIONS, describeTopicPartitions(2000, "bad name!"));
            c.observe("limit-0", Route.ANY, ApiKeys.DESCRIBE_TOPIC_PARTITIONS, describeTopicPartitions(0, t));
            c.observe("limit-1", Route.ANY, ApiKeys.DESCRIBE_TOPIC_PARTITIONS, describeTopicPartitions(1, t, u));
            c.observe("limit-4-two-topics", Route.ANY, ApiKeys.DESCRIBE_TOPIC_PARTITIONS, describeTopicPartitions(4, t, u));
            c.observe("cursor", Route.ANY, ApiKeys.DESCRIBE_TOPIC_PARTITIONS, describeTopicPartitions(2000, t, u)
                .setCursor(new DescribeTopicPartitionsRequestData.Cursor().setTopicName(t).setPartitionIndex(1)));
            c.observe("cursor-limit-1", Route.ANY, ApiKeys.DESCRIBE_TOPIC_PARTITIONS, describeTopicPartitions(1, t, u)
                .setCursor(new DescribeTopicPartitionsRequestData.Cursor().setTopicName(t).setPartitionIndex(2)));
            c.observe("cursor-past-last-partition", Route.ANY, ApiKeys.DESCRIBE_TOPIC_PARTITIONS, describeTopicPartitions(2000, t, u)
                .setCursor(new DescribeTopicPartitionsRequestData.Cursor().setTopicName(t).setPartitionIndex(7)));
            c.observe("cursor-topic-not-asked", Route.ANY, ApiKeys.DESCRIBE_TOPIC_PARTITIONS, describeTopicPartitions(2000, u)
                .setCursor(new DescribeTopicPartitionsRequestData.Cursor().setTopicName(t).setPartitionIndex(0)));
            c.observe("cursor-negative-partition", Route.ANY, ApiKeys.DESCRIBE_TOPIC_PARTITIONS, describeTopicPartitions(2000, t)
                .setCursor(new DescribeTopicPartitionsRequestData.Cursor().setTopicName(t).setPartitionIndex(-1)));
        }));
        s.add(Scenario.of("metadata.describe-topic-partitions-internal", ApiKeys.DESCRIBE_TOPIC_PARTITIONS, c -> {
            c.coordinator((byte) 0, c.name("g"));
            c.observe("consumer-offsets-limit-3", Route.ANY, ApiKeys.DESCRIBE_TOPIC_PARTITIONS, describeTopicPartitions(3, "__consumer_offsets"));
        }));
    }

    /** An ApiVersions v3 body (compact strings and tagged fields), to send at another version. */
    static byte[] v3Body(String name, String version) {
        ApiVersionsRequestData req = new ApiVersionsRequestData().setClientSoftwareName(name).setClientSoftwareVersion(version);
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int size = req.size(cache, (short) 3);
        ByteBuffer b = ByteBuffer.allocate(size);
        req.write(new ByteBufferAccessor(b), cache, (short) 3);
        return b.array();
    }
}
