#!/usr/bin/env python3
"""Samsa's metadata-at-scale benchmark: how long creating topics takes and what they cost in
memory, what a Metadata request for every topic costs at 10,000 and 100,000 partitions, how
long the metadata quorum takes to elect a new controller when the active one dies or resigns,
and how long a node holding many topics takes to restart. Real processes on loopback, a
release build, free ports and data directories of its own; every process it starts is
stopped on exit.

Every figure is also printed as one parseable line:

  MBENCH test=<name> target=<single|cluster3|...> <key>=<value> ...

and the "Metadata at scale" section of BENCHMARKS.md (between its marker comments) is
rewritten; the rest of the file is left as it is.

Run it through scripts/bench/metadata, which builds the release binary first. Needs the
project's .venv (kafka-python) for the admin client; the other requests are raw sockets.
"""

import argparse
import datetime
import json
import os
import re
import resource
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

import bench  # scripts/bench/bench.py: free ports, /proc readings, BENCHMARKS.md sections

ROOT = bench.ROOT
SECTION = "metadata-at-scale"
# A node keeps a few files open per hosted partition (segment, offset index, time index):
# the limit the children get is raised to what the largest run needs, where allowed.
FILES_PER_PARTITION = 3
FILES_SPARE = 2_000
STARTED = []  # every process this script started and has not stopped yet


def log(msg):
    print(f"metadata: {msg}", file=sys.stderr, flush=True)


def emit(results, test, target, tag="MBENCH", **figures):
    """Prints a line `<tag> test=.. target=.. key=value ...` and keeps the figures for the
    report (scripts/bench/replication prints RBENCH lines through it)."""
    r = dict(test=test, target=target, **figures)
    r["line"] = mbench_line(r, tag)
    results.append(r)
    print(r["line"], flush=True)
    return r


def mbench_line(r, tag="MBENCH"):
    parts = [f"{tag} test={r['test']}", f"target={r['target']}"]
    for k, v in r.items():
        if k in ("test", "target", "line"):
            continue
        if isinstance(v, float):
            v = f"{v:.4g}" if abs(v) < 1000 else f"{v:.0f}"
        elif isinstance(v, (list, tuple)):
            v = ",".join(f"{x:.4g}" if isinstance(x, float) else "-" if x is None else str(x)
                         for x in v)
        elif v is None:
            v = "-"
        parts.append(f"{k}={v}")
    return " ".join(parts)


# ---------------------------------------------------------------------------------------------
# /proc


def proc_status(pid):
    """VmRSS and VmHWM in bytes."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1]) * 1024
    return out.get("VmRSS", 0), out.get("VmHWM", 0)


def open_files(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def raise_file_limit(partitions_per_node):
    """Raises this process's open-file limit (inherited by every node it starts) to what a node
    hosting `partitions_per_node` needs; returns (limit before, limit now)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = partitions_per_node * FILES_PER_PARTITION + FILES_SPARE
    if want <= soft:
        return soft, soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(want, soft), max(want, hard)))
    except (ValueError, OSError):
        # Not allowed above the hard limit (no CAP_SYS_RESOURCE): go as far as it allows.
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return soft, resource.getrlimit(resource.RLIMIT_NOFILE)[0]


# ---------------------------------------------------------------------------------------------
# Kafka wire: the few requests measured here, raw, so the client adds nothing but a socket


class Reader:
    def __init__(self, data, pos=0):
        self.d, self.p = data, pos

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.d, self.p)
        self.p += struct.calcsize(fmt)
        return v[0]

    def uvarint(self):
        shift = out = 0
        while True:
            b = self.d[self.p]
            self.p += 1
            out |= (b & 0x7F) << shift
            if b < 0x80:
                return out
            shift += 7

    def compact_bytes(self):
        n = self.uvarint() - 1
        if n < 0:
            return None
        v = self.d[self.p:self.p + n]
        self.p += n
        return v

    def string(self):
        n = self.take(">h")
        if n < 0:
            return None
        v = self.d[self.p:self.p + n]
        self.p += n
        return v.decode()

    def tags(self):
        for _ in range(self.uvarint()):
            self.uvarint()
            size = self.uvarint()  # read before `self.p +=` reads self.p
            self.p += size


def uvarint(n):
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def compact_string(s):
    b = s.encode()
    return uvarint(len(b) + 1) + b


def string(s):
    b = s.encode()
    return struct.pack(">h", len(b)) + b


