#!/usr/bin/env python3
"""Runs rust-rdkafka's own integration tests (tests/*.rs of the crate as published on
crates.io) against a Samsa broker started here: KAFKA_HOST names the broker, KAFKA_VERSION the
Kafka release it stands for, as the crate's test utilities read them.

Each test binary runs as upstream runs it (`cargo test`: its tests on parallel threads), under
a time limit; a test that has not reported when the limit ends its binary counts as failed.
Nothing is skipped: every test of the crate needs only a Kafka broker.

Called by scripts/compat/rust-rdkafka.sh, which copies and builds the crate first."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from report import Summary, read_list
from samsa_broker import Broker, Cluster, cluster_props, in_private_network

HERE = os.path.dirname(os.path.abspath(__file__))

# The crate's docker-compose.yaml runs Kafka as node 0 with 3 partitions per auto-created
# topic; Samsa gets the same through its ordinary properties (and no initial rebalance delay,
# so that groups form without waiting out Kafka's 3 s default).
BROKER_PROPS = {
    "node.id": "0",
    "advertised.listeners": "PLAINTEXT://127.0.0.1:{port}",
    "num.partitions": "3",
    "auto.create.topics.enable": "true",
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "4",
}
# The release whose API versions Samsa advertises (see run_kafka_python.py).
KAFKA_VERSION = "4.1"

RESULT = re.compile(r"^test (\S+) \.\.\. (ok|FAILED|ignored)")
STDOUT_HEADER = re.compile(r"^---- (\S+) stdout ----$")


def test_binaries(crate_dir):
    """{target name: executable} of the crate's integration-test targets."""
    out = subprocess.run(["cargo", "test", "--tests", "--no-run", "--quiet", "--message-format=json"],
                         cwd=crate_dir, check=True, stdout=subprocess.PIPE, text=True).stdout
    binaries = {}
    for line in out.splitlines():
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        target = msg.get("target") or {}
        if msg.get("reason") == "compiler-artifact" and msg.get("executable") and target.get("kind") == ["test"]:
            binaries[target["name"]] = msg["executable"]
    return binaries


