package differential;

import java.util.List;

/** (to be written) */
final class ClusterScenarios {
    private ClusterScenarios() {}

    static void add(List<Scenario> s) {}
}
