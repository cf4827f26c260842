package differential;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The differences COMPATIBILITY.md explains: the rows of its table between
 * `<!-- differential:explained -->` and `<!-- /differential:explained -->`, each
 * `| scenario | field | versions | reason |`. `scenario` is a glob over scenario names (`*` any
 * characters); `field` a path pattern over `/label/path/in/answer` (`*` one step, `**` any
 * depth); `versions` is `all`, `N`, `N+` or `N-M`.
 */
final class Explained {
    record Row(Pattern scenario, String field, int minVersion, int maxVersion, String reason, String glob) {}

    final List<Row> rows = new ArrayList<>();
    /** The API version table COMPATIBILITY.md states (between `<!-- differential:versions -->`
     *  markers): `| N Name | Kafka's range | Samsa's range | why they differ |`, by `N Name`. */
    final java.util.Map<String, String[]> versions = new java.util.LinkedHashMap<>();
    /** The feature table (`<!-- differential:features -->`): `| name | Kafka's | Samsa's | why |`,
     *  each side `min-max, finalized N` or `-` when the broker does not know the feature. */
    final java.util.Map<String, String[]> features = new java.util.LinkedHashMap<>();
    /** Rows that matched no difference in this run (a fixed difference left listed). */
    final boolean[] used;

    private Explained(List<Row> rows) {
        this.rows.addAll(rows);
        this.used = new boolean[rows.size()];
    }

    static Explained read(String file) throws IOException {
        List<Row> rows = new ArrayList<>();
        java.util.Map<String, String[]> versions = new java.util.LinkedHashMap<>();
        java.util.Map<String, String[]> features = new java.util.LinkedHashMap<>();
        if (file != null) {
            boolean inside = false, inVersions = false, inFeatures = false;
            for (String line : Files.readAllLines(Path.of(file))) {
                if (line.contains("<!-- differential:explained -->")) inside = true;
                else if (line.contains("<!-- /differential:explained -->")) inside = false;
                else if (line.contains("<!-- differential:versions -->")) inVersions = true;
                else if (line.contains("<!-- /differential:versions -->")) inVersions = false;
                else if (inside && line.startsWith("| `")) rows.add(parse(line));
                else if (line.contains("<!-- differential:features -->")) inFeatures = true;
                else if (line.contains("<!-- /differential:features -->")) inFeatures = false;
                else if (inVersions && line.matches("\\| \\d+ .*")) tableRow(line, versions);
                else if (inFeatures && line.matches("\\| `.*")) tableRow(line, features);
            }
        }
        Explained e = new Explained(rows);
        e.versions.putAll(versions);
        e.features.putAll(features);
        return e;
    }

    /** `| key | Kafka's | Samsa's | why |` into `table`, the key's backquotes dropped. */
    private static void tableRow(String line, java.util.Map<String, String[]> table) {
        String[] cells = line.substring(1, line.lastIndexOf('|')).split("\\|", 4);
        if (cells.length != 4) throw new IllegalArgumentException("COMPATIBILITY.md: not a row of four cells: " + line);
        table.put(strip(cells[0]), new String[] {cells[1].trim(), cells[2].trim(), cells[3].trim()});
    }

    private static Row parse(String line) {
        String[] cells = line.substring(1, line.lastIndexOf('|')).split("\\|", 4);
        if (cells.length != 4) throw new IllegalArgumentException("COMPATIBILITY.md: not a row of four cells: " + line);
        String scenario = strip(cells[0]);
        String field = strip(cells[1]);
        String versions = cells[2].trim();
        int min = 0, max = Integer.MAX_VALUE;
        if (!versions.equals("all")) {
            if (versions.endsWith("+")) {
                min = Integer.parseInt(versions.substring(0, versions.length() - 1));
            } else if (versions.contains("-")) {
                min = Integer.parseInt(versions.split("-")[0]);
                max = Integer.parseInt(versions.split("-")[1]);
            } else {
                min = max = Integer.parseInt(versions);
            }
        }
        Pattern p = Pattern.compile(Pattern.quote(scenario).replace("*", "\\E.*\\Q"));
        return new Row(p, field, min, max, cells[3].trim(), scenario);
    }

    private static String strip(String cell) {
        String s = cell.trim();
        if (s.startsWith("`") && s.endsWith("`")) s = s.substring(1, s.length() - 1);
        return s;
    }

    /**
     * How the brokers' live API version ranges (`live`: `N Name` to Kafka's and Samsa's) differ
     * from the table COMPATIBILITY.md states: each line one API whose row is missing, shows
     * other ranges, or differs without a reason. Empty when the table holds.
     */
    List<String> checkVersions(java.util.Map<String, String[]> live) {
        return check(versions, live, false);
    }

    /** As {@link #checkVersions}, for the feature table. */
    List<String> checkFeatures(java.util.Map<String, String[]> live) {
        return check(features, live, true);
    }

    private static List<String> check(java.util.Map<String, String[]> stated_, java.util.Map<String, String[]> live, boolean quoted) {
        List<String> out = new ArrayList<>();
        if (stated_.isEmpty()) return out;
        for (java.util.Map.Entry<String, String[]> e : live.entrySet()) {
            String[] l = e.getValue();
            String[] stated = stated_.get(e.getKey());
            String row = "| " + (quoted ? "`" + e.getKey() + "`" : e.getKey()) + " | " + l[0] + " | " + l[1] + " | " + (stated == null ? "" : stated[2]) + " |";
            if (stated == null) {
                out.add("no row for " + e.getKey() + "; it would be " + row);
            } else if (!stated[0].equals(l[0]) || !stated[1].equals(l[1])) {
                out.add(e.getKey() + " is stated Kafka " + stated[0] + ", Samsa " + stated[1] + "; the brokers answer " + row);
            } else if (!l[0].equals(l[1]) && stated[2].isEmpty()) {
                out.add(e.getKey() + ": the ranges differ and the row does not say why: " + row);
            }
        }
        for (String api : stated_.keySet()) {
            if (!live.containsKey(api)) out.add(api + " is stated, and neither broker has it");
        }
        return out;
    }

    /** Why this difference is allowed, or null. */
    String reason(String scenario, short version, String where) {
        for (int i = 0; i < rows.size(); i++) {
            Row r = rows.get(i);
            if (version >= r.minVersion && version <= r.maxVersion && r.scenario.matcher(scenario).matches()
                && Normalise.Paths.matches(r.field, where)) {
                used[i] = true;
                return r.reason;
            }
        }
        return null;
    }
}
