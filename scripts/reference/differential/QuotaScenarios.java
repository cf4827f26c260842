package differential;

import java.io.IOException;
import java.util.List;
import org.apache.kafka.common.message.AlterClientQuotasRequestData;
import org.apache.kafka.common.message.DescribeClientQuotasRequestData;
import org.apache.kafka.common.message.DescribeClientQuotasResponseData;
import org.apache.kafka.common.protocol.ApiKeys;

/**
 * Client quotas (KIP-546): AlterClientQuotas with each of Kafka's refusals (entity types and
 * combinations, keys, values, duplicates), validate-only, a quota set, described and removed;
 * DescribeClientQuotas filters and their errors. Each scenario names its own entities, so that
 * the answers do not depend on the scenarios before it.
 */
final class QuotaScenarios {
    private QuotaScenarios() {}

    /** One entity part: type and name (null for the type's default). */
    record Part(String type, String name) {}

    static Part user(String name) { return new Part("user", name); }
    static Part client(String name) { return new Part("client-id", name); }
    static Part ip(String name) { return new Part("ip", name); }

    /** One alteration entry: the entity, then key/value pairs (a null value removes the key). */
    static AlterClientQuotasRequestData.EntryData entry(List<Part> entity, Object... ops) {
        AlterClientQuotasRequestData.EntryData e = new AlterClientQuotasRequestData.EntryData();
        for (Part p : entity) e.entity().add(new AlterClientQuotasRequestData.EntityData().setEntityType(p.type()).setEntityName(p.name()));
        for (int i = 0; i < ops.length; i += 2) {
            AlterClientQuotasRequestData.OpData op = new AlterClientQuotasRequestData.OpData().setKey((String) ops[i]);
            if (ops[i + 1] == null) op.setRemove(true);
            else op.setValue(((Number) ops[i + 1]).doubleValue());
            e.ops().add(op);
        }
        return e;
    }

    static AlterClientQuotasRequestData alter(boolean validateOnly, AlterClientQuotasRequestData.EntryData... entries) {
        AlterClientQuotasRequestData req = new AlterClientQuotasRequestData().setValidateOnly(validateOnly);
        for (AlterClientQuotasRequestData.EntryData e : entries) req.entries().add(e);
        return req;
    }

    /** A filter component: match type 0 exact, 1 default, 2 specified. */
    static DescribeClientQuotasRequestData.ComponentData component(String type, int matchType, String match) {
        return new DescribeClientQuotasRequestData.ComponentData().setEntityType(type).setMatchType((byte) matchType).setMatch(match);
    }

    static DescribeClientQuotasRequestData describe(boolean strict, DescribeClientQuotasRequestData.ComponentData... components) {
        DescribeClientQuotasRequestData req = new DescribeClientQuotasRequestData().setStrict(strict);
        for (DescribeClientQuotasRequestData.ComponentData c : components) req.components().add(c);
        return req;
    }

    /** Waits until this peer describes `user` with `keys` quotas (a change reaches a broker after the controller answers). */
    static void awaitQuotas(Ctx c, String user, int keys) throws IOException {
        long deadline = System.currentTimeMillis() + 5_000;
        while (System.currentTimeMillis() < deadline) {
            DescribeClientQuotasResponseData r = (DescribeClientQuotasResponseData) c.call(Route.ANY,
                ApiKeys.DESCRIBE_CLIENT_QUOTAS, (short) 1, describe(true, component("user", 0, user))).message();
            int n = r.entries() == null || r.entries().isEmpty() ? 0 : r.entries().get(0).values().size();
            if (n == keys) return;
            Ctx.sleep(50);
        }
    }

