#!/usr/bin/env python3
"""Writes COMPATIBILITY.md from the suites' reports in target/compat/*.json (see report.py):
client and version down the side, features across, each cell "passed/ran" of the tests of that
suite that exercise the feature; then the known gaps, each failing test with a one-line
explanation, and what was skipped and why.

Which test exercises which feature is decided here, from the tests' names and sources:
LIBRDKAFKA by test id, the Python and Rust suites by patterns on their test names. A test
may count for several features (a produce-then-consume test counts for both) or for none
(configuration and client-only tests count in the total only). librdkafka's _local, _mock
and _ut tests never reach a broker and count for no feature.

    scripts/compat/matrix.py            # reads target/compat, writes COMPATIBILITY.md
"""
import json
import os
import re
import sys

from report import samsa_build

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
REPORTS = os.path.join(ROOT, "target", "compat")

FEATURES = [
    ("produce", "produce"), ("gzip", "gzip"), ("snappy", "snappy"), ("lz4", "lz4"), ("zstd", "zstd"),
    ("fetch", "fetch"), ("eager", "groups: eager"), ("cooperative", "groups: cooperative"),
    ("static", "static membership"), ("offsets", "offsets"), ("admin", "admin"),
    ("idempotence", "idempotence"), ("transactions", "transactions"), ("sasl", "SASL"), ("tls", "TLS"),
]
CODECS = {"gzip", "snappy", "lz4", "zstd"}

# The rows, in order: report file, client, what ran.
ROWS = [
    ("librdkafka-quick.json", "librdkafka", "regression suite, quick mode (`librdkafka.sh`)"),
    ("librdkafka-full.json", "librdkafka", "regression suite, full mode (`librdkafka.sh --full`)"),
    ("librdkafka-quick-idempotence.json", "librdkafka",
     "regression suite, enable.idempotence forced on (`librdkafka.sh --idempotence`)"),
    ("kafka-python.json", "kafka-python", "its integration tests (`kafka-python.sh`)"),
    ("rust-rdkafka.json", "rust-rdkafka", "its integration tests (`rust-rdkafka.sh`)"),
    ("confluent-kafka.json", "confluent-kafka-python", "(`confluent-kafka.sh`)"),
    ("librdkafka-quick-cluster3.json", "librdkafka",
     "**three nodes**: regression suite, quick mode (`librdkafka.sh --cluster 3`)"),
    ("librdkafka-quick-idempotence-cluster3.json", "librdkafka",
     "**three nodes**: regression suite, enable.idempotence forced on (`librdkafka.sh --idempotence --cluster 3`)"),
    ("kafka-python-cluster3.json", "kafka-python", "**three nodes**: its integration tests (`kafka-python.sh --cluster 3`)"),
    ("rust-rdkafka-cluster3.json", "rust-rdkafka", "**three nodes**: its integration tests (`rust-rdkafka.sh --cluster 3`)"),
    ("librdkafka-quick-security-cluster3-sasl_ssl.json", "librdkafka",
     "**three nodes, SASL_SSL**: its SSL and SASL tests and ordinary ones, every connection TLS and "
     "SCRAM-SHA-256, re-authenticating every 3 s (`librdkafka.sh --subset security --security sasl_ssl "
     "--cluster 3`)"),
    # The reference clients and tools (issue 39): Kafka's own, and the Go clients.
    ("java-client.json", "Kafka's Java client", "a JUnit suite of the Admin API, producers, "
     "classic and share consumers, transactions (`java-client.sh`)"),
    ("java-client-cluster3.json", "Kafka's Java client", "**three nodes**: the same (`java-client.sh --cluster 3`)"),
    ("kafka-tools.json", "Kafka's CLI tools", "each command users run, its output checked (`kafka-tools.sh`)"),
    ("kafka-tools-cluster3.json", "Kafka's CLI tools", "**three nodes**: the same, with reassignment "
     "and leader election (`kafka-tools.sh --cluster 3`)"),
    ("kafka-workloads.json", "Kafka Streams, Connect, MirrorMaker 2", "exactly-once Streams across "
     "SIGKILLs, distributed Connect across a worker restart, MirrorMaker 2 both ways (`kafka-workloads.sh`)"),
    ("kafka-workloads-cluster3.json", "Kafka Streams, Connect, MirrorMaker 2",
     "**three nodes**: the same (`kafka-workloads.sh --cluster 3`)"),
    ("franz-go.json", "franz-go", "its own kgo integration suite (`franz-go.sh`)"),
    ("franz-go-cluster3.json", "franz-go", "**three nodes**: the same at replication factor 3 (`franz-go.sh --cluster 3`)"),
    ("sarama.json", "Sarama", "producers, consumers, groups, offsets, admin, transactions (`sarama.sh`)"),
    ("sarama-cluster3.json", "Sarama", "**three nodes**: the same (`sarama.sh --cluster 3`)"),
]