def failure_reasons(output):
    """{test name: first lines of its panic message or returned error} from libtest's failure
    sections."""
    reasons, current, lines = {}, None, []
    for line in output.splitlines():
        m = STDOUT_HEADER.match(line)
        if m or line.startswith("failures:") or line.startswith("test result:"):
            if current:
                reasons[current] = " ".join(lines).strip()
            current, lines = (m.group(1) if m else None), []
            continue
        if current is None:
            continue
        if "panicked at" in line:
            lines = [line.split("panicked at", 1)[1].strip()]
        elif line.startswith("Error: ") and not lines:  # a test that returned Err
            lines = [line[len("Error: "):].strip()]
        elif lines and len(lines) < 4 and not line.startswith("stack backtrace") and not line.startswith("note:"):
            lines.append(line.strip())
    return reasons


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--crate-dir", required=True)
    p.add_argument("--version", required=True, help="the crate's version, for the report")
    p.add_argument("--samsa", required=True)
    p.add_argument("--subset", help="run the tests listed in rust-rdkafka-<subset>.txt (`target::test`)")
    p.add_argument("--cluster", type=int, default=0,
                   help="run against this many Samsa nodes (samsa cluster local) instead of one")
    p.add_argument("--timeout", type=int, default=300, help="seconds per test binary")
    args = p.parse_args()
    # Some tests connect to "localhost" without a port (librdkafka's default, 9092) and one
    # checks that Metadata names port 9092: the suite runs in a network namespace of its own,
    # where 9092 is always the broker's. Where namespaces are not allowed, the broker takes
    # 9092 only when it is free (and those tests fail when it is not).
    private = in_private_network(sys.argv)

    binaries = test_binaries(args.crate_dir)
    wanted = None
    if args.subset:
        wanted = {}
        for entry in read_list(os.path.join(HERE, "rust-rdkafka-%s.txt" % args.subset)):
            target, _, name = entry.partition("::")
            wanted.setdefault(target, []).append(name)
    mode = args.subset or "full"
    # Tests that cannot pass against several nodes: {target: {name: reason}}.
    skips = {}
    if args.cluster:
        for entry, reason in read_list(os.path.join(HERE, "rust-rdkafka-cluster-skip.txt")).items():
            target, _, name = entry.partition("::")
            skips.setdefault(target, {})[name] = reason

    workdir = tempfile.mkdtemp(prefix="samsa-rust-rdkafka-")
    if args.cluster:
        mode += "-cluster%d" % args.cluster
        broker = Cluster(os.path.abspath(args.samsa), workdir, args.cluster, cluster_props(BROKER_PROPS),
                         preferred_port=9092)
    else:
        broker = Broker(os.path.abspath(args.samsa), workdir, BROKER_PROPS, preferred_port=9092)
    env = dict(os.environ)
    env.update({"KAFKA_HOST": broker.bootstrap, "KAFKA_VERSION": KAFKA_VERSION,
                "RUST_LOG": os.environ.get("SAMSA_RUST_RDKAFKA_LOG", "off"), "RUST_BACKTRACE": "0"})
    print("rust-rdkafka %s: %s, broker %s%s (io engine %s), logs in %s" % (
        args.version, mode, broker.bootstrap, " in a private network namespace" if private else "",
        os.environ.get("SAMSA_IO_ENGINE", "auto"), workdir), flush=True)

    summary = Summary("rust-rdkafka", args.version, mode)
    try:
        for target in sorted(binaries):
            if wanted is not None and target not in wanted:
                continue
            cmd = [binaries[target]]
            if wanted is not None:
                cmd += [n for n in wanted[target] if n not in skips.get(target, {})] + ["--exact"]
            elif target != "utils":
                # tests/utils.rs is a module of every test target and a target of its own: its
                # tests run once, in their own target.
                cmd += ["--skip", "utils::"]
            for name, reason in skips.get(target, {}).items():
                if wanted is None or name in wanted[target]:
                    cmd += ["--skip", name]
                    summary.add("%s::%s" % (target, name), "%s::%s" % (target, name), "SKIPPED", reason=reason)
            log_path = os.path.join(workdir, "%s.log" % target)
            started = time.time()
            with open(log_path, "w") as log:
                try:
                    subprocess.run(cmd, cwd=args.crate_dir, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   timeout=args.timeout)
                    timed_out = False
                except subprocess.TimeoutExpired:
                    timed_out = True
            with open(log_path, errors="replace") as f:
                output = f.read()
            reasons = failure_reasons(output)
            reported = set()
            for line in output.splitlines():
                m = RESULT.match(line)
                if not m:
                    continue
                name, result = m.groups()
                reported.add(name)
                test_id = "%s::%s" % (target, name)
                if result == "ok":
                    summary.add(test_id, test_id, "PASSED", log=log_path)
                elif result == "ignored":
                    summary.add(test_id, test_id, "SKIPPED", reason="#[ignore] in the crate", log=log_path)
                else:
                    summary.add(test_id, test_id, "FAILED", reason=reasons.get(name, ""), log=log_path)
            if timed_out:
                # Tests still running when the binary was stopped: list them from the binary.
                listed = subprocess.run([binaries[target], "--list", "--format=terse"], cwd=args.crate_dir,
                                        env=env, stdout=subprocess.PIPE, text=True).stdout
                for line in listed.splitlines():
                    name = line.rsplit(": test", 1)[0]
                    if not line.endswith(": test") or name in reported:
                        continue
                    if wanted is not None and name not in wanted[target]:
                        continue
                    if wanted is None and target != "utils" and name.startswith("utils::"):
                        continue
                    test_id = "%s::%s" % (target, name)
                    summary.add(test_id, test_id, "FAILED", time.time() - started,
                                "did not finish before %s was stopped after %d s" % (target, args.timeout),
                                log=log_path)
    finally:
        broker.stop()
    status = summary.finish("rust-rdkafka" + ("-" + args.subset if args.subset else "")
                            + ("-cluster%d" % args.cluster if args.cluster else ""))
    if status == 0:
        shutil.rmtree(workdir, ignore_errors=True)
    sys.exit(status)


if __name__ == "__main__":
    main()
