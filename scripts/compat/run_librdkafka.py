#!/usr/bin/env python3
"""Runs librdkafka's test-runner against a Samsa broker started here, one test id per runner
invocation (a test that hits its timeout ends the whole runner, and every later test would
report "did not start"), each under its own time limit, and adds the reports up.

With --consumer-protocol the tests' consumers use KIP-848's consumer group protocol
(group.protocol=consumer, through the runner's TEST_CONSUMER_GROUP_PROTOCOL, as librdkafka's CI
runs its suite a second time); with --kafka the same tests run against the reference Kafka 4.4
(scripts/reference/kafka) instead, to tell a difference of Samsa's from a test's own failure.

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
from samsa_broker import Broker, Cluster, Nodes, add_scram_user, make_pki

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

# --kafka: the reference Kafka 4.4 gets the settings Samsa gets (BROKER_PROPS) over those of
# scripts/reference/test.properties, Kafka's own initial rebalance delay (test.properties sets
# 0 for its differential tests; Samsa keeps Kafka's default 3 s here), and on three nodes the
# internal topics on every node. scripts/reference/kafka gives every node the same settings, so
# a Kafka cluster has no racks (0101 reads them).
REFERENCE_KAFKA = os.path.join(ROOT, "scripts", "reference", "kafka")
KAFKA_PROPS = {"group.initial.rebalance.delay.ms": "3000"}
KAFKA_CLUSTER_PROPS = {
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
}

# --consumer-protocol: the value the runner reads from TEST_CONSUMER_GROUP_PROTOCOL and sets as
# every consumer's group.protocol; the tests that depend on the protocol ask the runner which
# one is in use and skip or adapt themselves (0084, 0132 and the classic-only subtests).
CONSUMER_PROTOCOL = "consumer"

# Failures of librdkafka 2.12.1's own KIP-848 code in --consumer-protocol runs: a test that failed
# with every pattern in its log is reported SKIPPED with the explanation (not run again: the
# client's bug, not the broker's answer, decides it). Keyed by test name, as one id's tests share
# a log and its other tests are judged on their own.
CONSUMER_PROTOCOL_CLIENT_BUGS = {
    # After max.poll.interval.ms the client sends its leave heartbeat (epoch -1) and flags itself
    # to rejoin; when the leave's answer is handled before its main loop acts on that flag, the
    # answer's handler (rd_kafka_cgrp_consumer_reset) clears the flag, and the next heartbeat is
    # a join (epoch 0) without the join's fields (no rebalance timeout, no subscription), which
    # Kafka 4.4 refuses as INVALID_REQUEST as Samsa does ("RebalanceTimeoutMs must be provided in
    # first request."); librdkafka takes it as fatal. Kafka 4.4 answers the leave in ~10 ms here
    # and the client wins the race; Samsa answers in ~1 ms and the client loses it. librdkafka
    # issue 5541, fixed after 2.12.1 (pull request 5488).
    "0089_max_poll_interval": (
        [r'Test "0089_max_poll_interval \(do_test_rejoin_after_interval_expire:\d+:',
         r"ConsumerGroupHeartbeat fatal error: Broker: Invalid request",
         r"Did not get a rebalance event for the group leave"],
        "librdkafka 2.12.1 loses its max.poll.interval.ms rejoin when the leave heartbeat's answer comes "
        "back before its main loop acts (librdkafka issue 5541): it then sends a join without the join's "
        "fields, which Kafka 4.4 refuses with the same INVALID_REQUEST; Kafka's slower answer hides it"),
    # unsubscribe() and subscribe() at once, with a rebalance callback: the client sends its leave
    # heartbeat (epoch -1) and, once it is answered, never sends another heartbeat (no join for
    # the new subscription), so the expected assignment never comes; no request reaches the
    # broker in the 30 s the test waits. Fails the same way against Kafka 4.4 (seen at its 10th
    # check there, at its 6th on Samsa; intermittent on both).
    "0045_subscribe_many_updates": (
        [r'Test "0045_subscribe_many_updates \(do_test_subscribe_many_updates:\d+: with rebalance callback\)" '
         r"failed at test\.c:\d+:test_consumer_wait_assignment_topic_partition_list0",
         r"Expected assignment not found in 0045_subscribe_many_updates#consumer-\d+'s assignment within "
         r"timeout"],
        "librdkafka 2.12.1, after unsubscribe() and an immediate subscribe() with a rebalance callback, "
        "sends its leave heartbeat and then no join for the new subscription, so no assignment comes; "
        "fails the same way against Kafka 4.4"),
}

# --security: the tests connect to a secured listener, set up as librdkafka's CI sets up its
# trivup cluster for its SSL/SASL runs. The broker keeps a PLAINTEXT listener for the setup
# (the SCRAM user is created through it); test.conf names only the secured one.
SECURITY_PROTOCOLS = ("ssl", "sasl_plaintext", "sasl_ssl")
SASL_USER, SASL_PASSWORD = "testuser", "testpass"
# KIP-368: every SASL connection must authenticate again within this time (0142 reads it
# from the broker's DescribeConfigs and skips when it is unset; every other test then runs with
# re-authentications under way too). 0142 runs five subtests of about 1.2 times this each.
REAUTH_MS = "3000"


def security_setup(broker, protocol, mechanism):
    """test.conf lines and environment variables for the tests on the `protocol` listener:
    the client settings trivup writes (the first SASL user's name and password, the CA, a
    client certificate and key signed by it) and the SSL_* variables it exports, which 0097
    reads the certificates' files from."""
    pki = broker.pki
    conf = {"bootstrap.servers": broker.address(protocol.upper()),
            "security.protocol": protocol.upper(), "broker.address.family": "v4"}
    env = {}
    if protocol.startswith("sasl"):
        if mechanism.startswith("SCRAM"):
            add_scram_user(broker.bootstrap.split(",")[0], SASL_USER, SASL_PASSWORD, mechanism)
            # The credential reaches the other nodes through the metadata log (milliseconds
            # here); a client's first connection may go to any of them.
            if "," in broker.bootstrap:
                time.sleep(1)
        conf.update({"sasl.mechanism": mechanism, "sasl.username": SASL_USER, "sasl.password": SASL_PASSWORD})
    if protocol.endswith("ssl"):
        conf.update({"ssl.ca.location": pki["ca_pem"], "ssl.certificate.location": pki["pub_pem"],
                     "ssl.key.location": pki["priv_pem"], "ssl.key.password": pki["password"]})
        env.update({"SSL_ca_pem": pki["ca_pem"], "SSL_ca_der": pki["ca_der"],
                    "SSL_all_cas_pem": pki["all_cas_pem"], "SSL_pub_pem": pki["pub_pem"],
                    "SSL_pub_der": pki["pub_der"], "SSL_priv_pem": pki["priv_pem"],
                    "SSL_priv_der": pki["priv_der"], "SSL_pkcs": pki["pkcs"], "SSL_password": pki["password"],
                    "SSL_client_auth": broker.client_auth})
    return conf, env