class Conn:
    """One connection; `call` sends a request and returns the response body (header skipped)."""

    def __init__(self, port, timeout_s=60.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout_s)
        self.correlation = 0

    def close(self):
        self.sock.close()

    def recv_exactly(self, n):
        buf = bytearray(n)
        view, got = memoryview(buf), 0
        while got < n:
            k = self.sock.recv_into(view[got:])
            if k == 0:
                raise ConnectionError("connection closed")
            got += k
        return bytes(buf)

    def call(self, api_key, version, body, flexible):
        """(response body, response frame size in bytes, seconds from send to last byte)."""
        self.correlation += 1
        header = struct.pack(">hhi", api_key, version, self.correlation) + string("mbench")
        if flexible:
            header += b"\x00"
        frame = header + body
        start = time.perf_counter()
        self.sock.sendall(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", self.recv_exactly(4))[0]
        data = self.recv_exactly(size)
        took = time.perf_counter() - start
        r = Reader(data)
        if r.take(">i") != self.correlation:
            raise ConnectionError("correlation id mismatch")
        if flexible:
            r.tags()
        return data[r.p:], size + 4, took


METADATA, CREATE_TOPICS, DESCRIBE_QUORUM = 3, 19, 55
TOPIC_ALREADY_EXISTS = 36
# REQUEST_TIMED_OUT, NOT_CONTROLLER, LEADER_NOT_AVAILABLE: the controller moved or was busy.
# REQUEST_TIMED_OUT, NOT_CONTROLLER, LEADER_NOT_AVAILABLE; and INVALID_REPLICA_ASSIGNMENT, which
# a manual assignment naming a broker the controller fenced for a moment gets (with twenty
# nodes on two cores a heartbeat can come late), until the broker is unfenced again.
RETRIABLE = {7, 41, 5, 39}
METADATA_ALL_V12 = b"\x00\x00\x00\x00"  # topics null, no auto-creation, no operations, no tags


def metadata_one_v12(name):
    return (uvarint(2) + b"\x00" * 16 + compact_string(name) + b"\x00") + b"\x00\x00\x00"


def parse_metadata_v12(body, partitions_out=None):
    """(brokers, topics, partitions, topics or partitions with an error) of a v12 answer; with
    `partitions_out` (a dict) also each partition's state in it, {(topic, index): (error,
    leader, leader epoch, replicas, isr)}."""
    r = Reader(body)
    r.take(">i")  # throttle
    brokers = r.uvarint() - 1
    for _ in range(brokers):
        r.take(">i")
        r.compact_bytes()
        r.take(">i")
        r.compact_bytes()
        r.tags()
    r.compact_bytes()  # cluster id
    r.take(">i")  # controller id
    topics = r.uvarint() - 1
    partitions = errors = 0
    for _ in range(topics):
        errors += r.take(">h") != 0
        name = r.compact_bytes()
        r.p += 17  # topic id, is_internal
        n = r.uvarint() - 1
        partitions += n
        for _ in range(n):
            error = r.take(">h")
            errors += error != 0
            if partitions_out is None:
                r.p += 12  # index, leader, leader epoch
                for _ in range(3):  # replicas, isr, offline
                    n_ids = r.uvarint() - 1
                    r.p += 4 * n_ids
            else:
                index, leader, epoch = r.take(">i"), r.take(">i"), r.take(">i")
                replicas, isr = [[r.take(">i") for _ in range(r.uvarint() - 1)] for _ in range(2)]
                n_offline = r.uvarint() - 1  # read before `r.p +=` reads r.p
                r.p += 4 * n_offline
                partitions_out[(name.decode(), index)] = (error, leader, epoch, replicas, isr)
            r.tags()
        r.take(">i")
        r.tags()
    return brokers, topics, partitions, errors


def describe_quorum(port, timeout_s=1.0):
    """(leader id, leader epoch) of `__cluster_metadata` as the node at `port` reports it, or
    None when it does not answer in time or answers with an error."""
    body = (uvarint(2) + compact_string("__cluster_metadata") + uvarint(2)
            + struct.pack(">i", 0) + b"\x00" + b"\x00" + b"\x00")
    try:
        c = Conn(port, timeout_s)
        try:
            data, _, _ = c.call(DESCRIBE_QUORUM, 2, body, flexible=True)
        finally:
            c.close()
    except OSError:
        return None
    r = Reader(data)
    if r.take(">h") != 0:
        return None
    r.compact_bytes()
    if r.uvarint() - 1 < 1:
        return None
    r.compact_bytes()
    if r.uvarint() - 1 < 1:
        return None
    r.take(">i")
    if r.take(">h") != 0:
        return None
    r.compact_bytes()
    leader, epoch = r.take(">i"), r.take(">i")
    return (leader, epoch) if leader >= 0 else None


def create_topics_raw(port, names, timeout_ms=30_000, socket_timeout_s=60.0, assignments=None):
    """CreateTopics v2: single-partition topics placed by the controller, or with
    `assignments` {name: [broker of partition 0, of partition 1, ...]}; {name: error code}."""
    body = struct.pack(">i", len(names))
    for n in names:
        if assignments is None:
            body += string(n) + struct.pack(">ihii", 1, 1, 0, 0)
            continue
        brokers = assignments[n]
        body += string(n) + struct.pack(">ihi", -1, -1, len(brokers))
        body += b"".join(struct.pack(">iii", p, 1, b) for p, b in enumerate(brokers))
        body += struct.pack(">i", 0)
    body += struct.pack(">i?", timeout_ms, False)
    c = Conn(port, socket_timeout_s)
    try:
        data, _, _ = c.call(CREATE_TOPICS, 2, body, flexible=False)
    finally:
        c.close()
    r = Reader(data)
    r.take(">i")
    out = {}
    for _ in range(r.take(">i")):
        name, code = r.string(), r.take(">h")
        r.string()
        out[name] = code
    return out


# ---------------------------------------------------------------------------------------------
# Processes


def clean_env():
    return {k: v for k, v in os.environ.items() if not k.startswith("SAMSA_")}


def terminate(proc, timeout_s=60.0):
    """SIGTERM, then SIGKILL after `timeout_s`; returns the seconds it took to exit."""
    start = time.monotonic()
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc in STARTED:
        STARTED.remove(proc)
    return time.monotonic() - start


def stop_everything():
    for p in list(STARTED):
        try:
            terminate(p, 40.0)
        except Exception as e:  # noqa: BLE001 - best effort at exit
            log(f"stopping pid {p.pid}: {e}")


def wait_for_line(path, start_offset, pattern, proc, timeout_s):
    """Seconds until `pattern` appears in `path` after `start_offset` (None on timeout or exit)."""
    start = time.monotonic()
    rx = re.compile(pattern)
    pos, pending = start_offset, ""
    while time.monotonic() - start < timeout_s:
        with open(path, "rb") as f:
            f.seek(pos)
            chunk = f.read()
        pos += len(chunk)
        pending += chunk.decode(errors="replace")
        lines = pending.split("\n")
        pending = lines.pop()
        for line in lines:
            if rx.search(line):
                return time.monotonic() - start
        if proc is not None and proc.poll() is not None:
            return None
        time.sleep(0.01)
    return None


class Node:
    """One samsa node we start ourselves (a single-node cluster: broker and sole voter)."""

    def __init__(self, samsa, data_dir, log_path):
        self.samsa, self.data_dir, self.log_path = samsa, data_dir, log_path
        self.port = None
        self.proc = None

    def start(self, timeout_s=900.0):
        """Starts it; returns the seconds from exec to its "samsa is serving" line."""
        if self.port is None:
            self.port = bench.free_port()
        cmd = [self.samsa, f"--log.dirs={self.data_dir}",
               f"--listeners=PLAINTEXT://127.0.0.1:{self.port}", "--metrics.listener=",
               "--num.partitions=1"]
        with open(self.log_path, "ab") as out:
            offset = out.tell()
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                         env=clean_env(), start_new_session=True)
        STARTED.append(self.proc)
        took = wait_for_line(self.log_path, offset, r"samsa is serving", self.proc, timeout_s)
        if took is None:
            raise RuntimeError(f"samsa did not serve within {timeout_s:.0f} s (see {self.log_path})")
        self.warned_while_starting = any(
            "serving anyway" in line for line in read_from(self.log_path, offset).splitlines())
        return took

    def stop(self):
        return terminate(self.proc, 600.0)

    @property
    def pid(self):
        return self.proc.pid


def read_from(path, offset):
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read().decode(errors="replace")


