#!/usr/bin/env python3
"""Runs kafka-python's own integration tests (test/integration of its PyPI source distribution)
against a Samsa broker started here, the way the suite targets an external broker: KAFKA_URI
names the broker, KAFKA_VERSION the Kafka release it stands for.

Called by scripts/compat/kafka-python.sh, which unpacks the suite and prepares its venv."""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

from report import Summary, junit_results, read_list
from samsa_broker import Broker, Cluster, cluster_props

HERE = os.path.dirname(os.path.abspath(__file__))

# The suite's own broker fixture (KafkaFixture) starts Kafka as node 0 with 4 partitions per
# topic and advertised listeners set; Samsa gets the same through its ordinary properties.
BROKER_PROPS = {
    "node.id": "0",
    "advertised.listeners": "PLAINTEXT://127.0.0.1:{port}",
    "num.partitions": "4",
    "auto.create.topics.enable": "true",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "offsets.topic.num.partitions": "4",
    # The suite's own fixture runs Kafka with an authorizer that allows where no ACL applies
    # (test/integration/fixtures.py); test_create_describe_delete_acls needs one.
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
}
# The release whose API versions Samsa advertises (Produce v13, Fetch v18): kafka-python infers
# 4.1 from them, and test_kafka_version_infer checks that the two agree.
KAFKA_VERSION = "4.1.0"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--suite-dir", required=True, help="the unpacked sdist (holds test/integration)")
    p.add_argument("--python", required=True, help="the python of the suite's venv")
    p.add_argument("--version", required=True, help="kafka-python's version, for the report")
    p.add_argument("--samsa", required=True)
    p.add_argument("--subset", help="run the tests listed in kafka-python-<subset>.txt")
    p.add_argument("--cluster", type=int, default=0,
                   help="run against this many Samsa nodes (samsa cluster local) instead of one")
    p.add_argument("--timeout", type=int, default=60, help="seconds per test")
    p.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    args = p.parse_args()

    targets = ["test/integration"]
    mode = "full"
    if args.subset:
        targets = list(read_list(os.path.join(HERE, "kafka-python-%s.txt" % args.subset)))
        mode = args.subset

    workdir = tempfile.mkdtemp(prefix="samsa-kafka-python-")
    if args.cluster:
        mode += "-cluster%d" % args.cluster
        broker = Cluster(os.path.abspath(args.samsa), workdir, args.cluster, cluster_props(BROKER_PROPS))
    else:
        broker = Broker(os.path.abspath(args.samsa), workdir, BROKER_PROPS)
    junit = os.path.join(workdir, "junit.xml")
    log_path = os.path.join(workdir, "pytest.log")
    env = dict(os.environ)
    env.update({
        "KAFKA_URI": "PLAINTEXT://%s" % broker.bootstrap.split(",")[0],
        "KAFKA_VERSION": KAFKA_VERSION,
        # The fixture checks that a Kafka installation directory exists even for an external
        # broker; nothing in it is used.
        "KAFKA_ROOT": workdir,
        "PYTHONPATH": HERE + os.pathsep + env.get("PYTHONPATH", ""),
    })
    cmd = [args.python, "-m", "pytest", *targets, "-p", "no:cacheprovider", "-p", "pytest_skip_list",
           "--skip-list", os.path.join(HERE, "kafka-python-skip.txt"),
           *(["--skip-list", os.path.join(HERE, "kafka-python-cluster-skip.txt")] if args.cluster else []),
           # signal, not the suite's thread method: that one ends the whole run at the first
           # timeout, losing every later result.
           "--timeout=%d" % args.timeout, "--timeout-method=signal",
           "-o", "log_level=WARNING", "-o", "junit_family=xunit1", "--junitxml=" + junit,
           "-rfE", *args.pytest_args]
    print("kafka-python %s: %s, broker %s (io engine %s), logs in %s" % (
        args.version, mode, broker.bootstrap, os.environ.get("SAMSA_IO_ENGINE", "auto"), workdir), flush=True)
    try:
        with open(log_path, "w") as log:
            code = subprocess.run(cmd, cwd=args.suite_dir, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
    finally:
        broker.stop()

    summary = Summary("kafka-python", args.version, mode)
    if not os.path.exists(junit):
        summary.add("pytest", "pytest", "FAILED", reason="exit status %d and no report" % code, log=log_path)
    else:
        for test_id, state, duration, reason in junit_results(junit):
            summary.add(test_id, test_id, state, duration, reason, log=log_path)
    status = summary.finish("kafka-python" + ("-" + args.subset if args.subset else "")
                            + ("-cluster%d" % args.cluster if args.cluster else ""))
    if status == 0:
        shutil.rmtree(workdir, ignore_errors=True)
    sys.exit(status)


if __name__ == "__main__":
    main()