# The suites that also run against the reference Kafka (`--kafka`): report file stem, label.
BESIDE_KAFKA = [
    ("java-client", "Kafka's Java client 4.4.0 (`java-client.sh`)"),
    ("kafka-tools", "Kafka's CLI tools 4.4.0 (`kafka-tools.sh`)"),
    ("kafka-workloads", "Kafka Streams, Connect, MirrorMaker 2 (`kafka-workloads.sh`)"),
    ("franz-go", "franz-go v1.22.3's kgo suite (`franz-go.sh`)"),
    ("sarama", "Sarama v1.61.1 (`sarama.sh`)"),
]


def ids(*specs):
    """ids("0001", "0005-0008") -> {"0001", "0005", "0006", "0007", "0008"}"""
    out = set()
    for spec in specs:
        lo, _, hi = spec.partition("-")
        for i in range(int(lo), int(hi or lo) + 1):
            out.add("%04d" % i)
    return out


# librdkafka test id -> features, from the tests' sources (tests/0xxx-*.c, *.cpp).
LIBRDKAFKA = {}
for feature, members in {
    "produce": ids("0001-0003", "0005", "0007", "0008", "0011-0014", "0017", "0021", "0048", "0052",
                   "0055", "0064", "0068", "0070", "0073-0076", "0085", "0086", "0088", "0090",
                   "0092", "0094", "0110", "0114", "0125", "0142"),
    "fetch": ids("0012-0015", "0022", "0026", "0029", "0034", "0036", "0041", "0047", "0049",
                 "0051", "0067", "0070", "0073", "0082", "0093", "0112", "0127", "0137", "0142"),
    "gzip": ids("0017"), "snappy": ids("0017"), "lz4": ids("0017"), "zstd": ids("0017"),
    "eager": ids("0018", "0033", "0045", "0050", "0056", "0061", "0069", "0089", "0091", "0106",
                 "0116", "0118", "0120", "0122", "0132", "0153"),
    "cooperative": ids("0050", "0113", "0120", "0122"),
    "static": ids("0102"),
    "offsets": ids("0015", "0029-0031", "0034", "0054", "0099", "0118", "0130", "0140"),
    "admin": ids("0019", "0044", "0063", "0081", "0107", "0121"),
    "idempotence": ids("0090", "0094"),
    "transactions": ids("0098", "0103", "0129", "0142"),
    # The tests that need a SASL or TLS listener (they skip without one); the client-only
    # SSL/SASL tests (0124, 0128, 0133, 0134) reach no broker and count for neither.
    "sasl": ids("0126", "0135", "0142"),
    "tls": ids("0097"),
}.items():
    for i in members:
        LIBRDKAFKA.setdefault(i, set()).add(feature)

# librdkafka tests that never reach a broker although their names do not end in _local, _mock
# or _ut (TEST_F_LOCAL in tests/test.c): in a report of a run over a secured listener
# (`librdkafka.sh --security`), every other test counts for SASL and/or TLS as well.
LIBRDKAFKA_LOCAL = {
    "0004_conf", "0006_symbols", "0025_timers", "0039_event", "0039_event_log", "0043_no_connection",
    "0046_rkt_cache", "0053_stats_timing", "0058_log", "0062_stats_event", "0074_producev",
    "0078_c_from_cpp", "0095_all_brokers_down", "0100_thread_interceptors", "0106_cgrp_sess_timeout",
    "0116_kafkaconsumer_close", "0120_asymmetric_subscription", "0121_clusterid",
    "0124_openssl_invalid_engine", "0128_sasl_callback_queue", "0131_connect_timeout", "0133_ssl_keys",
    "0134_ssl_provider", "0136_resolve_cb",
}

