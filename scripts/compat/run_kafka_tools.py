#!/usr/bin/env python3
"""Kafka's own command-line tools, unchanged, against Samsa (or, with --kafka, against the
reference Kafka 4.4): each command run as users run it, through the bin/kafka-*.sh scripts of
the installation that `scripts/reference/kafka bin` writes (Kafka 4.4.0's jars from Maven
Central, each script starting the class Kafka's own script starts), and its output checked as a
user would read it. Each check is one named test in report.py's shape.

Called by scripts/compat/kafka-tools.sh. The brokers get scripts/reference/test.properties (both
read the same settings) and an authorizer (StandardAuthorizer, the tools' principal
User:ANONYMOUS a super user) for the ACL commands; with --cluster 3, three nodes and replication
factor 3 (reassignment and leader election run only there).

The tools' JVMs start with Kafka's scripts' own environment variables: KAFKA_JVM_PERFORMANCE_OPTS
with the first JIT tier and the serial collector, and KAFKA_OPTS with a class-data archive this
run makes first, which take a tool's start from ~2 s of CPU to ~0.5 s; --plain-jvm runs them with
the scripts' defaults. Nothing of the tools themselves changes.

The groups.streams-* tests run a Kafka Streams 4.4 application with group.protocol=streams (the
StreamsApp of compat-tests/java/workloads, compiled once a run against the workloads' jars that
kafka-tools.sh copies, --workload-libs) in the background, and stop it by its pid.

Skips on Samsa (features with issues of their own) are listed in kafka-tools-skip.txt, each with
its reason: in a full run they are run all the same and reported SKIPPED with the reason when
they fail (PASSED when they pass: then the line should go); --quick does not run them."""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from report import Summary, read_list  # noqa: E402
from samsa_broker import Broker, Nodes  # noqa: E402
# The reference's settings, raised for a cluster, as the workloads suite gives them.
from run_kafka_workloads import cluster_overrides, load_reference  # noqa: E402

REFERENCE = os.path.join(ROOT, "scripts", "reference", "kafka")
TEST_PROPERTIES = os.path.join(ROOT, "scripts", "reference", "test.properties")
VERSION = "4.4.0"
# Bounds for a tool or a condition on a slow shared machine; reaching one is a failure, never a
# pass, and nothing is measured against them.
TOOL_TIMEOUT_S = 180
WAIT_S = 120
AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "super.users": "User:ANONYMOUS"}


class Failure(Exception):
    pass


class SamsaTarget:
    kind = "samsa"

    def __init__(self, samsa, workdir, nodes):
        self.nodes = nodes
        props = load_reference().read_properties(TEST_PROPERTIES)
        props.update(cluster_overrides(nodes))
        props.update(AUTHORIZER)
        os.makedirs(workdir, exist_ok=True)
        self.broker = Broker(samsa, workdir, props) if nodes == 1 else Nodes(samsa, workdir, nodes, props)
        self.bootstrap = self.broker.bootstrap
        self.workdir = workdir

    def data_dirs(self):
        if self.nodes == 1:
            return [self.broker.data]
        return [os.path.join(self.workdir, "node-%d" % n) for n in range(1, self.nodes + 1)]

    def stop(self):
        self.broker.stop()


class KafkaTarget:
    """The reference Kafka 4.4 (scripts/reference/kafka start DIR), stopped by pid."""
    kind = "kafka"

    def __init__(self, workdir, nodes):
        self.dir = workdir
        self.nodes = nodes
        cmd = [sys.executable, REFERENCE, "start", workdir, "--nodes", str(nodes)]
        for k, v in list(cluster_overrides(nodes).items()) + list(AUTHORIZER.items()):
            cmd += ["--set", "%s=%s" % (k, v)]
        env = dict(os.environ)
        env.setdefault("KAFKA_HEAP_OPTS", "-Xmx768m -Xms768m")
        done = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if done.returncode != 0:
            self.stop()
            raise SystemExit("reference kafka did not start: " + done.stdout[-2000:])
        with open(os.path.join(workdir, "cluster.json")) as f:
            self.bootstrap = json.load(f)["bootstrap"]

    def data_dirs(self):
        return [os.path.join(self.dir, "node-%d" % n, "data") for n in range(1, self.nodes + 1)]

    def stop(self):
        subprocess.run([sys.executable, REFERENCE, "stop", self.dir], check=False)


class Result:
    def __init__(self, cmd, rc, out, err):
        self.cmd, self.rc, self.out, self.err = cmd, rc, out, err

    @property
    def lines(self):
        return [l for l in self.out.splitlines() if l.strip()]

    def brief(self):
        text = (self.out + "\n" + self.err).strip().splitlines()
        text = [l for l in text if not l.startswith("\tat ")]
        return "`%s` exit %s: %s" % (" ".join(self.cmd[:1] + [a for a in self.cmd[1:]]), self.rc,
                                    " | ".join(text[-6:]))