class Cluster:
    """`samsa cluster local --nodes 3`: one launcher, one child process per node."""

    def __init__(self, samsa, directory, out_path, nodes=3, extra=()):
        self.samsa, self.dir, self.out_path, self.count = samsa, directory, out_path, nodes
        self.extra = list(extra)  # more --key=value properties for every node
        self.base = None
        self.proc = None
        self.pids = {}  # node id -> pid

    def pick_base_port(self):
        for _ in range(200):
            base = 20_000 + 10 * (os.getpid() % 100) + int.from_bytes(os.urandom(2), "big") % 30_000
            ports = [base + 100 * i + k for i in range(self.count) for k in (0, 1)]
            try:
                for p in ports:
                    with socket.socket() as s:
                        s.bind(("127.0.0.1", p))
            except OSError:
                continue
            return base
        raise RuntimeError("no free base port for the cluster")

    def client_port(self, node_id):
        return self.base + 100 * (node_id - 1)

    def data_dir(self, node_id):
        return os.path.join(self.dir, f"node-{node_id}")

    def start(self, timeout_s=900.0):
        """Starts (or restarts) the cluster; returns the seconds until every node serves."""
        if self.base is None:
            self.base = self.pick_base_port()
        # Restarting many nodes that hold many partitions takes minutes on two cores: the
        # launcher waits as long as this does.
        cmd = [self.samsa, "cluster", "local", "--nodes", str(self.count), "--port",
               str(self.base), "--dir", self.dir, "--start-timeout", str(int(timeout_s)),
               "--", "--metrics.listener=",
               "--num.partitions=1"] + self.extra
        with open(self.out_path, "ab") as out:
            offset = self.offset = out.tell()
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                         env=clean_env(), start_new_session=True)
        STARTED.append(self.proc)
        took = wait_for_line(self.out_path, offset, r"all \d+ node\(s\) serving", self.proc,
                             timeout_s)
        if took is None:
            raise RuntimeError(f"the cluster did not serve (see {self.out_path} and "
                               f"{self.dir}/node-*.log)")
        self.pids = {int(m.group(1)): int(m.group(2)) for m in re.finditer(
            r"^node (\d+)  pid (\d+)", read_from(self.out_path, offset), re.M)}
        # A node of a larger cluster serves before the controller has unfenced the brokers
        # (until then CreateTopics finds no broker to place a partition on): ready means every
        # node lists every broker as live.
        start = time.monotonic() - took
        while time.monotonic() - start < timeout_s:
            try:
                if all(topic_count(self.client_port(i), 10)[0] == self.count for i in self.pids):
                    return time.monotonic() - start
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"the cluster's brokers were not all live within {timeout_s:.0f} s")

    def stop(self):
        took = terminate(self.proc, 60.0)
        # The launcher SIGKILLs a node still stopping 30 s after its SIGTERM, and says so.
        self.killed_on_stop = len(re.findall(r"^node \d+ killed", read_from(self.out_path, self.offset), re.M))
        for pid in self.pids.values():
            # The launcher stops its nodes; one it could not reap is not left behind.
            if os.path.exists(f"/proc/{pid}") and not is_zombie(pid):
                os.kill(pid, signal.SIGKILL)
        return took

    def alive(self):
        return {i: pid for i, pid in self.pids.items()
                if os.path.exists(f"/proc/{pid}") and not is_zombie(pid)}


