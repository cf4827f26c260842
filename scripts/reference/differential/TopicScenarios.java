package differential;

import java.util.List;

/** (to be written) */
final class TopicScenarios {
    private TopicScenarios() {}

    static void add(List<Scenario> s) {}
}
