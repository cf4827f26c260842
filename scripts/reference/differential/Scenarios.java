package differential;

import java.util.ArrayList;
import java.util.List;

/** Every scenario, grouped by the part of Kafka it exercises. */
final class Scenarios {
    private Scenarios() {}

    static List<Scenario> all() {
        List<Scenario> s = new ArrayList<>();
        DataScenarios.add(s);
        MetadataScenarios.add(s);
        TopicScenarios.add(s);
        ConfigScenarios.add(s);
        ClusterScenarios.add(s);
        QuotaScenarios.add(s);
        GroupScenarios.add(s);
        ConsumerGroupScenarios.add(s);
        StreamsGroupScenarios.add(s);
        TxnScenarios.add(s);
        ShareScenarios.add(s);
        TokenScenarios.add(s);
        UnregisterScenarios.add(s);
        VersionScenarios.add(s);
        return s;
    }
}
