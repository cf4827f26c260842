package differential;

import java.util.List;

/** (to be written) */
final class MetadataScenarios {
    private MetadataScenarios() {}

    static void add(List<Scenario> s) {}
}
