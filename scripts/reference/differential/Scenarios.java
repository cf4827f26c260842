package differential;

import java.util.ArrayList;
import java.util.List;

/** Every scenario, grouped by the part of Kafka it exercises. */
final class Scenarios {
    private Scenarios() {}

    static List<Scenario> all() {
        List<Scenario> s = new ArrayList<>();
        DataScenarios.add(s);
        return s;
    }
}
