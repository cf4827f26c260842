"""Apache Kafka 4.4 as a target of scripts/bench/bench.py, and Kafka's own perf tools as a
second load generator. Python 3 stdlib only.

The broker is started with the logic of scripts/reference/kafka (imported from that file: the
classpath, the JVM flags of kafka-run-class.sh, the node's properties, the storage format),
one KRaft node (broker and controller in one JVM) with the 1 GiB heap kafka-server-start.sh
gives it (-Xmx1G -Xms1G; KAFKA_HEAP_OPTS overrides it as for Kafka's scripts), the settings of
scripts/bench/kafka.properties and a fresh data directory per start. The format runs before
the clock starts; the measured pid is the broker's JVM, so /proc CPU and RSS figures mean the
same as for samsa. DIR/cluster.json has the layout scripts/reference/kafka writes, so
`scripts/reference/kafka stop DIR` stops a node left behind.

The tools rows (`kt.*`) run kafka-producer-perf-test.sh and kafka-consumer-perf-test.sh from
the installation `scripts/reference/kafka bin` makes; only the broker's CPU is measured, never
the tools' JVM.
"""

import importlib.machinery
import importlib.util
import json
import os
import re
import signal
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BENCH_CONFIG = os.path.join(HERE, "kafka.properties")


def reference():
    """scripts/reference/kafka as a module (the file has no .py suffix)."""
    path = os.path.join(ROOT, "scripts", "reference", "kafka")
    loader = importlib.machinery.SourceFileLoader("reference_kafka", path)
    spec = importlib.util.spec_from_loader("reference_kafka", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


REF = reference()
VERSION = REF.VERSION
HEAP = os.environ.get("KAFKA_HEAP_OPTS", "-Xmx1G -Xms1G")
DURABLE_SETTINGS = {"log.flush.interval.messages": "1"}


def installed():
    return os.path.exists(os.path.join(REF.LIBS, ".complete"))


def tool(script):
    """The path of one of Kafka's bin/ scripts, or None when the installation lacks it."""
    path = os.path.join(REF.HOME, "bin", script)
    return path if os.access(path, os.X_OK) else None


class KafkaTarget:
    """One Kafka node started by us; the interface bench.Target has."""

    def __init__(self, name, description, data_dir):
        self.name, self.kind, self.description = name, "kafka", description
        self.data_dir = data_dir          # the cluster directory (cluster.json, node-1/)
        self.log_dir = os.path.join(data_dir, "node-1", "data")
        self.proc = None
        self.bootstrap = None
        self.metrics_url = None
        self.serve_s = None
        self.log = None

    def start(self, overrides, api_versions, timeout_s=180.0):
        """Formats, starts the JVM and waits until the broker answers ApiVersions (the clock
        runs from the JVM's start, after the format). `api_versions(bootstrap)` is bench.py's
        advertised_api_keys."""
        broker_port, controller_port = REF.free_ports(2)
        ports = {1: (broker_port, controller_port)}
        shared = REF.read_properties(BENCH_CONFIG)
        shared.update(overrides)
        node_dir = os.path.join(self.data_dir, "node-1")
        os.makedirs(node_dir, exist_ok=True)
        props_path = os.path.join(node_dir, "server.properties")
        REF.write_properties(props_path, REF.node_properties(1, 1, ports, self.log_dir, shared))
        cluster_id = REF.kafka_uuid()
        with open(os.path.join(node_dir, "format.log"), "w") as log:
            done = subprocess.run(REF.java(node_dir) + ["kafka.tools.StorageTool", "format", "-t",
                                                        cluster_id, "-c", props_path, "--standalone"],
                                  stdout=log, stderr=subprocess.STDOUT, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"kafka format failed; see {node_dir}/format.log")
        java = REF.java(node_dir)
        cmd = java[:1] + HEAP.split() + java[1:] + ["kafka.Kafka", props_path]
        self.log = open(os.path.join(node_dir, "stdout.log"), "w")
        began = time.time()
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        bootstrap = f"127.0.0.1:{broker_port}"
        with open(os.path.join(self.data_dir, "cluster.json"), "w") as f:
            json.dump({"version": VERSION, "nodes": 1, "cluster_id": cluster_id,
                       "bootstrap": bootstrap, "controllers": f"127.0.0.1:{controller_port}",
                       "ports": {"1": {"broker": broker_port, "controller": controller_port}},
                       "pids": {"1": self.proc.pid}, "dir": self.data_dir}, f, indent=1)
        deadline = began + timeout_s
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"kafka exited with {self.proc.returncode} at start; see {node_dir}")
            if api_versions(bootstrap) is not None:
                self.serve_s = time.time() - began
                self.bootstrap = bootstrap
                return
            time.sleep(0.02)
        raise RuntimeError(f"kafka not serving after {timeout_s:.0f} s")

    def stop(self):
        """SIGTERM (Kafka's controlled shutdown), SIGKILL after 30 s, then the data goes."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=REF.STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.log:
            self.log.close()
            self.log = None
        if os.path.isdir(self.data_dir):
            subprocess.run(["rm", "-rf", self.data_dir], check=False)

    def pid(self):
        return self.proc.pid if self.proc is not None and self.proc.poll() is None else None

    def scrape(self):
        return None


def kafka_target(args, durable=False, api_versions=None, started=None):
    """A Kafka 4.4 node, started; `durable` adds log.flush.interval.messages=1 (fsync after
    every append), the counterpart of samsa's --log.durable=true."""
    import tempfile
    name = "kafka-durable" if durable else "kafka"
    flushing = ("log.flush.interval.messages=1 (fsync after every append)" if durable else
                "default flushing (page cache; no fsync on the produce path)")
    t = KafkaTarget(name, f"Apache Kafka {VERSION} (Maven Central jars), one KRaft node "
                    f"(broker+controller), JVM heap {HEAP} as kafka-server-start.sh gives, G1, "
                    f"{flushing}, settings scripts/bench/kafka.properties",
                    tempfile.mkdtemp(prefix=f"bench-{name}-", dir=args.data_root))
    if started is not None:
        started.append(t)
    t.start(DURABLE_SETTINGS if durable else {}, api_versions)
    return t


