package differential;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.message.AlterUserScramCredentialsRequestData;
import org.apache.kafka.common.message.ApiVersionsRequestData;
import org.apache.kafka.common.message.ApiVersionsResponseData;
import org.apache.kafka.common.message.CreateAclsRequestData;
import org.apache.kafka.common.message.DeleteAclsRequestData;
import org.apache.kafka.common.message.DescribeAclsRequestData;
import org.apache.kafka.common.message.DescribeClusterRequestData;
import org.apache.kafka.common.message.DescribeQuorumRequestData;
import org.apache.kafka.common.message.DescribeUserScramCredentialsRequestData;
import org.apache.kafka.common.message.DescribeUserScramCredentialsResponseData;
import org.apache.kafka.common.message.SaslAuthenticateRequestData;
import org.apache.kafka.common.message.SaslHandshakeRequestData;
import org.apache.kafka.common.message.UpdateFeaturesRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.RequestUtils;

/**
 * The cluster as a whole: DescribeCluster, DescribeQuorum, UpdateFeatures, ACLs without an
 * authorizer, SCRAM credentials, SaslHandshake on a PLAINTEXT listener, and what a broker does
 * with requests it cannot read at all.
 */
final class ClusterScenarios {
    private ClusterScenarios() {}

    static final int TIMEOUT_MS = 30_000;

    // ---- request builders --------------------------------------------------------------------

    static DescribeClusterRequestData describeCluster(short v, boolean authorizedOperations, int endpointType, boolean fenced) {
        DescribeClusterRequestData req = new DescribeClusterRequestData().setIncludeClusterAuthorizedOperations(authorizedOperations);
        if (v >= 1) req.setEndpointType((byte) endpointType);
        if (v >= 2) req.setIncludeFencedBrokers(fenced);
        return req;
    }

    static DescribeQuorumRequestData describeQuorum(String topic, int partition) {
        DescribeQuorumRequestData req = new DescribeQuorumRequestData();
        req.topics().add(new DescribeQuorumRequestData.TopicData().setTopicName(topic).setPartitions(new ArrayList<>(List.of(
            new DescribeQuorumRequestData.PartitionData().setPartitionIndex(partition)))));
        return req;
    }

    /**
     * One feature update. v0 knows only allowDowngrade; v1+ an upgrade type (1 upgrade,
     * 2 safe downgrade, 3 unsafe downgrade) and validate-only for the whole request.
     */
    static UpdateFeaturesRequestData updateFeature(short v, String feature, int level, int upgradeType, boolean validateOnly) {
        UpdateFeaturesRequestData req = new UpdateFeaturesRequestData().setTimeoutMs(TIMEOUT_MS);
        UpdateFeaturesRequestData.FeatureUpdateKey k = new UpdateFeaturesRequestData.FeatureUpdateKey()
            .setFeature(feature).setMaxVersionLevel((short) level);
        if (v == 0) k.setAllowDowngrade(upgradeType != 1);
        else k.setUpgradeType((byte) upgradeType);
        req.featureUpdates().add(k);
        if (v >= 1) req.setValidateOnly(validateOnly);
        return req;
    }

    /** The finalized level of `feature` on this peer (from ApiVersions v3), or -1. */
    static int finalizedLevel(Ctx c, String feature) throws IOException {
        ApiVersionsResponseData r = (ApiVersionsResponseData) c.call(Route.ANY, ApiKeys.API_VERSIONS, (short) 3,
            new ApiVersionsRequestData().setClientSoftwareName("samsa-differential").setClientSoftwareVersion("1")).message();
        ApiVersionsResponseData.FinalizedFeatureKey k = r.finalizedFeatures().find(feature);
        return k == null ? -1 : k.maxVersionLevel();
    }

    /** Waits up to `ms` until `feature` is finalized at `level` on this peer; the level it has then. */
    static int awaitLevel(Ctx c, String feature, int level, long ms) throws IOException {
        long deadline = System.currentTimeMillis() + ms;
        int now = finalizedLevel(c, feature);
        while (now != level && System.currentTimeMillis() < deadline) {
            Ctx.sleep(50);
            now = finalizedLevel(c, feature);
        }
        return now;
    }

