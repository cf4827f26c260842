package differential;

import java.util.List;

/** (to be written) */
final class ConfigScenarios {
    private ConfigScenarios() {}

    static void add(List<Scenario> s) {}
}
