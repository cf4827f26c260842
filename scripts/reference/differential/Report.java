package differential;

import java.io.PrintStream;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** Counts and differences of a run, printed and written as Markdown. */
final class Report {
    private final Peer kafka;
    private final Peer samsa;
    private final List<Entry> entries = new ArrayList<>();

    record Entry(Scenario scenario, short version, Differential.Outcome outcome) {}

    Report(Peer kafka, Peer samsa) {
        this.kafka = kafka;
        this.samsa = samsa;
    }

    void add(Scenario s, short v, Differential.Outcome o) {
        entries.add(new Entry(s, v, o));
        String state = o.identical() ? "identical" : o.explained() ? "explained" : "DIFFERS";
        System.err.printf("%-9s %s v%d%n", state, s.name(), v);
    }

    long identical() {
        return entries.stream().filter(e -> e.outcome.identical()).count();
    }

    long explained() {
        return entries.stream().filter(e -> !e.outcome.identical() && e.outcome.explained()).count();
    }

    long unexplained() {
        return entries.stream().filter(e -> !e.outcome.explained()).count();
    }

    long apis() {
        return entries.stream().map(e -> e.scenario.api()).distinct().count();
    }

    void print(PrintStream out, Explained explained) {
        for (Entry e : entries) {
            if (e.outcome.explained()) continue;
            out.printf("%n== %s v%d (%s)%n", e.scenario.name(), e.version, e.scenario.api().name);
            int shown = 0;
            for (Differential.Difference d : e.outcome.differences()) {
                if (d.reason() != null) continue;
                if (shown++ == 12) {
                    out.println("   ...");
                    break;
                }
                out.printf("   %s%n      kafka: %s%n      samsa: %s%n", d.where(), d.kafka(), d.samsa());
            }
        }
        out.printf("%n%d scenario runs over %d APIs: %d identical, %d differ as COMPATIBILITY.md explains, %d differ unexplained%n",
            entries.size(), apis(), identical(), explained(), unexplained());
        // A row whose scenarios ran without the difference: fixed, or seen only in another
        // setting (one node or three, a quick run's versions); rows of scenarios not run are not named.
        for (int i = 0; i < explained.rows.size(); i++) {
            Explained.Row r = explained.rows.get(i);
            boolean ran = entries.stream().anyMatch(e -> r.scenario().matcher(e.scenario.name()).matches()
                && e.version >= r.minVersion() && e.version <= r.maxVersion());
            if (!explained.used[i] && ran) {
                out.println("note: an explained difference was not seen in this run: " + r.glob() + " " + r.field());
            }
        }
    }

    void markdown(PrintWriter w, boolean versionsTable) {
        w.printf("# Differential run: Apache Kafka against Samsa%n%n");
        w.printf("%d scenario runs over %d APIs: %d identical, %d differ as COMPATIBILITY.md explains, %d differ unexplained.%n%n",
            entries.size(), apis(), identical(), explained(), unexplained());
        w.printf("Normalisation rules:%n%n");
        for (String r : Normalise.RULES) w.printf("- %s%n", r);
        if (versionsTable) {
            w.printf("%n| API | Kafka | Samsa |%n| --- | --- | --- |%n");
            for (Map.Entry<String, String[]> row : Differential.versionTable(kafka, samsa).entrySet()) {
                w.printf("| %s | %s | %s |%n", row.getKey(), row.getValue()[0], row.getValue()[1]);
            }
            w.printf("%n| feature | Kafka | Samsa |%n| --- | --- | --- |%n");
            for (Map.Entry<String, String[]> row : Differential.featureTable(kafka, samsa).entrySet()) {
                w.printf("| `%s` | %s | %s |%n", row.getKey(), row.getValue()[0], row.getValue()[1]);
            }
        }
        w.printf("%n## Differences%n");
        for (Entry e : entries) {
            if (e.outcome.identical()) continue;
            w.printf("%n### %s v%d (%s)%n%n", e.scenario.name(), e.version, e.scenario.api().name);
            for (Differential.Difference d : e.outcome.differences()) {
                w.printf("- `%s`: Kafka `%s`, Samsa `%s`%s%n", d.where(), d.kafka(), d.samsa(),
                    d.reason() == null ? "" : " (explained: " + d.reason() + ")");
            }
        }
        w.printf("%n## Exchanges%n");
        for (Entry e : entries) {
            w.printf("%n### %s v%d%n", e.scenario.name(), e.version);
            for (String[] x : e.outcome.exchanges()) {
                w.printf("%n- %s, %s%n  - request: `%s`%n  - kafka: `%s`%n  - samsa: `%s`%n", x[0], x[1], x[2], x[3], x[4]);
            }
        }
    }
}