# (pattern on the test id, features) for the suites whose names say what they test.
KAFKA_PYTHON = [
    (r"test_producer_integration\.py::test_(end_to_end|kafka_producer_proper)", {"produce"}),
    (r"test_end_to_end", {"fetch"}),
    (r"\[(gzip|snappy|lz4|zstd)\]", None),  # the codec in the parameter
    (r"test_idempotent", {"produce", "idempotence"}),
    (r"test_transactional", {"produce", "transactions"}),
    (r"test_consumer_integration\.py::test_(consumer|paused|kafka_consumer)", {"fetch"}),
    (r"offset_commit|offsets_for_time|offsets_search|seek_to_end", {"offsets"}),
    (r"test_consumer_integration\.py::test_(group|heartbeat_thread)", {"eager"}),
    (r"test_admin_integration\.py::", {"admin"}),
    (r"test_sasl_integration", {"sasl"}),
    (r"test_ssl_integration", {"tls"}),
]
RUST_RDKAFKA = [
    (r"^test_admin::", {"admin"}),
    (r"^test_(high|low)_producers::", {"produce"}),
    (r"^test_(high|low)_consumers::", {"produce", "fetch"}),
    (r"^test_high_consumers::test_(produce_consume_base|consume_partition_order|produce_consume_with)",
     {"eager"}),
    (r"commit|store_offset", {"offsets"}),
    (r"^test_metadata::test_(metadata|subscription)", {"produce"}),
    (r"^test_metadata::test_group_membership", {"eager"}),
    (r"^test_transactions::", {"produce", "transactions"}),
    (r"^utils::", {"produce"}),
]
JAVA_CLIENT = [
    (r"^ProducerTest#", {"produce"}),
    (r"^ProducerTest#codec(Gzip|Snappy|Lz4|Zstd)", None),
    (r"^ProducerTest#idempotent", {"idempotence"}),
    (r"^(ConsumerTest|RebalanceTest|ShareConsumerTest)#", {"fetch"}),
    (r"^RebalanceTest#(eager|everyRecord)", {"eager"}),
    (r"^RebalanceTest#cooperative", {"cooperative"}),
    (r"^RebalanceTest#static", {"static"}),
    (r"commit|Commit|offsetsForTimes|seek|Offsets", {"offsets"}),
    (r"^Admin", {"admin"}),
    (r"^TransactionsTest#", {"transactions"}),
]
KAFKA_TOOLS = [
    (r"^(topics|configs|log-dirs|features|metadata-quorum|acls|cluster|leader-election|reassign)", {"admin"}),
    (r"^(console|perf|verifiable)", {"produce", "fetch"}),
    (r"^groups\.", {"offsets"}),
    (r"^transactions\.|transactional", {"transactions"}),
]
KAFKA_WORKLOADS = [
    (r"^streams", {"produce", "fetch", "transactions", "eager"}),
    (r"^(connect|mirrormaker)", {"produce", "fetch", "offsets"}),
]
FRANZ_GO = [
    (r"^(TestGroupETL|TestTxnEtl|TestClient_Produce|TestIssue|TestConsume)", {"produce", "fetch"}),
    (r"^TestGroupETL/(range|roundrobin|sticky)", {"eager"}),
    (r"^TestGroupETL/cooperative", {"cooperative"}),
    (r"^TestTxnEtl", {"transactions", "offsets"}),
    (r"^TestGroupETL", {"offsets"}),
    (r"^(TestGroupETL|TestTxnEtl)/.*/static", {"static"}),
    (r"^(TestSCRAMAuth|TestOAuthAuth)", {"sasl"}),
]
SARAMA = [
    (r"^Test(Sync|Async)Producer", {"produce"}),
    (r"^Test(Sync|Async)Producer/(gzip|snappy|lz4|zstd)", None),
    (r"^TestSyncProducer", {"idempotence"}),
    (r"^Test(PartitionConsumer|ConsumerGroup)", {"fetch"}),
    (r"^TestConsumerGroup/(range|roundrobin|sticky)$", {"eager"}),
    (r"^TestConsumerGroup/cooperative", {"cooperative"}),
    (r"^TestConsumerGroupStatic", {"static"}),
    (r"Offset|Resume", {"offsets"}),
    (r"^TestAdmin|^TestMetadata", {"admin"}),
    (r"^TestTransactional", {"produce", "transactions"}),
]
PATTERNS = {"kafka-python": KAFKA_PYTHON, "rust-rdkafka": RUST_RDKAFKA, "java-client": JAVA_CLIENT,
            "kafka-tools": KAFKA_TOOLS, "kafka-workloads": KAFKA_WORKLOADS, "franz-go": FRANZ_GO,
            "sarama": SARAMA}