def security_props(protocol, pki):
    """The broker settings for a `protocol` listener beside PLAINTEXT. SSL requires client
    certificates (trivup's default, ssl.client.auth=required); SASL_SSL requests them (a client
    certificate that the broker's truststore does not trust is then withheld by librdkafka and
    SASL still authenticates: 0097's case); SASL listeners take PLAIN, SCRAM-SHA-256 and
    SCRAM-SHA-512. Returns (props, ssl.client.auth of the listener)."""
    listener = protocol.lower()
    props = {}
    client_auth = "none"
    if protocol.endswith("ssl"):
        client_auth = "required" if protocol == "ssl" else "requested"
        props.update({"ssl.keystore.type": "PEM", "ssl.keystore.location": pki["server_pem"],
                      "ssl.truststore.type": "PEM", "ssl.truststore.location": pki["ca_pem"],
                      "listener.name.%s.ssl.client.auth" % listener: client_auth})
        if protocol == "ssl":
            # As trivup (ssl.enabled.protocols=TLSv1.2,TLSv1.1,TLSv1): 0097 expects a missing
            # client certificate to fail the handshake itself, which TLS 1.3 reports only
            # after it (the client's first request then fails, as _TRANSPORT).
            props["listener.name.ssl.ssl.enabled.protocols"] = "TLSv1.2"
    if protocol.startswith("sasl"):
        props.update({
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "listener.name.%s.plain.sasl.jaas.config" % listener:
                "org.apache.kafka.common.security.plain.PlainLoginModule required user_%s=\"%s\";" % (
                    SASL_USER, SASL_PASSWORD),
            "connections.max.reauth.ms": REAUTH_MS,
        })
    return props, client_auth


# Checks a test makes only by printing a line (0101's `test_assert` says and goes on, so the
# test passes whichever broker served the records): such a line in its log fails it here.
SOFT_ASSERTIONS = {
    "0101": ["rxbytes was not highest on broker corresponding to client.rack",
             "expecting rxbytes of client.rack broker to be at least"],
}