# ---------------------------------------------------------------------------------------------
# Kafka's perf tools

KT_PRODUCED = re.compile(
    r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
    r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th")


def producer_cmd(bootstrap, topic, count, size):
    return [tool("kafka-producer-perf-test.sh"), "--topic", topic, "--num-records", str(count),
            "--record-size", str(size), "--throughput", "-1", "--producer-props",
            f"bootstrap.servers={bootstrap}", "acks=all"]


def parse_producer(out):
    """The final summary of kafka-producer-perf-test.sh (its last line with percentiles)."""
    m = KT_PRODUCED.findall(out)
    if not m:
        return None
    sent, rate, mbs, _avg, _max, p50, _p95, p99, p999 = m[-1]
    return dict(msgs_total=int(sent), msgs_per_s=int(float(rate)), MB_per_s=float(mbs),
                p50_ms=float(p50), p99_ms=float(p99), p999_ms=float(p999))


def consumer_cmd(bootstrap, topic, count, group):
    return [tool("kafka-consumer-perf-test.sh"), "--bootstrap-server", bootstrap, "--topic", topic,
            "--messages", str(count), "--group", group, "--timeout", "60000"]


def parse_consumer(out):
    """kafka-consumer-perf-test.sh's CSV line: start.time, end.time, data.consumed.in.MB, MB.sec,
    data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec,
    fetch.nMsg.sec. The fetch.* figures leave out the group join (rebalance.time.ms)."""
    for line in reversed(out.splitlines()):
        cells = [c.strip() for c in line.split(",")]
        if len(cells) >= 10 and re.match(r"^\d{4}-\d\d-\d\d", cells[0]):
            try:
                return dict(msgs=int(float(cells[4])), fetch_MB_per_s=float(cells[8]),
                            fetch_msgs_per_s=int(float(cells[9])), rebalance_ms=float(cells[6]),
                            fetch_ms=float(cells[7]))
            except ValueError:
                continue
    return None