def is_zombie(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def shard_cpu_seconds(pid):
    """CPU seconds of the node's request-serving threads (`samsa-shard-*`): a request's own
    cost, without the node's background work in the same time."""
    total = 0.0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as fh:
                if not fh.read().startswith("samsa-shard"):
                    continue
            with open(f"/proc/{pid}/task/{tid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / bench.CLK_TCK
    return total


def memory(pids):
    """{pid: (rss, hwm)} in bytes."""
    return {pid: proc_status(pid) for pid in pids}


def hosted_partitions(data_dirs, prefix):
    """Partition directories of topics named `prefix*` that have their partition.metadata (the
    last file a node writes when it creates a partition), over all `data_dirs`."""
    n = 0
    for d in data_dirs:
        with os.scandir(d) as it:
            for e in it:
                if e.name.startswith(prefix) and os.path.exists(
                        os.path.join(e.path, "partition.metadata")):
                    n += 1
    return n


def wait_hosted(data_dirs, prefix, want, timeout_s):
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        if hosted_partitions(data_dirs, prefix) >= want:
            return time.monotonic() - start
        time.sleep(0.25)
    return None


def topic_count(port, timeout_s=120.0, partitions_out=None):
    c = Conn(port, timeout_s)
    try:
        body, _, _ = c.call(METADATA, 12, METADATA_ALL_V12, flexible=True)
    finally:
        c.close()
    return parse_metadata_v12(body, partitions_out)


def wait_listed(port, want, timeout_s):
    """Seconds until a Metadata request at `port` lists at least `want` topics."""
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        try:
            if topic_count(port)[1] >= want:
                return time.monotonic() - start
        except OSError:
            pass
        time.sleep(0.1)
    return None


# ---------------------------------------------------------------------------------------------
# Measurements


def admin_client(bootstrap):
    from kafka.admin import KafkaAdminClient  # the .venv's kafka-python
    return KafkaAdminClient(bootstrap_servers=bootstrap, client_id="mbench",
                            request_timeout_ms=300_000, metadata_max_age_ms=3_600_000)


def create_topics(results, target, bootstrap, pids, data_dirs, prefix, total, one_by_one, batch,
                  partitions=1, assign_to=None):
    """Creates `total` topics named `prefix<i>` through kafka-python's admin client, the first
    `one_by_one` with a request each, the rest `batch` per request; then waits until every
    partition is created on the node hosting it. Prints the figures and returns them."""
    admin = admin_client(bootstrap)
    names = [f"{prefix}{i:06d}" for i in range(total)]

    def spec():
        s = {"num_partitions": partitions, "replication_factor": 1}
        if assign_to is not None:
            s = {"assignments": {p: [assign_to] for p in range(partitions)}}
        return s

    time.sleep(1.0)
    before = memory(pids)
    files_before = sum(open_files(p) for p in pids)
    cpu_before = sum(bench.cpu_seconds(p) for p in pids)
    start = time.monotonic()
    single_s = 0.0
    for name in names[:one_by_one]:
        admin.create_topics({name: spec()}, timeout_ms=60_000)
    single_s = time.monotonic() - start
    batch_s = []
    for i in range(one_by_one, total, batch):
        t = time.monotonic()
        admin.create_topics({n: spec() for n in names[i:i + batch]}, timeout_ms=300_000)
        batch_s.append(time.monotonic() - t)
    answered_s = time.monotonic() - start
    admin.close()
    installed = wait_hosted(data_dirs, prefix, total * partitions, 1800)
    if installed is None:
        raise RuntimeError(f"{target}: not every partition of {prefix}* was created within 30 min")
    installed_s = time.monotonic() - start
    cpu_s = sum(bench.cpu_seconds(p) for p in pids) - cpu_before
    time.sleep(2.0)
    after = memory(pids)
    files_after = sum(open_files(p) for p in pids)
    rss_before = sum(v[0] for v in before.values())
    rss_after = sum(v[0] for v in after.values())
    hwm_after = sum(v[1] for v in after.values())
    n_batched = total - one_by_one
    figures = dict(
        topics=total, partitions_per_topic=partitions,
        one_by_one=one_by_one, one_by_one_s=single_s,
        one_by_one_topics_per_s=one_by_one / single_s if one_by_one else None,
        batch=batch, batched=n_batched, batched_s=sum(batch_s),
        batched_topics_per_s=n_batched / sum(batch_s) if batch_s else None,
        first_batch_s=batch_s[0] if batch_s else None,
        last_batch_s=batch_s[-1] if batch_s else None,
        answered_s=answered_s, installed_s=installed_s,
        topics_per_s=total / installed_s, broker_cpu_s=cpu_s,
        rss_before_MiB=rss_before / 2**20, rss_after_MiB=rss_after / 2**20,
        hwm_after_MiB=hwm_after / 2**20,
        rss_per_partition_B=(rss_after - rss_before) / (total * partitions),
        rss_after_per_node_MiB=[after[p][0] / 2**20 for p in pids],
        files_per_partition=(files_after - files_before) / (total * partitions))
    return emit(results, f"create.{total}x{partitions}", target, **figures)


def metadata_requests(results, target, port, pid, topics, partitions, rounds, per_round,
                      one_topic=None):
    """Metadata v12 for every topic, `rounds` x `per_round` times on one connection: latency,
    size, broker CPU per request and the broker's RSS after each round."""
    c = Conn(port, 300.0)
    body, size, _ = c.call(METADATA, 12, METADATA_ALL_V12, flexible=True)
    brokers, n_topics, n_partitions, errors = parse_metadata_v12(body)
    if n_topics < topics or n_partitions < partitions:
        raise RuntimeError(f"{target}: Metadata listed {n_topics} topics and {n_partitions} "
                           f"partitions, expected at least {topics} and {partitions}")
    for _ in range(2):
        c.call(METADATA, 12, METADATA_ALL_V12, flexible=True)
    rss_rounds, lat = [], []
    rss0, hwm0 = proc_status(pid)
    cpu0, shards0 = bench.cpu_seconds(pid), shard_cpu_seconds(pid)
    for _ in range(rounds):
        for _ in range(per_round):
            _, size, took = c.call(METADATA, 12, METADATA_ALL_V12, flexible=True)
            lat.append(took)
        rss_rounds.append(proc_status(pid)[0])
    cpu, shards = bench.cpu_seconds(pid) - cpu0, shard_cpu_seconds(pid) - shards0
    hwm = proc_status(pid)[1]
    one = []
    if one_topic:
        for _ in range(200):
            one.append(c.call(METADATA, 12, metadata_one_v12(one_topic), flexible=True)[2])
    c.close()
    lat.sort()
    n = len(lat)
    p50 = statistics.median(lat)
    return emit(
        results, f"metadata.all.{n_topics}t.{n_partitions}p", target,
        topics=n_topics, partitions=n_partitions, brokers=brokers, errors=errors,
        requests=n, response_bytes=size, p50_ms=p50 * 1e3, p99_ms=lat[min(n - 1, int(n * 0.99))] * 1e3,
        max_ms=lat[-1] * 1e3, us_per_partition=p50 * 1e6 / n_partitions,
        broker_cpu_ms_per_req=cpu * 1e3 / n, shard_cpu_ms_per_req=shards * 1e3 / n,
        rss_start_MiB=rss0 / 2**20, rss_rounds_MiB=[r / 2**20 for r in rss_rounds],
        # From the end of the first round (the allocator settles into the response's size)
        # to the end of the last.
        rss_growth_per_req_B=(rss_rounds[-1] - rss_rounds[0]) / max(1, (rounds - 1) * per_round),
        hwm_before_MiB=hwm0 / 2**20, hwm_after_MiB=hwm / 2**20,
        one_topic_p50_ms=statistics.median(one) * 1e3 if one else None)


def restart_node(results, target, node, topics, partitions):
    """Stops `node` (SIGTERM) and starts it again: shutdown time, time to "samsa is serving"
    and until a Metadata request lists every topic, and the RSS it comes back with."""
    stop_s = node.stop()
    start = time.monotonic()
    serving_s = node.start()
    listed = wait_listed(node.port, topics, 600)
    listed_s = time.monotonic() - start if listed is not None else None
    time.sleep(1.0)
    rss, hwm = proc_status(node.pid)
    return emit(results, f"restart.{topics}t.{partitions}p", target, topics=topics,
                partitions=partitions, stop_s=stop_s, serving_s=serving_s, listed_s=listed_s,
                warned=int(node.warned_while_starting),
                rss_MiB=rss / 2**20, hwm_MiB=hwm / 2**20)


def failover(results, cluster, how, runs, topics_before):
    """Kills (SIGKILL) or stops (SIGTERM) the active controller `runs` times, each time on a
    freshly restarted cluster: seconds until a surviving node reports another leader through
    DescribeQuorum, and until a CreateTopics through a surviving node succeeds."""
    sig = signal.SIGKILL if how == "sigkill" else signal.SIGTERM
    leader_s, create_s, gap_s, exit_s, restart_s = [], [], [], [], []
    for run in range(runs):
        found = None
        deadline = time.monotonic() + 60
        while found is None and time.monotonic() < deadline:
            found = describe_quorum(cluster.client_port(1), 2.0)
            time.sleep(0.05 if found is None else 0)
        if found is None:
            raise RuntimeError("no node reports a metadata quorum leader")
        old, old_epoch = found
        survivors = [i for i in cluster.pids if i != old]
        outcome = {}

        def watch_leader(port, t0):
            while "leader" not in outcome and time.monotonic() - t0 < 60:
                r = describe_quorum(port, 0.5)
                if r is not None and r[0] != old and r[1] > old_epoch:
                    outcome.setdefault("leader", (time.monotonic() - t0, r))
                    return
                time.sleep(0.005)

        def create(port, t0):
            # CreateTopics back to back until one succeeds after the new leader is known: the
            # first success, and the longest time between successes (from the signal on).
            attempt, ok = 0, [0.0]
            while time.monotonic() - t0 < 60:
                attempt += 1
                name = f"failover-{how}-{run}-{attempt}"
                try:
                    codes = create_topics_raw(port, [name], timeout_ms=30_000,
                                              socket_timeout_s=40.0)
                    if codes.get(name) == 0:
                        ok.append(time.monotonic() - t0)
                        outcome.setdefault("create", (ok[-1], attempt))
                        if "leader" in outcome and ok[-1] > outcome["leader"][0]:
                            break
                except OSError:
                    pass
                time.sleep(0.005)
            outcome["gap"] = max(b - a for a, b in zip(ok, ok[1:])) if len(ok) > 1 else None

        victim = cluster.pids[old]
        t0 = time.monotonic()
        os.kill(victim, sig)
        threads = [threading.Thread(target=watch_leader, args=(cluster.client_port(i), t0))
                   for i in survivors]
        threads.append(threading.Thread(target=create, args=(cluster.client_port(survivors[0]), t0)))
        for t in threads:
            t.start()
        gone = None
        while time.monotonic() - t0 < 60:
            if is_zombie(victim) or not os.path.exists(f"/proc/{victim}"):
                gone = time.monotonic() - t0
                break
            time.sleep(0.005)
        for t in threads:
            t.join()
        if "leader" not in outcome or "create" not in outcome or outcome["gap"] is None:
            raise RuntimeError(f"failover ({how}) run {run}: {outcome}")
        leader_s.append(outcome["leader"][0])
        create_s.append(outcome["create"][0])
        gap_s.append(outcome["gap"])
        exit_s.append(gone)
        log(f"failover {how} run {run}: node {old} (epoch {old_epoch}) -> node "
            f"{outcome['leader'][1][0]} (epoch {outcome['leader'][1][1]}) in "
            f"{outcome['leader'][0]:.3f} s; CreateTopics ok after {outcome['create'][0]:.3f} s "
            f"(attempt {outcome['create'][1]})")
        cluster.stop()
        restart_s.append(cluster.start())
    return emit(results, f"failover.{how}", "cluster3", runs=runs, topics=topics_before,
                new_leader_s_median=statistics.median(leader_s), new_leader_s=leader_s,
                create_ok_s_median=statistics.median(create_s), create_ok_s=create_s,
                create_gap_s_max=max(gap_s), create_gap_s=gap_s,
                victim_exit_s=[round(x, 3) if x is not None else -1 for x in exit_s],
                cluster_restart_s_median=statistics.median(restart_s))


def quorum_settings():
    """The defaults the failover figures depend on, from the configuration table the binary was
    built from (broker/src/config/defs/); the script starts the nodes without overriding them."""
    return {key: broker_default(key) for key in (
        "controller.quorum.fetch.timeout.ms", "controller.quorum.election.timeout.ms",
        "controller.quorum.election.backoff.max.ms", "broker.session.timeout.ms")}


def broker_default(key):
    """The default of a numeric broker property in the configuration table the binary was built
    from (broker/src/config/defs/*.rs, one file per area), as a string, or None."""
    defs = os.path.join(ROOT, "broker", "src", "config", "defs")
    rx = re.compile(r'"' + re.escape(key) + r'",\s*\w+,\s*Some\("(\d+)"\)')
    for name in sorted(os.listdir(defs)):
        if name.endswith(".rs"):
            m = rx.search(open(os.path.join(defs, name)).read())
            if m:
                return m.group(1)
    return None


# ---------------------------------------------------------------------------------------------
# Report


def find(results, test, target=None):
    for r in results:
        if r["test"] == test and (target is None or r["target"] == target):
            return r
    return None


def f(v, digits=1):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def where(target):
    if target == "single":
        return "1 node"
    m = re.match(r"cluster(\d+)(\.others-paused)?$", target)
    if not m:
        return target
    what = f"{m.group(1)} nodes"
    return what + (", the other nodes paused" if m.group(2) else "")


def section(results, args, machine, took_s):
    soft, limit = args.files_limit
    L = [f"<!-- {SECTION}:start (written by scripts/bench/metadata; scripts/bench/run and "
         "scripts/bench/replication keep it) -->",
         "## Metadata at scale", ""]
    L += [f"Measured {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')} in {took_s:.0f} s with "
          f"`{args.command}` on a release build: every node a real process on loopback, with "
          "its own data directory and free ports, started with its defaults. Machine at this "
          "run: " + "; ".join(f"{k} {v}" for k, v in machine.items()) + ".", "",
          f"Open files: a node keeps {FILES_PER_PARTITION} files open per hosted partition "
          "(segment, offset index, time index: `open files per partition` below), and this "
          f"machine allows a process {limit:,} (`ulimit -n`; "
          + ("the script raised it from " + f"{soft:,}" if soft != limit else
             "the hard limit, which the script cannot raise here") + "), so a node hosts at "
          f"most about {args.per_node:,} partitions. One node therefore gets as many topics as "
          "that allows, the 3-node cluster the full count, and 100,000 partitions are spread "
          "over as many nodes as they need (`--large`), one more node hosting none of them.",
          "",
          "Baseline: none measured in the same run. Tansu (the baseline broker of the sections "
          "above) was not built on this machine, and no other Kafka-compatible broker is; where "
          "a figure has a reference measured beside it (an empty node's restart, a one-topic "
          "Metadata request, the quorum's timeouts) the table names it.", ""]
    rows = [r for r in results if r["test"].startswith("create.")]
    if rows:
        L += ["### Creating topics", "",
              "Through the admin API: the 1-node and 3-node rows use kafka-python's "
              "`KafkaAdminClient.create_topics`, the first topics with one request each, the rest "
              "in batches; the larger clusters raw CreateTopics v2 requests in batches, each "
              "partition placed by a manual assignment (round-robin over the hosting nodes). "
              "Replication factor 1. The clock stops when every partition's directory and "
              "`partition.metadata` exist on the node hosting it (`all created`); `answered` "
              "is when the last CreateTopics was answered. `first / last batch` shows whether a "
              "batch gets dearer as topics accumulate. RSS is VmRSS summed over the nodes, "
              "before and after; per partition is the growth over the partitions created, so it "
              "holds everything a topic costs the cluster (metadata image on every node, each "
              "node's topic registry, the open partition logs, what the allocator keeps), not "
              "the image alone (see the image-only row below).", "",
              "| nodes | topics x partitions | one per request: topics, topics/s | batched: "
              "topics per request, topics/s | first / last batch s | answered s | all created s "
              "| overall topics/s | broker CPU s | RSS before -> after MiB (HWM) | RSS per "
              "partition B | open files per partition |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            one = (f"{f(r['one_by_one'])}, {f(r.get('one_by_one_topics_per_s'))}"
                   if r.get("one_by_one") else "-")
            L.append(
                f"| {where(r['target'])} | {f(r['topics'])} x {r['partitions_per_topic']} | {one} | "
                f"{f(r['batch'])}, {f(r['batched_topics_per_s'])} | "
                f"{f(r['first_batch_s'], 2)} / {f(r['last_batch_s'], 2)} | "
                f"{f(r['answered_s'])} | {f(r['installed_s'])} | {f(r['topics_per_s'])} | "
                f"{f(r['broker_cpu_s'])} | "
                + (f"{f(r['rss_before_MiB'])} -> {f(r['rss_after_MiB'])} "
                   f"({f(r['hwm_after_MiB'])}) | {f(r['rss_per_partition_B'], 0)} | "
                   f"{f(r['files_per_partition'], 2)} |" if "rss_before_MiB" in r else
                   "see below | see below | - |"))
        L.append("")
        for r in rows:
            if r.get("quorum_epochs") or r.get("retried_topics"):
                L += [f"While the {f(r['topics'])} x {r['partitions_per_topic']} topics were "
                      f"created on {where(r['target'])}, the metadata quorum's epoch moved "
                      f"{r['quorum_epochs']} time(s) (each a new election) and "
                      f"{f(r['retried_topics'])} topics were refused once (NOT_CONTROLLER or a "
                      f"timeout) and sent again; first / last tenth of the batches took "
                      f"{f(r['first_tenth_s'], 1)} / {f(r['last_tenth_s'], 1)} s.", ""]
            elif "first_tenth_s" in r:
                L += [f"{f(r['topics'])} x {r['partitions_per_topic']} on {where(r['target'])}: "
                      f"first / last tenth of the batches took {f(r['first_tenth_s'], 1)} / "
                      f"{f(r['last_tenth_s'], 1)} s; no election during the creation.", ""]
    names = [r for r in results if r["test"].startswith("names.")]
    if names:
        L += ["Names with '.' or '_' cost the controller a scan of every topic name (Kafka "
              "refuses a name that collides with another once '.' and '_' are unified): "
              + "; ".join(f"{f(r['topics'])} topics named like `{r['example']}`, one request, on "
                          f"the node holding {f(r['existing'])}: {f(r['s'], 2)} s"
                          for r in names) + ".", ""]
    image = [r for r in results if r["test"].startswith("image.")]
    if image:
        L += ["Memory of the metadata alone: the node that hosts none of the partitions holds "
              "them only in its metadata image and its topic registry; its RSS growth over the "
              "partitions is what the metadata costs a broker. The hosting nodes' growth per "
              "partition they host is beside it.", "",
              "| nodes | topics x partitions | image-only node: B per partition (RSS after MiB) "
              "| hosting nodes: B per hosted partition (mean) | RSS per node after MiB (mean) |",
              "|---|---|---|---|---|"]
        for r in image:
            L.append(f"| {where(r['target'])} | {f(r['topics'])} x {r['partitions_per_topic']} | "
                     f"{f(r['image_only_B_per_partition'], 0)} "
                     f"({f(r['image_only_rss_after_MiB'])}) | "
                     f"{f(r['hosting_B_per_hosted_partition_mean'], 0)} | "
                     f"{f(r['rss_after_MiB_mean'])} |")
        L.append("")
    meta = [r for r in results if r["test"].startswith("metadata.all.")]
    if meta:
        L += ["### A Metadata request for every topic", "",
              "Metadata v12 with a null topic list, one request after another on one "
              "connection over a raw socket (no client library in the time): latency is from "
              "the request's first byte sent to the response's last byte received. `one topic` "
              "is the same connection asking for one named topic, the fixed cost of a request. "
              "`shard CPU` is the CPU of the node's request threads per request, `node CPU` the "
              "whole process's in the same time (background work included). `RSS per round` is "
              "the node's VmRSS after each fifth of the requests, and the growth from the first "
              "fifth's end to the last's over the requests between: a request that left memory "
              "behind would show as growth. `the other nodes paused`: the same requests with "
              "every other node of the cluster stopped by SIGSTOP, so that their background work "
              "(see `Idle` below) leaves the two cores to the node measured.", "",
              "| nodes | topics | partitions | response bytes | requests | p50 ms | p99 ms | "
              "one topic p50 ms | us per partition (p50) | shard CPU ms/request | node CPU "
              "ms/request | RSS per round MiB | RSS growth per request B |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in meta:
            L.append(
                f"| {where(r['target'])} | {f(r['topics'])} | {f(r['partitions'])} | "
                f"{f(r['response_bytes'])} | {r['requests']} | {f(r['p50_ms'], 2)} | "
                f"{f(r['p99_ms'], 2)} | {f(r['one_topic_p50_ms'], 3)} | "
                f"{f(r['us_per_partition'], 2)} | {f(r['shard_cpu_ms_per_req'], 1)} | "
                f"{f(r['broker_cpu_ms_per_req'], 1)} | "
                f"{' / '.join(f'{x:.1f}' for x in r['rss_rounds_MiB'])} | "
                f"{f(r['rss_growth_per_req_B'], 0)} |")
        L.append("")
    idle = [r for r in results if r["test"].startswith("idle.")]
    if idle:
        L += ["### Idle", "",
              "CPU of the nodes over 10 s with no client request, after the topics were "
              "created (the metadata quorum still writes its no-op record every "
              "`metadata.max.idle.interval.ms`, and the maintenance pass runs every "
              "`log.flush.scheduler.interval.ms`): "
              + "; ".join(f"{where(r['target'])} holding {f(r['topics'])} topics: "
                          f"{f(r['cpu_pct_per_node_mean'])}% of a core per node (most "
                          f"{f(r['cpu_pct_per_node_max'])}%)" for r in idle) + ".", ""]
    fo = [r for r in results if r["test"].startswith("failover.")]
    if fo:
        L += ["### Controller failover", "",
              "On the 3-node cluster holding the topics above: the active controller (the "
              "metadata quorum's leader, found with DescribeQuorum v2) is killed with SIGKILL or "
              "stopped with SIGTERM (a controlled shutdown, which resigns). `new leader`: from "
              "the signal until a surviving node's DescribeQuorum names another leader in a "
              "later epoch. `CreateTopics ok`: until the first CreateTopics sent to a surviving "
              "node succeeds (they go back to back, each retried at once on an error, until one "
              "succeeds after the new leader is known); `longest without` the longest time from "
              "the signal, or from a success, to the next success. Each run starts from the "
              "cluster restarted (`cluster restart`: the launcher started again on the same "
              "data, until every node lists every broker as live). The floor after SIGKILL is "
              "the quorum's timeouts: " + ", ".join(
                  f"`{k}`={v}" for k, v in args.quorum_settings.items() if v) + ".", "",
              "| signal | runs | topics | new leader s: median (each) | CreateTopics ok s: "
              "median (each) | longest without a CreateTopics s: max (each) | victim exited s "
              "| cluster restart s (median) |",
              "|---|---|---|---|---|---|---|---|"]
        for r in fo:
            L.append(
                f"| {r['test'].split('.')[1].upper()} | {r['runs']} | {f(r['topics'])} | "
                f"{f(r['new_leader_s_median'], 3)} ({', '.join(f'{x:.3f}' for x in r['new_leader_s'])}) | "
                f"{f(r['create_ok_s_median'], 3)} ({', '.join(f'{x:.3f}' for x in r['create_ok_s'])}) | "
                f"{f(r['create_gap_s_max'], 3)} ({', '.join(f'{x:.3f}' for x in r['create_gap_s'])}) | "
                f"{', '.join(str(x) for x in r['victim_exit_s'])} | "
                f"{f(r['cluster_restart_s_median'], 2)} |")
        L.append("")
    rs = [r for r in results if r["test"].startswith("restart.")]
    if rs:
        L += ["### Restarting", "",
              "Stopped with SIGTERM (`stop`: until the process exited, which flushes every log "
              "and writes the checkpoints) and started again on the same data: until the "
              "`samsa is serving` log line (for a cluster: until every node serves and lists "
              "every broker as live), and until a Metadata request lists every topic. The same "
              "nodes restarted empty, measured in the same run, are the reference.", "",
              "| nodes | topics | partitions | stop s | to serving s | to every topic listed s | "
              "serving x empty node | RSS after MiB (HWM) |",
              "|---|---|---|---|---|---|---|---|"]
        for r in rs:
            empty = next((e for e in rs if e["target"] == r["target"] and e["topics"] == 0
                          and e["test"].startswith("restart.cluster.") ==
                          r["test"].startswith("restart.cluster.")), None)
            ratio = r["serving_s"] / empty["serving_s"] if empty and r is not empty else None
            nodes = where(r["target"])
            L.append(f"| {nodes} | {f(r['topics'])} | {f(r['partitions'])} | "
                     f"{f(r['stop_s'], 2)} | {f(r['serving_s'], 2)} | {f(r['listed_s'], 2)} | "
                     f"{f(ratio, 1)} | "
                     + (f"{f(r['rss_MiB'])} ({f(r['hwm_MiB'])})" if "rss_MiB" in r else "-")
                     + (" (logged: serving before caught up)" if r.get("warned") else "")
                     + (f" ({r['killed_on_stop']} node(s) SIGKILLed by the launcher 30 s "
                        "after SIGTERM)" if r.get("killed_on_stop") else "") + " |")
        L.append("")
    L += section_end(results, SECTION,
                     "Rerun: `scripts/bench/metadata` (the default sizes, about 10 minutes on "
                     "this machine); `--large` adds 100,000 single-partition topics and 1,000 "
                     "topics x 100 partitions (about 30 minutes more); `--topics N`, "
                     "`--one-by-one N`, `--batch N`, `--failover-runs N`, `--skip "
                     "single,cluster,failover,wide`, `--no-write`. Node logs of the last run are "
                     "under `.tools/bench-runs/metadata-*/`.")
    return "\n".join(L)


def section_end(results, name, rerun):
    """The last lines of a BENCHMARKS.md section: every figure's raw line, how to rerun it, and
    its end marker."""
    return (["Raw lines:", "", "```"] + [r["line"] for r in results]
            + ["```", "", rerun, "", f"<!-- {name}:end -->"])


# ---------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samsa", required=True)
    ap.add_argument("--topics", type=int, default=10_000,
                    help="topics of the 3-node cluster (one node gets as many as its open-file "
                         "limit allows, at most this)")
    ap.add_argument("--one-by-one", type=int, default=1_000)
    ap.add_argument("--batch", type=int, default=1_000)
    ap.add_argument("--failover-runs", type=int, default=3)
    ap.add_argument("--metadata-requests", type=int, default=30,
                    help="twice this many requests per round (five rounds) of the all-topics "
                         "Metadata figures; a fifth as many at 100,000 partitions")
    ap.add_argument("--large", action="store_true",
                    help="also 100,000 single-partition topics, and 1,000 topics x 100 "
                         "partitions, on as many nodes as the open-file limit needs")
    ap.add_argument("--large-topics", type=int, default=100_000)
    ap.add_argument("--skip", default="",
                    help="comma-separated: single,cluster,failover,wide")
    ap.add_argument("--out", default=os.path.join(ROOT, "BENCHMARKS.md"))
    ap.add_argument("--no-write", action="store_true", help="print the figures only")
    ap.add_argument("--command", default="scripts/bench/metadata")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))

    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = os.path.join(ROOT, ".tools", "bench-runs", f"metadata-{stamp}")
    os.makedirs(run_dir, exist_ok=True)
    data_root = os.path.join(ROOT, ".tools", "bench-data")
    os.makedirs(data_root, exist_ok=True)
    work = tempfile.mkdtemp(prefix="metadata-", dir=data_root)
    bench.LOAD_AT_START = " ".join(open("/proc/loadavg").read().split()[:3])
    largest = max(args.topics, args.large_topics if args.large else 0)
    limits = raise_file_limit(largest)
    args.files_limit = limits
    # What one node can host: its open-file limit over the files per partition, less room for
    # the node's own files and the internal topics.
    per_node = (limits[1] - FILES_SPARE) // FILES_PER_PARTITION
    args.per_node = per_node
    log(f"open-file limit {limits[0]} -> {limits[1]}: at most about {per_node:,} partitions "
        f"per node; work in {work}, logs in {run_dir}")

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: (stop_everything(), sys.exit(130)))
    results = []
    began = time.monotonic()
    args.quorum_settings = quorum_settings()
    try:
        # A reference: an empty node's restart.
        empty = Node(args.samsa, os.path.join(work, "empty"), os.path.join(run_dir, "empty.log"))
        empty.start()
        restart_node(results, "single", empty, 0, 0)
        empty.stop()
        if "single" not in skip:
            single(results, args, work, run_dir)
        if "cluster" not in skip:
            cluster3(results, args, work, run_dir, skip)
        if args.large:
            large(results, args, work, run_dir, skip)
    finally:
        stop_everything()
        keep_logs(work, run_dir)
        shutil.rmtree(work, ignore_errors=True)
    took = time.monotonic() - began
    with open(os.path.join(run_dir, "results.json"), "w") as fh:
        json.dump(results, fh, indent=1)
    if args.no_write:
        return
    machine = bench.machine_description(argparse.Namespace(data_root=data_root, perf="true"))
    machine.pop("load generator", None)
    text = open(args.out).read() if os.path.exists(args.out) else "# Samsa benchmarks\n"
    new = bench.replace_marked_section(text, SECTION, section(results, args, machine, took))
    with open(args.out, "w") as fh:
        fh.write(new)
    log(f"wrote the metadata section of {args.out} in {took:.0f} s")


