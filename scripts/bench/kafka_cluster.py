"""Apache Kafka 4.4 clusters for scripts/bench/replication.

scripts/reference/kafka formats, starts and stops them (combined broker+controller KRaft nodes,
1 GiB heap each, as kafka-server-start.sh gives); `KafkaCluster` wraps that with what the
benchmark asks of a cluster (the interface of metadata.Cluster it uses: `pids`, `client_port`,
`data_dir`, `alive`, `start`, `stop`, `dir`), and restarts one node with the command line it was
started with (after a SIGKILL) or every node (a stopped cluster started again).
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import metadata  # scripts/bench/metadata.py: Metadata requests, is_zombie

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
REFERENCE = os.path.join(ROOT, "scripts", "reference", "kafka")
PROPERTIES = os.path.join(HERE, "kafka-rf3.properties")
VERSION = "4.4.0"
HOME = os.environ.get("KAFKA_REFERENCE_HOME", os.path.join(ROOT, ".tools", "kafka-" + VERSION))
# What a one-node cluster needs on top of Kafka's defaults: its internal topics' replication
# factors (Kafka's default of 3 cannot be placed on one broker).
ONE_NODE = {
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
}
RUNNING = []  # clusters started and not yet stopped: a signal stops them


def installed():
    return os.path.exists(os.path.join(HOME, "libs", ".complete"))


def running(pid):
    return os.path.exists(f"/proc/{pid}") and not metadata.is_zombie(pid)


class KafkaCluster:
    """`nodes` Kafka 4.4 nodes under `directory`; `overrides` are --set KEY=VALUE for every node."""

    def __init__(self, directory, out_path, nodes=3, overrides=None, config=PROPERTIES):
        self.dir, self.out_path, self.count, self.config = directory, out_path, nodes, config
        self.overrides = dict(ONE_NODE) if nodes == 1 else {}
        self.overrides.update(overrides or {})
        self.pids, self.ports, self.cmdlines, self.procs = {}, {}, {}, {}

    def client_port(self, node_id):
        return self.ports[node_id]

    def data_dir(self, node_id):
        return os.path.join(self.dir, f"node-{node_id}", "data")

    def alive(self):
        return {i: pid for i, pid in self.pids.items() if running(pid)}

    def start(self, timeout_s=180.0):
        """Formats and starts the cluster (or, stopped before, starts its nodes again); returns
        the seconds until every node serves and lists every broker."""
        began = time.monotonic()
        if self not in RUNNING:
            RUNNING.append(self)
        if self.cmdlines:
            for i in sorted(self.cmdlines):
                self.spawn(i)
            self.wait_ready(timeout_s, began)
            return time.monotonic() - began
        cmd = [sys.executable, REFERENCE, "start", self.dir, "--nodes", str(self.count),
               "--config", self.config]
        for key, value in sorted(self.overrides.items()):
            cmd += ["--set", f"{key}={value}"]
        with open(self.out_path, "ab") as out:
            out.write((" ".join(cmd) + "\n").encode())
            out.flush()
            done = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, timeout=timeout_s + 60)
        info_path = os.path.join(self.dir, "cluster.json")
        if os.path.exists(info_path):
            with open(info_path) as f:
                info = json.load(f)
            self.pids = {int(i): int(p) for i, p in info["pids"].items()}
            self.ports = {int(i): p["broker"] for i, p in info["ports"].items()}
        if done.returncode != 0:
            raise RuntimeError(f"Kafka {VERSION} did not start (see {self.out_path} and "
                               f"{self.dir}/node-*/server.log)")
        for i, pid in self.pids.items():
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                self.cmdlines[i] = [a.decode() for a in f.read().split(b"\0") if a]
        return time.monotonic() - began

    def spawn(self, node_id):
        """Starts node `node_id` with the command line it was first started with."""
        node_dir = os.path.join(self.dir, f"node-{node_id}")
        old = self.procs.get(node_id)
        if old is not None:
            old.poll()  # reaps it if it was ours
        with open(os.path.join(node_dir, "stdout.log"), "ab") as log:
            p = subprocess.Popen(self.cmdlines[node_id], stdout=log, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, cwd=ROOT, start_new_session=True)
        self.procs[node_id], self.pids[node_id] = p, p.pid
        self.write_pids()

    def write_pids(self):
        """cluster.json with the current pids, so that `scripts/reference/kafka stop` finds them."""
        path = os.path.join(self.dir, "cluster.json")
        for candidate in (path, path + ".stopped"):
            if os.path.exists(candidate):
                with open(candidate) as f:
                    info = json.load(f)
                info["pids"] = {str(i): pid for i, pid in sorted(self.pids.items())}
                with open(path, "w") as f:
                    json.dump(info, f, indent=1)
                if candidate != path:
                    os.remove(candidate)
                return

    def wait_ready(self, timeout_s, began=None):
        """Until every node answers and lists every broker (Kafka lists only unfenced ones)."""
        began = began or time.monotonic()
        while time.monotonic() - began < timeout_s:
            dead = [i for i, pid in self.pids.items() if not running(pid)]
            if dead:
                raise RuntimeError(f"Kafka node(s) {dead} exited (see {self.dir}/node-*/server.log)")
            try:
                if all(metadata.topic_count(self.client_port(i), 5)[0] == self.count
                       for i in self.pids):
                    return time.monotonic() - began
            except (OSError, ValueError, IndexError):
                pass
            time.sleep(0.1)
        raise RuntimeError(f"Kafka's brokers were not all live within {timeout_s:.0f} s")

    def restart_node(self, node_id, timeout_s=120.0):
        """Starts a node that was killed; returns the seconds until every broker is listed again."""
        began = time.monotonic()
        if running(self.pids[node_id]):
            raise RuntimeError(f"Kafka node {node_id} is still running")
        self.spawn(node_id)
        return self.wait_ready(timeout_s, began)

    def stop(self):
        """SIGTERM to every node (SIGKILL after 30 s: scripts/reference/kafka stop)."""
        began = time.monotonic()
        if os.path.exists(os.path.join(self.dir, "cluster.json")):
            subprocess.run([sys.executable, REFERENCE, "stop", self.dir],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
        for i, pid in self.pids.items():
            if running(pid):
                os.kill(pid, signal.SIGKILL)
        for p in self.procs.values():
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        if self in RUNNING:
            RUNNING.remove(self)
        return time.monotonic() - began


def stop_all():
    for c in list(RUNNING):
        try:
            c.stop()
        except Exception as e:  # noqa: BLE001 - best effort at exit
            print(f"replication: stopping Kafka in {c.dir}: {e}", file=sys.stderr)


def keep_logs(cluster, run_dir, name):
    """Copies the nodes' server.log and stdout.log into the run's logs as <name>-node-<i>-*."""
    for i in sorted(cluster.pids):
        for log in ("server.log", "stdout.log"):
            src = os.path.join(cluster.dir, f"node-{i}", log)
            if os.path.exists(src):
                shutil.copy(src, os.path.join(run_dir, f"{name}-node-{i}-{log}"))
