#!/usr/bin/env python3
"""Runs the Java client suite (compat-tests/java/suite: JUnit 5 tests of Kafka's own Java client,
org.apache.kafka:kafka-clients 4.4.0) against Samsa or the reference Kafka started here, and
turns surefire's XML reports into the common report shape.

Called by scripts/compat/java-client.sh, which installs the suite's Maven dependencies once."""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

from report import Summary, read_list
from samsa_broker import Broker, Cluster, cluster_props

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
SUITE = os.path.join(ROOT, "compat-tests", "java", "suite")
SKIP_FILE = os.path.join(HERE, "java-client-skip.txt")
KAFKA = os.path.join(ROOT, "scripts", "reference", "kafka")
KAFKA_VERSION = "4.4.0"

# Both brokers get scripts/reference/test.properties, and these: an authorizer that allows where
# no ACL applies (the ACL tests create ACLs on their own topics only). The nodes talk to each other
# as User:ANONYMOUS on PLAINTEXT, and Kafka's StandardAuthorizer refuses everyone but super users
# until it has read the metadata log (AuthorizerNotReadyException): without this three Kafka
# nodes cannot elect a controller.
EXTRA_PROPS = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
    "super.users": "User:ANONYMOUS",
}
# Three nodes: every internal topic on every node, as a production cluster has them.
CLUSTER_EXTRA = {
    "default.replication.factor": "3",
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "share.coordinator.state.topic.replication.factor": "3",
    "share.coordinator.state.topic.min.isr": "2",
}


def read_properties(path):
    props = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith(("#", "!")):
                key, _, value = line.partition("=")
                props[key.strip()] = value.strip()
    return props


def surefire_results(report_dir):
    """(test id `Class#method`, state, duration, reason) for each testcase of surefire's
    TEST-*.xml reports."""
    out = []
    for path in sorted(glob.glob(os.path.join(report_dir, "TEST-*.xml"))):
        root = ET.parse(path).getroot()
        for tc in root.iter("testcase"):
            cls = (tc.get("classname") or "").rsplit(".", 1)[-1]
            name = tc.get("name") or ""
            test_id = "%s#%s" % (cls, name) if name and name != cls else cls
            state, reason = "PASSED", ""
            for child in tc:
                if child.tag in ("failure", "error"):
                    state = "FAILED"
                    text = (child.text or "").strip().splitlines()
                    reason = (child.get("type") or "") + ": " + (child.get("message") or (text[0] if text else ""))
                    break
                if child.tag == "skipped":
                    state = "SKIPPED"
                    reason = child.get("message") or ""
            out.append((test_id, state, float(tc.get("time") or 0), reason))
    return out


class ReferenceKafka:
    """The reference Kafka 4.4 through scripts/reference/kafka, stopped by pid in stop()."""

    def __init__(self, workdir, nodes, props):
        self.dir = os.path.join(workdir, "kafka")
        cmd = [KAFKA, "start", self.dir, "--nodes", str(nodes)]
        for k, v in props.items():
            cmd += ["--set", "%s=%s" % (k, v)]
        try:
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        except subprocess.CalledProcessError:
            self.stop()
            raise SystemExit("the reference Kafka did not start; see " + self.dir)
        with open(os.path.join(self.dir, "cluster.json")) as f:
            self.bootstrap = json.load(f)["bootstrap"]

    def stop(self):
        subprocess.run([KAFKA, "stop", self.dir])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--samsa", default=os.environ.get("TEST_SAMSA_BIN", "target/debug/samsa"))
    p.add_argument("--cluster", type=int, default=0, help="this many nodes instead of one (RF=3 topics)")
    p.add_argument("--kafka", action="store_true", help="against the reference Kafka 4.4 instead of Samsa")
    p.add_argument("--quick", action="store_true", help="only the tests tagged quick")
    p.add_argument("--test", help="surefire's -Dtest filter (Class, Class#method)")
    p.add_argument("--keep", action="store_true", help="keep the work directory (logs, reports) when nothing failed")
    args = p.parse_args()

    nodes = args.cluster or 1
    stem = "java-client" + ("-cluster%d" % args.cluster if args.cluster else "") + \
        ("-kafka" if args.kafka else "") + ("-quick" if args.quick else "") + ("-selected" if args.test else "")
    mode = ("quick" if args.quick else "full") + ("-cluster%d" % args.cluster if args.cluster else "") + \
        ("-kafka" if args.kafka else "")
    workdir = tempfile.mkdtemp(prefix="samsa-java-client-")
    props = read_properties(os.path.join(ROOT, "scripts", "reference", "test.properties"))
    props.update(EXTRA_PROPS)
    if nodes >= 3:
        props.update(CLUSTER_EXTRA)

    started = time.time()
    if args.kafka:
        broker = ReferenceKafka(workdir, nodes, props)
    elif args.cluster:
        broker = Cluster(os.path.abspath(args.samsa), workdir, nodes, cluster_props(props))
    else:
        broker = Broker(os.path.abspath(args.samsa), workdir, props)
    build = os.path.join(workdir, "build")
    log_path = os.path.join(workdir, "maven.log")
    cmd = ["mvn", "-B", "-o", "-f", os.path.join(SUITE, "pom.xml"), "test",
           "-Dsuite.build.dir=" + build,
           "-Dcompat.bootstrap=" + broker.bootstrap,
           "-Dcompat.nodes=%d" % nodes,
           "-Dcompat.broker=" + ("kafka" if args.kafka else "samsa"),
           "-Dcompat.authorizer=true",
           "-Dcompat.skip.file=" + SKIP_FILE]
    if args.quick:
        cmd.append("-Dgroups=quick")
    if args.test:
        cmd += ["-Dtest=" + args.test, "-Dsurefire.failIfNoSpecifiedTests=false"]
    print("java-client (kafka-clients %s): %s, %s %s, logs in %s" % (
        KAFKA_VERSION, mode, "kafka" if args.kafka else "samsa", broker.bootstrap, workdir), flush=True)
    try:
        with open(log_path, "w") as log:
            code = subprocess.run(cmd, cwd=SUITE, stdout=log, stderr=subprocess.STDOUT).returncode
    finally:
        broker.stop()
    reports = os.path.join(build, "surefire-reports")
    summary = Summary("java-client", KAFKA_VERSION, mode)
    summary.data["broker"] = "kafka" if args.kafka else "samsa"
    summary.data["nodes"] = nodes
    results = surefire_results(reports) if os.path.isdir(reports) else []
    if not results:
        summary.add("maven", "maven", "FAILED", reason="exit status %d and no surefire report" % code, log=log_path)
    for test_id, state, duration, reason in results:
        summary.add(test_id, test_id, state, duration, reason, log=os.path.join(reports, "dev.samsa.compat.%s.txt" % test_id.split("#")[0]))
    if code != 0 and results:
        summary.add("maven", "maven", "FAILED", reason="maven exit status %d" % code, log=log_path)
    summary.data["wall_s"] = round(time.time() - started, 1)
    status = summary.finish(stem)
    print("java-client: wall time %.0f s" % (time.time() - started), flush=True)
    if status == 0 and not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    sys.exit(status)


if __name__ == "__main__":
    main()