# Failures of the client's own making, by timing (librdkafka's code, not the broker's answer):
# a test whose failure and log match is run again, up to RACE_ATTEMPTS times in all, and is
# reported SKIPPED with the explanation when every attempt lost the race. The test runs with
# the broker's threads on one CPU and the runner on the others (restored after it), which
# takes the race's cause away where the machine has two CPUs or more.
RACE_ATTEMPTS = 3
CLIENT_RACES = {
    # 0097 has its certificate-verification callback refuse the broker's certificate and
    # expects the error event to be _SSL. librdkafka calls SSL_connect() right after the TCP
    # connect (rd_kafka_transport_ssl_connect): when the broker's ServerHello and certificate
    # arrive before that first call returns, the refusal happens inside it and its error goes
    # through rd_kafka_transport_connect_done() as _TRANSPORT, logged without the "SSL handshake
    # failed:" prefix of the handshake path; the test then fails on the error code. On loopback
    # this happens when the broker's thread, woken by the ClientHello, preempts the client's on
    # the same CPU (seen in 3 of 4 runs on two CPUs; in none of 5 with the broker and the runner
    # on CPUs of their own).
    "0097": ([r"Expected _SSL or _ALL_BROKERS_DOWN error codes, got: Local: Broker transport failure",
              r"\S+: \S*tls_post_process_server_certificate error:0A000086:SSL routines::certificate "
              r"verify failed \(after"],
             "librdkafka reports a certificate refused by its verification callback as _TRANSPORT instead "
             "of _SSL when the broker's certificate arrives within the client's first SSL_connect() call "
             "(a race in the client, not the broker's answer); lost in every attempt"),
}


def kafka_installation():
    """Apache Kafka 4.4.0 as an installation for the tests that run its tools through KAFKA_PATH
    (0045, 0052 and 0077 run bin/kafka-topics.sh, 0109, 0115 and 0119 bin/kafka-acls.sh, 0098 and
    0113 compile their Java clients against libs/kafka-clients-*.jar and run them with
    bin/kafka-run-class.sh): `scripts/reference/kafka bin` installs the jars once and writes
    bin/ and config/ beside them. Returns the environment the tests get: KAFKA_PATH, and the
    tools' JVMs started with the first JIT tier (KAFKA_JVM_PERFORMANCE_OPTS, as Kafka's scripts
    read it): a tool starts in about half the CPU time, the tools themselves unchanged."""
    done = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "reference", "kafka"), "bin"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit("run_librdkafka: scripts/reference/kafka bin failed (Kafka's tools need java and mvn):\n"
                         + done.stderr[-2000:])
    return {"KAFKA_PATH": done.stdout.strip().splitlines()[-1],
            "KAFKA_JVM_PERFORMANCE_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djava.awt.headless=true"}


class ReferenceKafka:
    """`nodes` nodes of the reference Kafka 4.4 (scripts/reference/kafka start), with the
    interface run_librdkafka uses of a Broker: bootstrap, address(), alive(), log_path, stop()."""

    def __init__(self, workdir, nodes, props):
        self.dir = os.path.join(workdir, "kafka")
        self.log_path = self.dir
        cmd = [REFERENCE_KAFKA, "start", self.dir, "--nodes", str(nodes)]
        for k, v in props.items():
            cmd += ["--set", "%s=%s" % (k, v)]
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if done.returncode != 0:
            self.stop()
            raise SystemExit("run_librdkafka: the reference Kafka did not start (see %s):\n%s" % (
                self.dir, done.stdout[-2000:]))
        with open(os.path.join(self.dir, "cluster.json")) as f:
            info = json.load(f)
        self.bootstrap = info["bootstrap"]
        self.pids = [int(p) for p in info["pids"].values()]

    def address(self, listener):
        return self.bootstrap.split(",")[0]

    def alive(self):
        for pid in self.pids:
            try:
                os.kill(pid, 0)
            except OSError:
                return False
        return True

    def stop(self):
        if os.path.exists(os.path.join(self.dir, "cluster.json")):
            subprocess.run([REFERENCE_KAFKA, "stop", self.dir], stdout=subprocess.DEVNULL)


def read_properties(path):
    """A Java properties file's `key=value` lines (scripts/reference/test.properties)."""
    props = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith(("#", "!")):
                key, _, value = line.partition("=")
                props[key.strip()] = value.strip()
    return props


