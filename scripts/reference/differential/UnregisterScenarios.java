package differential;

import java.util.List;
import org.apache.kafka.common.message.UnregisterBrokerRequestData;
import org.apache.kafka.common.protocol.ApiKeys;

/**
 * UnregisterBroker (`kafka-cluster.sh unregister`), forwarded by the broker to the active
 * controller: ids no broker registered. A live broker is not unregistered here: Kafka's stays
 * unregistered until it restarts (its heartbeats are refused as STALE_BROKER_EPOCH), which would
 * leave the reference cluster without brokers for every scenario after this one. Removing a
 * stopped broker is compat-tests/tests/unregister_broker.rs, with Kafka's own tool.
 */
final class UnregisterScenarios {
    private UnregisterScenarios() {}

    static void add(List<Scenario> s) {
        s.add(Scenario.of("unregister-broker.unknown-id", ApiKeys.UNREGISTER_BROKER, c -> {
            c.observe("never-registered", Route.ANY, ApiKeys.UNREGISTER_BROKER, new UnregisterBrokerRequestData().setBrokerId(99));
            c.observe("negative", Route.ANY, ApiKeys.UNREGISTER_BROKER, new UnregisterBrokerRequestData().setBrokerId(-1));
        }));
    }
}
