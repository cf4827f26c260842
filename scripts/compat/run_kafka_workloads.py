#!/usr/bin/env python3
"""Kafka Streams, Kafka Connect and MirrorMaker 2 as workloads against Samsa (or, with --kafka,
against the reference Kafka 4.4), each workload a named test in report.py's shape.

Called by scripts/compat/kafka-workloads.sh, which installs the jars (compat-tests/java/workloads/
pom.xml) into .tools/kafka-workloads-<version>/libs and compiles the programs into
target/compat/kafka-workloads/classes. The tests:

  streams-eos                 Streams with exactly_once_v2 (classic group): selectKey + groupByKey
                              (a repartition topic), a count and a 10 s windowed count (persistent
                              stores with changelogs), record cache off; the two output topics
                              read with read_committed hold per key exactly the counts 1..n the
                              known input gives: no duplicate, no loss, nothing else.
  streams-eos-app-sigkill     the same, the application SIGKILLed mid-run and started again.
  streams-eos-broker-sigkill  the same, the group coordinator's broker SIGKILLed mid-run and
                              started again (one node: the broker; three: that node).
  streams-group-protocol      the same application with group.protocol=streams (KIP-1071), two
                              instances.
  streams-group-protocol-app-sigkill     the same with one of the two instances SIGKILLed mid-run and
                              started again.
  streams-group-protocol-broker-sigkill  the same with the group coordinator's broker SIGKILLed.
  connect-file                Connect in distributed mode (config, offset and status topics on the
                              broker), FileStreamSource -> topic -> FileStreamSink, driven over REST:
                              every line arrives once, in order.
  connect-file-worker-restart the same across a stop and start of the worker, lines appended while
                              it is down and after: no line lost, the order kept; Connect promises
                              at least once, so a line written again is allowed only as a replay
                              at the restart (the sink's offsets not yet committed), and counted.
  mirrormaker2-kafka-to-samsa MirrorMaker 2 (dedicated mode) from a reference Kafka to the target:
                              the records (partitions, offsets, keys, values, headers, timestamps)
                              and the consumer group's offsets translated (checkpoints and
                              sync.group.offsets) exactly (the group read every partition to its
                              end, where MirrorMaker's translation is exact); more records follow;
                              with MirrorMaker stopped, a member of the group on the target resumes
                              at the translated offsets (no reset) and reads exactly the new ones.
  mirrormaker2-samsa-to-kafka the same flow back, in the same MirrorMaker process.

--quick runs streams-eos, streams-group-protocol and connect-file only (smaller input). Skips on Samsa (features with
issues of their own) are listed in kafka-workloads-skip.txt, each with its reason."""
import argparse
import importlib.machinery
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from report import Summary, read_list  # noqa: E402
from samsa_broker import Broker, Nodes, free_port  # noqa: E402

REFERENCE = os.path.join(ROOT, "scripts", "reference", "kafka")
TEST_PROPERTIES = os.path.join(ROOT, "scripts", "reference", "test.properties")
# Bounds for a workload to finish on a slow shared machine; reaching one is a failure, never a
# pass, and nothing is measured against them.
WAIT_S = 300
PROGRESS_POLL_S = 1.0