def keep_logs(work, run_dir):
    """Copies the clusters' node logs (kept in their data directories) into the run's logs."""
    for d, _, files in os.walk(work):
        for name in files:
            if name.endswith(".log") and name.startswith("node-"):
                shutil.copy(os.path.join(d, name),
                            os.path.join(run_dir, f"{os.path.basename(d)}-{name}"))


def single(results, args, work, run_dir):
    """One node: as many topics as its open-file limit allows (at most --topics), the names
    comparison, Metadata for all of them, idle CPU and a restart."""
    names_each = 500
    room = (args.per_node - 2 * names_each) // 1_000 * 1_000
    n = min(args.topics, room)
    node = Node(args.samsa, os.path.join(work, "single"), os.path.join(run_dir, "single.log"))
    node.start()
    create_topics(results, "single", f"127.0.0.1:{node.port}", [node.pid], [node.data_dir],
                  "bench-", n, min(args.one_by_one, n), args.batch)
    # The controller's '.'/'_' collision check, beside plain names, in the same state.
    for example, prefix in (("plain-000001", "plain-"), ("dotted.000001", "dotted.")):
        t = time.monotonic()
        admin = admin_client(f"127.0.0.1:{node.port}")
        admin.create_topics({f"{prefix}{i:06d}": {"num_partitions": 1, "replication_factor": 1}
                             for i in range(names_each)}, timeout_ms=300_000)
        admin.close()
        wait_hosted([node.data_dir], prefix, names_each, 600)
        emit(results, f"names.{prefix.strip('.-')}", "single", topics=names_each, existing=n,
             example=example, s=time.monotonic() - t)
    total = n + 2 * names_each
    metadata_requests(results, "single", node.port, node.pid, total, total, 5,
                      args.metadata_requests * 2, one_topic="bench-000000")
    idle_cpu(results, "single", {1: node.pid}, total)
    restart_node(results, "single", node, total, total)
    node.stop()