def features_of(suite, test, security=None):
    """`security`: the report's "security" entry, {"protocol": "SASL_SSL", ...}, when its tests
    ran over a secured listener."""
    if suite == "librdkafka":
        name = test.get("name") or ""
        if re.search(r"_(local|mock|ut)$|_mock_|^0009", name):
            return set()
        out = set(LIBRDKAFKA.get(test.get("id", name[:4]), set()))
        protocol = (security or {}).get("protocol") or "PLAINTEXT"
        if name not in LIBRDKAFKA_LOCAL:
            if protocol in ("SSL", "SASL_SSL"):
                out.add("tls")
            if protocol.startswith("SASL"):
                out.add("sasl")
        return out
    out = set()
    for pattern, feats in PATTERNS.get(suite, []):
        m = re.search(pattern, test["id"])
        if m:
            out |= feats if feats is not None else {m.group(1)}
    return out


REPLICATION_FACTOR_3 = (
    "creates its topics with replication factor 3 (librdkafka's trivup cluster has three brokers); "
    "a single node answers INVALID_REPLICATION_FACTOR, as Kafka with one broker does (the rows "
    "against three nodes run it)")

# Known gaps: (suite, pattern on the test name, explanation). A failing test without an entry
# is listed with the failure the runner recorded, marked "not yet explained".
KNOWN_GAPS = [
    ("librdkafka", r"_mock(_|$)",
     "runs against librdkafka's in-process mock cluster, not against Samsa, so its outcome says "
     "nothing about Samsa (seen: timing assertions of the client missed on a loaded two-core machine)"),
    ("librdkafka", r"^(0101_fetch_from_follower|0103_transactions)", None),
    ("rust-rdkafka", r"test_base_producer_timeout",
     "expects 10 records to time out after message.timeout.ms=100 while Kafka creates the topic; "
     "Samsa creates topics synchronously on Metadata, so they are usually delivered in time (the "
     "test passes when creation and delivery take over 100 ms, as with a debug build under load)"),
]


# What a failing test's reason or log says when it failed for a known gap (the client names the
# missing broker feature).
KNOWN_SIGNATURES = [
    (r"test_run_java\(TransactionProducerCli\): KAFKA_PATH must be set",
     "writes its transactions with Kafka's Java TransactionProducerCli, which needs KAFKA_PATH (a "
     "Kafka installation: not installable from the package registries the tests may use), so "
     "nothing is written and it reads 0 of 9 records; a gap of the test environment, not of Samsa "
     "(0103_transactions runs transactions through librdkafka's own producer)"),
    (r"full create-produce-destroy cycle: expected duration 0 <= \d+ <= 999 ms",
     "a timing bound of the test (a producer's create-produce-destroy cycle within 999 ms) missed "
     "on a loaded two-core machine: 1,018 ms in the run beside other work; 15-137 ms when run "
     "alone (`librdkafka.sh --idempotence --tests 0001`, three runs, all passed)"),
    (r"do_test_DescribeConsumerGroups.*\n?.*Failed to delete groups: Broker: The group is not empty",
     "a race in the test: its static members' sessions are 6 s (test_create_consumer overrides the "
     "subtest's 5 s), their final OffsetCommit at close refreshes the session as Kafka's coordinator "
     "does, and the test deletes the groups exactly 6 s after closing them; when the DeleteGroups "
     "arrives a few milliseconds before the expiry the group is still Stable (NON_EMPTY_GROUP)"),
]