    // ACL codes: resource type ANY 1, TOPIC 2; pattern ANY 1, LITERAL 3; operation ANY 1,
    // READ 3; permission ANY 1, ALLOW 3.
    static DescribeAclsRequestData describeAcls(String resourceName) {
        return new DescribeAclsRequestData().setResourceTypeFilter((byte) (resourceName == null ? 1 : 2)).setResourceNameFilter(resourceName)
            .setPatternTypeFilter((byte) 1).setPrincipalFilter(null).setHostFilter(null).setOperation((byte) 1).setPermissionType((byte) 1);
    }

    static CreateAclsRequestData createAcl(String topic, int resourceType) {
        CreateAclsRequestData req = new CreateAclsRequestData();
        req.creations().add(new CreateAclsRequestData.AclCreation().setResourceType((byte) resourceType).setResourceName(topic)
            .setResourcePatternType((byte) 3).setPrincipal("User:alice").setHost("*").setOperation((byte) 3).setPermissionType((byte) 3));
        return req;
    }

    static DeleteAclsRequestData deleteAcls(String topic) {
        DeleteAclsRequestData req = new DeleteAclsRequestData();
        req.filters().add(new DeleteAclsRequestData.DeleteAclsFilter().setResourceTypeFilter((byte) 2).setResourceNameFilter(topic)
            .setPatternTypeFilter((byte) 3).setPrincipalFilter("User:alice").setHostFilter("*").setOperation((byte) 3).setPermissionType((byte) 3));
        return req;
    }

    static DescribeUserScramCredentialsRequestData describeUsers(String... users) {
        DescribeUserScramCredentialsRequestData req = new DescribeUserScramCredentialsRequestData();
        if (users == null) {
            req.setUsers(null);
        } else {
            for (String u : users) req.users().add(new DescribeUserScramCredentialsRequestData.UserName().setName(u));
        }
        return req;
    }

