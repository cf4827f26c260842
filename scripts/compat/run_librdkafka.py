#!/usr/bin/env python3
"""Runs librdkafka's test-runner against a Samsa broker started here, one test id per runner
invocation (a test that hits its timeout ends the whole runner, and every later test would
report "did not start"), each under its own time limit, and adds the reports up.

Called by scripts/compat/librdkafka.sh, which builds the runner first."""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from report import read_list, samsa_build
from samsa_broker import Broker, Cluster

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))

# Broker settings the suite expects, through Samsa's ordinary configuration (trivup, which
# librdkafka's CI uses, sets the same): auto-created topics get 4 partitions; short session
# timeouts are allowed. The initial rebalance delay stays at Kafka's 3 s: tests such as 0102,
# 0113 and 0118 assume both of their consumers land in the first generation.
BROKER_PROPS = {
    "num.partitions": "4",
    "auto.create.topics.enable": "true",
    "group.min.session.timeout.ms": "1000",
    "transaction.max.timeout.ms": "900000",
    "offsets.topic.num.partitions": "4",
    "transaction.state.log.num.partitions": "4",
    # trivup runs Kafka with an authorizer; 0081 creates, describes and deletes ACLs and
    # checks authorized operations. Everyone is allowed where no ACL names the resource.
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
}
# A cluster is set up as librdkafka's own (tests/cluster_testing.py): broker i in rack RACK<i>,
# and leaders that send a consumer to the replica in its client.rack (0101 checks it).
CLUSTER_PROPS = {
    "replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector",
}
CLUSTER_RACK_PREFIX = "RACK"
TEST_KAFKA_VERSION = "4.0.0"
# Checks a test makes only by printing a line (0101's `test_assert` says and goes on, so the
# test passes whichever broker served the records): such a line in its log fails it here.
SOFT_ASSERTIONS = {
    "0101": ["rxbytes was not highest on broker corresponding to client.rack",
             "expecting rxbytes of client.rack broker to be at least"],
}


def all_test_ids(runner_dir):
    ids = set()
    # Tests linked into the runner (sources that are not, like 1000-unktopic.c, have no object).
    for path in glob.glob(os.path.join(runner_dir, "[0-9][0-9][0-9][0-9]-*.o")):
        ids.add(os.path.basename(path)[:4])
    # 0000 is librdkafka's unit tests (no broker) and 8xxx are manual tests.
    return sorted(i for i in ids if i != "0000" and not i.startswith("8"))