def explain(suite, test):
    reason = " ".join((test.get("reason") or "").split())
    # A single node refuses replication factor 3 before anything else happens.
    if "larger than the 1 available brokers" in reason:
        return REPLICATION_FACTOR_3
    for s, pattern, text in KNOWN_GAPS:
        if s in ("*", suite) and re.search(pattern, test["name"]):
            return text or REPLICATION_FACTOR_3
    texts = [reason]
    log = test.get("log")
    # librdkafka's logs are one per test id; the other suites' are shared by many tests.
    if suite == "librdkafka" and log and os.path.exists(log):
        with open(log, errors="replace") as f:
            texts.append(f.read())
    for pattern, text in KNOWN_SIGNATURES:
        if any(re.search(pattern, t) for t in texts):
            return text
    return "not yet explained; the runner recorded: " + (reason[:200] or "no reason")


def short(name):
    """A test's name without the folder every test of its suite shares."""
    return name[len("test/integration/"):] if name.startswith("test/integration/") else name


def load(file):
    path = os.path.join(REPORTS, file)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def cell(tests):
    ran = [t for t in tests if t["state"] != "SKIPPED"]
    passed = sum(1 for t in ran if t["state"] == "PASSED")
    if not ran:
        return "skipped" if tests else "–"
    mark = "" if passed == len(ran) else " ✗"
    return "%d/%d%s" % (passed, len(ran), mark)


def beside_kafka():
    """Each reference suite's counts and wall time on Samsa and on Kafka, one node and three."""
    out = ["## The reference clients and tools, on Samsa and on Kafka 4.4", "",
           "The same suites run against Apache Kafka 4.4 (`--kafka`, the Kafka of "
           "`scripts/reference/kafka`, same settings) on the same machine; each cell is passed/ran "
           "(skipped) and the suite's wall time, start of the brokers included where the runner "
           "measures it.", "",
           "| suite | Samsa, 1 node | Samsa, 3 nodes | Kafka, 1 node | Kafka, 3 nodes |",
           "|---|---|---|---|---|"]
    for stem, label in BESIDE_KAFKA:
        row = [label]
        for suffix in ("", "-cluster3", "-kafka", "-cluster3-kafka"):
            report = load(stem + suffix + ".json")
            if report is None:
                row.append("not run")
                continue
            tests = report["tests"]
            ran = [t for t in tests if t["state"] != "SKIPPED"]
            passed = sum(1 for t in ran if t["state"] == "PASSED")
            text = "%d/%d" % (passed, len(ran)) + ("" if passed == len(ran) else " ✗")
            skipped = len(tests) - len(ran)
            if skipped:
                text += " (%d skipped)" % skipped
            if report.get("wall_s"):
                text += ", %d s" % round(report["wall_s"])
            row.append(text)
        out.append("| " + " | ".join(row) + " |")
    out.append("")
    return out


def previous_sections(path):
    """The rows of the file being replaced, by their suite text, with their known-gaps and
    skipped-tests sections: {what: {"row", "gaps", "skips"}}."""
    try:
        with open(path) as f:
            lines = f.read().split("\n")
    except OSError:
        return {}
    out = {}
    for _, _, what in ROWS:
        row = next((l for l in lines if l.startswith("| ") and (
            "| %s; engine" % what in l or "| %s | no runnable suite" % what in l)), None)
        if row is None:
            continue
        client = row[2:].split(" | ", 1)[0]
        notes = [l[2:] for l in lines if l.startswith("- **%s**: " % client)]
        entry = {"row": row, "gaps": [], "skips": [], "notes": notes if "no runnable suite" in row else []}
        for i, line in enumerate(lines):
            m = re.match(r"### .*?: (.*) \((\d+) (failing|skipped)\)$", line)
            if not m or m.group(1) != what:
                continue
            j = i + 1
            while j < len(lines) and not lines[j].startswith(("#", "<!--")):
                j += 1
            section = lines[i:j]
            entry["gaps" if m.group(3) == "failing" else "skips"].extend(section)
        out[what] = entry
    return out