class Ctx:
    """The run: the target, the tools, a log of every command and its output."""

    def __init__(self, target, home, workdir, env, quick, workload_libs=None):
        self.target = target
        self.workload_libs = workload_libs
        self.streams_classes = None
        self.streams_input = None  # {partition: records} of the groups.streams-* tests' input
        self.b = target.bootstrap
        self.nodes = target.nodes
        self.rf = target.nodes
        self.home = home
        self.workdir = workdir
        self.env = env
        self.quick = quick
        self.log = None
        self.background = []

    def cmd(self, script, *args):
        return [os.path.join(self.home, "bin", script)] + [str(a) for a in args]

    def run(self, script, *args, stdin=None, ok=True, timeout=TOOL_TIMEOUT_S):
        """Runs bin/<script> ARGS; its Result. `ok`: a non-zero exit status fails the test."""
        cmd = self.cmd(script, *args)
        started = time.time()
        try:
            done = subprocess.run(cmd, input=stdin if stdin is not None else "", env=self.env, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
            res = Result([script] + [str(a) for a in args], done.returncode, done.stdout, done.stderr)
        except subprocess.TimeoutExpired as e:
            res = Result([script] + [str(a) for a in args], None, e.stdout or "", e.stderr or "")
            if isinstance(res.out, bytes):
                res.out, res.err = res.out.decode(errors="replace"), res.err.decode(errors="replace")
        if self.log:
            self.log.write("$ %s   (%.1f s, exit %s)\n%s%s\n" % (
                " ".join(res.cmd), time.time() - started, res.rc, res.out,
                ("--- stderr\n" + res.err) if res.err.strip() else ""))
            self.log.flush()
        if res.rc is None:
            raise Failure("timed out after %d s: %s" % (timeout, res.brief()))
        if ok and res.rc != 0:
            raise Failure(res.brief())
        return res

    def start(self, name, script, *args):
        """A tool in the background (stopped at the end of its test); output to a file."""
        return self.start_process(name, self.cmd(script, *args))

    def start_process(self, name, argv):
        """A program in the background, its output in WORKDIR/NAME.out; killed at the end of its
        test if still running."""
        path = os.path.join(self.workdir, name + ".out")
        out = open(path, "w")
        proc = subprocess.Popen(argv, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        out.close()
        proc.out_path = path
        self.background.append(proc)
        return proc

    def streams_app(self, name, app_id, prefix, state_dir):
        """compat-tests/java/workloads' StreamsApp (Kafka Streams 4.4, exactly-once v2,
        group.protocol=streams, Streams' defaults otherwise) in the background, compiled once a
        run against the workloads' jars; its log4j output in WORKDIR/NAME.log."""
        if self.streams_classes is None:
            classes = os.path.join(self.workdir, "streams-classes")
            os.makedirs(classes, exist_ok=True)
            done = subprocess.run(["javac", "-nowarn", "-d", classes, "-cp", os.path.join(self.workload_libs, "*"),
                                   os.path.join(ROOT, "compat-tests", "java", "workloads", "src", "samsa", "workloads",
                                                "StreamsApp.java")],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if done.returncode != 0:
                raise Failure("javac StreamsApp.java (jars in %s): %s" % (self.workload_libs, done.stdout[-1500:]))
            with open(os.path.join(self.workdir, "streams-log4j2.properties"), "w") as f:
                f.write("status = warn\nappender.file.type = File\nappender.file.name = FILE\n"
                        "appender.file.fileName = ${sys:streams.log}\nappender.file.layout.type = PatternLayout\n"
                        "appender.file.layout.pattern = [%d] %p [%t] %m (%c)%n\n"
                        "rootLogger.level = INFO\nrootLogger.appenderRef.file.ref = FILE\n")
            self.streams_classes = classes
        log4j = os.path.join(self.workdir, "streams-log4j2.properties")
        argv = ["java", "-Xmx256m", "-Dlog4j2.configurationFile=" + log4j,
                "-Dstreams.log=" + os.path.join(self.workdir, name + ".log"),
                "-cp", self.streams_classes + ":" + os.path.join(self.workload_libs, "*"),
                "samsa.workloads.StreamsApp", self.b, app_id, prefix, state_dir, "streams"]
        return self.start_process(name, argv)

    def stop_background(self):
        for proc in self.background:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self.background = []

    # Helpers shared by the tests.

    def create_topic(self, topic, partitions, rf=None, *extra):
        """`partitions` None: placed by --replica-assignment in `extra`."""
        sizes = ["--partitions", partitions, "--replication-factor", rf or self.rf] if partitions else []
        res = self.run("kafka-topics.sh", "--bootstrap-server", self.b, "--create", "--topic", topic, *sizes, *extra)
        expect("Created topic %s." % topic in res.out, "create: " + res.brief())

    def produce(self, topic, lines, *props, acks="all"):
        args = ["--bootstrap-server", self.b, "--topic", topic]
        for p in props:
            args += ["--reader-property", p]
        self.run("kafka-console-producer.sh", *args, "--command-property", "acks=" + acks,
                 stdin="".join(l + "\n" for l in lines))

    def offsets(self, topic, time_spec=None):
        """{partition: offset} from kafka-get-offsets."""
        args = ["--bootstrap-server", self.b, "--topic", topic] + (["--time", time_spec] if time_spec else [])
        res = self.run("kafka-get-offsets.sh", *args)
        out = {}
        for line in res.lines:
            t, p, o = line.rsplit(":", 2)
            expect(t == topic, "get-offsets printed %r" % line)
            out[int(p)] = int(o)
        return out


def expect(cond, message):
    if not cond:
        raise Failure(message)


def wait_for(what, check, timeout=WAIT_S):
    """Calls check() until it returns something true; its value. A Failure inside counts as
    not yet; the last one is reported when time is up."""
    deadline = time.time() + timeout
    last = None
    while True:
        try:
            value = check()
            if value:
                return value
        except Failure as e:
            last = e
        if time.time() > deadline:
            raise Failure("%s: not within %d s%s" % (what, timeout, "; last: %s" % last if last else ""))
        time.sleep(0.5)


def table(res, first):
    """The rows of a whitespace-aligned table whose header line starts with `first`: a list of
    {column: value}."""
    lines = res.out.splitlines()
    for i, line in enumerate(lines):
        if line.split() and line.split()[0] == first:
            header = line.split()
            rows = []
            for row in lines[i + 1:]:
                cells = row.split()
                if not cells:
                    break
                rows.append(dict(zip(header, cells)))
            return rows
    raise Failure("no table with %s in: %s" % (first, res.brief()))


def tsv(res, first):
    """The rows of a tab-separated table (kafka-transactions, kafka-metadata-quorum): cells
    stripped, empty cells kept."""
    lines = res.out.splitlines()
    for i, line in enumerate(lines):
        cells = [c.strip() for c in line.split("\t")]
        if cells and cells[0] == first:
            return [dict(zip(cells, [c.strip() for c in row.split("\t")])) for row in lines[i + 1:] if row.strip()]
    raise Failure("no table with %s in: %s" % (first, res.brief()))


# ------------------------------------------------------------------------------------- tests

TESTS = []


def test(name, quick=False, cluster=False):
    """Registers a test: `quick` runs in --quick; `cluster` runs only with three nodes or more."""
    def register(fn):
        TESTS.append((name, fn, quick, cluster))
        return fn
    return register


# kafka-topics

@test("topics.create", quick=True)
def t_topics_create(c):
    c.create_topic("kt-topic", 3, None, "--config", "retention.ms=86400000", "--config", "cleanup.policy=delete")
    return "Created topic kt-topic."


@test("topics.create-existing")
def t_topics_create_existing(c):
    res = c.run("kafka-topics.sh", "--bootstrap-server", c.b, "--create", "--topic", "kt-topic", "--partitions", 3,
                ok=False)
    expect(res.rc != 0 and "Topic 'kt-topic' already exists." in res.out, res.brief())
    c.run("kafka-topics.sh", "--bootstrap-server", c.b, "--create", "--topic", "kt-topic", "--partitions", 3,
          "--if-not-exists")
    res = c.run("kafka-topics.sh", "--bootstrap-server", c.b, "--create", "--topic", "kt-bad-config",
                "--config", "no.such.config=1", ok=False)
    expect(res.rc != 0 and "Unknown topic config name: no.such.config" in res.out, res.brief())
    return "already exists; --if-not-exists; unknown config refused"


def describe_topic(c, topic):
    res = c.run("kafka-topics.sh", "--bootstrap-server", c.b, "--describe", "--topic", topic)
    head = [l for l in res.lines if l.startswith("Topic: %s\tTopicId:" % topic)]
    expect(len(head) == 1, "no topic line: " + res.brief())
    fields = dict(re.findall(r"(\w+): ?([^\t]*)", head[0]))
    parts = {}
    for line in res.lines:
        if line.startswith("\tTopic: %s\tPartition:" % topic):
            f = dict(re.findall(r"(\w+): ?([^\t]*)", line))
            ints = lambda s: [int(x) for x in s.split(",") if x.strip()]  # noqa: E731
            parts[int(f["Partition"])] = {"leader": int(f["Leader"]), "replicas": ints(f["Replicas"]),
                                          "isr": ints(f["Isr"])}
    return fields, parts, res


@test("topics.describe", quick=True)
def t_topics_describe(c):
    fields, parts, res = describe_topic(c, "kt-topic")
    expect(fields["PartitionCount"] == "3" and fields["ReplicationFactor"] == str(c.rf), res.brief())
    configs = dict(kv.split("=", 1) for kv in fields["Configs"].split(",") if "=" in kv)
    expect(configs.get("retention.ms") == "86400000" and configs.get("cleanup.policy") == "delete",
           "Configs: " + fields["Configs"])
    expect(sorted(parts) == [0, 1, 2], "partitions %s" % sorted(parts))
    for p, s in parts.items():
        expect(len(s["replicas"]) == c.rf and s["leader"] in s["replicas"] and sorted(s["isr"]) == sorted(s["replicas"]),
               "partition %d: %s" % (p, s))
    return "3 partitions, RF %d, leaders in replicas, ISR full, configs shown" % c.rf


@test("topics.list", quick=True)
def t_topics_list(c):
    res = c.run("kafka-topics.sh", "--bootstrap-server", c.b, "--list")
    expect("kt-topic" in res.lines, res.brief())
    res = c.run("kafka-topics.sh", "--bootstrap-server", c.b, "--list", "--topic", "kt-top.*", "--exclude-internal")
    expect(res.lines == ["kt-topic"], res.brief())
    return "--list; --topic regex with --exclude-internal"


@test("topics.alter-partitions", quick=True)
def t_topics_alter(c):
    c.run("kafka-topics.sh", "--bootstrap-server", c.b, "--alter", "--topic", "kt-topic", "--partitions", 5)
    fields, parts, res = describe_topic(c, "kt-topic")
    expect(fields["PartitionCount"] == "5" and sorted(parts) == list(range(5)), res.brief())
    res = c.run("kafka-topics.sh", "--bootstrap-server", c.b, "--alter", "--topic", "kt-topic", "--partitions", 2,
                ok=False)
    expect(res.rc != 0 and "The topic kt-topic currently has 5 partition(s); 2 would not be an increase." in res.out,
           res.brief())
    return "3 -> 5 partitions; 2 refused"


@test("topics.health")
def t_topics_health(c):
    for flag in ("--under-replicated-partitions", "--unavailable-partitions", "--under-min-isr-partitions"):
        res = c.run("kafka-topics.sh", "--bootstrap-server", c.b, "--describe", flag, "--topic", "kt-topic")
        expect(res.lines == [], "%s: %s" % (flag, res.brief()))
    return "no under-replicated, unavailable or under-min-ISR partitions"


@test("topics.delete", quick=True)
def t_topics_delete(c):
    c.create_topic("kt-delete", 1)
    c.run("kafka-topics.sh", "--bootstrap-server", c.b, "--delete", "--topic", "kt-delete")
    wait_for("kt-delete gone from --list", lambda: "kt-delete" not in c.run(
        "kafka-topics.sh", "--bootstrap-server", c.b, "--list").lines)
    res = c.run("kafka-topics.sh", "--bootstrap-server", c.b, "--delete", "--topic", "kt-delete", ok=False)
    expect(res.rc != 0 and "Topic 'kt-delete' does not exist as expected" in res.out, res.brief())
    return "deleted; deleting it again: does not exist"


# kafka-configs

def describe_configs(c, *entity):
    res = c.run("kafka-configs.sh", "--bootstrap-server", c.b, "--describe", *entity)
    out = {}
    for line in res.out.splitlines():
        m = re.match(r"  (\S+?)=(.*) sensitive=(true|false) synonyms=\{(.*)\}$", line)
        if m:
            out[m.group(1)] = (m.group(2), m.group(4))
    return out, res


@test("configs.topic", quick=True)
def t_configs_topic(c):
    res = c.run("kafka-configs.sh", "--bootstrap-server", c.b, "--alter", "--entity-type", "topics",
                "--entity-name", "kt-topic", "--add-config", "retention.ms=1000,max.message.bytes=2000")
    expect("Completed updating config for topic kt-topic." in res.out, res.brief())
    got, res = describe_configs(c, "--entity-type", "topics", "--entity-name", "kt-topic")
    expect("Dynamic configs for topic kt-topic are:" in res.out, res.brief())
    expect(got.get("retention.ms") == ("1000", "DYNAMIC_TOPIC_CONFIG:retention.ms=1000"), "retention.ms: %s" % (
        got.get("retention.ms"),))
    expect(got.get("max.message.bytes", ("",))[0] == "2000" and got["max.message.bytes"][1].startswith(
        "DYNAMIC_TOPIC_CONFIG:max.message.bytes=2000, DEFAULT_CONFIG:message.max.bytes="), res.brief())
    c.run("kafka-configs.sh", "--bootstrap-server", c.b, "--alter", "--topic", "kt-topic",
          "--delete-config", "max.message.bytes")
    got, res = describe_configs(c, "--topic", "kt-topic")
    expect("max.message.bytes" not in got and "retention.ms" in got, res.brief())
    return "add, describe with synonyms, delete"


@test("configs.topic-all")
def t_configs_topic_all(c):
    got, res = describe_configs(c, "--topic", "kt-topic", "--all")
    expect(got.get("segment.bytes") == ("1073741824", "DEFAULT_CONFIG:log.segment.bytes=1073741824"), res.brief())
    expect(got.get("retention.ms", ("",))[0] == "1000", "retention.ms %s" % (got.get("retention.ms"),))
    expect(len(got) >= 30, "only %d configs with --all" % len(got))
    res = c.run("kafka-configs.sh", "--bootstrap-server", c.b, "--alter", "--topic", "kt-topic",
                "--add-config", "no.such.config=1", ok=False)
    expect(res.rc != 0 and "InvalidConfigurationException: Unknown topic config name: no.such.config" in res.out + res.err,
           res.brief())
    res = c.run("kafka-configs.sh", "--bootstrap-server", c.b, "--alter", "--topic", "kt-topic",
                "--add-config", "retention.ms=abc", ok=False)
    expect(res.rc != 0 and "InvalidConfigurationException" in res.out + res.err, res.brief())
    return "%d configs with --all; unknown key and bad value refused" % len(got)


@test("configs.broker", quick=True)
def t_configs_broker(c):
    res = c.run("kafka-configs.sh", "--bootstrap-server", c.b, "--alter", "--entity-type", "brokers",
                "--entity-name", 1, "--add-config", "log.cleaner.threads=2")
    expect("Completed updating config for broker 1." in res.out, res.brief())
    got, res = describe_configs(c, "--entity-type", "brokers", "--entity-name", 1)
    expect(got.get("log.cleaner.threads") == (
        "2", "DYNAMIC_BROKER_CONFIG:log.cleaner.threads=2, DEFAULT_CONFIG:log.cleaner.threads=1"), res.brief())
    c.run("kafka-configs.sh", "--bootstrap-server", c.b, "--alter", "--entity-type", "brokers",
          "--entity-name", 1, "--delete-config", "log.cleaner.threads")
    got, res = describe_configs(c, "--entity-type", "brokers", "--entity-name", 1)
    expect("log.cleaner.threads" not in got, res.brief())
    res = c.run("kafka-configs.sh", "--bootstrap-server", c.b, "--alter", "--entity-type", "brokers",
                "--entity-name", 1, "--add-config", "log.dirs=/nowhere", ok=False)
    expect(res.rc != 0 and "Cannot update these configs dynamically: [log.dirs]" in res.out + res.err, res.brief())
    res = c.run("kafka-configs.sh", "--bootstrap-server", c.b, "--alter", "--entity-type", "brokers",
                "--entity-name", 1, "--add-config", "ssl.keystore.location=/nowhere", ok=False)
    expect(res.rc != 0 and "These security configs can be dynamically updated only per-listener using the listener "
           "prefix: [ssl.keystore.location]" in res.out + res.err, res.brief())
    res = c.run("kafka-configs.sh", "--bootstrap-server", c.b, "--alter", "--entity-type", "brokers",
                "--entity-default", "--add-config", "listener.name.plaintext.ssl.keystore.location=/nowhere", ok=False)
    expect(res.rc != 0 and "Cannot update these configs at default cluster level, broker id must be specified: "
           "[listener.name.plaintext.ssl.keystore.location]" in res.out + res.err, res.brief())
    return "per-broker dynamic config set, shown, deleted; static, unprefixed and per-broker-at-default keys refused"


@test("configs.broker-default")
def t_configs_broker_default(c):
    res = c.run("kafka-configs.sh", "--bootstrap-server", c.b, "--alter", "--entity-type", "brokers",
                "--entity-default", "--add-config", "log.retention.bytes=1073741824")
    expect("Completed updating default config for brokers in the cluster." in res.out, res.brief())
    got, res = describe_configs(c, "--entity-type", "brokers", "--entity-default")
    expect("Default configs for brokers in the cluster are:" in res.out and got.get("log.retention.bytes") == (
        "1073741824", "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.bytes=1073741824"), res.brief())
    got, res = describe_configs(c, "--entity-type", "brokers", "--entity-name", c.nodes, "--all")
    expect(got.get("log.retention.bytes") == ("1073741824", "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.bytes="
                                               "1073741824, DEFAULT_CONFIG:log.retention.bytes=-1"),
           "broker %d --all: %s" % (c.nodes, got.get("log.retention.bytes")))
    c.run("kafka-configs.sh", "--bootstrap-server", c.b, "--alter", "--entity-type", "brokers",
          "--entity-default", "--delete-config", "log.retention.bytes")
    got, res = describe_configs(c, "--entity-type", "brokers", "--entity-default")
    expect("log.retention.bytes" not in got, res.brief())
    return "cluster-wide default set, seen by broker %d, deleted" % c.nodes


@test("configs.broker-logger", quick=True)
def t_configs_broker_logger(c):
    got, res = describe_configs(c, "--entity-type", "broker-loggers", "--entity-name", 1)
    expect("Dynamic configs for broker-logger 1 are:" in res.out and "root" in got, res.brief())
    before = got["root"][0]
    try:
        res = c.run("kafka-configs.sh", "--bootstrap-server", c.b, "--alter", "--entity-type", "broker-loggers",
                    "--entity-name", 1, "--add-config", "root=WARN")
        expect("Completed updating config for broker-logger 1." in res.out, res.brief())
        got, res = describe_configs(c, "--entity-type", "broker-loggers", "--entity-name", 1)
        expect(got.get("root", ("",))[0] == "WARN", res.brief())
        res = c.run("kafka-configs.sh", "--bootstrap-server", c.b, "--alter", "--entity-type", "broker-loggers",
                    "--entity-name", 1, "--delete-config", "root", ok=False)
        expect(res.rc != 0 and "Removing the log level of the root logger is not allowed" in res.out + res.err,
               res.brief())
    finally:
        c.run("kafka-configs.sh", "--bootstrap-server", c.b, "--alter", "--entity-type", "broker-loggers",
              "--entity-name", 1, "--add-config", "root=" + before)
    return "%d loggers; root %s -> WARN -> %s; deleting root refused" % (len(got), before, before)


@test("configs.client-metrics")
def t_configs_client_metrics(c):
    res = c.run("kafka-configs.sh", "--bootstrap-server", c.b, "--alter", "--entity-type", "client-metrics",
                "--entity-name", "kt-metrics", "--add-config", "metrics=org.apache.kafka.producer.,interval.ms=5000")
    expect("Completed updating config for client-metric kt-metrics." in res.out, res.brief())
    got, res = describe_configs(c, "--entity-type", "client-metrics", "--entity-name", "kt-metrics")
    expect(got.get("interval.ms") == ("5000", "DYNAMIC_CLIENT_METRICS_CONFIG:interval.ms=5000")
           and got.get("metrics", ("",))[0] == "org.apache.kafka.producer.", res.brief())
    res = c.run("kafka-client-metrics.sh", "--bootstrap-server", c.b, "--list")
    expect("kt-metrics" in res.lines, res.brief())
    c.run("kafka-client-metrics.sh", "--bootstrap-server", c.b, "--delete", "--name", "kt-metrics")
    res = c.run("kafka-client-metrics.sh", "--bootstrap-server", c.b, "--list")
    expect("kt-metrics" not in res.lines, res.brief())
    return "client-metrics resource through kafka-configs and kafka-client-metrics"


def quota_test(c, entity_type, name, config, shown):
    res = c.run("kafka-configs.sh", "--bootstrap-server", c.b, "--alter", "--entity-type", entity_type,
                "--entity-name", name, "--add-config", config)
    expect("Completed updating config" in res.out, res.brief())
    res = c.run("kafka-configs.sh", "--bootstrap-server", c.b, "--describe", "--entity-type", entity_type,
                "--entity-name", name)
    expect(shown in res.out, res.brief())
    key = config.split("=")[0]
    c.run("kafka-configs.sh", "--bootstrap-server", c.b, "--alter", "--entity-type", entity_type,
          "--entity-name", name, "--delete-config", key)
    return res.lines[0] if res.lines else ""


@test("configs.user-quota")
def t_configs_user_quota(c):
    return quota_test(c, "users", "kt-user", "producer_byte_rate=1024",
                      "Quota configs for user-principal 'kt-user' are producer_byte_rate=1024.0")


@test("configs.client-quota")
def t_configs_client_quota(c):
    return quota_test(c, "clients", "kt-client", "consumer_byte_rate=2048",
                      "Quota configs for client-id 'kt-client' are consumer_byte_rate=2048.0")


@test("configs.ip-quota")
def t_configs_ip_quota(c):
    return quota_test(c, "ips", "127.0.0.2", "connection_creation_rate=10",
                      "Quota configs for ip '127.0.0.2' are connection_creation_rate=10.0")


# kafka-consumer-groups, kafka-groups

GROUP_TOPIC, GROUP = "kt-groups", "kt-group"


def describe_group(c, group=GROUP):
    res = c.run("kafka-consumer-groups.sh", "--bootstrap-server", c.b, "--describe", "--group", group)
    # A group without members or committed offsets has no table.
    rows = table(res, "GROUP") if "\nGROUP " in res.out else []
    for r in rows:
        if r["CURRENT-OFFSET"] != "-":
            expect(int(r["LAG"]) == int(r["LOG-END-OFFSET"]) - int(r["CURRENT-OFFSET"]), "lag of row %s" % r)
    return rows, res


def total(rows, col):
    return sum(int(r[col]) for r in rows if r[col] != "-")


@test("groups.consume", quick=True)
def t_groups_consume(c):
    c.create_topic(GROUP_TOPIC, 3)
    c.produce(GROUP_TOPIC, ["k%d:v%d" % (i, i) for i in range(30)], "parse.key=true", "key.separator=:")
    res = c.run("kafka-console-consumer.sh", "--bootstrap-server", c.b, "--topic", GROUP_TOPIC, "--group", GROUP,
                "--from-beginning", "--max-messages", 20, "--timeout-ms", 60000)
    expect("Processed a total of 20 messages" in res.out + res.err, res.brief())
    expect(len([l for l in res.lines if re.match(r"v\d+$", l)]) == 20, res.brief())
    return "30 keyed records over 3 partitions; a console consumer in group %s read 20" % GROUP


@test("groups.list", quick=True)
def t_groups_list(c):
    res = c.run("kafka-consumer-groups.sh", "--bootstrap-server", c.b, "--list")
    expect(GROUP in res.lines, res.brief())
    res = c.run("kafka-consumer-groups.sh", "--bootstrap-server", c.b, "--list", "--state")
    expect({"GROUP": GROUP, "STATE": "Empty"} in table(res, "GROUP"), res.brief())
    res = c.run("kafka-groups.sh", "--bootstrap-server", c.b, "--list")
    expect({"GROUP": GROUP, "TYPE": "Classic", "PROTOCOL": "consumer"} in table(res, "GROUP"), res.brief())
    return "kafka-consumer-groups --list [--state], kafka-groups --list: Classic consumer, Empty"


@test("groups.describe", quick=True)
def t_groups_describe(c):
    rows, res = describe_group(c)
    expect("Consumer group '%s' has no active members." % GROUP in res.out + res.err, res.brief())
    expect(sorted(int(r["PARTITION"]) for r in rows) == [0, 1, 2] and {r["TOPIC"] for r in rows} == {GROUP_TOPIC},
           res.brief())
    expect((total(rows, "CURRENT-OFFSET"), total(rows, "LOG-END-OFFSET"), total(rows, "LAG")) == (20, 30, 10),
           "offsets/ends/lag %s" % ((total(rows, "CURRENT-OFFSET"), total(rows, "LOG-END-OFFSET"), total(rows, "LAG")),))
    res = c.run("kafka-consumer-groups.sh", "--bootstrap-server", c.b, "--describe", "--group", GROUP, "--state")
    st = table(res, "GROUP")
    expect(len(st) == 1 and st[0].get("STATE") == "Empty" and res.out.split()[-1] == "0", res.brief())
    res = c.run("kafka-consumer-groups.sh", "--bootstrap-server", c.b, "--describe", "--group", GROUP, "--members")
    expect("Consumer group '%s' has no active members." % GROUP in res.out + res.err, res.brief())
    expect(table(res, "GROUP") == [], res.brief())
    return "committed 20 of 30, lag 10 per the table; --state Empty, 0 members"


def reset(c, *how, group=GROUP, topic=GROUP_TOPIC):
    res = c.run("kafka-consumer-groups.sh", "--bootstrap-server", c.b, "--reset-offsets", "--group", group,
                "--topic", topic, *how)
    return {int(r["PARTITION"]): int(r["NEW-OFFSET"]) for r in table(res, "GROUP")}


@test("groups.reset-offsets", quick=True)
def t_groups_reset(c):
    ends = c.offsets(GROUP_TOPIC)
    expect(sum(ends.values()) == 30, "ends %s" % ends)
    got = reset(c, "--to-earliest", "--execute")
    expect(got == {0: 0, 1: 0, 2: 0}, "--to-earliest: %s" % got)
    rows, res = describe_group(c)
    expect(total(rows, "CURRENT-OFFSET") == 0 and total(rows, "LAG") == 30, res.brief())
    got = reset(c, "--to-latest", "--dry-run")
    expect(got == ends, "--to-latest --dry-run: %s, ends %s" % (got, ends))
    rows, res = describe_group(c)
    expect(total(rows, "CURRENT-OFFSET") == 0, "dry run changed offsets: " + res.brief())
    busy = max(ends, key=lambda p: ends[p])
    got = reset(c, "--to-offset", 2, "--execute", topic="%s:%d" % (GROUP_TOPIC, busy))
    expect(got == {busy: 2}, "--to-offset 2 on partition %d: %s" % (busy, got))
    got = reset(c, "--shift-by", 3, "--execute", topic="%s:%d" % (GROUP_TOPIC, busy))
    expect(got == {busy: 5}, "--shift-by 3: %s" % got)
    got = reset(c, "--to-latest", "--execute")
    got = reset(c, "--shift-by", -1, "--execute")
    want = {p: max(e - 1, 0) for p, e in ends.items()}
    expect(got == want, "--to-latest, --shift-by -1: %s, expected %s" % (got, want))
    rows, res = describe_group(c)
    expect(total(rows, "LAG") == sum(1 for e in ends.values() if e), res.brief())
    return "to-earliest, dry-run, to-offset, shift-by +3 and -1, to-latest; describe agrees (ends %s)" % ends


@test("groups.delete-offsets", quick=True)
def t_groups_delete_offsets(c):
    res = c.run("kafka-consumer-groups.sh", "--bootstrap-server", c.b, "--delete-offsets", "--group", GROUP,
                "--topic", GROUP_TOPIC)
    expect("Request succeeded for deleting offsets from group %s." % GROUP in res.out, res.brief())
    rows = table(res, "TOPIC")
    expect(sorted((r["PARTITION"], r["STATUS"]) for r in rows) == [(str(p), "Successful") for p in range(3)],
           res.brief())
    rows, res = describe_group(c)
    expect(rows == [], "offsets left: " + res.brief())
    return "offsets of 3 partitions deleted; describe shows none"


@test("groups.delete", quick=True)
def t_groups_delete(c):
    res = c.run("kafka-consumer-groups.sh", "--bootstrap-server", c.b, "--delete", "--group", GROUP)
    expect("Deletion of requested consumer groups ('%s') was successful." % GROUP in res.out, res.brief())
    res = c.run("kafka-consumer-groups.sh", "--bootstrap-server", c.b, "--list")
    expect(GROUP not in res.lines, res.brief())
    res = c.run("kafka-consumer-groups.sh", "--bootstrap-server", c.b, "--delete", "--group", GROUP)
    expect("Group '%s' could not be deleted due to: org.apache.kafka.common.errors.GroupIdNotFoundException: "
           "The group id does not exist." % GROUP in res.out, res.brief())
    res = c.run("kafka-consumer-groups.sh", "--bootstrap-server", c.b, "--describe", "--group", GROUP)
    expect("GroupIdNotFoundException: Group %s not found." % GROUP in res.out + res.err, res.brief())
    return "deleted; again: GroupIdNotFoundException"


@test("groups.active-member")
def t_groups_active(c):
    group = "kt-group-active"
    proc = c.start("active-consumer", "kafka-console-consumer.sh", "--bootstrap-server", c.b, "--topic",
                   GROUP_TOPIC, "--group", group, "--from-beginning", "--consumer-property", "client.id=kt-active")

    def member():
        if proc.poll() is not None:
            raise Failure("the console consumer exited")
        res = c.run("kafka-consumer-groups.sh", "--bootstrap-server", c.b, "--describe", "--group", group,
                    "--members", ok=False)
        rows = table(res, "GROUP") if res.rc == 0 and "CONSUMER-ID" in res.out else []
        return rows and rows[0].get("#PARTITIONS") == "3" and rows
    rows = wait_for("a member with 3 partitions", member)
    expect(len(rows) == 1 and rows[0]["CLIENT-ID"] == "kt-active", "members %s" % rows)
    res = c.run("kafka-consumer-groups.sh", "--bootstrap-server", c.b, "--describe", "--group", group, "--state")
    st = table(res, "GROUP")[0]
    expect(st.get("STATE") == "Stable" and st.get("ASSIGNMENT-STRATEGY") == "range", res.brief())
    res = c.run("kafka-consumer-groups.sh", "--bootstrap-server", c.b, "--delete", "--group", group)
    expect("Group '%s' could not be deleted due to: org.apache.kafka.common.errors.GroupNotEmptyException: "
           "The group is not empty." % group in res.out, res.brief())
    res = c.run("kafka-consumer-groups.sh", "--bootstrap-server", c.b, "--reset-offsets", "--group", group,
                "--topic", GROUP_TOPIC, "--to-earliest", "--execute", ok=False)
    expect("Assignments can only be reset if the group '%s' is inactive, but the current state is Stable." % group
           in res.out + res.err, res.brief())
    c.stop_background()
    return "a live member: Stable, range, 3 partitions; delete and reset refused while it is there"


@test("groups.consumer-protocol", quick=True)
def t_groups_consumer_protocol(c):
    group = "kt-group-848"
    res = c.run("kafka-console-consumer.sh", "--bootstrap-server", c.b, "--topic", GROUP_TOPIC, "--group", group,
                "--from-beginning", "--max-messages", 10, "--timeout-ms", 60000,
                "--consumer-property", "group.protocol=consumer")
    expect("Processed a total of 10 messages" in res.out + res.err, res.brief())
    res = c.run("kafka-groups.sh", "--bootstrap-server", c.b, "--list")
    expect({"GROUP": group, "TYPE": "Consumer", "PROTOCOL": "consumer"} in table(res, "GROUP"), res.brief())
    return "group.protocol=consumer: 10 records; kafka-groups lists a Consumer group"


@test("groups.consumer-protocol-describe", quick=True)
def t_groups_consumer_protocol_describe(c):
    group = "kt-group-848-live"
    proc = c.start("live-848-consumer", "kafka-console-consumer.sh", "--bootstrap-server", c.b, "--topic",
                   GROUP_TOPIC, "--group", group, "--from-beginning", "--consumer-property", "group.protocol=consumer",
                   "--consumer-property", "client.id=kt-848")

    def member():
        if proc.poll() is not None:
            raise Failure("the console consumer exited")
        res = c.run("kafka-consumer-groups.sh", "--bootstrap-server", c.b, "--describe", "--group", group,
                    "--members", "--verbose", ok=False)
        rows = table(res, "GROUP") if res.rc == 0 and "CURRENT-EPOCH" in res.out else []
        return rows and rows[0].get("#PARTITIONS") == "3" and rows[0].get("CURRENT-EPOCH") == rows[0].get(
            "TARGET-EPOCH") and (rows, res)
    rows, res = wait_for("a member with its 3 partitions at the target epoch", member)
    row = rows[0]
    expect(len(rows) == 1 and row["CLIENT-ID"] == "kt-848" and int(row["CURRENT-EPOCH"]) >= 1, res.brief())
    # --verbose lists the current and target assignments (topic:partitions).
    expect(res.out.count("%s:0,1,2" % GROUP_TOPIC) == 2, res.brief())
    res = c.run("kafka-consumer-groups.sh", "--bootstrap-server", c.b, "--describe", "--group", group, "--state",
                "--verbose")
    st = table(res, "GROUP")[0]
    expect(st.get("STATE") == "Stable" and st.get("ASSIGNMENT-STRATEGY") == "uniform"
           and st.get("GROUP-EPOCH") == st.get("TARGET-ASSIGNMENT-EPOCH") == row["CURRENT-EPOCH"], res.brief())
    c.stop_background()
    return "a consumer-protocol member: Stable, uniform, epochs %s, its current and target assignments" % (
        row["CURRENT-EPOCH"])


# kafka-streams-groups (KIP-1071): Kafka Streams applications with group.protocol=streams

STREAMS_PREFIX = "kt-streams"
STREAMS_APP = STREAMS_PREFIX + "-app"  # the application.id, which is the group's id
STREAMS_INPUT = STREAMS_PREFIX + "-input"
# StreamsApp's internal topics: groupByKey's repartition topic and its two stores' changelogs.
STREAMS_REPARTITION = STREAMS_APP + "-by-user-repartition"
STREAMS_INTERNAL = sorted([STREAMS_REPARTITION, STREAMS_APP + "-totals-changelog",
                           STREAMS_APP + "-windowed-changelog"])
STREAMS_RECORDS = 30
STREAMS_TASKS = re.compile(r"(?<![\w-])((?:TARGET-)?(?:ACTIVE|STANDBY|WARMUP)): ((?:\S+:\[[\d,]*\]; )+)")


def streams_groups(c, *args, ok=True):
    return c.run("kafka-streams-groups.sh", "--bootstrap-server", c.b, *args, ok=ok)


def streams_setup(c):
    """The application's topics (3 partitions each) and its input: 30 keyed records, which the
    default partitioner places alike on both brokers. {partition: records}."""
    if c.streams_input is None:
        for t in (STREAMS_INPUT, STREAMS_PREFIX + "-totals", STREAMS_PREFIX + "-windowed"):
            c.create_topic(t, 3)
        c.produce(STREAMS_INPUT, ["r%d:user%d" % (i, i % 7) for i in range(STREAMS_RECORDS)],
                  "parse.key=true", "key.separator=:")
        ends = c.offsets(STREAMS_INPUT)
        expect(sum(ends.values()) == STREAMS_RECORDS and all(ends.values()), "input offsets %s" % ends)
        c.streams_input = ends
    return c.streams_input


def streams_start(c, instance):
    """Instance `instance` of the application, with a state directory of its own."""
    return c.streams_app("streams-app-%s" % instance, STREAMS_APP, STREAMS_PREFIX,
                         os.path.join(c.workdir, "streams-state-%s" % instance))


def streams_stop(c, proc):
    """SIGTERM to the application's pid: Kafka Streams closes, its member leaves the group."""
    os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(90)
    except subprocess.TimeoutExpired:
        raise Failure("the application (pid %d) did not stop within 90 s; see %s" % (proc.pid, proc.out_path))


def streams_running(procs):
    """A check for wait_for: every instance has printed STATE RUNNING (Failure once one exited)."""
    def check():
        for p in procs:
            if p.poll() is not None:
                raise Failure("the application exited (%s); see %s" % (p.returncode, p.out_path))
            with open(p.out_path) as f:
                if "STATE RUNNING" not in f.read():
                    return False
        return True
    return check


def raise_failure(message):
    raise Failure(message)


def streams_internal_gone(c):
    """A check for wait_for: kafka-topics --list shows none of the internal topics."""
    res = c.run("kafka-topics.sh", "--bootstrap-server", c.b, "--list")
    left = [t for t in STREAMS_INTERNAL if t in res.lines]
    return not left or raise_failure("internal topics left: %s" % left)


def streams_listed(c):
    """{group: state} from kafka-streams-groups --list --state."""
    res = streams_groups(c, "--list", "--state")
    return {r["GROUP"]: r["STATE"] for r in table(res, "GROUP")}


def streams_members(res):
    """The rows of --describe --members [--verbose]: the columns before ASSIGNMENTS, and
    `tasks`: {kind: {subtopology: [partitions]}} for ACTIVE, STANDBY, WARMUP and the TARGET-
    ones (--verbose)."""
    lines = res.out.splitlines()
    start = [i for i, l in enumerate(lines) if l.split()[:1] == ["GROUP"]]
    expect(len(start) == 1, "no members table: " + res.brief())
    header = lines[start[0]].split()
    rows = []
    for line in lines[start[0] + 1:]:
        if not line.strip():
            break
        cells = line.split(None, len(header) - 1)
        row = dict(zip(header[:-1], cells))
        rest = cells[len(header) - 1] + " " if len(cells) == len(header) else ""
        row["tasks"] = {}
        for kind, items in STREAMS_TASKS.findall(rest):
            row["tasks"][kind] = {s: [int(p) for p in ps.split(",") if p]
                                  for s, ps in re.findall(r"(\S+?):\[([\d,]*)\];", items)}
        rows.append(row)
    return rows


def streams_task_set(tasks):
    return sorted((s, p) for s, ps in tasks.items() for p in ps)


def streams_offset_errors(res):
    """--delete-offsets' rows of the input that failed: {partition: exception: message}."""
    found = re.findall(r"^%s +(\d+) +Error: org\.apache\.kafka\.common\.errors\.(.*?)\s*$" % STREAMS_INPUT,
                       res.out, re.M)
    return {int(p): e for p, e in found}


def streams_offsets(c, *extra):
    """The rows of --describe [--verbose]: {(topic, partition): row}."""
    res = streams_groups(c, "--describe", "--group", STREAMS_APP, *extra)
    return {(r["TOPIC"], int(r["PARTITION"])): r for r in table(res, "GROUP")}, res


def streams_reset(c, *how):
    """kafka-streams-groups --reset-offsets: {(topic, partition): new offset}."""
    res = streams_groups(c, "--reset-offsets", "--group", STREAMS_APP, *how)
    return {(r["TOPIC"], int(r["PARTITION"])): int(r["NEW-OFFSET"]) for r in table(res, "GROUP")}, res


@test("groups.streams-list", quick=True)
def t_groups_streams_list(c):
    streams_setup(c)
    app = streams_start(c, "list")
    wait_for("the application RUNNING", streams_running([app]))
    wait_for("the group Stable", lambda: streams_listed(c).get(STREAMS_APP) == "Stable")
    res = streams_groups(c, "--list")
    expect(res.lines == [STREAMS_APP], res.brief())
    res = streams_groups(c, "--list", "--state", "Stable,Empty")
    expect(table(res, "GROUP") == [{"GROUP": STREAMS_APP, "STATE": "Stable"}], res.brief())
    res = streams_groups(c, "--list", "--state", "Empty")
    expect(table(res, "GROUP") == [], res.brief())
    res = c.run("kafka-groups.sh", "--bootstrap-server", c.b, "--list")
    expect({"GROUP": STREAMS_APP, "TYPE": "Streams", "PROTOCOL": "streams"} in table(res, "GROUP"), res.brief())
    streams_stop(c, app)
    wait_for("the group Empty", lambda: streams_listed(c).get(STREAMS_APP) == "Empty")
    return "a Streams application running: --list, --list --state Stable; kafka-groups: Streams; stopped: Empty"


@test("groups.streams-describe")
def t_groups_streams_describe(c):
    ends = streams_setup(c)
    # One standby replica per stateful task (a group config of KIP-1071), two instances.
    res = c.run("kafka-configs.sh", "--bootstrap-server", c.b, "--entity-type", "groups", "--entity-name",
                STREAMS_APP, "--alter", "--add-config", "streams.num.standby.replicas=1")
    expect("Completed updating config for group %s." % STREAMS_APP in res.out, res.brief())
    apps = [streams_start(c, "a"), streams_start(c, "b")]
    wait_for("both instances RUNNING", streams_running(apps))

    def settled():
        streams_running(apps)()
        res = streams_groups(c, "--describe", "--group", STREAMS_APP, "--members", "--verbose")
        rows = streams_members(res)
        epochs = {r["TARGET-ASSIGNMENT-EPOCH"] for r in rows} | {r["MEMBER-EPOCH"] for r in rows}
        same = all(r["tasks"].get(k) == r["tasks"].get("TARGET-" + k) for r in rows
                   for k in ("ACTIVE", "STANDBY", "WARMUP"))
        return len(rows) == 2 and len(epochs) == 1 and same and (rows, res)
    rows, res = wait_for("two members at the target assignment", settled)
    # Subtopology 0 reads the input, subtopology 1 the repartition topic and holds the stores:
    # six active tasks in all, three stateful ones with one standby each, on the other member.
    expect({r["MEMBER-PROTOCOL"] for r in rows} == {"streams"} and len({r["PROCESS"] for r in rows}) == 2,
           res.brief())
    active = sorted(t for r in rows for t in streams_task_set(r["tasks"].get("ACTIVE", {})))
    standby = sorted(t for r in rows for t in streams_task_set(r["tasks"].get("STANDBY", {})))
    expect(active == sorted((s, p) for s in ("0", "1") for p in range(3)),
           "active tasks %s: %s" % (active, res.brief()))
    expect(standby == [("1", p) for p in range(3)], "standby tasks %s: %s" % (standby, res.brief()))
    for r in rows:
        expect(not set(streams_task_set(r["tasks"].get("ACTIVE", {}))) & set(
            streams_task_set(r["tasks"].get("STANDBY", {}))), "a task active and standby on one member: " + res.brief())
        expect(len(streams_task_set(r["tasks"].get("ACTIVE", {}))) == 3, "unbalanced: " + res.brief())
        expect(r["PROCESS"] in r["CLIENT-ID"], res.brief())
    epoch = rows[0]["MEMBER-EPOCH"]
    res = streams_groups(c, "--describe", "--group", STREAMS_APP, "--members")
    plain = streams_members(res)
    expect(sorted((r["MEMBER"], r["PROCESS"], r["CLIENT-ID"], str(r["tasks"])) for r in plain) == sorted(
        (r["MEMBER"], r["PROCESS"], r["CLIENT-ID"], str({k: v for k, v in r["tasks"].items() if "TARGET" not in k}))
        for r in rows), res.brief())
    res = streams_groups(c, "--describe", "--group", STREAMS_APP, "--state")
    st = table(res, "GROUP")
    expect(len(st) == 1 and st[0]["STATE"] == "Stable" and st[0]["#MEMBERS"] == "2" and st[0]["ASSIGNOR"] == "sticky",
           res.brief())
    res = streams_groups(c, "--describe", "--group", STREAMS_APP, "--state", "--verbose")
    st = table(res, "GROUP")[0]
    expect(st["GROUP-EPOCH"] == st["TARGET-ASSIGNMENT-EPOCH"] == epoch, res.brief())

    # Offsets: the input's and the repartition topic's partitions, all consumed (lag 0).
    def caught_up():
        rows, res = streams_offsets(c, "--verbose")
        return all(r["OFFSET-LAG"] == "0" for r in rows.values()) and (rows, res)
    offsets, res = wait_for("lag 0 everywhere", caught_up)
    expect(sorted(offsets) == sorted((t, p) for t in (STREAMS_INPUT, STREAMS_REPARTITION) for p in range(3)),
           res.brief())
    for p, end in ends.items():
        r = offsets[(STREAMS_INPUT, p)]
        expect(r["CURRENT-OFFSET"] == r["LOG-END-OFFSET"] == str(end), "input partition %d: %s" % (p, res.brief()))
    for how in ([], ["--offsets"]):
        plain, res = streams_offsets(c, *how)
        expect({k: r["OFFSET-LAG"] for k, r in plain.items()} == {k: "0" for k in offsets}, res.brief())

    # A live group is neither reset nor deleted.
    res = streams_groups(c, "--reset-offsets", "--group", STREAMS_APP, "--all-input-topics", "--to-earliest",
                         "--execute")
    expect("Assignments can only be reset if the group '%s' is inactive, but the current state is Stable."
           % STREAMS_APP in res.out, res.brief())
    res = streams_groups(c, "--delete", "--group", STREAMS_APP)
    expect("* Group '%s' could not be deleted due to: org.apache.kafka.common.errors.GroupNotEmptyException: "
           "Streams group '%s' is not EMPTY." % (STREAMS_APP, STREAMS_APP) in res.out, res.brief())

    res = streams_groups(c, "--delete-offsets", "--group", STREAMS_APP, "--input-topic", STREAMS_INPUT)
    expect("Error: Encountered some partition-level error, see the follow-up details." in res.out
           and streams_offset_errors(res) == {p: "GroupSubscribedToTopicException: Deleting offsets of a topic is "
                                              "forbidden while the consumer group is actively subscribed to it."
                                              for p in range(3)}, res.brief())
    # No topology description plugin on either broker.
    res = streams_groups(c, "--describe", "--group", STREAMS_APP, "--topology", ok=False)
    expect(res.rc == 1 and "Error: No topology description is stored for streams group '%s'." % STREAMS_APP
           in res.out, res.brief())

    for app in apps:
        streams_stop(c, app)
    wait_for("the group Empty", lambda: streams_listed(c).get(STREAMS_APP) == "Empty")
    # Without members, --describe (offsets) and --members print nothing.
    for how in ([], ["--members"]):
        res = streams_groups(c, "--describe", "--group", STREAMS_APP, *how)
        expect(res.lines == [], res.brief())
    res = streams_groups(c, "--describe", "--group", STREAMS_APP, "--state")
    st = table(res, "GROUP")
    expect("has no active members." in res.out and len(st) == 1 and st[0]["STATE"] == "Empty"
           and st[0]["#MEMBERS"] == "0", res.brief())
    return ("two instances, one standby replica: 2 members of 2 processes, 3 active tasks each, 3 standby; "
            "Stable at epoch %s, sticky; lag 0 on %d partitions; reset and delete refused; stopped: Empty"
            % (epoch, len(offsets)))


@test("groups.streams-reset-offsets")
def t_groups_streams_reset(c):
    ends = {(STREAMS_INPUT, p): e for p, e in streams_setup(c).items()}
    got, res = streams_reset(c, "--all-input-topics", "--to-earliest", "--dry-run")
    expect(got == {k: 0 for k in ends}, "--to-earliest --dry-run: " + res.brief())
    got, res = streams_reset(c, "--input-topic", STREAMS_INPUT, "--to-current", "--dry-run")
    expect(got == ends, "the dry run changed offsets: " + res.brief())
    got, res = streams_reset(c, "--input-topic", STREAMS_INPUT + ":1", "--to-offset", 1, "--execute")
    expect(got == {(STREAMS_INPUT, 1): 1}, "--to-offset 1 on partition 1: " + res.brief())
    got, res = streams_reset(c, "--input-topic", STREAMS_INPUT + ":0", "--shift-by", -2, "--execute")
    expect(got == {(STREAMS_INPUT, 0): ends[(STREAMS_INPUT, 0)] - 2}, "--shift-by -2 on partition 0: " + res.brief())
    got, res = streams_reset(c, "--all-input-topics", "--to-current", "--dry-run")
    moved = {**ends, (STREAMS_INPUT, 1): 1, (STREAMS_INPUT, 0): ends[(STREAMS_INPUT, 0)] - 2}
    expect(got == moved, "after --to-offset and --shift-by: " + res.brief())
    got, res = streams_reset(c, "--all-input-topics", "--to-latest", "--dry-run")
    expect(got == ends, "--to-latest --dry-run: " + res.brief())
    # Every record is younger than 2000: the first offsets (ListOffsets by timestamp).
    got, res = streams_reset(c, "--all-input-topics", "--to-datetime", "2000-01-01T00:00:00.000", "--dry-run")
    expect(got == {k: 0 for k in ends}, "--to-datetime --dry-run: " + res.brief())
    res = streams_groups(c, "--reset-offsets", "--group", STREAMS_APP, "--all-input-topics", "--to-current",
                         "--dry-run", "--export")
    expect(sorted(res.lines) == sorted("%s,%d,%d" % (t, p, o) for (t, p), o in moved.items()), res.brief())
    # --execute with --delete-all-internal-topics: the offsets go back to the start, and the
    # repartition and changelog topics are deleted, as an application reset wants.
    got, res = streams_reset(c, "--all-input-topics", "--to-earliest", "--execute", "--delete-all-internal-topics")
    expect(got == {k: 0 for k in ends}, "--to-earliest --execute: " + res.brief())

    wait_for("the internal topics deleted", lambda: streams_internal_gone(c))
    # The application started again reprocesses its input from the start, its internal topics
    # made anew (a fresh state directory, as after a reset).
    app = streams_start(c, "after-reset")
    wait_for("the application RUNNING", streams_running([app]))

    def caught_up():
        rows, res = streams_offsets(c, "--verbose")
        done = {k: int(r["CURRENT-OFFSET"]) for k, r in rows.items() if k[0] == STREAMS_INPUT
                and r["CURRENT-OFFSET"] != "-"}
        return done == ends and all(r["OFFSET-LAG"] == "0" for r in rows.values()) and rows
    rows = wait_for("the input reprocessed", caught_up)
    res = c.run("kafka-topics.sh", "--bootstrap-server", c.b, "--list")
    expect(all(t in res.lines for t in STREAMS_INTERNAL), "internal topics: " + res.brief())
    streams_stop(c, app)
    wait_for("the group Empty", lambda: streams_listed(c).get(STREAMS_APP) == "Empty")
    return ("dry runs (--to-earliest, --to-current, --to-latest, --to-datetime, --export), --to-offset and "
            "--shift-by on one partition each, --to-earliest --execute with --delete-all-internal-topics; "
            "restarted, the application reprocessed its %d records" % STREAMS_RECORDS)


@test("groups.streams-delete")
def t_groups_streams_delete(c):
    res = streams_groups(c, "--delete-offsets", "--group", STREAMS_APP, "--input-topic", STREAMS_INPUT)
    expect("Request succeeded for deleting offsets from group %s." % STREAMS_APP in res.out, res.brief())
    rows = table(res, "TOPIC")
    expect(sorted((r["TOPIC"], r["PARTITION"], r["STATUS"]) for r in rows) ==
           [(STREAMS_INPUT, str(p), "Successful") for p in range(3)], res.brief())
    got, res = streams_reset(c, "--all-input-topics", "--to-current", "--dry-run")
    expect(got == {}, "offsets left on the input: " + res.brief())
    res = streams_groups(c, "--delete", "--group", STREAMS_APP, "--delete-all-internal-topics")
    expect("Deletion of requested streams groups ('%s') was successful." % STREAMS_APP in res.out
           and "Deletion of associated internal topics of the streams groups ('%s') was successful." % STREAMS_APP
           in res.out, res.brief())

    wait_for("the internal topics deleted", lambda: streams_internal_gone(c))
    res = streams_groups(c, "--list")
    expect(STREAMS_APP not in res.lines, res.brief())
    res = streams_groups(c, "--delete", "--group", STREAMS_APP)
    expect("* Group '%s' could not be deleted due to: java.lang.IllegalArgumentException: Group '%s' does not "
           "exist or is not a streams group." % (STREAMS_APP, STREAMS_APP) in res.out, res.brief())
    res = streams_groups(c, "--describe", "--group", STREAMS_APP, ok=False)
    expect("GroupIdNotFoundException: Group %s not found." % STREAMS_APP in res.out, res.brief())
    got, res = streams_reset(c, "--input-topic", STREAMS_INPUT, "--to-earliest", "--execute")
    expect(got == {} and "Error: One or more topics are not part of the group '%s'." % STREAMS_APP in res.out,
           res.brief())
    res = streams_groups(c, "--delete-offsets", "--group", STREAMS_APP, "--input-topic", STREAMS_INPUT)
    expect("Error: The group id does not exist." in res.out and streams_offset_errors(res) == {
        p: "GroupIdNotFoundException: The group id does not exist." for p in range(3)}, res.brief())
    return "offsets of the input deleted; the group and its 3 internal topics deleted; again: no such group"


# kafka-share-groups, kafka-console-share-consumer

SHARE_TOPIC, SHARE_GROUP = "kt-share", "kt-share-group"


def describe_share(c):
    res = c.run("kafka-share-groups.sh", "--bootstrap-server", c.b, "--describe", "--group", SHARE_GROUP)
    return table(res, "GROUP"), res


@test("share.consume", quick=True)
def t_share_consume(c):
    c.create_topic(SHARE_TOPIC, 2)
    c.produce(SHARE_TOPIC, ["k%d:s%d" % (i, i) for i in range(20)], "parse.key=true", "key.separator=:")
    res = c.run("kafka-share-groups.sh", "--bootstrap-server", c.b, "--reset-offsets", "--group", SHARE_GROUP,
                "--topic", SHARE_TOPIC, "--to-earliest", "--execute")
    expect(sorted((r["PARTITION"], r["NEW-OFFSET"]) for r in table(res, "GROUP")) == [("0", "0"), ("1", "0")],
           res.brief())
    res = c.run("kafka-console-share-consumer.sh", "--bootstrap-server", c.b, "--topic", SHARE_TOPIC, "--group",
                SHARE_GROUP, "--max-messages", 20, "--timeout-ms", 60000)
    expect("Processed a total of 20 messages" in res.out + res.err, res.brief())
    expect(sorted(l for l in res.lines if l.startswith("s")) == sorted("s%d" % i for i in range(20)), res.brief())
    return "start offset set to earliest before the group existed; 20 records shared out"


@test("share.list", quick=True)
def t_share_list(c):
    res = c.run("kafka-share-groups.sh", "--bootstrap-server", c.b, "--list")
    expect(SHARE_GROUP in res.lines, res.brief())
    res = c.run("kafka-share-groups.sh", "--bootstrap-server", c.b, "--describe", "--group", SHARE_GROUP, "--state")
    st = table(res, "GROUP")
    expect(len(st) == 1 and st[0]["STATE"] == "Empty" and res.out.split()[-1] == "0", res.brief())
    return "listed; --state Empty, 0 members"


@test("share.describe-lag", quick=True)
def t_share_describe(c):
    c.produce(SHARE_TOPIC, ["k%d:t%d" % (i, i) for i in range(10)], "parse.key=true", "key.separator=:")
    rows, res = describe_share(c)
    expect(sorted(r["PARTITION"] for r in rows) == ["0", "1"], res.brief())
    expect(total(rows, "LAG") == 10, "lag %d after 10 more records: %s" % (total(rows, "LAG"), res.brief()))
    return "lag 10 after 10 records more"


@test("share.reset-offsets", quick=True)
def t_share_reset(c):
    ends = c.offsets(SHARE_TOPIC)
    res = c.run("kafka-share-groups.sh", "--bootstrap-server", c.b, "--reset-offsets", "--group", SHARE_GROUP,
                "--topic", SHARE_TOPIC, "--to-earliest", "--execute")
    expect(sorted((r["PARTITION"], r["NEW-OFFSET"]) for r in table(res, "GROUP")) == [("0", "0"), ("1", "0")],
           res.brief())
    rows, res = describe_share(c)
    expect(total(rows, "LAG") == 30 and all(r["START-OFFSET"] == "0" for r in rows), res.brief())
    res = c.run("kafka-share-groups.sh", "--bootstrap-server", c.b, "--reset-offsets", "--group", SHARE_GROUP,
                "--topic", SHARE_TOPIC, "--to-latest", "--execute")
    got = {int(r["PARTITION"]): int(r["NEW-OFFSET"]) for r in table(res, "GROUP")}
    expect(got == ends, "--to-latest: %s, ends %s" % (got, ends))
    rows, res = describe_share(c)
    expect(total(rows, "LAG") == 0, res.brief())
    return "to-earliest: lag 30; to-latest: %s, lag 0" % got


@test("share.delete", quick=True)
def t_share_delete(c):
    res = c.run("kafka-share-groups.sh", "--bootstrap-server", c.b, "--delete-offsets", "--group", SHARE_GROUP,
                "--topic", SHARE_TOPIC)
    expect(table(res, "TOPIC") == [{"TOPIC": SHARE_TOPIC, "STATUS": "Successful"}], res.brief())
    res = c.run("kafka-share-groups.sh", "--bootstrap-server", c.b, "--delete", "--group", SHARE_GROUP)
    expect("Deletion of requested share groups ('%s') was successful." % SHARE_GROUP in res.out, res.brief())
    res = c.run("kafka-share-groups.sh", "--bootstrap-server", c.b, "--list")
    expect(SHARE_GROUP not in res.lines, res.brief())
    return "offsets deleted, group deleted"


# kafka-console-producer / -consumer

CONSOLE_TOPIC = "kt-console"
CONSOLE_LINES = ["h1:v1,h2:v2\tk1\tvalue-1", "h3:v3\tk2\tvalue-2", "h4:\tk3\tvalue-3"]


@test("console.keys-headers", quick=True)
def t_console(c):
    c.create_topic(CONSOLE_TOPIC, 1)
    c.produce(CONSOLE_TOPIC, CONSOLE_LINES, "parse.key=true", "parse.headers=true")
    res = c.run("kafka-console-consumer.sh", "--bootstrap-server", c.b, "--topic", CONSOLE_TOPIC,
                "--from-beginning", "--max-messages", 3, "--timeout-ms", 60000,
                "--formatter-property", "print.key=true", "--formatter-property", "print.headers=true",
                "--formatter-property", "print.partition=true", "--formatter-property", "print.offset=true",
                "--formatter-property", "print.timestamp=true")
    got = [l for l in res.lines if l.startswith("CreateTime:")]
    want = [r"CreateTime:\d+\tPartition:0\tOffset:%d\t%s" % (i, re.escape(l)) for i, l in enumerate(CONSOLE_LINES)]
    expect(len(got) == 3 and all(re.fullmatch(w, g) for w, g in zip(want, got)), "got %r" % got)
    return "keys and headers round-trip: %r" % got[0]


@test("console.partition-offset")
def t_console_offset(c):
    res = c.run("kafka-console-consumer.sh", "--bootstrap-server", c.b, "--topic", CONSOLE_TOPIC,
                "--partition", 0, "--offset", 1, "--max-messages", 2, "--timeout-ms", 60000,
                "--formatter-property", "print.key=true", "--formatter-property", "key.separator=|")
    expect([l for l in res.lines if "|" in l] == ["k2|value-2", "k3|value-3"], res.brief())
    return "--partition 0 --offset 1: k2, k3 with key.separator |"


# kafka-get-offsets, kafka-delete-records

@test("get-offsets", quick=True)
def t_get_offsets(c):
    got = c.offsets(CONSOLE_TOPIC)
    expect(got == {0: 3}, "latest %s" % got)
    got = c.offsets(CONSOLE_TOPIC, "-2")
    expect(got == {0: 0}, "earliest %s" % got)
    res = c.run("kafka-get-offsets.sh", "--bootstrap-server", c.b, "--topic-partitions", "kt-con.*:0", "--time", "latest")
    expect(res.lines == ["%s:0:3" % CONSOLE_TOPIC], res.brief())
    return "latest 3, earliest 0, --topic-partitions regex"


@test("delete-records", quick=True)
def t_delete_records(c):
    path = os.path.join(c.workdir, "delete-records.json")
    with open(path, "w") as f:
        json.dump({"partitions": [{"topic": CONSOLE_TOPIC, "partition": 0, "offset": 1}], "version": 1}, f)
    res = c.run("kafka-delete-records.sh", "--bootstrap-server", c.b, "--offset-json-file", path)
    expect("Records delete operation completed:" in res.out and
           "partition: %s-0\tlow_watermark: 1" % CONSOLE_TOPIC in res.out, res.brief())
    got = c.offsets(CONSOLE_TOPIC, "earliest")
    expect(got == {0: 1}, "earliest after delete %s" % got)
    res = c.run("kafka-console-consumer.sh", "--bootstrap-server", c.b, "--topic", CONSOLE_TOPIC,
                "--from-beginning", "--max-messages", 2, "--timeout-ms", 60000)
    expect([l for l in res.lines if l.startswith("value-")] == ["value-2", "value-3"], res.brief())
    return "low watermark 1; a consumer from the beginning starts there"


# kafka-producer-perf-test, kafka-consumer-perf-test

PERF_TOPIC, PERF_N = "kt-perf", 5000


@test("perf.producer", quick=True)
def t_perf_producer(c):
    c.create_topic(PERF_TOPIC, 2)
    res = c.run("kafka-producer-perf-test.sh", "--topic", PERF_TOPIC, "--num-records", PERF_N, "--record-size", 100,
                "--throughput", -1, "--command-property", "bootstrap.servers=" + c.b, "acks=all")
    expect(re.search(r"^%d records sent, " % PERF_N, res.out, re.M), res.brief())
    got = c.offsets(PERF_TOPIC)
    expect(sum(got.values()) == PERF_N, "offsets %s" % got)
    return "%d records sent; the partitions hold %s" % (PERF_N, got)


@test("perf.consumer", quick=True)
def t_perf_consumer(c):
    res = c.run("kafka-consumer-perf-test.sh", "--bootstrap-server", c.b, "--topic", PERF_TOPIC, "--num-records",
                PERF_N, "--group", "kt-perf-group", "--timeout", 60000)
    rows = [l.split(", ") for l in res.lines if l.startswith(("start.time", "20"))]
    expect(len(rows) == 2, res.brief())
    row = dict(zip(rows[0], rows[1]))
    expect(row.get("data.consumed.in.nMsg") == str(PERF_N), "row %s" % row)
    return "%s records, %s MB consumed" % (row["data.consumed.in.nMsg"], row["data.consumed.in.MB"])


@test("perf.producer-transactional")
def t_perf_txn(c):
    res = c.run("kafka-producer-perf-test.sh", "--topic", PERF_TOPIC, "--num-records", 2000, "--record-size", 50,
                "--throughput", -1, "--command-property", "bootstrap.servers=" + c.b,
                "--transactional-id", "kt-perf-tx", "--transaction-duration-ms", 300)
    expect(re.search(r"^2000 records sent, ", res.out, re.M), res.brief())
    res = c.run("kafka-transactions.sh", "--bootstrap-server", c.b, "list")
    rows = [r for r in tsv(res, "TransactionalId") if r["TransactionalId"] == "kt-perf-tx"]
    expect(len(rows) == 1 and rows[0]["TransactionState"] == "CompleteCommit", res.brief())
    got = c.offsets(PERF_TOPIC)
    expect(sum(got.values()) >= PERF_N + 2000, "offsets %s" % got)
    return "2000 records in transactions, committed"


# kafka-transactions

TXN_TOPIC, TXN_ID = "kt-txn", "kt-open-tx"


def describe_producers(c):
    res = c.run("kafka-transactions.sh", "--bootstrap-server", c.b, "describe-producers", "--topic", TXN_TOPIC,
                "--partition", 0)
    return tsv(res, "ProducerId"), res


@test("transactions.open", quick=True)
def t_txn_open(c):
    """A producer killed inside a transaction leaves it open."""
    c.create_topic(TXN_TOPIC, 1)
    proc = c.start("open-txn-producer", "kafka-producer-perf-test.sh", "--topic", TXN_TOPIC, "--num-records",
                   10000000, "--record-size", 10, "--throughput", 50, "--command-property", "bootstrap.servers=" + c.b,
                   "--transactional-id", TXN_ID, "--transaction-duration-ms", 3600000)

    def open_txn():
        if proc.poll() is not None:
            raise Failure("the perf producer exited")
        rows, _ = describe_producers(c)
        return rows and rows[0]["CurrentTransactionStartOffset"] == "0" and rows
    rows = wait_for("an open transaction on %s-0" % TXN_TOPIC, open_txn)
    c.stop_background()  # SIGKILL: the transaction stays open
    return "producer %s killed with a transaction open at offset 0" % rows[0]["ProducerId"]


@test("transactions.list-describe", quick=True)
def t_txn_list(c):
    res = c.run("kafka-transactions.sh", "--bootstrap-server", c.b, "list")
    rows = [r for r in tsv(res, "TransactionalId") if r["TransactionalId"] == TXN_ID]
    expect(len(rows) == 1 and rows[0]["TransactionState"] == "Ongoing", res.brief())
    res = c.run("kafka-transactions.sh", "--bootstrap-server", c.b, "describe", "--transactional-id", TXN_ID)
    d = tsv(res, "CoordinatorId")
    expect(len(d) == 1 and d[0]["TransactionState"] == "Ongoing" and d[0]["TopicPartitions"] == TXN_TOPIC + "-0"
           and d[0]["ProducerId"] == rows[0]["ProducerId"], res.brief())
    return "Ongoing, partition %s-0, coordinator %s" % (TXN_TOPIC, d[0]["CoordinatorId"])


@test("transactions.find-hanging")
def t_txn_hanging(c):
    for broker in range(1, c.nodes + 1):
        res = c.run("kafka-transactions.sh", "--bootstrap-server", c.b, "find-hanging", "--broker-id", broker)
        expect(tsv(res, "Topic") == [], "broker %d: %s" % (broker, res.brief()))
    res = c.run("kafka-transactions.sh", "--bootstrap-server", c.b, "find-hanging", "--topic", TXN_TOPIC)
    expect(tsv(res, "Topic") == [], res.brief())
    return "no hanging transaction (the coordinator knows the open one)"


@test("transactions.abort", quick=True)
def t_txn_abort(c):
    c.run("kafka-transactions.sh", "--bootstrap-server", c.b, "abort", "--topic", TXN_TOPIC, "--partition", 0,
          "--start-offset", 0)
    rows, res = describe_producers(c)
    expect(rows and rows[0]["CurrentTransactionStartOffset"] == "None", res.brief())
    end = c.offsets(TXN_TOPIC)[0]
    res = c.run("kafka-console-consumer.sh", "--bootstrap-server", c.b, "--topic", TXN_TOPIC, "--from-beginning",
                "--isolation-level", "read_committed", "--timeout-ms", 5000, ok=False)
    expect("Processed a total of 0 messages" in res.out + res.err, res.brief())
    return "aborted at offset 0: no open transaction; read_committed reads none of %d offsets" % end


# kafka-log-dirs, kafka-metadata-quorum, kafka-features, kafka-cluster, kafka-broker-api-versions

@test("log-dirs", quick=True)
def t_log_dirs(c):
    res = c.run("kafka-log-dirs.sh", "--bootstrap-server", c.b, "--describe", "--topic-list", CONSOLE_TOPIC)
    brokers = ",".join(str(n) for n in range(1, c.nodes + 1))
    expect("Received log directory information from brokers %s" % brokers in res.out, res.brief())
    data = json.loads([l for l in res.lines if l.startswith("{")][-1])
    holders = []
    for b in data["brokers"]:
        for d in b["logDirs"]:
            expect(d["error"] is None, "log dir %s" % d)
            for p in d["partitions"]:
                expect(p["partition"] == CONSOLE_TOPIC + "-0" and p["size"] > 0 and not p["isFuture"], "%s" % p)
                holders.append(b["broker"])
    expect(len(holders) == c.rf, "replicas on brokers %s" % holders)
    return "%s-0 on brokers %s" % (CONSOLE_TOPIC, sorted(holders))


@test("metadata-quorum.status", quick=True)
def t_quorum_status(c):
    res = c.run("kafka-metadata-quorum.sh", "--bootstrap-server", c.b, "describe", "--status")
    f = {k.strip(): v.strip() for k, _, v in (l.partition(":") for l in res.lines)}
    voters = json.loads(f["CurrentVoters"])
    expect(sorted(v["id"] for v in voters) == list(range(1, c.nodes + 1)), res.brief())
    expect(int(f["LeaderId"]) in range(1, c.nodes + 1) and int(f["HighWatermark"]) > 0 and int(f["LeaderEpoch"]) >= 1,
           res.brief())
    expect(f["CurrentObservers"] == "[]" and f["ClusterId"], res.brief())
    res2 = c.run("kafka-cluster.sh", "cluster-id", "--bootstrap-server", c.b)
    expect(res2.lines == ["Cluster ID: " + f["ClusterId"]], res2.brief())
    return "leader %s, %d voters, cluster id as kafka-cluster says" % (f["LeaderId"], len(voters))


@test("metadata-quorum.replication")
def t_quorum_replication(c):
    res = c.run("kafka-metadata-quorum.sh", "--bootstrap-server", c.b, "describe", "--replication")
    rows = tsv(res, "NodeId")
    expect(sorted(int(r["NodeId"]) for r in rows) == list(range(1, c.nodes + 1)), res.brief())
    expect([r["Status"] for r in rows].count("Leader") == 1 and
           all(r["Status"] in ("Leader", "Follower") for r in rows), res.brief())
    return "%d rows, one Leader" % len(rows)


def features(c):
    res = c.run("kafka-features.sh", "--bootstrap-server", c.b, "describe")
    out = {}
    for line in res.lines:
        m = dict(re.findall(r"(\w+): (\S+)", line))
        out[m.get("Feature")] = m
    return out, res


@test("features", quick=True)
def t_features(c):
    got, res = features(c)
    for name in ("metadata.version", "kraft.version", "transaction.version"):
        expect(name in got and "FinalizedVersionLevel" in got[name], "%s missing: %s" % (name, res.brief()))
    expect(got["transaction.version"]["FinalizedVersionLevel"] == "2", res.brief())
    res = c.run("kafka-features.sh", "--bootstrap-server", c.b, "downgrade", "--feature", "transaction.version=1",
                "--dry-run")
    expect(res.lines == ["transaction.version can be downgraded to 1."], res.brief())
    res = c.run("kafka-features.sh", "--bootstrap-server", c.b, "upgrade", "--feature", "transaction.version=2",
                "--dry-run")
    expect(res.lines == ["transaction.version can be upgraded to 2."], res.brief())
    res = c.run("kafka-features.sh", "--bootstrap-server", c.b, "downgrade", "--metadata", "3.3-IV3", "--dry-run",
                ok=False)
    expect(res.rc != 0 and "Unsupported metadata.version downgrade from" in res.out, res.brief())
    return "metadata.version %s; transaction.version 2; dry-run downgrade/upgrade as Kafka" % (
        got["metadata.version"]["FinalizedVersionLevel"])


@test("cluster.endpoints")
def t_cluster(c):
    res = c.run("kafka-cluster.sh", "list-endpoints", "--bootstrap-server", c.b)
    rows = table(res, "ID")
    expect(sorted(int(r["ID"]) for r in rows) == list(range(1, c.nodes + 1)) and
           all(r["STATE"] == "unfenced" and r["ENDPOINT_TYPE"] == "broker" for r in rows), res.brief())
    res = c.run("kafka-broker-api-versions.sh", "--bootstrap-server", c.b)
    heads = [l for l in res.lines if re.match(r"\S+ \(id: \d+ rack: \S+ isFenced: false\) -> \($", l)]
    expect(len(heads) == c.nodes, res.brief())
    for api in ("Produce(0)", "Fetch(1)", "Metadata(3)", "ShareFetch(78)"):
        expect(len(re.findall(r"\t%s: \d+ to \d+ \[usable: \d+\]" % re.escape(api), res.out)) == c.nodes,
               "%s not usable on every broker" % api)
    return "%d unfenced brokers; Produce, Fetch, Metadata, ShareFetch usable on each" % len(rows)


@test("dump-log")
def t_dump_log(c):
    segs = []
    for d in c.target.data_dirs():
        segs += glob.glob(os.path.join(d, "**", PERF_TOPIC + "-0", "00000000000000000000.log"), recursive=True)
    expect(segs, "no segment of %s-0 under %s" % (PERF_TOPIC, c.target.data_dirs()))
    res = c.run("kafka-dump-log.sh", "--files", segs[0])
    batches = [l for l in res.lines if l.startswith("baseOffset: ")]
    expect(res.lines[0] == "Dumping " + segs[0] and batches, res.brief())
    expect(all("isvalid: true" in l for l in batches), "invalid batch: %s" % [l for l in batches if "isvalid: true" not in l][:1])
    last = int(re.search(r"lastOffset: (\d+)", batches[-1]).group(1))
    count = sum(int(re.search(r"count: (\d+)", l).group(1)) for l in batches)
    expect(count == last + 1 if "isTransactional: false" in batches[0] else count > 0, "count %d last %d" % (count, last))
    return "%d valid batches, %d records in Samsa's segment as Kafka reads it" % (len(batches), count) \
        if c.target.kind == "samsa" else "%d valid batches, %d records" % (len(batches), count)


# kafka-acls

def acls(res):
    """{resource pattern: set of (principal, host, operation, permission)}"""
    out, current = {}, None
    for line in res.out.splitlines():
        m = re.search(r"resource `ResourcePattern\(resourceType=(\w+), name=(.*), patternType=(\w+)\)`", line)
        if m:
            current = m.groups()
            out.setdefault(current, set())
            continue
        m = re.search(r"\(principal=(.*), host=(.*), operation=(\w+), permissionType=(\w+)\)", line)
        if m and current:
            out[current].add(m.groups())
    return out


@test("acls.add-list", quick=True)
def t_acls_add(c):
    res = c.run("kafka-acls.sh", "--bootstrap-server", c.b, "--add", "--allow-principal", "User:alice",
                "--operation", "Read", "--operation", "Describe", "--topic", "kt-acl")
    want = {("TOPIC", "kt-acl", "LITERAL"): {("User:alice", "*", "READ", "ALLOW"), ("User:alice", "*", "DESCRIBE", "ALLOW")}}
    expect(acls(res) == want, res.brief())
    res = c.run("kafka-acls.sh", "--bootstrap-server", c.b, "--list", "--topic", "kt-acl")
    expect(acls(res) == want, res.brief())
    return "2 ACLs on topic kt-acl added and listed"


@test("acls.convenience")
def t_acls_convenience(c):
    res = c.run("kafka-acls.sh", "--bootstrap-server", c.b, "--add", "--allow-principal", "User:bob", "--producer",
                "--topic", "kt-pre-", "--resource-pattern-type", "prefixed", "--idempotent")
    res = c.run("kafka-acls.sh", "--bootstrap-server", c.b, "--add", "--allow-principal", "User:bob", "--consumer",
                "--topic", "kt-acl", "--group", "kt-acl-group", "--allow-host", "127.0.0.1")
    res = c.run("kafka-acls.sh", "--bootstrap-server", c.b, "--list", "--principal", "User:bob")
    got = acls(res)
    want = {("TOPIC", "kt-pre-", "PREFIXED"): {("User:bob", "*", op, "ALLOW") for op in ("WRITE", "DESCRIBE", "CREATE")},
            ("CLUSTER", "kafka-cluster", "LITERAL"): {("User:bob", "*", "IDEMPOTENT_WRITE", "ALLOW")},
            ("TOPIC", "kt-acl", "LITERAL"): {("User:bob", "127.0.0.1", op, "ALLOW") for op in ("READ", "DESCRIBE")},
            ("GROUP", "kt-acl-group", "LITERAL"): {("User:bob", "127.0.0.1", "READ", "ALLOW")}}
    expect(got == want, "listed %s" % got)
    res = c.run("kafka-acls.sh", "--bootstrap-server", c.b, "--list", "--topic", "kt-pre-x",
                "--resource-pattern-type", "match")
    expect(set(acls(res)) == {("TOPIC", "kt-pre-", "PREFIXED")}, res.brief())
    return "--producer --idempotent (prefixed), --consumer --group; --principal and match filters"


@test("acls.remove", quick=True)
def t_acls_remove(c):
    c.run("kafka-acls.sh", "--bootstrap-server", c.b, "--remove", "--force", "--allow-principal", "User:alice",
          "--operation", "Read", "--topic", "kt-acl")
    res = c.run("kafka-acls.sh", "--bootstrap-server", c.b, "--list", "--topic", "kt-acl", "--principal", "User:alice")
    expect(acls(res) == {("TOPIC", "kt-acl", "LITERAL"): {("User:alice", "*", "DESCRIBE", "ALLOW")}}, res.brief())
    for args in (["--topic", "kt-acl"], ["--topic", "kt-pre-", "--resource-pattern-type", "prefixed"],
                 ["--group", "kt-acl-group"], ["--cluster"]):
        c.run("kafka-acls.sh", "--bootstrap-server", c.b, "--remove", "--force", *args)
    res = c.run("kafka-acls.sh", "--bootstrap-server", c.b, "--list")
    expect(not any(acls(res).values()), "ACLs left: %s" % acls(res))
    return "one removed; all removed by resource"


# kafka-verifiable-producer / -consumer

VERIFIABLE_TOPIC, VERIFIABLE_N = "kt-verifiable", 200


def events(res):
    out = []
    for line in res.lines:
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


@test("verifiable.producer", quick=True)
def t_verifiable_producer(c):
    c.create_topic(VERIFIABLE_TOPIC, 2)
    res = c.run("kafka-verifiable-producer.sh", "--bootstrap-server", c.b, "--topic", VERIFIABLE_TOPIC,
                "--max-messages", VERIFIABLE_N, "--acks", -1)
    ev = events(res)
    sent = [e for e in ev if e["name"] == "producer_send_success"]
    tool = [e for e in ev if e["name"] == "tool_data"]
    expect(len(sent) == VERIFIABLE_N and tool and tool[0]["acked"] == VERIFIABLE_N and tool[0]["sent"] == VERIFIABLE_N,
           "%d send successes, tool_data %s" % (len(sent), tool))
    expect(not [e for e in ev if e["name"] == "producer_send_error"], res.brief())
    return "%d acked" % VERIFIABLE_N


@test("verifiable.consumer", quick=True)
def t_verifiable_consumer(c):
    res = c.run("kafka-verifiable-consumer.sh", "--bootstrap-server", c.b, "--topic", VERIFIABLE_TOPIC,
                "--group-id", "kt-verifiable-group", "--max-messages", VERIFIABLE_N)
    ev = events(res)
    consumed = sum(e["count"] for e in ev if e["name"] == "records_consumed")
    commits = [e for e in ev if e["name"] == "offsets_committed"]
    assigned = {(p["topic"], p["partition"]) for e in ev if e["name"] == "partitions_assigned" for p in e["partitions"]}
    expect(consumed == VERIFIABLE_N, "consumed %d: %s" % (consumed, res.brief()))
    expect(commits and all(e["success"] for e in commits), "commits %s" % commits)
    expect(assigned == {(VERIFIABLE_TOPIC, 0), (VERIFIABLE_TOPIC, 1)}, "assigned %s" % assigned)
    committed = {}
    for e in commits:
        for o in e["offsets"]:
            committed[o["partition"]] = o["offset"]
    expect(sum(committed.values()) == VERIFIABLE_N, "committed %s" % committed)
    return "%d consumed, offsets %s committed" % (consumed, committed)


# kafka-reassign-partitions, kafka-leader-election (three nodes)

def reassign(c, name, assignment):
    path = os.path.join(c.workdir, name + ".json")
    with open(path, "w") as f:
        json.dump({"version": 1, "partitions": assignment}, f)
    res = c.run("kafka-reassign-partitions.sh", "--bootstrap-server", c.b, "--reassignment-json-file", path,
                "--execute")
    for a in assignment:
        expect("Successfully started partition reassignment for %s-%d" % (a["topic"], a["partition"]) in res.out,
               res.brief())

    def done():
        res = c.run("kafka-reassign-partitions.sh", "--bootstrap-server", c.b, "--reassignment-json-file", path,
                    "--verify")
        return all("Reassignment of partition %s-%d is completed." % (a["topic"], a["partition"]) in res.out
                   for a in assignment) and res
    return wait_for("reassignment %s completed" % name, done)


@test("reassign.generate", cluster=True)
def t_reassign_generate(c):
    c.create_topic("kt-move", None, None, "--replica-assignment", "1")
    # One replica: acks=1 (min.insync.replicas is 2 on three nodes).
    c.produce("kt-move", ["m%d" % i for i in range(10)], acks="1")
    expect(c.offsets("kt-move") == {0: 10}, "10 records produced to kt-move")
    path = os.path.join(c.workdir, "topics-to-move.json")
    with open(path, "w") as f:
        json.dump({"topics": [{"topic": "kt-move"}], "version": 1}, f)
    res = c.run("kafka-reassign-partitions.sh", "--bootstrap-server", c.b, "--topics-to-move-json-file", path,
                "--broker-list", "2,3", "--generate")
    lines = res.lines
    expect("Current partition replica assignment" in lines and "Proposed partition reassignment configuration" in lines,
           res.brief())
    cur = json.loads(lines[lines.index("Current partition replica assignment") + 1])
    prop = json.loads(lines[lines.index("Proposed partition reassignment configuration") + 1])
    expect([(p["topic"], p["partition"], p["replicas"]) for p in cur["partitions"]] == [("kt-move", 0, [1])], "%s" % cur)
    expect(len(prop["partitions"]) == 1 and prop["partitions"][0]["replicas"][0] in (2, 3), "%s" % prop)
    return "current [1], proposed %s" % prop["partitions"][0]["replicas"]


@test("reassign.execute-verify", cluster=True)
def t_reassign_execute(c):
    res = reassign(c, "move", [{"topic": "kt-move", "partition": 0, "replicas": [2, 3]}])
    expect("Clearing broker-level throttles on brokers" in res.out, res.brief())
    _, parts, res = describe_topic(c, "kt-move")
    expect(parts[0]["replicas"] == [2, 3] and parts[0]["leader"] in (2, 3) and sorted(parts[0]["isr"]) == [2, 3],
           res.brief())
    expect(c.offsets("kt-move") == {0: 10}, "offsets after the move")
    res = c.run("kafka-console-consumer.sh", "--bootstrap-server", c.b, "--topic", "kt-move", "--from-beginning",
                "--max-messages", 10, "--timeout-ms", 60000)
    expect([l for l in res.lines if l.startswith("m")] == ["m%d" % i for i in range(10)], res.brief())
    return "kt-move-0 moved from [1] to [2, 3]; its 10 records read back"


@test("election.preferred", cluster=True)
def t_election_preferred(c):
    c.create_topic("kt-elect", None, None, "--replica-assignment", "1:2:3")
    _, parts, res = describe_topic(c, "kt-elect")
    expect(parts[0]["leader"] == 1, res.brief())
    reassign(c, "reorder", [{"topic": "kt-elect", "partition": 0, "replicas": [2, 1, 3]}])
    _, parts, res = describe_topic(c, "kt-elect")
    expect(parts[0]["replicas"] == [2, 1, 3], res.brief())
    before = parts[0]["leader"]
    res = c.run("kafka-leader-election.sh", "--bootstrap-server", c.b, "--election-type", "preferred", "--topic",
                "kt-elect", "--partition", 0)
    if before == 1:
        expect("Successfully completed leader election (PREFERRED) for partitions kt-elect-0" in res.out, res.brief())
    else:
        expect("Valid replica already elected for partitions kt-elect-0" in res.out, res.brief())
    _, parts, res = describe_topic(c, "kt-elect")
    expect(parts[0]["leader"] == 2, res.brief())
    res = c.run("kafka-leader-election.sh", "--bootstrap-server", c.b, "--election-type", "preferred",
                "--all-topic-partitions")
    elected = [l for l in res.lines if l.startswith("Successfully completed leader election (PREFERRED) for partitions")]
    expect(not any("kt-elect-0" in l.split() or l.endswith(" kt-elect-0") or "kt-elect-0," in l for l in elected),
           "kt-elect-0 elected again: " + res.brief())
    return "replicas reordered to [2, 1, 3] (leader %d): preferred election made 2 the leader" % before


@test("election.unclean", cluster=True)
def t_election_unclean(c):
    res = c.run("kafka-leader-election.sh", "--bootstrap-server", c.b, "--election-type", "unclean", "--topic",
                "kt-elect", "--partition", 0)
    expect("Valid replica already elected for partitions kt-elect-0" in res.out, res.brief())
    path = os.path.join(c.workdir, "elect.json")
    with open(path, "w") as f:
        json.dump({"partitions": [{"topic": "kt-elect", "partition": 0}, {"topic": "kt-nope", "partition": 0}]}, f)
    res = c.run("kafka-leader-election.sh", "--bootstrap-server", c.b, "--election-type", "unclean",
                "--path-to-json-file", path, ok=False)
    expect(res.rc != 0 and "kt-nope-0" in res.out + res.err and "UnknownTopicOrPartitionException" in res.out + res.err,
           res.brief())
    return "unclean election with a live leader: already elected; an unknown partition refused"


# ------------------------------------------------------------------------------------- main

def make_cds_archive(home, env, workdir, bootstrap):
    """A class-data archive of the tools' start (JDK 17's dynamic AppCDS), from one run of
    kafka-topics; None when the JVM cannot make one."""
    path = os.path.join(workdir, "tools.jsa")
    e = dict(env, KAFKA_OPTS=(env.get("KAFKA_OPTS", "") + " -XX:ArchiveClassesAtExit=" + path).strip())
    subprocess.run([os.path.join(home, "bin", "kafka-topics.sh"), "--bootstrap-server", bootstrap, "--list"],
                   env=e, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=TOOL_TIMEOUT_S)
    return path if os.path.exists(path) else None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--samsa", required=True)
    p.add_argument("--cluster", type=int, default=1)
    p.add_argument("--kafka", action="store_true", help="against the reference Kafka 4.4 instead of Samsa")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--only", help="comma-separated test names, or prefixes: groups. (ending in '.') or "
                   "groups.streams (groups.streams-*)")
    p.add_argument("--workload-libs", default=os.path.join(ROOT, ".tools", "kafka-workloads-" + VERSION, "libs"),
                   help="Kafka Streams' jars (kafka-workloads.sh copies them) for the groups.streams-* tests")
    p.add_argument("--plain-jvm", action="store_true", help="the tools' JVMs with Kafka's scripts' default flags")
    args = p.parse_args()

    nodes = args.cluster
    stem = "kafka-tools" + ("-cluster%d" % nodes if nodes > 1 else "") + ("-kafka" if args.kafka else "") + (
        "-quick" if args.quick else "")
    if args.only:
        # Some tests by name: a report of their own, never taken for the whole suite's.
        stem += "-selected"
    mode = ("kafka" if args.kafka else "samsa") + ("-cluster%d" % nodes if nodes > 1 else "") + (
        "-quick" if args.quick else "")
    skips = {} if args.kafka else read_list(os.path.join(HERE, "kafka-tools-skip.txt"))
    tests = [t for t in TESTS if (nodes > 1 or not t[3]) and (t[2] or not args.quick)]
    if args.only:
        wanted = [w.strip() for w in args.only.split(",") if w.strip()]
        tests = [t for t in tests if any(t[0] == w or (w.endswith(".") and t[0].startswith(w))
                                         or t[0].startswith(w + "-") for w in wanted)]

    home = subprocess.run([sys.executable, REFERENCE, "bin"], check=True, stdout=subprocess.PIPE,
                          text=True).stdout.strip().splitlines()[-1]
    workdir = tempfile.mkdtemp(prefix="samsa-kafka-tools-")
    env = dict(os.environ)
    for k in ("KAFKA_OPTS", "KAFKA_HEAP_OPTS", "KAFKA_JVM_PERFORMANCE_OPTS", "KAFKA_LOG4J_OPTS", "CLASSPATH"):
        env.pop(k, None)
    env["LOG_DIR"] = os.path.join(workdir, "tool-logs")
    if not args.plain_jvm:
        env["KAFKA_JVM_PERFORMANCE_OPTS"] = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djava.awt.headless=true"
    summary = Summary("kafka-tools", VERSION, mode)
    print("kafka-tools %s: %d tests against %s, %d node(s), logs in %s" % (
        VERSION, len(tests), "kafka" if args.kafka else "samsa", nodes, workdir), flush=True)
    target = None
    started_all = time.time()
    try:
        if args.kafka:
            target = KafkaTarget(os.path.join(workdir, "kafka"), nodes)
        else:
            target = SamsaTarget(os.path.abspath(args.samsa), os.path.join(workdir, "samsa"), nodes)
        if not args.plain_jvm:
            cds = make_cds_archive(home, env, workdir, target.bootstrap)
            if cds:
                env["KAFKA_OPTS"] = "-XX:SharedArchiveFile=" + cds + " -Xlog:cds=off -Xlog:cds+dynamic=off"
        ctx = Ctx(target, home, workdir, env, args.quick, args.workload_libs)
        logs = os.path.join(workdir, "tests")
        os.makedirs(logs, exist_ok=True)
        for name, fn, _, _ in tests:
            skip = skips.get(name)
            if skip and args.quick:
                summary.add(name, name, "SKIPPED", 0, skip)
                print("SKIPPED %s: %s" % (name, skip), flush=True)
                continue
            log_path = os.path.join(logs, name + ".log")
            ctx.log = open(log_path, "w")
            started = time.time()
            try:
                detail = fn(ctx) or ""
                state, reason = "PASSED", ""
            except Exception as e:  # noqa: BLE001
                if not isinstance(e, Failure):
                    traceback.print_exc()
                state, reason, detail = "FAILED", ("%s: %s" % (type(e).__name__, e)
                                                   if not isinstance(e, Failure) else str(e)), ""
            finally:
                ctx.stop_background()
                ctx.log.close()
            elapsed = time.time() - started
            if skip and state == "FAILED":
                state, reason, detail = "SKIPPED", skip, "failed as expected: " + reason[:500]
            elif skip:
                detail += " (listed in kafka-tools-skip.txt but passed: remove the line)"
            if state == "FAILED":
                summary.add(name, name, state, elapsed, reason, log=log_path)
            else:
                summary.add(name, name, state, elapsed, reason, detail=detail)
                print("%s %s (%.1f s): %s" % (state, name, elapsed, reason if state == "SKIPPED" else detail),
                      flush=True)
    finally:
        if target is not None:
            target.stop()
    summary.data["wall_s"] = round(time.time() - started_all, 1)
    status = summary.finish(stem)
    print("kafka-tools: %.0f s in all" % (time.time() - started_all), flush=True)
    if status == 0 and not os.environ.get("KEEP_WORKDIR"):
        shutil.rmtree(workdir, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
