package differential;

import java.util.List;

/** (to be written) */
final class TxnScenarios {
    private TxnScenarios() {}

    static void add(List<Scenario> s) {}
}