def load_reference():
    loader = importlib.machinery.SourceFileLoader("reference_kafka", REFERENCE)
    spec = importlib.util.spec_from_loader("reference_kafka", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def cluster_overrides(nodes):
    """The settings of scripts/reference/test.properties raised for `nodes` nodes (RF = nodes)."""
    if nodes == 1:
        return {}
    isr = str(min(2, nodes))
    return {"default.replication.factor": str(nodes), "offsets.topic.replication.factor": str(nodes),
            "transaction.state.log.replication.factor": str(nodes), "transaction.state.log.min.isr": isr,
            "share.coordinator.state.topic.replication.factor": str(nodes),
            "share.coordinator.state.topic.min.isr": isr, "min.insync.replicas": isr}


class SamsaTarget:
    kind = "samsa"

    def __init__(self, samsa, workdir, nodes):
        self.nodes = nodes
        props = load_reference().read_properties(TEST_PROPERTIES)
        props.update(cluster_overrides(nodes))
        os.makedirs(workdir, exist_ok=True)
        if nodes == 1:
            self.broker = Broker(samsa, workdir, props)
        else:
            self.broker = Nodes(samsa, workdir, nodes, props)
        self.bootstrap = self.broker.bootstrap
        self.logs = workdir

    def crash_and_restart(self, node):
        if self.nodes == 1:
            self.broker.kill()
            time.sleep(1)
            if not self.broker._start():
                raise RuntimeError("samsa exited at restart; see " + self.broker.log_path)
        else:
            self.broker.kill_node(node)
            time.sleep(1)
            self.broker.start_node(node)

    def stop(self):
        self.broker.stop()


class KafkaTarget:
    """The reference Kafka 4.4 (scripts/reference/kafka start DIR), stopped by pid."""
    kind = "kafka"

    def __init__(self, workdir, nodes):
        self.ref = load_reference()
        self.dir = workdir
        self.nodes = nodes
        cmd = [sys.executable, REFERENCE, "start", workdir, "--nodes", str(nodes)]
        for k, v in cluster_overrides(nodes).items():
            cmd += ["--set", "%s=%s" % (k, v)]
        env = dict(os.environ)
        env.setdefault("KAFKA_HEAP_OPTS", "-Xmx768m -Xms768m")
        self.env = env
        done = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if done.returncode != 0:
            raise RuntimeError("reference kafka did not start: " + done.stdout[-2000:])
        with open(os.path.join(workdir, "cluster.json")) as f:
            self.info = json.load(f)
        self.bootstrap = self.info["bootstrap"]
        self.logs = workdir

    def crash_and_restart(self, node):
        pid = int(self.info["pids"][str(node)])
        os.kill(pid, signal.SIGKILL)
        while self.ref.alive(pid):
            time.sleep(0.1)
        time.sleep(1)
        node_dir = os.path.join(os.path.abspath(self.dir), "node-%d" % node)
        heap = self.env["KAFKA_HEAP_OPTS"].split()
        java = self.ref.java(node_dir)
        cmd = java[:1] + heap + java[1:] + ["kafka.Kafka", os.path.join(node_dir, "server.properties")]
        with open(os.path.join(node_dir, "stdout.log"), "a") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        self.info["pids"][str(node)] = proc.pid
        with open(os.path.join(self.dir, "cluster.json"), "w") as f:
            json.dump(self.info, f, indent=1)
        port = self.info["ports"][str(node)]["broker"]
        deadline = time.time() + WAIT_S
        while not (self.ref.api_versions_ok(port) and self.ref.broker_count(port) == self.nodes):
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError("kafka node %d did not serve again; see %s" % (node, node_dir))
            time.sleep(0.2)

    def stop(self):
        subprocess.run([sys.executable, REFERENCE, "stop", self.dir], check=False)


class Failure(Exception):
    pass


class Java:
    """The JVM programs: Workload subcommands (short-lived) and long-running services."""

    def __init__(self, libs, classes, workdir):
        self.cp = classes + ":" + os.path.join(libs, "*")
        self.workdir = workdir
        # The generators' record timestamps start here (a 10 s window boundary, for the reader).
        self.env = dict(os.environ, WORKLOAD_BASE_TS=str(int(time.time()) // 10 * 10000))
        self.log4j = os.path.join(workdir, "log4j2.properties")
        with open(self.log4j, "w") as f:
            f.write("status = warn\n"
                    "appender.file.type = File\nappender.file.name = FILE\n"
                    "appender.file.fileName = ${sys:workload.log}\n"
                    "appender.file.layout.type = PatternLayout\n"
                    "appender.file.layout.pattern = [%d] %p [%t] %m (%c)%n\n"
                    "rootLogger.level = INFO\nrootLogger.appenderRef.file.ref = FILE\n")

    def cmd(self, log, main, *args, heap="-Xmx256m"):
        # The short-lived tools start faster with the serial collector and the first JIT tier.
        quick = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"] if main == "samsa.workloads.Workload" else []
        return ["java", heap] + quick + [
                "-Dlog4j2.configurationFile=" + self.log4j, "-Dworkload.log=" + log,
                "-cp", self.cp, main] + [str(a) for a in args]

    def tool(self, *args, check=True):
        """Runs a Workload subcommand; its stdout (stripped). Raises Failure when it fails."""
        log = os.path.join(self.workdir, "tools.log")
        done = subprocess.run(self.cmd(log, "samsa.workloads.Workload", *args), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env=self.env)
        out = done.stdout.strip()
        if check and done.returncode != 0:
            lines = [l for l in out.splitlines() if l.startswith("FAIL ")] or out.splitlines()[-5:]
            raise Failure("%s: %s" % (args[0], " | ".join(lines)))
        return out

    def start_tool(self, name, *args):
        """A Workload subcommand in the background."""
        return self.start(name, "samsa.workloads.Workload", *args, heap="-Xmx256m")

    def start(self, name, main, *args, heap="-Xmx512m"):
        log = os.path.join(self.workdir, name + ".log")
        out = open(os.path.join(self.workdir, name + ".out"), "a")
        proc = subprocess.Popen(self.cmd(log, main, *args, heap=heap), stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=self.env)
        proc.out_path = out.name
        out.close()
        return proc


def stop_process(proc, timeout=60):
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def kill_process(proc):
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait()


def wait_for(what, check, timeout=WAIT_S, procs=()):
    deadline = time.time() + timeout
    while True:
        value = check()
        if value:
            return value
        for p in procs:
            if p.poll() is not None:
                raise Failure("the process exited (status %s) while waiting for %s; see %s" % (
                    p.returncode, what, getattr(p, "out_path", "")))
        if time.time() > deadline:
            raise Failure("no %s within %d s" % (what, timeout))
        time.sleep(PROGRESS_POLL_S)


# ---------------------------------------------------------------- Streams


def streams_test(ctx, name, n, kill=None, protocol="classic", instances=1):
    """`kill`: None, "app" or "broker": once the application has committed a quarter of the
    input, the second half is produced at 1000 records a second, and the kill comes 3 s into it.
    `instances`: application instances (one process each, state directories of their own); an
    "app" kill SIGKILLs the first and starts it again."""
    java, target = ctx["java"], ctx["target"]
    prefix = name
    app_id = name + "-app"
    java.tool("create-topics", target.bootstrap, target.nodes, prefix + "-input:3", prefix + "-totals:3",
              prefix + "-windowed:3")
    half = n // 2
    java.tool("produce-streams", target.bootstrap, prefix + "-input", 0, half)

    def start(i):
        state = os.path.join(ctx["workdir"], "%s-state%s" % (name, "" if i == 0 else "-%d" % i))
        label = name + "-app" + ("" if i == 0 else "-%d" % i)
        return java.start(label, "samsa.workloads.StreamsApp", target.bootstrap, app_id, prefix, state, protocol)
    apps = [start(i) for i in range(instances)]

    def running():
        for app in apps:
            with open(app.out_path) as f:
                if "STATE RUNNING" not in f.read():
                    return False
        return True
    killed = ""
    producing = None
    try:
        wait_for("the application in state RUNNING", running, procs=apps)
        if kill:
            def progressed():
                done = int(java.tool("progress", target.bootstrap, app_id).splitlines()[-1])
                return done >= n // 4 and done
            done = wait_for("progress of the application", progressed, procs=apps)
            # The rest of the input flows while the kill happens: the application is mid-transaction.
            producing = java.start_tool(name + "-producer", "produce-streams", target.bootstrap, prefix + "-input",
                                        half, n, 1000)
            time.sleep(3)
            if kill == "app":
                kill_process(apps[0])
                apps[0] = start(0)
                killed = "; %s SIGKILLed mid-stream (%d records committed before, input and repartition " \
                         "topics) and started again" % (
                             "the application" if instances == 1 else "one of %d instances" % instances, done)
            else:
                node = int(java.tool("coordinator", target.bootstrap, app_id).splitlines()[-1])
                target.crash_and_restart(node)
                killed = "; node %d (the group coordinator) SIGKILLed mid-stream (%d records committed before, input " \
                         "and repartition topics) and started again" % (node, done)
            if producing.wait() != 0:
                raise Failure("producing the rest of the input failed; see %s" % producing.out_path)
        else:
            java.tool("produce-streams", target.bootstrap, prefix + "-input", half, n)
        out = java.tool("verify-streams", target.bootstrap, prefix, n, WAIT_S)
        errors = []
        for app in apps:
            if app.poll() is not None:
                raise Failure("the application exited (%s); see %s" % (app.returncode, app.out_path))
            with open(app.out_path) as f:
                errors += [l.strip() for l in f if l.startswith("THREAD-ERROR")]
        return out.splitlines()[-1] + killed + (
            "; %d instances" % instances if instances > 1 else "") + (
            "; stream threads replaced after: %s" % "; ".join(errors) if errors else "")
    finally:
        kill_process(producing)
        for app in apps:
            stop_process(app)


# ---------------------------------------------------------------- Connect


def rest(port, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=data, method=method,
                                 headers={"Content-Type": "application/json", "Accept": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        text = resp.read().decode()
        return json.loads(text) if text else None


def connect_test(ctx, name, lines, restart):
    java, target, workdir = ctx["java"], ctx["target"], ctx["workdir"]
    port = free_port()
    source_file = os.path.join(workdir, name + "-in.txt")
    sink_file = os.path.join(workdir, name + "-out.txt")
    open(source_file, "w").close()
    topic = name + "-lines"
    java.tool("create-topics", target.bootstrap, target.nodes, topic + ":1")
    props = os.path.join(workdir, name + "-worker.properties")
    with open(props, "w") as f:
        f.write("\n".join([
            "bootstrap.servers=" + target.bootstrap,
            "group.id=" + name + "-cluster",
            "config.storage.topic=" + name + "-configs",
            "offset.storage.topic=" + name + "-offsets",
            "status.storage.topic=" + name + "-status",
            # The brokers' default.replication.factor.
            "config.storage.replication.factor=-1",
            "offset.storage.replication.factor=-1",
            "status.storage.replication.factor=-1",
            "key.converter=org.apache.kafka.connect.json.JsonConverter",
            "value.converter=org.apache.kafka.connect.json.JsonConverter",
            "offset.flush.interval.ms=1000",
            "listeners=http://127.0.0.1:%d" % port,
            "rest.advertised.host.name=127.0.0.1",
            "rest.advertised.port=%d" % port,
        ]) + "\n")
    worker = None

    def start_worker():
        w = java.start(name + "-worker", "org.apache.kafka.connect.cli.ConnectDistributed", props)

        def up():
            try:
                return rest(port, "GET", "/") is not None
            except OSError:
                return False
        wait_for("worker REST API", up, procs=[w])
        return w

    def append(first, last):
        with open(source_file, "a") as f:
            for i in range(first, last):
                f.write("line %d\n" % i)

    def sink_lines():
        if not os.path.exists(sink_file):
            return []
        with open(sink_file) as f:
            return [l.rstrip("\n") for l in f if l.endswith("\n")]

    def running(connector):
        try:
            s = rest(port, "GET", "/connectors/%s/status" % connector)
        except OSError:
            return False
        return s["connector"]["state"] == "RUNNING" and s["tasks"] and all(t["state"] == "RUNNING" for t in s["tasks"])

    try:
        worker = start_worker()
        rest(port, "POST", "/connectors", {"name": name + "-source", "config": {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
            "tasks.max": "1", "file": source_file, "topic": topic}})
        rest(port, "POST", "/connectors", {"name": name + "-sink", "config": {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
            "tasks.max": "1", "file": sink_file, "topics": topic}})
        wait_for("source connector running", lambda: running(name + "-source"), procs=[worker])
        wait_for("sink connector running", lambda: running(name + "-sink"), procs=[worker])
        append(0, lines)
        wait_for("%d lines in the sink file" % lines, lambda: len(sink_lines()) >= lines, procs=[worker])
        total = lines
        if restart:
            stop_process(worker)
            append(lines, 2 * lines)  # while the worker is down
            worker = start_worker()
            wait_for("source connector running again", lambda: running(name + "-source"), procs=[worker])
            append(2 * lines, 3 * lines)  # after it is back
            total = 3 * lines
            wait_for("%d distinct lines in the sink file" % total,
                     lambda: len(set(sink_lines())) >= total, procs=[worker])
        time.sleep(3)  # anything more the sink writes (it must not) shows now
        got = sink_lines()
        expected = ["line %d" % i for i in range(total)]
        if not restart:
            if got != expected:
                raise Failure("the sink file differs from the source: %d lines, first difference at %s" % (
                    len(got), next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), total))))
            return "%d lines, exactly once and in order" % total
        # At least once: every line, in order, where a line written again may only be a replay of
        # the lines just before the restart (the sink re-reads from its last committed offset).
        seq = [int(l.split()[1]) for l in got]
        if sorted(set(seq)) != list(range(total)):
            raise Failure("lines lost or foreign: %d distinct of %d" % (len(set(seq)), total))
        rewinds = [(i, seq[i - 1], seq[i]) for i in range(1, len(seq)) if seq[i] != seq[i - 1] + 1]
        if any(b > a for _, a, b in rewinds) or len(rewinds) > 1:
            raise Failure("out of order: %s" % rewinds[:5])
        dups = len(seq) - total
        return "%d lines across a worker restart, none lost, in order; %d written again at the restart" % (total, dups)
    finally:
        stop_process(worker)


# ---------------------------------------------------------------- MirrorMaker 2


def mm2_run(ctx, source_alias, other):
    """Runs both flows in one MirrorMaker; returns {test name: (state, reason)}."""
    java, target, workdir = ctx["java"], ctx["target"], ctx["workdir"]
    a, b = other, target  # a: the reference Kafka, b: the target under test
    a_alias, b_alias = source_alias, target.kind if target.kind != "kafka" else "kafka2"
    # The group reads the first n records (to the end, where MirrorMaker's translation is exact:
    # it keeps only some offset syncs, and a group committed further back is translated to an
    # earlier sync or, for a while, not at all); `more` records follow once it is translated.
    parts, n, more = 2, 200, 100
    a_topic, b_topic = "mm-from-" + a_alias, "mm-from-" + b_alias
    java.tool("create-topics", a.bootstrap, a.nodes, a_topic + ":%d" % parts)
    java.tool("create-topics", b.bootstrap, b.nodes, b_topic + ":%d" % parts)
    java.tool("produce-plain", a.bootstrap, a_topic, parts, 0, n)
    java.tool("produce-plain", b.bootstrap, b_topic, parts, 0, n)
    java.tool("consume-commit", a.bootstrap, a_topic, "g-" + a_topic, n)
    java.tool("consume-commit", b.bootstrap, b_topic, "g-" + b_topic, n)
    props = os.path.join(workdir, "mm2.properties")
    lines = ["clusters=%s, %s" % (a_alias, b_alias),
             "%s.bootstrap.servers=%s" % (a_alias, a.bootstrap),
             "%s.bootstrap.servers=%s" % (b_alias, b.bootstrap)]
    for src, dst, topic in ((a, b, a_topic), (b, a, b_topic)):
        s_alias = a_alias if src is a else b_alias
        d_alias = b_alias if src is a else a_alias
        flow = "%s->%s." % (s_alias, d_alias)
        lines += [flow + "enabled=true", flow + "topics=" + topic, flow + "groups=g-" + topic,
                  flow + "replication.factor=%d" % dst.nodes,
                  flow + "checkpoints.topic.replication.factor=%d" % dst.nodes,
                  flow + "heartbeats.topic.replication.factor=%d" % dst.nodes,
                  flow + "offset-syncs.topic.replication.factor=%d" % src.nodes]
    for c, alias in ((a, a_alias), (b, b_alias)):
        for k in ("config", "offset", "status"):
            lines.append("%s.%s.storage.replication.factor=%d" % (alias, k, c.nodes))
    lines += ["emit.checkpoints.enabled=true", "emit.checkpoints.interval.seconds=1",
              "sync.group.offsets.enabled=true", "sync.group.offsets.interval.seconds=1",
              "refresh.topics.interval.seconds=1", "refresh.groups.interval.seconds=1",
              "emit.heartbeats.interval.seconds=1",
              # An offset sync for every record: the translation of a committed offset is exact.
              "offset.lag.max=0",
              "sync.topic.acls.enabled=false",
              # The last record's offset sync is sent when the source task's offsets are flushed.
              "offset.flush.interval.ms=1000"]
    with open(props, "w") as f:
        f.write("\n".join(lines) + "\n")
    mm = java.start("mirrormaker2", "org.apache.kafka.connect.mirror.MirrorMaker", props, heap="-Xmx768m")
    results = {}
    flows = ((a, b, a_alias, b_alias, a_topic), (b, a, b_alias, a_alias, b_topic))
    ends = {q: len(range(q, n + more, parts)) for q in range(parts)}

    def offsets(cluster, group):
        return {int(l.split()[1]): int(l.split()[2]) for l in java.tool("group-offsets", cluster.bootstrap, group).splitlines()}
    try:
        for src, dst, s_alias, d_alias, topic in flows:
            remote = s_alias + "." + topic
            group = "g-" + topic
            try:
                java.tool("check-copy", dst.bootstrap, remote, parts, 0, n, WAIT_S)
                committed = offsets(src, group)
                if committed != {q: len(range(q, n, parts)) for q in range(parts)}:
                    raise Failure("the group committed %s on the source, not the end of every partition" % committed)

                def translated():
                    got = offsets(dst, group)
                    return got == committed and got
                try:
                    wait_for("group %s's offsets %s translated to %s" % (group, committed, d_alias), translated,
                             procs=[mm])
                except Failure as e:
                    raise Failure("%s; %s has %s" % (e, d_alias, offsets(dst, group)))
                java.tool("produce-plain", src.bootstrap, topic, parts, n, n + more)
                java.tool("check-copy", dst.bootstrap, remote, parts, 0, n + more, WAIT_S)
                results[(src, dst)] = ("ok", (committed, committed))
            except Failure as e:
                results[(src, dst)] = ("FAILED", str(e))
    finally:
        stop_process(mm)
    out = {}
    for src, dst, s_alias, d_alias, topic in flows:
        name = "mirrormaker2-%s-to-%s" % ("kafka" if src is a else "samsa", "samsa" if src is a else "kafka")
        state, detail = results[(src, dst)]
        if state != "ok":
            out[name] = ("FAILED", detail)
            continue
        remote = s_alias + "." + topic
        committed, got = detail
        try:
            # With MirrorMaker stopped, a member of the group on the destination resumes at the
            # translated offsets (no reset allowed) and reads every record after them.
            seen = java.tool("resume", dst.bootstrap, remote, "g-" + topic).splitlines()
            first = {int(l.split()[0]): (int(l.split()[1]), int(l.split()[2])) for l in seen}
            for q in range(parts):
                want = (got[q], ends[q] - got[q])
                if ends[q] > got[q] and first.get(q) != want:
                    raise Failure("partition %d: read (first offset, count) %s, expected %s" % (q, first.get(q), want))
                if ends[q] == got[q] and q in first:
                    raise Failure("partition %d: read %s past its end" % (q, first[q]))
            out[name] = ("PASSED", "%d records copied exactly to %s; group offsets %s on %s translated to %s; "
                                   "a member there read the %d records after them" % (
                                       n + more, remote, sorted(committed.items()), s_alias, d_alias, more))
        except Failure as e:
            out[name] = ("FAILED", str(e))
    return out


# ---------------------------------------------------------------- main


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--samsa", required=True)
    p.add_argument("--libs", required=True)
    p.add_argument("--classes", required=True)
    p.add_argument("--version", required=True)
    p.add_argument("--cluster", type=int, default=1)
    p.add_argument("--kafka", action="store_true", help="against the reference Kafka 4.4 instead of Samsa")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--only", help="comma-separated test names")
    args = p.parse_args()

    nodes = args.cluster
    stem = "kafka-workloads" + ("-cluster%d" % nodes if nodes > 1 else "") + ("-kafka" if args.kafka else "") + (
        "-quick" if args.quick else "")
    if args.only:
        # Some tests by name: a report of their own, never taken for the whole suite's.
        stem += "-selected"
    mode = ("kafka" if args.kafka else "samsa") + ("-cluster%d" % nodes if nodes > 1 else "") + (
        "-quick" if args.quick else "")
    skips = {} if args.kafka else read_list(os.path.join(HERE, "kafka-workloads-skip.txt"))
    n = 4000 if args.quick else 20000
    tests = [("streams-eos", lambda c: streams_test(c, "streams-eos", n)),
             ("streams-group-protocol", lambda c: streams_test(c, "streams-group-protocol", n // 4,
                                                               protocol="streams", instances=2)),
             ("connect-file", lambda c: connect_test(c, "connect-file", 500, restart=False))]
    if not args.quick:
        tests += [("streams-eos-app-sigkill", lambda c: streams_test(c, "streams-eos-app-sigkill", n, kill="app")),
                  ("streams-eos-broker-sigkill", lambda c: streams_test(c, "streams-eos-broker-sigkill", n,
                                                                        kill="broker")),
                  ("streams-group-protocol-app-sigkill", lambda c: streams_test(
                      c, "streams-group-protocol-app-sigkill", n, kill="app", protocol="streams", instances=2)),
                  ("streams-group-protocol-broker-sigkill", lambda c: streams_test(
                      c, "streams-group-protocol-broker-sigkill", n, kill="broker", protocol="streams",
                      instances=2)),
                  ("connect-file-worker-restart", lambda c: connect_test(c, "connect-file-worker-restart", 500,
                                                                         restart=True)),
                  ("mirrormaker2", None)]
    if args.only:
        wanted = set(args.only.split(","))
        tests = [t for t in tests if t[0] in wanted or (t[0] == "mirrormaker2" and any(
            w.startswith("mirrormaker2") for w in wanted))]

    workdir = tempfile.mkdtemp(prefix="samsa-kafka-workloads-")
    started_all = time.time()
    summary = Summary("kafka-workloads", args.version, mode)
    print("kafka-workloads %s: %s, %d node(s), logs in %s" % (args.version, "kafka" if args.kafka else "samsa",
                                                              nodes, workdir), flush=True)
    target = other = None
    try:
        if args.kafka:
            target = KafkaTarget(os.path.join(workdir, "kafka"), nodes)
        else:
            target = SamsaTarget(os.path.abspath(args.samsa), os.path.join(workdir, "samsa"), nodes)
        ctx = {"java": Java(args.libs, args.classes, workdir), "target": target, "workdir": workdir}
        for name, run in tests:
            if name == "mirrormaker2":
                names = ["mirrormaker2-kafka-to-samsa", "mirrormaker2-samsa-to-kafka"]
                started = time.time()
                try:
                    other = KafkaTarget(os.path.join(workdir, "kafka-source"), 1)
                    results = mm2_run(ctx, "kafka", other)
                except Exception as e:  # noqa: BLE001
                    results = {x: ("FAILED", "%s: %s" % (type(e).__name__, e)) for x in names}
                finally:
                    if other is not None:
                        other.stop()
                        other = None
                for x in names:
                    state, reason = results[x]
                    summary.add(x, x, state, time.time() - started, reason if state == "FAILED" else "",
                                detail=reason, log=workdir)
                    print("%s %s: %s" % (state, x, reason), flush=True)
                continue
            if name in skips:
                summary.add(name, name, "SKIPPED", 0, skips[name])
                print("SKIPPED %s: %s" % (name, skips[name]), flush=True)
                continue
            started = time.time()
            try:
                detail = run(ctx)
                summary.add(name, name, "PASSED", time.time() - started, "", detail=detail)
                print("PASSED %s (%.0f s): %s" % (name, time.time() - started, detail), flush=True)
            except Exception as e:  # noqa: BLE001
                reason = "%s: %s" % (type(e).__name__, e) if not isinstance(e, Failure) else str(e)
                if not isinstance(e, Failure):
                    traceback.print_exc()
                summary.add(name, name, "FAILED", time.time() - started, reason, log=workdir)
    finally:
        if other is not None:
            other.stop()
        if target is not None:
            target.stop()
    # The suite's wall time, the brokers' start and stop included (COMPATIBILITY.md's table).
    summary.data["wall_s"] = round(time.time() - started_all, 1)
    status = summary.finish(stem)
    if status == 0 and not os.environ.get("KEEP_WORKDIR"):
        shutil.rmtree(workdir, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
