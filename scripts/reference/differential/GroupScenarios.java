package differential;

import java.util.List;

/** (to be written) */
final class GroupScenarios {
    private GroupScenarios() {}

    static void add(List<Scenario> s) {}
}