def cluster3(results, args, work, run_dir, skip):
    """`samsa cluster local --nodes 3`: --topics topics, Metadata, idle CPU, failovers."""
    cluster = Cluster(args.samsa, os.path.join(work, "cluster"),
                      os.path.join(run_dir, "cluster.out"))
    cluster.start()
    restart_cluster(results, "cluster3", cluster, 0, 0)  # the reference: an empty cluster
    ids = sorted(cluster.pids)
    create_topics(results, "cluster3", ",".join(f"127.0.0.1:{cluster.client_port(i)}"
                                                 for i in ids),
                  [cluster.pids[i] for i in ids], [cluster.data_dir(i) for i in ids],
                  "bench-", args.topics, args.one_by_one, args.batch)
    metadata_requests(results, "cluster3", cluster.client_port(ids[-1]), cluster.pids[ids[-1]],
                      args.topics, args.topics, 5, args.metadata_requests * 2,
                      one_topic="bench-000000")
    idle_cpu(results, "cluster3", cluster.pids, args.topics)
    restart_cluster(results, "cluster3", cluster, args.topics, args.topics)
    if "failover" not in skip:
        for how in ("sigkill", "sigterm"):
            failover(results, cluster, how, args.failover_runs, args.topics)
    cluster.stop()


def restart_cluster(results, target, cluster, topics, partitions):
    """Stops the whole cluster (SIGTERM to the launcher, which stops every node) and starts it
    again on the same data: until every node serves and lists every broker as live, and until
    a Metadata request lists every topic."""
    stop_s = cluster.stop()
    serving_s = cluster.start(timeout_s=1800)
    listed = wait_listed(cluster.client_port(min(cluster.pids)), topics, 600)
    return emit(results, f"restart.cluster.{topics}t.{partitions}p", target, topics=topics,
                partitions=partitions, nodes=cluster.count, stop_s=stop_s,
                killed_on_stop=cluster.killed_on_stop, serving_s=serving_s,
                listed_s=(serving_s + listed) if listed is not None else None)


