package differential;

import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.message.CreateDelegationTokenRequestData;
import org.apache.kafka.common.message.DescribeDelegationTokenRequestData;
import org.apache.kafka.common.message.ExpireDelegationTokenRequestData;
import org.apache.kafka.common.message.RenewDelegationTokenRequestData;
import org.apache.kafka.common.protocol.ApiKeys;

/**
 * Delegation tokens (KIP-48) with the feature off: Kafka has no `delegation.token.secret.key`
 * and Samsa issues no tokens. Over this harness's PLAINTEXT listener both refuse the requester
 * (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED) with the owner and requester each names; a request
 * Kafka cannot read as a principal fails whole.
 */
final class TokenScenarios {
    private TokenScenarios() {}

    static CreateDelegationTokenRequestData create(short v, String ownerType, String ownerName, String... renewerTypes) {
        CreateDelegationTokenRequestData req = new CreateDelegationTokenRequestData().setMaxLifetimeMs(-1);
        if (v >= 3) req.setOwnerPrincipalType(ownerType).setOwnerPrincipalName(ownerName);
        for (String t : renewerTypes) {
            req.renewers().add(new CreateDelegationTokenRequestData.CreatableRenewers().setPrincipalType(t).setPrincipalName("carol"));
        }
        return req;
    }

    static DescribeDelegationTokenRequestData describe(String... owners) {
        DescribeDelegationTokenRequestData req = new DescribeDelegationTokenRequestData();
        if (owners == null) return req.setOwners(null);
        List<DescribeDelegationTokenRequestData.DescribeDelegationTokenOwner> list = new ArrayList<>();
        for (String o : owners) {
            list.add(new DescribeDelegationTokenRequestData.DescribeDelegationTokenOwner().setPrincipalType("User").setPrincipalName(o));
        }
        return req.setOwners(list);
    }

    static void add(List<Scenario> s) {
        s.add(Scenario.of("token.create", ApiKeys.CREATE_DELEGATION_TOKEN, c -> {
            c.observe("for-self", Route.ANY, ApiKeys.CREATE_DELEGATION_TOKEN, create(c.version, null, null));
            c.observe("group-renewer", Route.ANY, ApiKeys.CREATE_DELEGATION_TOKEN, create(c.version, null, null, "User", "Group"));
            c.observe("max-lifetime", Route.ANY, ApiKeys.CREATE_DELEGATION_TOKEN,
                create(c.version, null, null).setMaxLifetimeMs(3_600_000));
            if (c.version >= 3) {
                c.observe("for-another-user", Route.ANY, ApiKeys.CREATE_DELEGATION_TOKEN, create(c.version, "User", "bob"));
                c.observe("owner-with-empty-name", Route.ANY, ApiKeys.CREATE_DELEGATION_TOKEN, create(c.version, "User", ""));
                c.observe("owner-of-another-type", Route.ANY, ApiKeys.CREATE_DELEGATION_TOKEN, create(c.version, "Group", "g"));
                c.observe("owner-without-type", Route.ANY, ApiKeys.CREATE_DELEGATION_TOKEN, create(c.version, null, "bob"));
            }
        }));
        s.add(Scenario.of("token.renew", ApiKeys.RENEW_DELEGATION_TOKEN, c -> {
            c.observe("unknown-hmac", Route.ANY, ApiKeys.RENEW_DELEGATION_TOKEN,
                new RenewDelegationTokenRequestData().setHmac(ClusterScenarios.bytes(32, 5)).setRenewPeriodMs(60_000));
            c.observe("empty-hmac", Route.ANY, ApiKeys.RENEW_DELEGATION_TOKEN,
                new RenewDelegationTokenRequestData().setHmac(new byte[0]).setRenewPeriodMs(-1));
        }));
        s.add(Scenario.of("token.expire", ApiKeys.EXPIRE_DELEGATION_TOKEN, c -> {
            c.observe("unknown-hmac", Route.ANY, ApiKeys.EXPIRE_DELEGATION_TOKEN,
                new ExpireDelegationTokenRequestData().setHmac(ClusterScenarios.bytes(32, 5)).setExpiryTimePeriodMs(60_000));
            c.observe("now", Route.ANY, ApiKeys.EXPIRE_DELEGATION_TOKEN,
                new ExpireDelegationTokenRequestData().setHmac(ClusterScenarios.bytes(32, 5)).setExpiryTimePeriodMs(-1));
        }));
        s.add(Scenario.of("token.describe", ApiKeys.DESCRIBE_DELEGATION_TOKEN, c -> {
            c.observe("all", Route.ANY, ApiKeys.DESCRIBE_DELEGATION_TOKEN, describe((String[]) null));
            c.observe("no-owners", Route.ANY, ApiKeys.DESCRIBE_DELEGATION_TOKEN, describe());
            c.observe("two-owners", Route.ANY, ApiKeys.DESCRIBE_DELEGATION_TOKEN, describe("alice", "bob"));
        }));
    }
}