def broker_pids(broker):
    """The broker's processes: a Broker's, each of Nodes', or `samsa cluster local`'s children."""
    if isinstance(broker, Nodes):
        return [p.pid for p in broker.procs]
    if isinstance(broker, ReferenceKafka):
        return broker.pids
    pid = broker.proc.pid
    if isinstance(broker, Cluster):
        children = []
        for task in glob.glob("/proc/%d/task/*/children" % pid):
            with open(task) as f:
                children += [int(c) for c in f.read().split()]
        return children
    return [pid]


def set_affinity(pids, cpus):
    """Every thread of `pids` on `cpus` (threads that come and go meanwhile are let be)."""
    for pid in pids:
        for task in glob.glob("/proc/%d/task/*" % pid):
            try:
                os.sched_setaffinity(int(os.path.basename(task)), cpus)
            except OSError:
                pass


def all_test_ids(runner_dir):
    ids = set()
    # Tests linked into the runner (sources that are not, like 1000-unktopic.c, have no object).
    for path in glob.glob(os.path.join(runner_dir, "[0-9][0-9][0-9][0-9]-*.o")):
        ids.add(os.path.basename(path)[:4])
    # 0000 is librdkafka's unit tests (no broker) and 8xxx are manual tests.
    return sorted(i for i in ids if i != "0000" and not i.startswith("8"))