def main():
    build = samsa_build()
    out = []
    out.append("# Compatibility")
    out.append("")
    out.append("Generated by `scripts/compat/matrix.py` from the reports of `scripts/compat/all.sh` "
               "(written at Samsa %s, %s; each row names the Samsa commit its run tested). Do not "
               "edit by hand: run `scripts/compat/all.sh`." % (
                   build["commit"], build["date"]))
    out.append("")
    out.append("Each row is a client's own test suite run against one Samsa node, or against a "
               "cluster of three (`samsa cluster local --nodes 3`) where it says **three nodes**; each cell is "
               "*passed/ran* for the tests of that suite that exercise the feature (✗: some failed; "
               "–: no test of that suite exercises it; skipped: its tests could not run here, see "
               "below). *all* counts every test, including those that exercise none of the columns.")
    out.append("")
    header = ["client", "suite", "all"] + [label for _, label in FEATURES]
    out.append("| " + " | ".join(header) + " |")
    out.append("|" + "---|" * len(header))
    gaps, skips, notes = [], [], []
    previous = previous_sections(os.path.join(ROOT, "COMPATIBILITY.md"))
    for file, client, what in ROWS:
        report = load(file)
        if report is None:
            # Not run here: the row and its sections from the last run that had it, which name
            # the Samsa commit they tested.
            kept = previous.get(what)
            if kept:
                out.append(kept["row"])
                notes.extend(kept["notes"])
                gaps.extend(kept["gaps"])
                skips.extend(kept["skips"])
            else:
                out.append("| %s | %s | not run | %s |" % (client, what, " | ".join("" for _ in FEATURES)))
            continue
        suite = report["suite"]
        version = report.get("version", "?")
        if report.get("unavailable"):
            out.append("| %s %s | %s | no runnable suite (below) | %s |" % (
                client, version, what, " | ".join("" for _ in FEATURES)))
            notes.append("**%s %s**: %s" % (client, version, report["unavailable"]))
            continue
        tests = report["tests"]
        build = report.get("samsa")
        tested = ("Samsa %s, %s" % (build["commit"], build["date"]) if build
                  else "Samsa build not recorded (before reports kept it)")
        row = ["%s %s" % (client, version),
               "%s; engine %s; %s" % (what, report.get("engine", "auto"), tested), cell(tests)]
        for key, _ in FEATURES:
            row.append(cell([t for t in tests if key in features_of(suite, t, report.get("security"))]))
        out.append("| " + " | ".join(row) + " |")
        failed = [t for t in tests if t["state"] not in ("PASSED", "SKIPPED")]
        if failed:
            gaps.append("### %s %s: %s (%d failing)" % (client, version, what, len(failed)))
            gaps.append("")
            by_reason = {}
            for t in failed:
                by_reason.setdefault(explain(suite, t), []).append(t["name"])
            for reason, names in by_reason.items():
                gaps.append("- %s: %s" % (reason, ", ".join("`%s`" % short(n) for n in names)))
            gaps.append("")
        skipped = [t for t in tests if t["state"] == "SKIPPED"]
        if skipped:
            by_reason = {}
            for t in skipped:
                reason = " ".join((t.get("reason") or "").split()) or "skipped by the suite itself " \
                    "(its own requirement checks: SSL/SASL settings, mock-only or local-only features)"
                by_reason.setdefault(reason, []).append(t["name"])
            skips.append("### %s %s: %s (%d skipped)" % (client, version, what, len(skipped)))
            skips.append("")
            for reason, names in by_reason.items():
                skips.append("- %s: %s" % (reason, ", ".join("`%s`" % short(n) for n in names)))
            skips.append("")
    out.append("")
    if notes:
        out.append("## Clients without a runnable suite")
        out.append("")
        out.extend("- " + n for n in notes)
        out.append("")
    out.extend(beside_kafka())
    out.append("## Known gaps")
    out.append("")
    out.extend(gaps or ["None: every test that ran passed.", ""])
    out.append("## Skipped tests")
    out.append("")
    out.extend(skips or ["None.", ""])
    path = os.path.join(ROOT, "COMPATIBILITY.md")
    tail = kept_tail(path)
    with open(path, "w") as f:
        f.write("\n".join(out).rstrip() + "\n" + tail)
    print("matrix.py: wrote %s" % path)


# From this line on, COMPATIBILITY.md is written by hand (the comparison with Apache Kafka, whose
# table of explained differences scripts/reference/compare reads); this script keeps it.
HAND_WRITTEN = "<!-- hand-written below: scripts/compat/matrix.py keeps it -->"


def kept_tail(path):
    """The hand-written part of the file being replaced, from its marker line on."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return ""
    at = text.find(HAND_WRITTEN)
    return "" if at < 0 else "\n" + text[at:].rstrip() + "\n"


if __name__ == "__main__":
    sys.exit(main())