    static byte[] bytes(int n, int seed) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) b[i] = (byte) (seed + 7 * i);
        return b;
    }

    /** Mechanism 1 is SCRAM-SHA-256 (32-byte salted password), 2 SCRAM-SHA-512 (64 bytes). */
    static AlterUserScramCredentialsRequestData.ScramCredentialUpsertion upsertion(String user, int mechanism, int iterations) {
        return new AlterUserScramCredentialsRequestData.ScramCredentialUpsertion().setName(user).setMechanism((byte) mechanism)
            .setIterations(iterations).setSalt(bytes(16, 3)).setSaltedPassword(bytes(mechanism == 2 ? 64 : 32, 11));
    }

    static AlterUserScramCredentialsRequestData.ScramCredentialDeletion deletion(String user, int mechanism) {
        return new AlterUserScramCredentialsRequestData.ScramCredentialDeletion().setName(user).setMechanism((byte) mechanism);
    }

    /** Waits until this peer's broker describes `user` with `mechanisms` credentials (a change reaches it after the controller answers). */
    static void awaitCredentials(Ctx c, String user, int mechanisms) throws IOException {
        long deadline = System.currentTimeMillis() + 5_000;
        while (System.currentTimeMillis() < deadline) {
            DescribeUserScramCredentialsResponseData r = (DescribeUserScramCredentialsResponseData) c.call(Route.ANY,
                ApiKeys.DESCRIBE_USER_SCRAM_CREDENTIALS, (short) 0, describeUsers(user)).message();
            int n = r.results().isEmpty() || r.results().get(0).errorCode() != 0 ? 0 : r.results().get(0).credentialInfos().size();
            if (n == mechanisms) return;
            Ctx.sleep(50);
        }
    }

    static final String METADATA_LOG = "offsets in the metadata log: how many records each cluster has written since it started "
        + "(its own bootstrap records, heartbeats, every earlier scenario's changes)";

    static void add(List<Scenario> s) {
        // ---- DescribeCluster -------------------------------------------------------------
        s.add(Scenario.of("cluster.describe-cluster", ApiKeys.DESCRIBE_CLUSTER, c -> {
            c.observe("brokers", Route.ANY, ApiKeys.DESCRIBE_CLUSTER, describeCluster(c.version, false, 1, false));
            c.observe("authorized-operations", Route.ANY, ApiKeys.DESCRIBE_CLUSTER, describeCluster(c.version, true, 1, false));
            if (c.version >= 1) {
                c.observe("controllers-on-broker-listener", Route.ANY, ApiKeys.DESCRIBE_CLUSTER, describeCluster(c.version, false, 2, false));
                c.observe("unknown-endpoint-type", Route.ANY, ApiKeys.DESCRIBE_CLUSTER, describeCluster(c.version, false, 3, false));
                c.observe("endpoint-type-0", Route.ANY, ApiKeys.DESCRIBE_CLUSTER, describeCluster(c.version, false, 0, false));
            }
            if (c.version >= 2) {
                c.observe("include-fenced", Route.ANY, ApiKeys.DESCRIBE_CLUSTER, describeCluster(c.version, false, 1, true));
            }
        }));

        // ---- DescribeQuorum --------------------------------------------------------------
        s.add(Scenario.of("cluster.describe-quorum", ApiKeys.DESCRIBE_QUORUM, c -> {
            c.observe("metadata-partition", Route.ANY, ApiKeys.DESCRIBE_QUORUM, describeQuorum("__cluster_metadata", 0))
                .mask(METADATA_LOG, "/topics/*/partitions/*/highWatermark",
                    "/topics/*/partitions/*/currentVoters/*/logEndOffset", "/topics/*/partitions/*/observers/*/logEndOffset")
                .mask("each node draws the id of its metadata log directory at random when it is formatted",
                    "/topics/*/partitions/*/currentVoters/*/replicaDirectoryId", "/topics/*/partitions/*/observers/*/replicaDirectoryId");
            c.observe("unknown-topic", Route.ANY, ApiKeys.DESCRIBE_QUORUM, describeQuorum("__not_metadata", 0));
            c.observe("unknown-partition", Route.ANY, ApiKeys.DESCRIBE_QUORUM, describeQuorum("__cluster_metadata", 1));
            c.observe("no-topics", Route.ANY, ApiKeys.DESCRIBE_QUORUM, new DescribeQuorumRequestData());
        }));

        // ---- UpdateFeatures --------------------------------------------------------------
        s.add(Scenario.of("cluster.update-features", ApiKeys.UPDATE_FEATURES, c -> {
            int mv = finalizedLevel(c, "metadata.version");
            c.observe("unknown-feature-upgrade", Route.ANY, ApiKeys.UPDATE_FEATURES, updateFeature(c.version, "no.such.feature", 1, 1, true));
            c.observe("unknown-feature-delete", Route.ANY, ApiKeys.UPDATE_FEATURES, updateFeature(c.version, "no.such.feature", 0, 2, true));
            // The peers' metadata.version levels differ (each its latest); each request names
            // the peer's own level, so that the answers mean the same.
            c.observe("metadata-version-same-level", Route.ANY, ApiKeys.UPDATE_FEATURES, updateFeature(c.version, "metadata.version", mv, 1, true));
            c.observe("metadata-version-beyond-supported", Route.ANY, ApiKeys.UPDATE_FEATURES, updateFeature(c.version, "metadata.version", 9999, 1, true));
            // A lower level sent as an upgrade: refused whatever the version.
            c.observe("metadata-version-lower-as-upgrade", Route.ANY, ApiKeys.UPDATE_FEATURES, updateFeature(c.version, "metadata.version", mv - 1, 1, true));
            if (c.version >= 1) {
                c.observe("metadata-version-safe-downgrade", Route.ANY, ApiKeys.UPDATE_FEATURES, updateFeature(c.version, "metadata.version", mv - 1, 2, true));
                c.observe("metadata-version-unsafe-downgrade", Route.ANY, ApiKeys.UPDATE_FEATURES, updateFeature(c.version, "metadata.version", mv - 1, 3, true));
                c.observe("unknown-upgrade-type", Route.ANY, ApiKeys.UPDATE_FEATURES, updateFeature(c.version, "metadata.version", mv, 7, true));
            }
            c.observe("no-updates", Route.ANY, ApiKeys.UPDATE_FEATURES, new UpdateFeaturesRequestData().setTimeoutMs(TIMEOUT_MS));
            UpdateFeaturesRequestData two = updateFeature(c.version, "no.such.feature", 1, 1, true);
            two.featureUpdates().add(updateFeature(c.version, "metadata.version", mv, 1, true).featureUpdates().iterator().next().duplicate());
            c.observe("known-and-unknown", Route.ANY, ApiKeys.UPDATE_FEATURES, two);
            // v0 has no validate-only: its downgrade is a real request, which Kafka refuses.
            // Should a broker take it, the level is compared, then put back for the scenarios
            // after this one.
            if (c.version == 0) {
                Observation down = c.observe("metadata-version-downgrade-allowed", Route.ANY, ApiKeys.UPDATE_FEATURES,
                    updateFeature(c.version, "metadata.version", mv - 1, 2, false));
                int after = awaitLevel(c, "metadata.version", mv - 1, 2_000);
                ObjectNode view = Json.F.objectNode();
                view.put("metadata.version", after == mv ? "unchanged" : after == mv - 1 ? "one lower" : "changed to " + after);
                MetadataScenarios.derived(c, "metadata-version-after-downgrade", down, view);
                if (after != mv) {
                    c.call(Route.ANY, ApiKeys.UPDATE_FEATURES, (short) 1, updateFeature((short) 1, "metadata.version", mv, 1, false));
                    awaitLevel(c, "metadata.version", mv, 5_000);
                }
            }
        }));

        // ---- ACLs (no authorizer configured) ---------------------------------------------
        s.add(Scenario.of("cluster.describe-acls", ApiKeys.DESCRIBE_ACLS, c -> {
            c.observe("any", Route.ANY, ApiKeys.DESCRIBE_ACLS, describeAcls(null));
            c.observe("one-topic", Route.ANY, ApiKeys.DESCRIBE_ACLS, describeAcls(c.topic()));
            c.observe("invalid-filter", Route.ANY, ApiKeys.DESCRIBE_ACLS, describeAcls(null).setResourceTypeFilter((byte) 0));
        }));
        s.add(Scenario.of("cluster.create-acls", ApiKeys.CREATE_ACLS, c -> {
            String t = c.topic();
            c.observe("topic-read", Route.ANY, ApiKeys.CREATE_ACLS, createAcl(t, 2));
            c.observe("any-resource-type", Route.ANY, ApiKeys.CREATE_ACLS, createAcl(t, 1));
            CreateAclsRequestData badPrincipal = createAcl(t, 2);
            badPrincipal.creations().get(0).setPrincipal("alice");
            c.observe("principal-without-type", Route.ANY, ApiKeys.CREATE_ACLS, badPrincipal);
            c.observe("empty", Route.ANY, ApiKeys.CREATE_ACLS, new CreateAclsRequestData());
            // Leave nothing behind, should a broker have kept the ACL.
            c.call(Route.ANY, ApiKeys.DELETE_ACLS, (short) 3, deleteAcls(t));
        }));
        s.add(Scenario.of("cluster.delete-acls", ApiKeys.DELETE_ACLS, c -> {
            c.observe("topic-filter", Route.ANY, ApiKeys.DELETE_ACLS, deleteAcls(c.topic()));
            c.observe("no-filters", Route.ANY, ApiKeys.DELETE_ACLS, new DeleteAclsRequestData());
        }));

        // ---- SCRAM credentials -----------------------------------------------------------
        s.add(Scenario.of("cluster.describe-user-scram-credentials", ApiKeys.DESCRIBE_USER_SCRAM_CREDENTIALS, c -> {
            c.observe("missing-user", Route.ANY, ApiKeys.DESCRIBE_USER_SCRAM_CREDENTIALS, describeUsers(c.name("nobody")));
            c.observe("same-user-twice", Route.ANY, ApiKeys.DESCRIBE_USER_SCRAM_CREDENTIALS, describeUsers(c.name("nobody"), c.name("nobody")));
            c.observe("empty-name", Route.ANY, ApiKeys.DESCRIBE_USER_SCRAM_CREDENTIALS, describeUsers(""));
            c.observe("empty-list", Route.ANY, ApiKeys.DESCRIBE_USER_SCRAM_CREDENTIALS, describeUsers());
        }));
        s.add(Scenario.of("cluster.alter-user-scram-credentials", ApiKeys.ALTER_USER_SCRAM_CREDENTIALS, c -> {
            String user = c.name("alice");
            AlterUserScramCredentialsRequestData create = new AlterUserScramCredentialsRequestData();
            create.upsertions().add(upsertion(user, 1, 4096));
            c.observe("create-sha-256", Route.ANY, ApiKeys.ALTER_USER_SCRAM_CREDENTIALS, create);
            awaitCredentials(c, user, 1);
            c.observe("describe-created", Route.ANY, ApiKeys.DESCRIBE_USER_SCRAM_CREDENTIALS, (short) 0, describeUsers(user));
            AlterUserScramCredentialsRequestData add512 = new AlterUserScramCredentialsRequestData();
            add512.upsertions().add(upsertion(user, 2, 8192));
            c.observe("add-sha-512", Route.ANY, ApiKeys.ALTER_USER_SCRAM_CREDENTIALS, add512);
            awaitCredentials(c, user, 2);
            c.observe("describe-both", Route.ANY, ApiKeys.DESCRIBE_USER_SCRAM_CREDENTIALS, (short) 0, describeUsers(user));
            // Every user of the cluster: the view keeps this scenario's.
            Observation all = c.observe("describe-all", Route.ANY, ApiKeys.DESCRIBE_USER_SCRAM_CREDENTIALS, (short) 0, describeUsers((String[]) null))
                .mask("every SCRAM user of the cluster: which exist depends on the scenarios run before; the view describe-all-own "
                    + "compares this scenario's user", "/results");
            ObjectNode view = Json.F.objectNode();
            view.put("errorCode", all.json().path("errorCode").asInt());
            ArrayNode own = view.putArray("ownUser");
            for (JsonNode r : all.json().path("results")) if (r.path("user").asText().equals(user)) own.add(r);
            MetadataScenarios.derived(c, "describe-all-own", all, view);
            AlterUserScramCredentialsRequestData delete = new AlterUserScramCredentialsRequestData();
            delete.deletions().add(deletion(user, 1));
            c.observe("delete-sha-256", Route.ANY, ApiKeys.ALTER_USER_SCRAM_CREDENTIALS, delete);
            awaitCredentials(c, user, 1);
            c.observe("describe-after-delete", Route.ANY, ApiKeys.DESCRIBE_USER_SCRAM_CREDENTIALS, (short) 0, describeUsers(user));
            c.observe("delete-sha-256-again", Route.ANY, ApiKeys.ALTER_USER_SCRAM_CREDENTIALS, delete.duplicate());
            AlterUserScramCredentialsRequestData deleteLast = new AlterUserScramCredentialsRequestData();
            deleteLast.deletions().add(deletion(user, 2));
            c.observe("delete-last", Route.ANY, ApiKeys.ALTER_USER_SCRAM_CREDENTIALS, deleteLast);
            awaitCredentials(c, user, 0);
            c.observe("describe-gone", Route.ANY, ApiKeys.DESCRIBE_USER_SCRAM_CREDENTIALS, (short) 0, describeUsers(user));
        }));
        s.add(Scenario.of("cluster.alter-user-scram-credentials-bad", ApiKeys.ALTER_USER_SCRAM_CREDENTIALS, c -> {
            String user = c.name("bob");
            AlterUserScramCredentialsRequestData few = new AlterUserScramCredentialsRequestData();
            few.upsertions().add(upsertion(user, 1, 10));
            c.observe("too-few-iterations", Route.ANY, ApiKeys.ALTER_USER_SCRAM_CREDENTIALS, few);
            AlterUserScramCredentialsRequestData many = new AlterUserScramCredentialsRequestData();
            many.upsertions().add(upsertion(user, 1, 100_000));
            c.observe("too-many-iterations", Route.ANY, ApiKeys.ALTER_USER_SCRAM_CREDENTIALS, many);
            AlterUserScramCredentialsRequestData unknown = new AlterUserScramCredentialsRequestData();
            unknown.upsertions().add(upsertion(user, 0, 4096));
            c.observe("unknown-mechanism", Route.ANY, ApiKeys.ALTER_USER_SCRAM_CREDENTIALS, unknown);
            AlterUserScramCredentialsRequestData empty = new AlterUserScramCredentialsRequestData();
            empty.upsertions().add(upsertion("", 1, 4096));
            c.observe("empty-user", Route.ANY, ApiKeys.ALTER_USER_SCRAM_CREDENTIALS, empty);
            AlterUserScramCredentialsRequestData missing = new AlterUserScramCredentialsRequestData();
            missing.deletions().add(deletion(c.name("nobody"), 1));
            c.observe("delete-missing", Route.ANY, ApiKeys.ALTER_USER_SCRAM_CREDENTIALS, missing);
            AlterUserScramCredentialsRequestData both = new AlterUserScramCredentialsRequestData();
            both.upsertions().add(upsertion(user, 1, 4096));
            both.deletions().add(deletion(user, 1));
            c.observe("upsert-and-delete-same", Route.ANY, ApiKeys.ALTER_USER_SCRAM_CREDENTIALS, both);
            AlterUserScramCredentialsRequestData twice = new AlterUserScramCredentialsRequestData();
            twice.upsertions().add(upsertion(user, 1, 4096));
            twice.upsertions().add(upsertion(user, 1, 8192));
            c.observe("upsert-twice", Route.ANY, ApiKeys.ALTER_USER_SCRAM_CREDENTIALS, twice);
            c.observe("nothing-created", Route.ANY, ApiKeys.DESCRIBE_USER_SCRAM_CREDENTIALS, (short) 0, describeUsers(user));
        }));

        // ---- SaslHandshake on a PLAINTEXT listener ---------------------------------------
        s.add(Scenario.of("cluster.sasl-handshake", ApiKeys.SASL_HANDSHAKE, c -> {
            c.observe("plain", Route.ANY, ApiKeys.SASL_HANDSHAKE, new SaslHandshakeRequestData().setMechanism("PLAIN"));
            c.observe("scram", Route.ANY, ApiKeys.SASL_HANDSHAKE, new SaslHandshakeRequestData().setMechanism("SCRAM-SHA-256"));
            c.observe("unknown-mechanism", Route.ANY, ApiKeys.SASL_HANDSHAKE, new SaslHandshakeRequestData().setMechanism("BOGUS"));
            c.observe("authenticate", Route.ANY, ApiKeys.SASL_AUTHENTICATE, (short) 2,
                new SaslAuthenticateRequestData().setAuthBytes(Ctx.utf8("\u0000user\u0000password").array()));
            c.observe("then-metadata", Route.ANY, ApiKeys.METADATA, (short) 12, MetadataScenarios.metadata((short) 12, false));
        }));

        // ---- Requests no broker can read -------------------------------------------------
        s.add(Scenario.of("cluster.connection", ApiKeys.METADATA, 12, 12, c -> {
            c.observeRaw("metadata-v99", Route.ANY, ApiKeys.METADATA, (short) 99, new byte[0]);
            c.observeRaw("metadata-v12-truncated", Route.ANY, ApiKeys.METADATA, (short) 12, new byte[] {0x02});
            c.observeRaw("metadata-v12-trailing-bytes", Route.ANY, ApiKeys.METADATA, (short) 12, new byte[] {0x01, 0x00, 0x00, 0x00, 0x7f});
            // A controller-only API on the broker listener.
            c.observeRaw("vote-on-broker-listener", Route.ANY, ApiKeys.VOTE, (short) 0, new byte[0]);
            c.observeRaw("broker-heartbeat-on-broker-listener", Route.ANY, ApiKeys.BROKER_HEARTBEAT, (short) 0, new byte[0]);
            unknownApiKey(c, "unknown-api-key-999", (short) 999);
            unknownApiKey(c, "negative-api-key", (short) -1);
            // The connection used by observe() is still fine.
            c.observe("then-metadata", Route.ANY, ApiKeys.METADATA, (short) 12, MetadataScenarios.metadata((short) 12, false));
        }));
    }

    /** A request whose header names an API key no broker knows (an ApiVersions v0 body, which is empty). */
    static void unknownApiKey(Ctx c, String label, short apiKey) throws IOException {
        Peer.Conn conn = new Peer.Conn(c.peer.nodes.get(c.peer.anyNode()));
        Peer.Answer a;
        try {
            a = conn.exchange(ApiKeys.API_VERSIONS, (short) 0, header ->
                RequestUtils.serialize(header.setRequestApiKey(apiKey), (short) 1, new ApiVersionsRequestData(), (short) 0));
        } finally {
            conn.close();
        }
        Observation o = new Observation(label, ApiKeys.API_VERSIONS, (short) 0,
            Json.F.textNode("api key " + apiKey + ", version 0, header v1, empty body (answer read as ApiVersions)"), a);
        c.observed.add(o);
    }
}