def run_one(tid, runner_dir, args, conf_path, workdir):
    """Runs one test id; returns a list of (test name, state, duration, reason)."""
    env = dict(os.environ)
    env.update({
        "TESTS": tid,
        "TEST_KAFKA_VERSION": TEST_KAFKA_VERSION,
        "RDKAFKA_TEST_CONF": conf_path,
        "LD_LIBRARY_PATH": "../src:../src-cpp",
    })
    env.pop("KAFKA_PATH", None)
    for f in glob.glob(os.path.join(runner_dir, "test_report_*.json")):
        os.remove(f)
    cmd = ["./test-runner", "-r"] + (["-Q"] if not args.full else []) + (["-P"] if args.idempotence else [])
    log_path = os.path.join(workdir, "test-%s.log" % tid)
    with open(log_path, "w") as log:
        started = time.time()
        try:
            proc = subprocess.run(cmd, cwd=runner_dir, env=env, stdout=log, stderr=subprocess.STDOUT,
                                  timeout=args.timeout)
            code = proc.returncode
        except subprocess.TimeoutExpired:
            code = None
        elapsed = time.time() - started
    # The report this run wrote is the one its log names; another runner working in the same
    # folder (two modes at once) may have left its own there.
    with open(log_path, errors="replace") as f:
        named = re.findall(r"Test report written to (test_report_\d+\.json)", f.read())
    reports = [os.path.join(runner_dir, named[-1])] if named else []
    reports = [r for r in reports if os.path.exists(r)]
    results = []
    if reports:
        with open(reports[0]) as f:
            try:
                report = json.load(f)
            except json.JSONDecodeError:
                report = {}
        for name, t in (report.get("tests") or {}).items():
            # The report lists every registered test; only this id's ran.
            if not name.startswith(tid):
                continue
            state = t.get("state", "?")
            results.append((name, state, float(t.get("duration") or 0), t.get("failure") or ""))
    if not results:
        reason = "timed out after %d s" % args.timeout if code is None else "exit status %s, no report" % code
        results.append((tid, "FAILED", elapsed, reason))
    elif code is None:
        results = [(n, "FAILED" if s in ("RUNNING", "PASSED") else s, d, r or "runner timed out") for n, s, d, r in results]
    with open(log_path, errors="replace") as f:
        text = f.read()
    said = [line for line in SOFT_ASSERTIONS.get(tid, []) if line in text]
    if said:
        results = [(n, "FAILED" if s == "PASSED" else s, d, r or "; ".join(said)) for n, s, d, r in results]
    # The failure reason from the log when the report has none.
    final = []
    for name, state, dur, reason in results:
        if state == "FAILED" and not reason:
            with open(log_path, errors="replace") as f:
                m = re.findall(r"Test assertion failed: (.*)|(timed out.*)", f.read())
            if m:
                reason = (m[-1][0] or m[-1][1]).strip()
        final.append((name, state, dur, reason))
    return final, log_path


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runner-dir", required=True)
    p.add_argument("--samsa", required=True)
    p.add_argument("--full", action="store_true", help="run without quick mode (-Q)")
    p.add_argument("--idempotence", action="store_true", help="run with -P (enable.idempotence=true)")
    p.add_argument("--subset", help="run the tests listed in librdkafka-<subset>.txt")
    p.add_argument("--tests", help="comma-separated test ids")
    p.add_argument("--cluster", type=int, default=0,
                   help="run against this many Samsa nodes (samsa cluster local) instead of one")
    p.add_argument("--timeout", type=int,
                   help="seconds per test id (default 300 in quick mode, 900 in full mode: 0081 alone "
                        "takes about 7 minutes there)")
    args = p.parse_args()
    if args.timeout is None:
        args.timeout = 900 if args.full else 300

    runner_dir = os.path.abspath(args.runner_dir)
    skip = read_list(os.path.join(HERE, "librdkafka-skip.txt"))
    if args.tests:
        ids = [t.strip() for t in args.tests.split(",") if t.strip()]
    elif args.subset:
        subset = read_list(os.path.join(HERE, "librdkafka-%s.txt" % args.subset))
        # Tests marked `cluster` need three brokers: a single broker does not run them.
        ids = [t for t, note in subset.items() if args.cluster or not note.startswith("cluster")]
    else:
        ids = all_test_ids(runner_dir)
    mode = "full" if args.full else "quick"
    if args.idempotence:
        mode += "-idempotence"
    if args.subset:
        mode += "-" + args.subset
    if args.cluster:
        mode += "-cluster%d" % args.cluster

    workdir = tempfile.mkdtemp(prefix="samsa-librdkafka-")

    def start(workdir):
        if args.cluster:
            return Cluster(os.path.abspath(args.samsa), workdir, args.cluster,
                           dict(BROKER_PROPS, **CLUSTER_PROPS), rack_prefix=CLUSTER_RACK_PREFIX)
        return Broker(os.path.abspath(args.samsa), workdir, BROKER_PROPS)

    broker = start(workdir)
    conf_path = os.path.join(workdir, "test.conf")
    with open(conf_path, "w") as f:
        f.write("bootstrap.servers=%s\n" % broker.bootstrap)
    engine = os.environ.get("SAMSA_IO_ENGINE", "auto")
    print("librdkafka: %d test ids, %s mode, broker %s (io engine %s), logs in %s" % (
        len(ids), mode, broker.bootstrap, engine, workdir), flush=True)

    summary = {"suite": "librdkafka", "version": "2.12.1", "mode": mode, "engine": engine,
               "samsa": samsa_build(), "tests": []}
    passed = failed = skipped = 0
    try:
        for tid in ids:
            if tid in skip:  # a whole test id
                summary["tests"].append({"id": tid, "name": tid, "state": "SKIPPED", "reason": skip[tid]})
                skipped += 1
                continue
            if not broker.alive():
                print("librdkafka: samsa died before test %s; restarting it (see %s)" % (tid, broker.log_path), flush=True)
                broker = start(tempfile.mkdtemp(prefix="samsa-librdkafka-"))
                with open(conf_path, "w") as f:
                    f.write("bootstrap.servers=%s\n" % broker.bootstrap)
            results, log_path = run_one(tid, runner_dir, args, conf_path, workdir)
            for name, state, dur, reason in results:
                if name in skip and state == "FAILED":
                    state, reason = "SKIPPED", skip[name]
                summary["tests"].append({"id": tid, "name": name, "state": state, "duration_s": round(dur, 3),
                                         "reason": reason, "log": log_path})
                if state == "PASSED":
                    passed += 1
                elif state == "SKIPPED":
                    skipped += 1
                else:
                    failed += 1
                    print("FAILED %s (%s): %s  [log: %s]" % (name, tid, reason[:300], log_path), flush=True)
    finally:
        broker.stop()
    summary.update({"passed": passed, "failed": failed, "skipped": skipped})
    out_dir = os.path.join(ROOT, "target", "compat")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "librdkafka-%s.json" % mode), "w") as f:
        json.dump(summary, f, indent=1)
    print("librdkafka: %d passed, %d failed (%d skipped)" % (passed, failed, skipped), flush=True)
    if failed == 0:
        shutil.rmtree(workdir, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
