package differential;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.regex.Pattern;
import org.apache.kafka.common.protocol.ApiKeys;

/**
 * The differential harness: sends the same requests to Apache Kafka and to Samsa and
 * compares the decoded answers field by field (see scripts/reference/differential/README).
 *
 * <pre>
 * java differential.Differential --kafka HOST:PORT,... --kafka-controllers HOST:PORT,...
 *     --samsa HOST:PORT,... --samsa-controllers HOST:PORT,... [--explained COMPATIBILITY.md]
 *     [--report FILE] [--quick] [--only REGEX] [--versions-table]
 * </pre>
 *
 * Exit status 0 when every difference is explained in COMPATIBILITY.md, 1 otherwise.
 */
public final class Differential {
    public static void main(String[] args) throws Exception {
        Map<String, String> opts = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--quick") || a.equals("--versions-table")) {
                opts.put(a, "true");
            } else if (a.startsWith("--") && i + 1 < args.length) {
                opts.put(a, args[++i]);
            } else {
                throw new IllegalArgumentException("unknown argument " + a);
            }
        }
        boolean quick = opts.containsKey("--quick");
        Pattern only = opts.containsKey("--only") ? Pattern.compile(opts.get("--only")) : null;
        Explained explained = Explained.read(opts.get("--explained"));

        try (Peer kafka = new Peer("kafka", addresses(opts.get("--kafka")), addresses(opts.getOrDefault("--kafka-controllers", "")));
             Peer samsa = new Peer("samsa", addresses(opts.get("--samsa")), addresses(opts.getOrDefault("--samsa-controllers", "")))) {
            Report report = new Report(kafka, samsa);
            for (Scenario s : Scenarios.all()) {
                if (only != null && !only.matcher(s.name()).find()) continue;
                List<Short> versions = commonVersions(s, kafka, samsa);
                if (quick && versions.size() > 2) versions = List.of(versions.get(0), versions.get(versions.size() - 1));
                for (short v : versions) {
                    String id = s.name() + "-v" + v;
                    Ctx k = run(s, kafka, v, id);
                    Ctx m = run(s, samsa, v, id);
                    report.add(s, v, compare(s, v, k, m, explained));
                }
            }
            List<String> versions = new ArrayList<>(explained.checkVersions(versionTable(kafka, samsa)));
            // The features table describes one node formatted as the only voter of a dynamic
            // quorum (kraft.version is finalized there, not with static voters).
            if (kafka.nodes.size() == 1) versions.addAll(explained.checkFeatures(featureTable(kafka, samsa)));
            report.print(System.out, explained);
            for (String v : versions) System.out.println("API versions and features: " + v);
            if (opts.containsKey("--report")) {
                try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(Path.of(opts.get("--report"))))) {
                    report.markdown(w, opts.containsKey("--versions-table"));
                }
            }
            System.exit(report.unexplained() == 0 && versions.isEmpty() ? 0 : 1);
        }
    }

    static List<InetSocketAddress> addresses(String list) {
        List<InetSocketAddress> out = new ArrayList<>();
        if (list == null || list.isBlank()) return out;
        for (String a : list.split(",")) {
            int colon = a.lastIndexOf(':');
            out.add(new InetSocketAddress(a.substring(0, colon), Integer.parseInt(a.substring(colon + 1))));
        }
        return out;
    }

    /** The versions of the scenario's API that both peers serve, within its range. */
    static List<Short> commonVersions(Scenario s, Peer a, Peer b) {
        List<Short> out = new ArrayList<>();
        short[] ra = a.versions.get(s.api());
        short[] rb = b.versions.get(s.api());
        if (ra == null || rb == null) return out;
        for (short v = (short) Math.max(Math.max(ra[0], rb[0]), s.minVersion());
             v <= Math.min(Math.min(ra[1], rb[1]), s.maxVersion()); v++) {
            out.add(v);
        }
        return out;
    }

    static Ctx run(Scenario s, Peer peer, short version, String id) {
        Ctx c = new Ctx(peer, version, id);
        try {
            s.body().run(c);
        } catch (Ctx.ScenarioFailure | IOException e) {
            c.observed.add(new Observation("<setup>", s.api(), version, Json.F.nullNode(), Peer.Answer.failed(e.getMessage())));
        } catch (Exception e) {
            c.observed.add(new Observation("<setup>", s.api(), version, Json.F.nullNode(),
                Peer.Answer.failed(e.getClass().getSimpleName() + ": " + e.getMessage())));
        }
        return c;
    }

    /** One difference: where, both values, and its explanation if COMPATIBILITY.md has one. */
    record Difference(String where, String kafka, String samsa, String reason) {}

    record Outcome(List<Difference> differences, List<String[]> exchanges) {
        boolean identical() {
            return differences.isEmpty();
        }

        boolean explained() {
            return differences.stream().allMatch(d -> d.reason() != null);
        }
    }

    static Outcome compare(Scenario s, short v, Ctx kafka, Ctx samsa, Explained explained) {
        List<Difference> out = new ArrayList<>();
        List<String[]> exchanges = new ArrayList<>();
        Normalise nk = new Normalise(kafka);
        Normalise ns = new Normalise(samsa);
        int n = Math.max(kafka.observed.size(), samsa.observed.size());
        for (int i = 0; i < n; i++) {
            Observation ok = i < kafka.observed.size() ? kafka.observed.get(i) : null;
            Observation os = i < samsa.observed.size() ? samsa.observed.get(i) : null;
            String label = ok != null ? ok.label : os.label;
            if (ok == null || os == null || !ok.label.equals(os.label)) {
                String where = "/" + label;
                out.add(new Difference(where, shown(ok), shown(os),
                    explained.reason(s.name(), v, where)));
                continue;
            }
            // Masks of either side apply to both.
            for (Observation.Mask m : ok.masks) if (!os.masks.contains(m)) os.masks.add(m);
            for (Observation.Mask m : os.masks) if (!ok.masks.contains(m)) ok.masks.add(m);
            JsonNode a = nk.apply(ok);
            JsonNode b = ns.apply(os);
            if (kafka.peer.nodes.size() > 1) Normalise.placement(a, b);
            List<String[]> d = new ArrayList<>();
            Normalise.diff("", a, b, d);
            for (String[] x : d) {
                String where = "/" + label + x[0];
                out.add(new Difference(where, x[1], x[2], explained.reason(s.name(), v, where)));
            }
            exchanges.add(new String[] {label, ok.key.name + " v" + ok.version, ok.request.toString(), a.toString(), b.toString()});
        }
        return new Outcome(out, exchanges);
    }

    /** An observation where the other peer has another: its label, and why a setup failed. */
    private static String shown(Observation o) {
        if (o == null) return "(not reached)";
        return o.label.equals("<setup>") ? "<setup failed: " + o.answer.failure() + ">" : o.label;
    }

    /** Every feature either peer reports, with both ranges and finalized levels. */
    static Map<String, String[]> featureTable(Peer kafka, Peer samsa) {
        Map<String, String[]> rows = new java.util.TreeMap<>();
        TreeSet<String> names = new TreeSet<>(kafka.features.keySet());
        names.addAll(samsa.features.keySet());
        for (String n : names) {
            rows.put(n, new String[] {kafka.features.getOrDefault(n, "-"), samsa.features.getOrDefault(n, "-")});
        }
        return rows;
    }

    /** Every API either peer advertises, with both ranges. */
    static Map<String, String[]> versionTable(Peer kafka, Peer samsa) {
        Map<String, String[]> rows = new LinkedHashMap<>();
        TreeSet<ApiKeys> keys = new TreeSet<>((x, y) -> Short.compare(x.id, y.id));
        keys.addAll(kafka.versions.keySet());
        keys.addAll(samsa.versions.keySet());
        for (ApiKeys k : keys) {
            short[] a = kafka.versions.get(k);
            short[] b = samsa.versions.get(k);
            rows.put(k.id + " " + k.name, new String[] {a == null ? "-" : a[0] + "-" + a[1], b == null ? "-" : b[0] + "-" + b[1]});
        }
        return rows;
    }
}