    static void add(List<Scenario> s) {
        s.add(Scenario.of("quotas.alter-client-quotas", ApiKeys.ALTER_CLIENT_QUOTAS, c -> {
            String u = c.name("quota-user");
            c.observe("validate-only", Route.ANY, ApiKeys.ALTER_CLIENT_QUOTAS,
                alter(true, entry(List.of(user(u)), "producer_byte_rate", 1024)));
            c.observe("described-after-validate-only", Route.ANY, ApiKeys.DESCRIBE_CLIENT_QUOTAS, (short) 1,
                describe(true, component("user", 0, u)));
            c.observe("set-user", Route.ANY, ApiKeys.ALTER_CLIENT_QUOTAS,
                alter(false, entry(List.of(user(u)), "producer_byte_rate", 1024)));
            awaitQuotas(c, u, 1);
            c.observe("described-after-set", Route.ANY, ApiKeys.DESCRIBE_CLIENT_QUOTAS, (short) 1,
                describe(true, component("user", 0, u)));
            c.observe("remove-user", Route.ANY, ApiKeys.ALTER_CLIENT_QUOTAS,
                alter(false, entry(List.of(user(u)), "producer_byte_rate", null)));
            awaitQuotas(c, u, 0);
            c.observe("described-after-remove", Route.ANY, ApiKeys.DESCRIBE_CLIENT_QUOTAS, (short) 1,
                describe(true, component("user", 0, u)));
            c.observe("remove-missing", Route.ANY, ApiKeys.ALTER_CLIENT_QUOTAS,
                alter(true, entry(List.of(user(u)), "consumer_byte_rate", null)));
            c.observe("user-and-default-client", Route.ANY, ApiKeys.ALTER_CLIENT_QUOTAS,
                alter(true, entry(List.of(user(u), client(null)), "request_percentage", 12.5)));
            c.observe("default-ip", Route.ANY, ApiKeys.ALTER_CLIENT_QUOTAS,
                alter(true, entry(List.of(ip(null)), "connection_creation_rate", 10)));
            c.observe("unknown-key", Route.ANY, ApiKeys.ALTER_CLIENT_QUOTAS,
                alter(true, entry(List.of(user(u)), "no_such_rate", 10)));
            c.observe("key-of-another-type", Route.ANY, ApiKeys.ALTER_CLIENT_QUOTAS,
                alter(true, entry(List.of(client(u)), "connection_creation_rate", 10)));
            c.observe("negative", Route.ANY, ApiKeys.ALTER_CLIENT_QUOTAS,
                alter(true, entry(List.of(user(u)), "producer_byte_rate", -1)));
            c.observe("zero", Route.ANY, ApiKeys.ALTER_CLIENT_QUOTAS,
                alter(true, entry(List.of(user(u)), "request_percentage", 0)));
            c.observe("fraction-of-a-long", Route.ANY, ApiKeys.ALTER_CLIENT_QUOTAS,
                alter(true, entry(List.of(user(u)), "consumer_byte_rate", 1.5)));
            c.observe("too-large-for-an-int", Route.ANY, ApiKeys.ALTER_CLIENT_QUOTAS,
                alter(true, entry(List.of(ip("10.0.0.1")), "connection_creation_rate", 3e9)));
            c.observe("nan", Route.ANY, ApiKeys.ALTER_CLIENT_QUOTAS,
                alter(true, entry(List.of(user(u)), "request_percentage", Double.NaN)));
            c.observe("empty-entity", Route.ANY, ApiKeys.ALTER_CLIENT_QUOTAS,
                alter(true, entry(List.of(), "producer_byte_rate", 10)));
            c.observe("unknown-entity-type", Route.ANY, ApiKeys.ALTER_CLIENT_QUOTAS,
                alter(true, entry(List.of(new Part("group", "g")), "producer_byte_rate", 10)));
            c.observe("empty-user-name", Route.ANY, ApiKeys.ALTER_CLIENT_QUOTAS,
                alter(true, entry(List.of(user("")), "producer_byte_rate", 10)));
            c.observe("ip-with-user", Route.ANY, ApiKeys.ALTER_CLIENT_QUOTAS,
                alter(true, entry(List.of(ip("10.0.0.1"), user(u)), "connection_creation_rate", 10)));
            c.observe("invalid-ip", Route.ANY, ApiKeys.ALTER_CLIENT_QUOTAS,
                alter(true, entry(List.of(ip("not-an-address.invalid")), "connection_creation_rate", 10)));
            c.observe("duplicate-key", Route.ANY, ApiKeys.ALTER_CLIENT_QUOTAS,
                alter(true, entry(List.of(user(u)), "producer_byte_rate", 10, "producer_byte_rate", 20)));
            c.observe("no-entries", Route.ANY, ApiKeys.ALTER_CLIENT_QUOTAS, alter(true));
        }));

        s.add(Scenario.of("quotas.describe-client-quotas", ApiKeys.DESCRIBE_CLIENT_QUOTAS, c -> {
            String u = c.name("nobody");
            c.observe("exact-missing", Route.ANY, ApiKeys.DESCRIBE_CLIENT_QUOTAS, describe(false, component("user", 0, u)));
            c.observe("strict-no-components", Route.ANY, ApiKeys.DESCRIBE_CLIENT_QUOTAS, describe(true));
            c.observe("exact-null-match", Route.ANY, ApiKeys.DESCRIBE_CLIENT_QUOTAS, describe(false, component("user", 0, null)));
            c.observe("default-with-match", Route.ANY, ApiKeys.DESCRIBE_CLIENT_QUOTAS, describe(false, component("user", 1, u)));
            c.observe("specified-with-match", Route.ANY, ApiKeys.DESCRIBE_CLIENT_QUOTAS, describe(false, component("user", 2, u)));
            c.observe("unknown-match-type", Route.ANY, ApiKeys.DESCRIBE_CLIENT_QUOTAS, describe(false, component("user", 9, null)));
            c.observe("unknown-entity-type", Route.ANY, ApiKeys.DESCRIBE_CLIENT_QUOTAS, describe(false, component("group", 2, null)));
            c.observe("empty-entity-type", Route.ANY, ApiKeys.DESCRIBE_CLIENT_QUOTAS, describe(false, component("", 2, null)));
            c.observe("type-twice", Route.ANY, ApiKeys.DESCRIBE_CLIENT_QUOTAS,
                describe(false, component("user", 2, null), component("user", 1, null)));
            c.observe("ip-with-client-id", Route.ANY, ApiKeys.DESCRIBE_CLIENT_QUOTAS,
                describe(false, component("ip", 1, null), component("client-id", 2, null)));
        }));
    }
}