def run_one(tid, runner_dir, args, conf_path, workdir, extra_env, full=False, subtests=None, attempt=1,
            cpus=None):
    """Runs one test id (`full`: without quick mode, whatever the run's mode; `subtests`: only
    the subtests whose name holds this text; `cpus`: the runner on these CPUs only); returns a
    list of (test name, state, duration, reason)."""
    env = dict(os.environ)
    if subtests:
        env["SUBTESTS"] = subtests
    env.update({
        "TESTS": tid,
        "TEST_KAFKA_VERSION": TEST_KAFKA_VERSION,
        "RDKAFKA_TEST_CONF": conf_path,
        "LD_LIBRARY_PATH": "../src:../src-cpp",
    })
    # KAFKA_PATH (a Kafka installation: bin/kafka-topics.sh, kafka-acls.sh, kafka-run-class.sh,
    # libs/kafka-clients-*.jar) and BROKERS (the bootstrap its kafka-topics.sh gets) come from
    # extra_env; one from the caller's environment would name another installation or broker.
    # TEST_CONSUMER_GROUP_PROTOCOL likewise: set by --consumer-protocol only.
    for key in ("KAFKA_PATH", "BROKERS", "ZK_ADDRESS", "TEST_CONSUMER_GROUP_PROTOCOL"):
        env.pop(key, None)
    env.update(extra_env)
    for f in glob.glob(os.path.join(runner_dir, "test_report_*.json")):
        os.remove(f)
    cmd = ["./test-runner", "-r"] + (["-Q"] if not (args.full or full) else []) + (["-P"] if args.idempotence else [])
    log_path = os.path.join(workdir, "test-%s.log" % tid if attempt == 1 else "test-%s-attempt%d.log" % (tid, attempt))
    with open(log_path, "w") as log:
        started = time.time()
        try:
            proc = subprocess.run(cmd, cwd=runner_dir, env=env, stdout=log, stderr=subprocess.STDOUT,
                                  timeout=args.timeout,
                                  preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
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


def consumer_protocol_client_bug(name, log_path):
    """The explanation of CONSUMER_PROTOCOL_CLIENT_BUGS when test `name` failed by that bug."""
    if name not in CONSUMER_PROTOCOL_CLIENT_BUGS:
        return None
    patterns, explanation = CONSUMER_PROTOCOL_CLIENT_BUGS[name]
    with open(log_path, errors="replace") as f:
        text = re.sub(r"\x1b\[[0-9;]*m", "", f.read())
    return explanation if all(re.search(p, text) for p in patterns) else None


def client_race(tid, results, log_path):
    """The explanation of CLIENT_RACES when a test failed by losing that race, else None."""
    if tid not in CLIENT_RACES or not any(s == "FAILED" for _, s, _, _ in results):
        return None
    patterns, explanation = CLIENT_RACES[tid]
    with open(log_path, errors="replace") as f:
        text = re.sub(r"\x1b\[[0-9;]*m", "", f.read())
    return explanation if all(re.search(p, text) for p in patterns) else None


def marks(note):
    """The marks of a subset list's line: the words before the colon of its note
    (`0101 cluster: fetch from follower` is marked `cluster`)."""
    head, colon, _ = note.partition(":")
    return set(re.sub(r'subtests="[^"]*"', "subtests", head).split()) if colon else set()


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
    p.add_argument("--security", choices=SECURITY_PROTOCOLS,
                   help="run the tests over a listener of this security protocol (test.conf names it; "
                        "a PLAINTEXT listener serves the setup)")
    p.add_argument("--sasl-mechanism", default="SCRAM-SHA-256",
                   choices=["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"],
                   help="the SASL mechanism of the tests' client with --security sasl_* (default SCRAM-SHA-256)")
    p.add_argument("--consumer-protocol", action="store_true",
                   help="the tests' consumers use KIP-848's consumer group protocol (TEST_CONSUMER_GROUP_PROTOCOL="
                        "consumer: group.protocol=consumer)")
    p.add_argument("--kafka", action="store_true",
                   help="against the reference Kafka 4.4 (scripts/reference/kafka) instead of Samsa")
    p.add_argument("--keep-logs", action="store_true", help="keep the work folder (logs) when every test passed")
    p.add_argument("--timeout", type=int,
                   help="seconds per test id (default 300 in quick mode, 900 in full mode: 0081 alone "
                        "takes about 7 minutes there)")
    args = p.parse_args()
    if args.timeout is None:
        args.timeout = 900 if args.full else 300

    runner_dir = os.path.abspath(args.runner_dir)
    if args.kafka and args.security:
        p.error("--kafka runs over PLAINTEXT only (scripts/reference/kafka has no secured listener)")
    skip = read_list(os.path.join(HERE, "librdkafka-skip.txt"))
    subset = {}
    if args.tests:
        ids = [t.strip() for t in args.tests.split(",") if t.strip()]
    elif args.subset:
        subset = read_list(os.path.join(HERE, "librdkafka-%s.txt" % args.subset))
        # Tests marked `cluster` need three brokers: a single broker does not run them.
        ids = [t for t in subset if args.cluster or "cluster" not in marks(subset[t])]
    else:
        ids = all_test_ids(runner_dir)
    # Tests marked `full` run without quick mode even in a quick run: quick mode skips all of
    # their subtests (SUB_TEST rather than SUB_TEST_QUICK). A test marked `subtests="text"` runs
    # only the subtests whose names hold the text (the runner's SUBTESTS).
    full_ids = {t for t in subset if "full" in marks(subset[t])}
    subtests = {t: m.group(1) for t in subset for m in [re.match(r'[^:]*subtests="([^"]*)"', subset[t])] if m}
    mode = "full" if args.full else "quick"
    if args.idempotence:
        mode += "-idempotence"
    if args.subset:
        mode += "-" + args.subset
    if args.tests:
        # Some tests by id: a report of their own, never taken for the whole suite's.
        mode += "-selected"
    if args.cluster:
        mode += "-cluster%d" % args.cluster
    if args.security:
        mode += "-" + args.security
        if args.security.startswith("sasl") and args.sasl_mechanism != "SCRAM-SHA-256":
            mode += "-" + args.sasl_mechanism.lower()
    if args.consumer_protocol:
        mode += "-consumer-protocol"
    if args.kafka:
        mode += "-kafka"

    workdir = tempfile.mkdtemp(prefix="samsa-librdkafka-")
    conf_path = os.path.join(workdir, "test.conf")

    def start(workdir):
        """Starts the broker, writes test.conf; returns the broker and the tests' extra environment."""
        if args.security:
            pki = make_pki(os.path.join(workdir, "ssl"))
            props, client_auth = security_props(args.security, pki)
            if args.cluster:
                # `samsa cluster local` gives its nodes a PLAINTEXT listener only: the nodes
                # are started one by one here, with the secured listener too.
                broker = Nodes(os.path.abspath(args.samsa), workdir, args.cluster,
                               dict(BROKER_PROPS, **CLUSTER_PROPS, **props), listeners=[args.security.upper()],
                               rack_prefix=CLUSTER_RACK_PREFIX)
            else:
                broker = Broker(os.path.abspath(args.samsa), workdir, dict(BROKER_PROPS, **props),
                                listeners=[args.security.upper()])
            broker.pki, broker.client_auth = pki, client_auth
        elif args.kafka:
            props = read_properties(os.path.join(ROOT, "scripts", "reference", "test.properties"))
            props.update(BROKER_PROPS, **KAFKA_PROPS)
            if args.cluster >= 3:
                props.update(KAFKA_CLUSTER_PROPS)
            broker = ReferenceKafka(workdir, args.cluster or 1, props)
        elif args.cluster:
            broker = Cluster(os.path.abspath(args.samsa), workdir, args.cluster,
                             dict(BROKER_PROPS, **CLUSTER_PROPS), rack_prefix=CLUSTER_RACK_PREFIX)
        else:
            broker = Broker(os.path.abspath(args.samsa), workdir, BROKER_PROPS)
        conf, env = {"bootstrap.servers": broker.bootstrap}, {}
        if args.security:
            conf, env = security_setup(broker, args.security, args.sasl_mechanism)
        # Kafka's tools reach the broker through its PLAINTEXT listener (the tests that run
        # them skip themselves when the client needs authentication).
        env.update(kafka_env, BROKERS=broker.bootstrap)
        if args.consumer_protocol:
            env["TEST_CONSUMER_GROUP_PROTOCOL"] = CONSUMER_PROTOCOL
        with open(conf_path, "w") as f:
            f.writelines("%s=%s\n" % kv for kv in conf.items())
        return broker, env

    kafka_env = kafka_installation()
    broker, extra_env = start(workdir)
    engine = os.environ.get("SAMSA_IO_ENGINE", "auto")
    print("librdkafka: %d test ids, %s mode, %s %s (io engine %s), logs in %s" % (
        len(ids), mode, "reference kafka" if args.kafka else "broker",
        broker.address(args.security.upper()) if args.security else broker.bootstrap,
        engine, workdir), flush=True)
    started = time.time()

    summary = {"suite": "librdkafka", "version": "2.12.1", "mode": mode, "engine": engine,
               "samsa": samsa_build(), "broker": "kafka" if args.kafka else "samsa",
               "nodes": args.cluster or 1,
               "group_protocol": CONSUMER_PROTOCOL if args.consumer_protocol else "classic", "tests": []}
    if args.security:
        summary["security"] = {"protocol": args.security.upper(),
                               "sasl_mechanism": args.sasl_mechanism if args.security.startswith("sasl") else None}
    passed = failed = skipped = 0
    try:
        for tid in ids:
            if tid in skip:  # a whole test id
                summary["tests"].append({"id": tid, "name": tid, "state": "SKIPPED", "reason": skip[tid]})
                skipped += 1
                continue
            if not broker.alive():
                print("librdkafka: samsa died before test %s; restarting it (see %s)" % (tid, broker.log_path), flush=True)
                broker, extra_env = start(tempfile.mkdtemp(prefix="samsa-librdkafka-"))
            # A test in CLIENT_RACES (TLS ones): the broker on the first CPU, the runner on the others.
            all_cpus = os.sched_getaffinity(0)
            split = tid in CLIENT_RACES and args.security is not None and len(all_cpus) > 1
            if split:
                set_affinity(broker_pids(broker), {min(all_cpus)})
            for attempt in range(1, RACE_ATTEMPTS + 1):
                results, log_path = run_one(tid, runner_dir, args, conf_path, workdir, extra_env,
                                            tid in full_ids, subtests.get(tid), attempt,
                                            all_cpus - {min(all_cpus)} if split else None)
                race = client_race(tid, results, log_path)
                if not race:
                    break
                print("librdkafka: %s lost a client-side race (attempt %d of %d; log %s)" % (
                    tid, attempt, RACE_ATTEMPTS, log_path), flush=True)
            if split:
                set_affinity(broker_pids(broker), all_cpus)
            if race:
                results = [(n, "SKIPPED" if s == "FAILED" else s, d, race if s == "FAILED" else r)
                           for n, s, d, r in results]
            for name, state, dur, reason in results:
                if name in skip and state == "FAILED":
                    state, reason = "SKIPPED", skip[name]
                if args.consumer_protocol and state == "FAILED":
                    bug = consumer_protocol_client_bug(name, log_path)
                    if bug:
                        state, reason = "SKIPPED", bug
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
    summary.update({"passed": passed, "failed": failed, "skipped": skipped,
                    "wall_s": round(time.time() - started, 1)})
    out_dir = os.path.join(ROOT, "target", "compat")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "librdkafka-%s.json" % mode), "w") as f:
        json.dump(summary, f, indent=1)
    print("librdkafka: %d passed, %d failed (%d skipped), %.0f s" % (
        passed, failed, skipped, summary["wall_s"]), flush=True)
    if failed == 0 and not args.keep_logs:
        shutil.rmtree(workdir, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