def idle_cpu(results, target, pids, topics, seconds=10.0):
    """CPU the nodes spend with nothing asked of them, in % of one core per node."""
    time.sleep(2.0)
    before = {i: bench.cpu_seconds(p) for i, p in pids.items()}
    time.sleep(seconds)
    per = {i: (bench.cpu_seconds(p) - before[i]) * 100 / seconds for i, p in pids.items()}
    return emit(results, f"idle.{topics}t", target, topics=topics, nodes=len(pids),
                seconds=seconds, cpu_pct_per_node_mean=statistics.mean(per.values()),
                cpu_pct_per_node_max=max(per.values()))


def large(results, args, work, run_dir, skip):
    """--large-topics single-partition topics on as many nodes as the open-file limit needs
    (one node more, which hosts none of them and holds them in its image only), then 1,000
    topics x 100 partitions on a fresh cluster of the same size."""
    n = args.large_topics
    hosts = -(-n // (args.per_node - 1_000))
    nodes = max(3, hosts + 1)
    for layout, topics, partitions in (("large", n, 1), ("wide", n // 100, 100)):
        if layout == "wide" and "wide" in skip:
            continue
        cluster = Cluster(args.samsa, os.path.join(work, layout),
                          os.path.join(run_dir, f"{layout}.out"), nodes=nodes)
        cluster.start()
        target = f"cluster{nodes}"
        if layout == "large":
            restart_cluster(results, target, cluster, 0, 0)  # the reference: empty
        ids = sorted(cluster.pids)
        empty = ids[-1]
        time.sleep(1.0)
        before = memory(cluster.pids.values())
        create_raw(results, target, cluster, "big-", topics, partitions, ids[:-1],
                       args.batch // partitions)
        after = memory(cluster.pids.values())
        grown = {i: after[cluster.pids[i]][0] - before[cluster.pids[i]][0] for i in ids}
        total = topics * partitions
        hosting = [grown[i] / (total / len(ids[:-1])) for i in ids[:-1]]
        emit(results, f"image.{topics}x{partitions}", target, topics=topics,
             partitions_per_topic=partitions, nodes=nodes, hosts=len(ids) - 1,
             image_only_node=empty, image_only_B_per_partition=grown[empty] / total,
             image_only_rss_after_MiB=after[cluster.pids[empty]][0] / 2**20,
             hosting_B_per_hosted_partition_mean=statistics.mean(hosting),
             rss_after_MiB_mean=statistics.mean(after[p][0] for p in cluster.pids.values()) / 2**20)
        if layout == "large":
            idle_cpu(results, target, cluster.pids, topics)
        port, pid = cluster.client_port(empty), cluster.pids[empty]
        per_round = max(2, args.metadata_requests // 5)
        metadata_requests(results, target, port, pid, topics, total, 5, per_round,
                          one_topic="big-000000")
        # The same requests with every other node paused (SIGSTOP): what one broker's own
        # handling costs when the others' background work does not take the two cores.
        others = [cluster.pids[i] for i in ids if i != empty]
        for p in others:
            os.kill(p, signal.SIGSTOP)
        try:
            metadata_requests(results, target + ".others-paused", port, pid, topics, total, 5,
                              per_round, one_topic="big-000000")
        finally:
            for p in others:
                os.kill(p, signal.SIGCONT)
        if layout == "large":
            restart_cluster(results, target, cluster, topics, total)
        cluster.stop()
        keep_logs(cluster.dir, run_dir)
        shutil.rmtree(cluster.dir, ignore_errors=True)


def create_raw(results, target, cluster, prefix, topics, partitions, hosts, per_request):
    """Creates topics with raw CreateTopics v2 requests of `per_request` topics each, their
    partitions placed round-robin on `hosts` (manual assignment); returns the figures."""
    ids = sorted(cluster.pids)
    port = cluster.client_port(ids[0])
    names = [f"{prefix}{i:06d}" for i in range(topics)]
    cpu0 = sum(bench.cpu_seconds(p) for p in cluster.pids.values())
    epoch0 = (describe_quorum(port, 5.0) or (-1, -1))[1]
    start = time.monotonic()
    batch_s, k, retried = [], 0, 0
    for i in range(0, topics, per_request):
        assignments = {}
        for name in names[i:i + per_request]:
            assignments[name] = [hosts[(k + j) % len(hosts)] for j in range(partitions)]
            k += partitions
        t = time.monotonic()
        pending, attempts = list(assignments), 0
        while pending:
            attempts += 1
            try:
                codes = create_topics_raw(port, pending, timeout_ms=300_000,
                                          socket_timeout_s=600, assignments=assignments)
            except OSError as e:
                codes = {n: str(e) for n in pending}
            # A retried topic the first attempt created already exists.
            done = {0} | ({TOPIC_ALREADY_EXISTS} if attempts > 1 else set())
            bad = {n: c for n, c in codes.items() if c not in done}
            if bad and (attempts > 30 or any(c not in RETRIABLE for c in bad.values()
                                             if isinstance(c, int))):
                raise RuntimeError(f"{target}: CreateTopics refused {len(bad)} topics: "
                                   f"{list(bad.items())[:3]}")
            if bad:
                retried += len(bad)
                log(f"{target}: {len(bad)} topics to retry: {list(bad.items())[:1]}")
                time.sleep(1.0)
            pending = list(bad)
        batch_s.append(time.monotonic() - t)
    answered_s = time.monotonic() - start
    dirs = [cluster.data_dir(i) for i in ids]
    if wait_hosted(dirs, prefix, topics * partitions, 3600) is None:
        raise RuntimeError(f"{target}: not every partition of {prefix}* was created in an hour")
    installed_s = time.monotonic() - start
    cpu = sum(bench.cpu_seconds(p) for p in cluster.pids.values()) - cpu0
    time.sleep(2.0)
    tenth = max(1, len(batch_s) // 10)
    return emit(results, f"create.{topics}x{partitions}", target, topics=topics,
                partitions_per_topic=partitions, one_by_one=0, batch=per_request,
                batched=topics, batched_s=sum(batch_s),
                batched_topics_per_s=topics / sum(batch_s),
                first_batch_s=batch_s[0], last_batch_s=batch_s[-1],
                first_tenth_s=sum(batch_s[:tenth]), last_tenth_s=sum(batch_s[-tenth:]),
                answered_s=answered_s, installed_s=installed_s,
                topics_per_s=topics / installed_s, broker_cpu_s=cpu, nodes=len(ids),
                retried_topics=retried,
                quorum_epochs=(describe_quorum(port, 5.0) or (-1, -1))[1] - epoch0)


if __name__ == "__main__":
    main()
