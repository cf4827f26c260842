#!/usr/bin/env python3
"""Samsa's benchmark harness: runs librdkafka's rdkafka_performance against Samsa (one or both
I/O engines), the discard sink (the load generator's own ceiling on this machine), optionally
Apache Kafka 4.4 (`--baseline`, scripts/bench/kafka_target.py), Tansu (`--tansu`) or a broker
already running elsewhere on loopback, measures the machine's limits in the same run, and writes
BENCHMARKS.md with a table and an SVG chart. With `--repeat N` the targets alternate: round 1
runs on every target, then round 2, and so on; each row is the median of its broker's rounds.

Every scenario prints one parseable line:

  BENCH test=<scenario> broker=<target> msgs_per_s=.. MB_per_s=.. p50_ms=.. p99_ms=..
        p999_ms=.. broker_cpu_s=.. broker_rss_MiB=.. cpu_s_per_M=.. of_sink=.. limit=..
        of_limit=.. status=ok|failed:<reason>

and every broker start one `START broker=.. serve_s=.. idle_rss_MiB=..` line (process start
until it answers ApiVersions; RSS 2 s later, before any load), summed up by one `BROKER` line
per broker (medians) at the end.

Unknown figures are "-". Latency is what the scenario names: delivery latency (produce call to
acknowledgement, as rdkafka_performance -l measures it) for produce scenarios, produce
timestamp to consume for e2e and tail scenarios. Broker CPU seconds come from
/proc/<pid>/stat (user + system) around the scenario, RSS from /proc/<pid>/status after it.

Run it through scripts/bench/run, which builds what it needs first. Python 3 stdlib only.
"""

import argparse
import datetime
import json
import math
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kafka_target as kafka  # noqa: E402 - beside this file
import targets  # noqa: E402
import wire  # noqa: E402
from wire import advertised_api_keys  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MANY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "many.py")
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_MIB = 1.0 / 1024.0  # VmRSS is in KiB


# ---------------------------------------------------------------------------------------------
# Scenarios


def produce(size, acks, partitions, keyed=False, codec="none", quick=False, linger_ms=None):
    """A produce scenario. rdkafka_performance sets linger.ms=1000 unless told otherwise, which
    holds its client to about a third of what it can send on this machine (it idles 70% of the
    time against the discard sink); `linger_ms=5` gives librdkafka's own default, what an
    application gets, and the client's real ceiling."""
    size_name = "100B" if size == 100 else "1KiB"
    acks_name = "all" if acks == -1 else str(acks)
    name = f"produce.{size_name}.acks_{acks_name}.p{partitions}"
    if keyed:
        name += ".keyed"
    if codec != "none":
        name += f".{codec}"
    if linger_ms is not None:
        name += f".linger{linger_ms}"
    return dict(name=name, kind="produce", size=size, acks=acks, partitions=partitions,
                keyed=keyed, codec=codec, quick=quick, linger_ms=linger_ms)


def scenarios():
    out = []
    for size in (100, 1024):
        for acks in (1, -1):
            for partitions in (1, 8):
                for keyed in (False, True):
                    for codec in ("none", "lz4", "zstd"):
                        quick = (
                            (keyed, codec, partitions) == (False, "none", 1)
                            or (size, acks, keyed, codec) == (1024, -1, False, "none")
                            or (size, acks, partitions, codec) == (1024, -1, 1, "none")
                            or (size, acks, partitions, keyed) == (1024, -1, 1, False)
                        )
                        out.append(produce(size, acks, partitions, keyed, codec, quick))
    for size in (100, 1024):
        out.append(produce(size, -1, 1, quick=True, linger_ms=5))
    # The cost of client-quota accounting: the acks=1 row again with a producer_byte_rate quota
    # on every client id (`--entity-default`) so high (10 GB/s) that it is never reached.
    out.append(dict(produce(1024, 1, 1, quick=True), name=QUOTA_ROW, quota=10e9))
    out.append(dict(name="consume.1KiB.assigned", kind="consume", size=1024, group=False, quick=True))
    out.append(dict(name="consume.1KiB.group", kind="consume", size=1024, group=True, quick=True))
    out.append(dict(name="consume.100B.assigned", kind="consume", size=100, group=False, quick=False))
    # The same read with the topic's files dropped from the page cache first: from the disk,
    # where consume.1KiB.assigned reads the page cache and tail.1KiB.acks_1 the tail cache.
    out.append(dict(name="consume.1KiB.cold", kind="consume", size=1024, group=False, cold=True,
                    quick=True))
    for rate in (1000, 50000):
        out.append(dict(name=f"e2e.100B.rate_{rate}", kind="e2e", size=100, rate=rate, quick=True))
    out.append(dict(name="e2e.1KiB.rate_50000", kind="e2e", size=1024, rate=50000, quick=False))
    out.append(dict(name="tail.1KiB.acks_1", kind="tail", size=1024, quick=True))
    out.append(dict(name="producers_8.1KiB.acks_all.p8", kind="multi", size=1024, producers=8,
                    quick=True))
    # 64 connections: 8 processes x 8 librdkafka clients (scripts/bench/many.py says
    # why), one partition each.
    out.append(dict(name="producers_64.1KiB.acks_all.p64", kind="many", size=1024, producers=64,
                    quick=True))
    # One topic of 10,000 partitions, created (timed) and produced across (random partitioner;
    # 5x the time cap of the other rows: the first write to each partition costs more).
    out.append(produce(1024, -1, 10000, quick=True, linger_ms=5))
    # Kafka's own perf tools as the load generator (only the broker's CPU is measured).
    out.append(dict(name="kt.produce.1KiB.acks_all.p1", kind="ktproduce", size=1024, quick=True))
    out.append(dict(name="kt.consume.1KiB", kind="consume", size=1024, group=True, tool="kt",
                    quick=True))
    return out


# Scenarios that run on the second I/O engine too, and on the sink.
OTHER_ENGINE = {"produce.100B.acks_all.p1", "produce.1KiB.acks_all.p1", "produce.1KiB.acks_1.p1",
                "consume.1KiB.assigned", "e2e.100B.rate_1000", "producers_8.1KiB.acks_all.p8"}
SINK_KINDS = {"produce", "consume", "multi"}
# Kafka 4.4's rows in quick mode (full: all), and the durability pair's (samsa
# --log.durable=true against Kafka with log.flush.interval.messages=1).
QUOTA_ROW = "produce.1KiB.acks_1.p1.quota_unreached"
NEW_ROWS = {"producers_64.1KiB.acks_all.p64", "produce.1KiB.acks_all.p10000.linger5",
            "consume.1KiB.cold",
            "kt.produce.1KiB.acks_all.p1", "kt.consume.1KiB", QUOTA_ROW}
KAFKA_QUICK = OTHER_ENGINE | NEW_ROWS | {"consume.1KiB.group", "produce.1KiB.acks_all.p1.linger5",
    "produce.1KiB.acks_all.p1.lz4", "produce.1KiB.acks_all.p1.zstd", "produce.1KiB.acks_all.p8",
    "e2e.100B.rate_50000"}
DURABLE = {"produce.1KiB.acks_all.p1", "producers_8.1KiB.acks_all.p8",
           "producers_64.1KiB.acks_all.p64"}
STORING = ("samsa", "baseline", "kafka")  # kinds started afresh per scenario group


# ---------------------------------------------------------------------------------------------
# Processes


JOIN_GROUP = 11


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_serving(bootstrap, proc, what, timeout_s=30.0):
    """Waits until the broker answers ApiVersions, asked every 5 ms (False: it only listens)."""
    deadline = time.time() + timeout_s
    while time.time() < deadline and proc.poll() is None:
        if advertised_api_keys(bootstrap) is not None:
            return True
        time.sleep(0.005)
    wait_listening(int(bootstrap.rsplit(":", 1)[1]), proc, what, 1.0)
    return False


def wait_listening(port, proc, what, timeout_s=30.0):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on {port} within {timeout_s}s")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        # The command name may hold spaces: fields are counted after its closing parenthesis.
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * PAGE_MIB
    return None


class Target:
    """A broker under test: a process we started (measured through /proc), or an address."""

    def __init__(self, name, kind, description):
        self.name, self.kind, self.description = name, kind, description
        self.proc = None
        self.bootstrap = None
        self.data_dir = None
        self.log = None
        self.metrics_url = None
        self.serve_s = None

    def start(self, cmd, port, cwd=None, env=None):
        self.log = open(os.path.join(RUN_DIR, f"{self.name}.log"), "a")
        began = time.time()
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, cwd=cwd,
                                     env=env, start_new_session=True)
        STARTED.append(self)
        self.bootstrap = f"127.0.0.1:{port}"
        if wait_serving(self.bootstrap, self.proc, self.name):
            self.serve_s = time.time() - began

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.log:
            self.log.close()
        if self.data_dir and os.path.isdir(self.data_dir):
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def pid(self):
        return self.proc.pid if self.proc is not None and self.proc.poll() is None else None

    def scrape(self):
        """The broker's Prometheus text, for samsa brokers (None otherwise or when the scrape
        fails)."""
        if not self.metrics_url or not self.pid():
            return None
        try:
            with urllib.request.urlopen(self.metrics_url, timeout=5) as resp:
                return resp.read().decode()
        except OSError:
            return None


def allocations_and_requests(text):
    """(heap allocations, requests served) from a scrape (None without one)."""
    if text is None:
        return None
    allocs = requests = 0.0
    for line in text.splitlines():
        if line.startswith("samsa_heap_allocations_total "):
            allocs = float(line.split()[-1])
        elif line.startswith("samsa_requests_total{"):
            requests += float(line.split()[-1])
    return allocs, requests


PRODUCE_BUCKET = re.compile(
    r'^samsa_request_duration_seconds_bucket\{le="([^"]+)",api="Produce"\} (\S+)$')


def produce_buckets(text):
    """{upper bound in seconds: cumulative count} of the broker's Produce handling times, from
    a scrape (the time from a decoded request to its response, or to the deferred response of
    a durable one: what the broker itself adds, without the wake-ups around it)."""
    out = {}
    for line in (text or "").splitlines():
        m = PRODUCE_BUCKET.match(line)
        if m:
            out[float("inf") if m.group(1) == "+Inf" else float(m.group(1))] = float(m.group(2))
    return out


def bucket_percentile(before, after, q):
    """The upper bound of the histogram bucket that holds quantile `q` of the observations
    made between two scrapes, in milliseconds (None without observations)."""
    bounds = sorted(after)
    delta = [after[b] - before.get(b, 0.0) for b in bounds]
    if not delta or delta[-1] <= 0:
        return None
    for b, n in zip(bounds, delta):
        if n >= q * delta[-1]:
            return b * 1e3
    return None


STARTED = []
TOOLS = []  # load generators running now (Popen): a signal stops them with the brokers
RUN_DIR = None
LOAD_AT_START = None


def stop_tools():
    """Kills the load generators still running (on a signal: their figures are lost anyway)."""
    for p in list(TOOLS):
        if p.poll() is None:
            p.kill()
            p.wait()
        TOOLS.remove(p)


def stop_all():
    stop_tools()
    for t in STARTED:
        try:
            t.stop()
        except Exception as e:  # noqa: BLE001 - best effort at exit
            print(f"bench: stopping {t.name}: {e}", file=sys.stderr)


def samsa_target(args, engine, durable=False):
    name = f"samsa-{engine}" + ("-durable" if durable else "")
    t = Target(name, "samsa", f"samsa (release build), io.engine={engine}"
               + (", log.durable=true (fsync group commit)" if durable else ", default flushing")
               + "".join(f", {a}" for a in args.samsa_arg))
    t.data_dir = tempfile.mkdtemp(prefix=f"bench-{name}-", dir=args.data_root)
    port = free_port()
    metrics_port = free_port()
    while metrics_port == port:
        metrics_port = free_port()
    t.metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
    cmd = [args.samsa, f"--listeners=PLAINTEXT://127.0.0.1:{port}", f"--log.dirs={t.data_dir}",
           f"--io-engine={engine}", "--num.partitions=1",
           f"--metrics.listener=127.0.0.1:{metrics_port}"]
    if durable:
        cmd.append("--log.durable=true")
    cmd += args.samsa_arg
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAMSA_")}
    t.start(cmd, port, env=env)
    return t


def sink_target(args):
    t = Target("discard-sink", "sink", "samsa-discard-sink: acknowledges Produce, serves Fetch "
               "from memory, stores nothing")
    port = free_port()
    t.start([args.sink, "--listen", f"127.0.0.1:{port}", "--fetch-record-bytes", "1024"], port)
    return t


#: Tansu's storage engines, each measured as a broker of its own (one build has both):
#: name -> (--storage-engine URL, description).
BASELINE_ENGINES = {
    # Its sqlite URL is a path relative to the working directory (the broker's data directory).
    "sqlite": ("sqlite://tansu.db", "SQLite storage engine on the same disk"),
    # What users compare a local Kafka against: records in the process's memory, nothing
    # written (the dynostore engine over an in-memory object store).
    "memory": ("memory://tansu/", "in-memory storage engine (nothing written to disk)"),
}


def tansu_target(args, engine):
    url_engine, what = BASELINE_ENGINES[engine]
    t = Target(f"tansu-{engine}", "baseline",
               f"Tansu {args.tansu_version} (crates.io, release), {what}")
    t.data_dir = tempfile.mkdtemp(prefix=f"bench-tansu-{engine}-", dir=args.data_root)
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items()
           if k not in ("CLUSTER_ID", "LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE")}
    env["RUST_LOG"] = "warn"
    t.start([args.tansu, "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", url_engine], port, cwd=t.data_dir, env=env)
    return t


def external_target(bootstrap):
    t = Target(f"external-{bootstrap}", "external", f"a broker already running at {bootstrap}")
    t.bootstrap = bootstrap
    return t


# ---------------------------------------------------------------------------------------------
# Load generator


def run_tool(cmd, timeout_s, name):
    """Runs a load generator; past `timeout_s` it gets SIGINT (rdkafka_performance then prints
    its summary), then SIGKILL. Returns (stdout, seconds)."""
    log_path = os.path.join(RUN_DIR, f"{name}.out")
    with open(log_path, "w") as log:
        log.write(" ".join(cmd) + "\n")
        log.flush()
        start = time.time()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        TOOLS.append(p)
        try:
            out, _ = p.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGINT)
            try:
                out, _ = p.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                out, _ = p.communicate()
        TOOLS.remove(p)
        took = time.time() - start
        log.write(out)
    return out, took


def start_tool(cmd, name):
    log = open(os.path.join(RUN_DIR, f"{name}.out"), "w")
    log.write(" ".join(cmd) + "\n")
    log.flush()
    p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, text=True)
    TOOLS.append(p)
    return p, log


def finish_tool(p, log, grace_s):
    try:
        p.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    if p in TOOLS:
        TOOLS.remove(p)
    log.close()
    with open(log.name) as f:
        return f.read()


PRODUCED = re.compile(r"% (\d+) messages produced \((\d+) bytes\), (\d+) delivered \(offset -?\d+, "
                      r"(\d+) failed\) in (\d+)ms: (\d+) msgs/s and ([\d.]+) MB/s")
CONSUMED = re.compile(r"% (\d+) messages \((\d+) bytes\) consumed in (\d+)ms: (\d+) msgs/s "
                      r"\(([\d.]+) MB/s\)")


def parse_produced(out):
    m = PRODUCED.findall(out)
    if not m:
        return None
    produced, nbytes, delivered, failed, ms, rate, mbs = m[-1]
    return dict(delivered=int(delivered), failed=int(failed), ms=int(ms), msgs_per_s=int(rate),
                MB_per_s=float(mbs))


def parse_consumed(out):
    m = CONSUMED.findall(out)
    if not m:
        return None
    msgs, nbytes, ms, rate, mbs = m[-1]
    return dict(msgs=int(msgs), ms=int(ms), msgs_per_s=int(rate), MB_per_s=float(mbs))


def parse_e2e(out):
    """The key=value pairs of samsa-e2e-latency's last `E2E ...` line (strings, "-" where it
    has no figure), or None without one."""
    line = [x for x in out.splitlines() if x.startswith("E2E ")]
    if not line:
        return None
    return dict(p.split("=", 1) for p in line[-1].split()[1:])


def percentiles(path, skip=0):
    """p50/p99/p99.9 in ms of a file of microsecond latencies, one a line, leaving out the
    first `skip` samples (the client's warm-up: messages queued before its connection and
    metadata are ready wait for them, about half a second here)."""
    try:
        with open(path) as f:
            values = sorted(int(x) for x in list(f)[skip:] if x.strip())
    except FileNotFoundError:
        return None
    if not values:
        return None

    def pct(p):
        return values[min(len(values) - 1, int(len(values) * p))] / 1000.0

    return dict(p50_ms=pct(0.50), p99_ms=pct(0.99), p999_ms=pct(0.999), samples=len(values))


def topic_files(target, topic):
    """The files in the topic's partition directories, for brokers with Kafka's on-disk layout
    on this machine (None otherwise)."""
    log_dir = getattr(target, "log_dir", None) or target.data_dir
    if target.kind not in ("samsa", "kafka") or not log_dir:
        return None
    return [f for entry in os.scandir(log_dir)
            if entry.is_dir() and entry.name.rsplit("-", 1)[0] == topic
            for f in os.scandir(entry.path) if f.is_file()]


def stored_bytes(target, topic):
    """Bytes in the topic's partition directories' .log files."""
    files = topic_files(target, topic)
    if files is None:
        return None
    return sum(f.stat().st_size for f in files if f.name.endswith(".log"))


def evict_from_page_cache(target, topic):
    """Writes the topic's files out and drops them from the page cache (posix_fadvise
    DONTNEED, file by file: no root needed, nothing else on the machine touched), so that the
    next read of them comes from the disk. Returns the bytes evicted, or None where the broker's
    files are not on this machine in Kafka's layout."""
    files = topic_files(target, topic)
    if files is None:
        return None
    total = 0
    for f in files:
        fd = os.open(f.path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            total += f.stat().st_size
        finally:
            os.close(fd)
    return total


def perf_cmd(args, bootstrap, mode, topic, extra):
    return [args.perf, mode, "-t", topic, "-b", bootstrap, "-q" if mode == "-C" else "-v"] + extra


# ---------------------------------------------------------------------------------------------
# Running scenarios


class Runner:
    def __init__(self, args):
        self.args = args
        self.results = []
        self.limits = {}
        self.topic_seq = 0
        self.cap_s = 3.0 if args.mode == "quick" else 15.0
        self.starts = {}  # broker -> [(start-to-serving s, idle RSS MiB or None)]

    def topic(self, target, base):
        self.topic_seq += 1
        return f"bench-{base}-{self.topic_seq}".replace(".", "-")

    def admin(self, target, call, arg, timeout_s=15):
        """Runs `call` (an expression over `a`, a confluent-kafka AdminClient, and `arg`, the
        JSON-decoded argument) and waits for every future it returns: librdkafka's admin
        client, which every broker here answers."""
        script = (
            "import sys, json\n"
            "from confluent_kafka.admin import AdminClient, NewTopic\n"
            "a = AdminClient({'bootstrap.servers': sys.argv[1]})\n"
            "arg = json.loads(sys.argv[2])\n"
            f"for f in ({call}).values():\n"
            f"    f.result(timeout={timeout_s})\n"
        )
        subprocess.run([self.args.python, "-c", script, target.bootstrap, json.dumps(arg)],
                       check=True, timeout=timeout_s * 4, capture_output=True, text=True)

    def create_topics(self, target, topics):
        """CreateTopics (auto-creation would give every topic the same partition count), then
        until Metadata shows each partition with a leader (Kafka answers before that)."""
        self.admin(target, "a.create_topics([NewTopic(n, p, 1) for n, p in arg], "
                           "operation_timeout=10)", topics)
        subprocess.run([self.args.python, MANY, "ready", target.bootstrap]
                       + [n for n, _ in topics], timeout=60, check=False)

    def create_timed(self, target, topic, partitions):
        """Creates a big topic: (seconds until CreateTopics answered, seconds until Metadata
        shows every partition with a leader, requests it took), timed in the client process."""
        done = subprocess.run([self.args.python, MANY, "create", target.bootstrap, topic,
                               str(partitions)], timeout=700, capture_output=True, text=True)
        out = done.stdout.split()
        if done.returncode != 0 or not out:
            raise RuntimeError((done.stderr.strip().splitlines() or ["?"])[-1])
        return float(out[1]), float(out[2]), int(out[3])

    def delete_topics(self, target, topics):
        self.admin(target, "a.delete_topics(arg, operation_timeout=10)", topics)

    def recycle_page_cache(self, target, s):
        """Before a scenario that writes, the broker writes as much to a scratch topic and
        deletes it, outside the measured time: its page-cache pages then come back from the
        memory its own deleted segments freed, as in a broker whose retention deletes old
        segments. Without it they come fresh from this VM's free memory, which the hypervisor
        takes back while it is unused (free page reporting): touching such a page again costs
        about ten times the CPU of reusing one (measured here: 1.35-1.94 CPU s per GiB of
        buffered writes after 8 s idle against 0.14-0.15 s straight after freeing the same
        amount), which would make every broker figure depend on how long the machine idled."""
        if self.args.no_recycle or target.kind not in STORING:
            return
        topic = self.topic(target, "recycle")
        try:
            self.create_topics(target, [(topic, 1)])
            count = self.produce_count(s)
            run_tool(perf_cmd(self.args, target.bootstrap, "-P", topic,
                              ["-s", str(s["size"]), "-a", "1", "-c", str(count)]),
                     self.cap_s, f"{target.name}.{s['name']}.recycle")
            self.delete_topics(target, [topic])
            time.sleep(0.5)
        except Exception as e:  # noqa: BLE001 - the scenario still runs, on fresh memory
            print(f"   ({target.name}: could not recycle page cache before {s['name']}: "
                  f"{type(e).__name__})", flush=True)

    def record(self, scenario, target, figures, cpu_s, rss, status, limit=None):
        r = dict(test=scenario["name"], broker=target.name, kind=scenario["kind"],
                 status=status, broker_cpu_s=cpu_s, broker_rss_MiB=rss, limit=limit)
        r.update(figures or {})
        msgs = r.get("msgs_total")
        if cpu_s is not None and msgs:
            r["cpu_s_per_M"] = cpu_s / (msgs / 1e6)
        # Limits are measured first and the sink runs before the brokers, so each line can
        # be printed complete as soon as its scenario ends.
        annotate(r, self.results, self.limits)
        return r

    def measure(self, target, scenario, body):
        """Runs body() -> (figures, status, limit) with the broker's CPU and RSS around it."""
        pid = target.pid()
        scrape0 = target.scrape()
        counted0 = allocations_and_requests(scrape0)
        cpu0 = cpu_seconds(pid) if pid else None
        try:
            figures, status, limit = body()
        except Exception as e:  # noqa: BLE001 - a failed scenario is a result, not a crash
            figures, status, limit = None, f"failed:{type(e).__name__}:{e}"[:160], None
        pid_now = target.pid()
        cpu = cpu_seconds(pid_now) - cpu0 if pid_now and cpu0 is not None else None
        # Read before the harness's own scrape: rendering /metrics for 10,000 partitions takes
        # several MB for a moment, which Kafka, never scraped here, is not charged.
        rss = rss_mib(pid_now) if pid_now else None
        scrape1 = target.scrape()
        counted = allocations_and_requests(scrape1)
        if scrape0 is not None and scrape1 is not None and figures:
            p99 = bucket_percentile(produce_buckets(scrape0), produce_buckets(scrape1), 0.99)
            if p99 is not None:
                figures = dict(figures, broker_produce_p99_ms=p99)
        if counted0 and counted and counted[1] > counted0[1]:
            # Includes the scrape's own rendering and the scenario's setup requests: an upper
            # bound for the data path, which is what it is meant to watch.
            figures = dict(figures or {})
            figures["allocs_per_req"] = (counted[0] - counted0[0]) / (counted[1] - counted0[1])
        if pid and not pid_now:
            status = "failed:broker-exited"
        return self.record(scenario, target, figures, cpu, rss, status.replace(" ", "_"), limit)

    # -- produce -----------------------------------------------------------------------------

    def produce_args(self, s, count, latency_file=None, rate=None, linger_ms=None, partition=None):
        extra = ["-s", str(s["size"]), "-a", str(s.get("acks", -1)), "-c", str(count)]
        if s.get("keyed"):
            extra += ["-k", "bench-key"]
        if s.get("codec", "none") != "none":
            extra += ["-z", s["codec"]]
        if latency_file:
            extra += ["-l", "-A", latency_file]
        if rate:
            extra += ["-r", str(rate)]
        if linger_ms is not None:
            extra += ["-X", f"linger.ms={linger_ms}"]
        if partition is not None:
            extra += ["-p", str(partition)]
        return extra

    def produce_count(self, s):
        n = 2_000_000 if s["size"] <= 100 else 1_000_000
        return n if self.args.mode == "quick" else n * 4

    def run_produce(self, target, s):
        topic = self.topic(target, s["name"])
        created = None
        if s["partitions"] >= 1000:
            try:
                created = self.create_timed(target, topic, s["partitions"])
            except Exception as e:  # noqa: BLE001
                return self.record(s, target, None, None, None,
                                   f"failed:create:{type(e).__name__}:{e}"[:160].replace(" ", "_"))
        else:
            self.create_topics(target, [(topic, s["partitions"])])
        failed = s.get("quota") and wire.set_client_quota(target.bootstrap, None,
                                                          "producer_byte_rate", s["quota"])
        if failed:
            return self.record(s, target, None, None, None, failed)
        lat = os.path.join(RUN_DIR, f"{target.name}.{s['name']}.lat")

        def body():
            count = self.produce_count(s)
            out, _ = run_tool(perf_cmd(self.args, target.bootstrap, "-P", topic,
                                       self.produce_args(s, count, lat if self.args.latency else None,
                                                         linger_ms=s.get("linger_ms"))),
                              self.cap_s * (5 if created else 1), f"{target.name}.{s['name']}")
            p = parse_produced(out)
            if p is None:
                return None, "failed:no-summary", None
            figures = dict(msgs_per_s=p["msgs_per_s"], MB_per_s=p["MB_per_s"],
                           msgs_total=p["delivered"])
            if created:
                figures["create_s"], figures["ready_s"], figures["create_steps"] = created
            figures.update(percentiles(lat) or {})
            stored = stored_bytes(target, topic)
            if stored is not None and p["delivered"]:
                # Shows whether the codec asked for really reached the log (librdkafka falls
                # back to no compression when the broker lacks a feature it checks for).
                figures["stored_ratio"] = stored / (p["delivered"] * s["size"])
            status = "ok" if p["failed"] == 0 and p["delivered"] > 0 else \
                f"failed:{p['failed']}-undelivered"
            return figures, status, "durable" if target.name.endswith("durable") else "produce"

        return self.measure(target, s, body)

    # -- consume -----------------------------------------------------------------------------

    def consume_topic(self, target, size):
        """A topic of 1M records of `size` bytes, produced once per target and size."""
        key = (target.name, size)
        if key in self.preloaded:
            return self.preloaded[key]
        total = 1_000_000
        topic = self.topic(target, f"consume-{size}")
        self.create_topics(target, [(topic, 1)])
        if target.kind == "sink":
            self.preloaded[key] = (topic, total)
            return self.preloaded[key]
        out, _ = run_tool(perf_cmd(self.args, target.bootstrap, "-P", topic,
                                   ["-s", str(size), "-a", "1", "-c", str(total), "-p", "0"]),
                          self.cap_s * 8, f"{target.name}.preload-{size}")
        p = parse_produced(out)
        loaded = p["delivered"] if p else 0
        self.preloaded[key] = (topic, loaded)
        return self.preloaded[key]

    def run_consume(self, target, s):
        if s["group"] and target.kind == "sink":
            return None
        if s.get("tool") == "kt" and not kafka.tool("kafka-consumer-perf-test.sh"):
            return self.record(s, target, None, None, None, "skipped:no-kafka-tools")
        if s["group"]:
            keys = advertised_api_keys(target.bootstrap)
            if keys is not None and JOIN_GROUP not in keys:
                return self.record(s, target, None, None, None, "skipped:JoinGroup-not-served")
        topic, loaded = self.consume_topic(target, s["size"])
        if s.get("cold") and evict_from_page_cache(target, topic) is None:
            return self.record(s, target, None, None, None, "skipped:files-not-local")

        def body():
            if loaded == 0:
                return None, "failed:preload-produced-nothing", None
            extra = ["-c", str(loaded)]
            if s.get("tool") == "kt":
                out, _ = run_tool(kafka.consumer_cmd(target.bootstrap, topic, loaded,
                                                     f"bench-kt-{self.topic_seq}"),
                                  self.cap_s * 20, f"{target.name}.{s['name']}")
                c = kafka.parse_consumer(out)
                if c is None or c["msgs"] == 0:
                    return None, "failed:no-summary", None
                status = "ok" if c["msgs"] >= loaded else f"partial:{c['msgs']}-of-{loaded}"
                return dict(msgs_per_s=c["fetch_msgs_per_s"], MB_per_s=c["fetch_MB_per_s"],
                            msgs_total=c["msgs"], join_ms=c["rebalance_ms"]), status, "consume"
            if s["group"]:
                mode = "-G"
                extra = ["-c", str(loaded), "-X", "auto.offset.reset=earliest",
                         "-X", "session.timeout.ms=6000"]
                cmd = [self.args.perf, "-G", f"bench-group-{self.topic_seq}", "-t", topic, "-b",
                       target.bootstrap, "-q"] + extra
            else:
                mode = "-C"
                cmd = perf_cmd(self.args, target.bootstrap, mode, topic,
                               extra + ["-p", "0", "-o", "beginning"])
            out, _ = run_tool(cmd, self.cap_s * 3, f"{target.name}.{s['name']}")
            c = parse_consumed(out)
            if c is None or c["msgs"] == 0:
                return None, "failed:consumed-nothing", None
            status = "ok" if c["msgs"] >= loaded else f"partial:{c['msgs']}-of-{loaded}"
            return dict(msgs_per_s=c["msgs_per_s"], MB_per_s=c["MB_per_s"],
                        msgs_total=c["msgs"]), status, "consume"

        return self.measure(target, s, body)

    # -- end-to-end latency and tailing --------------------------------------------------------

    def run_e2e(self, target, s):
        """Fixed-rate produce (acks=all, linger.ms=0) with a consumer tailing the partition,
        through samsa-e2e-latency: rdkafka_performance's rate limiter cannot hold 50,000
        records/s with linger.ms=0 on this machine (about 20,000 even against the sink)."""
        topic = self.topic(target, s["name"])
        self.create_topics(target, [(topic, 1)])
        seconds = 3 if self.args.mode == "quick" else 10

        def body():
            out, _ = run_tool([self.args.e2e, "--bootstrap", target.bootstrap, "--topic", topic,
                               "--rate", str(s["rate"]), "--seconds", str(seconds),
                               "--warmup-seconds", "3", "--size", str(s["size"]),
                               "--acks", "all", "--linger-ms", "0"],
                              seconds + 1 + 60, f"{target.name}.{s['name']}")
            kv = parse_e2e(out)
            if kv is None:
                return None, "failed:no-summary", None

            def num(k):
                return None if kv.get(k, "-") == "-" else float(kv[k])

            rate = num("msgs_per_s") or 0
            figures = dict(msgs_per_s=int(rate), MB_per_s=rate * s["size"] / 1e6,
                           msgs_total=int(kv["produced"]),
                           p50_ms=num("e2e_p50_ms"), p99_ms=num("e2e_p99_ms"),
                           p999_ms=num("e2e_p999_ms"),
                           produce_p50_ms=num("produce_p50_ms"),
                           produce_p99_ms=num("produce_p99_ms"),
                           produce_p999_ms=num("produce_p999_ms"))
            if kv.get("failed") == "true":
                return figures, "failed:undelivered", "latency"
            if figures["p99_ms"] is None:
                return figures, "failed:no-e2e-samples", "latency"
            if int(kv["consumed"]) < int(kv["produced"]):
                return figures, f"partial:consumed-{kv['consumed']}-of-{kv['produced']}", "latency"
            return figures, "ok", "latency"

        return self.measure(target, s, body)

    def run_tail(self, target, s):
        """A producer at full speed (acks=1) while a consumer tails the partition, both
        rdkafka_performance with -l: throughput of both, and produce-to-consume latency (which
        at full speed is mostly the producer's own queue)."""
        topic = self.topic(target, s["name"])
        self.create_topics(target, [(topic, 1)])
        plat = os.path.join(RUN_DIR, f"{target.name}.{s['name']}.produce.lat")
        clat = os.path.join(RUN_DIR, f"{target.name}.{s['name']}.consume.lat")
        count = self.produce_count(s)

        def body():
            consumer, clog = start_tool(
                perf_cmd(self.args, target.bootstrap, "-C", topic,
                         ["-p", "0", "-o", "end", "-l", "-A", clat, "-c", str(count)]),
                f"{target.name}.{s['name']}.consumer")
            time.sleep(1.5)  # let the consumer find the end of the partition first
            pargs = self.produce_args(dict(s, acks=1), count, plat, partition=0)
            out, _ = run_tool(perf_cmd(self.args, target.bootstrap, "-P", topic, pargs),
                              self.cap_s, f"{target.name}.{s['name']}.producer")
            # The tailing consumer may still be catching up when the producer is done.
            cout = finish_tool(consumer, clog, self.cap_s)
            p, c = parse_produced(out), parse_consumed(cout)
            if p is None:
                return None, "failed:no-producer-summary", None
            if c is None:
                return None, "failed:no-consumer-summary", None
            figures = dict(msgs_per_s=p["msgs_per_s"], MB_per_s=p["MB_per_s"],
                           msgs_total=p["delivered"], consumed_msgs_per_s=c["msgs_per_s"])
            figures.update(percentiles(clat) or {})
            status = "ok" if c["msgs"] >= p["delivered"] else \
                f"partial:consumed-{c['msgs']}-of-{p['delivered']}"
            return figures, status, "produce"

        return self.measure(target, s, body)

    # -- several producers at once ----------------------------------------------------------

    def producers_topic(self, target, s):
        """(topic with a partition per producer, producers, records per producer)."""
        topic = self.topic(target, s["name"])
        self.create_topics(target, [(topic, s["producers"])])
        return topic, s["producers"], self.produce_count(s) // s["producers"]

    def run_multi(self, target, s):
        topic, n, per = self.producers_topic(target, s)

        def body():
            start = time.time()
            procs = [start_tool(perf_cmd(self.args, target.bootstrap, "-P", topic,
                                         self.produce_args(dict(s, acks=-1), per, partition=i)),
                                f"{target.name}.{s['name']}.{i}") for i in range(n)]
            outs = [finish_tool(p, log, self.cap_s * 2) for p, log in procs]
            took = time.time() - start
            parsed = [parse_produced(o) for o in outs]
            if any(p is None for p in parsed):
                return None, "failed:no-summary", None
            delivered = sum(p["delivered"] for p in parsed)
            failed = sum(p["failed"] for p in parsed)
            rate = delivered / took
            return dict(msgs_per_s=int(rate), MB_per_s=rate * s["size"] / 1e6,
                        msgs_total=delivered), "ok" if failed == 0 else f"failed:{failed}-undelivered", \
                "durable" if target.name.endswith("durable") else "produce"

        return self.measure(target, s, body)

    def run_many(self, target, s):
        """64 producer connections: scripts/bench/many.py (8 processes x 8 clients)."""
        topic, n, per = self.producers_topic(target, s)

        def body():
            out, _ = run_tool([self.args.python, MANY, "produce", target.bootstrap, topic, "8",
                               str(n // 8), str(per), str(s["size"])],
                              self.cap_s * 40, f"{target.name}.{s['name']}")
            line = [x for x in out.splitlines() if x.startswith("MANY ")]
            if not line:
                return None, "failed:no-summary", None
            kv = dict(p.split("=", 1) for p in line[-1].split()[1:])
            delivered, failed = int(kv["delivered"]), int(kv["failed"])
            rate = delivered / max(1e-3, float(kv["seconds"]))
            return dict(msgs_per_s=int(rate), MB_per_s=rate * s["size"] / 1e6,
                        msgs_total=delivered), "ok" if failed == 0 else f"failed:{failed}-undelivered", \
                "durable" if target.name.endswith("durable") else "produce"

        return self.measure(target, s, body)

    def run_kt_produce(self, target, s):
        """kafka-producer-perf-test.sh: 1 KiB records, acks=all, one partition, no rate limit."""
        if not kafka.tool("kafka-producer-perf-test.sh"):
            return self.record(s, target, None, None, None, "skipped:no-kafka-tools")
        topic = self.topic(target, s["name"])
        self.create_topics(target, [(topic, 1)])

        def body():
            out, _ = run_tool(kafka.producer_cmd(target.bootstrap, topic, self.produce_count(s),
                                                 s["size"]),
                              self.cap_s * 20, f"{target.name}.{s['name']}")
            p = kafka.parse_producer(out)
            if p is None:
                return None, "failed:no-summary", None
            return p, "ok", "produce"

        return self.measure(target, s, body)

    def run(self, target, s):
        kind = s["kind"]
        if kind in ("produce", "tail", "multi", "many", "ktproduce"):
            self.recycle_page_cache(target, s)
        if kind == "many":
            return self.run_many(target, s)
        if kind == "ktproduce":
            return self.run_kt_produce(target, s)
        if kind == "produce":
            return self.run_produce(target, s)
        if kind == "consume":
            return self.run_consume(target, s)
        if kind == "e2e":
            return self.run_e2e(target, s)
        if kind == "tail":
            return self.run_tail(target, s)
        if kind == "multi":
            return self.run_multi(target, s)
        raise ValueError(kind)

    def start_target(self, make, brokers):
        """A started target; its start-to-serving time, (the first `--repeat` starts of each
        broker) its RSS 2 s after serving, before any load; its group coordinator primed."""
        t = make()
        if t.name not in brokers:
            brokers[t.name] = t.description
            print(f"== {t.name} ({t.bootstrap})", flush=True)
        seen = self.starts.setdefault(t.name, []) if t.pid() else []
        idle = None
        if t.pid() and sum(1 for x in seen if x[1] is not None) < self.args.repeat:
            time.sleep(2.0)
            idle = rss_mib(t.pid()) if t.pid() else None
        seen.append((t.serve_s, idle))
        if t.kind in STORING:  # outside the measured time, as a broker that has served groups
            subprocess.run([self.args.python, MANY, "prime", t.bootstrap], timeout=60, check=False)
        print(f"START broker={t.name} serve_s={fmt(t.serve_s, 3)} idle_rss_MiB={fmt(idle, 1)}",
              flush=True)
        return t

    def run_round(self, make, wanted, runs, brokers, rnd):
        """One round of the scenarios against targets from `make`. A broker that stores data is
        started afresh (new data directory) for every scenario, the consume scenarios sharing
        one with their preloaded topic: on this kind of machine (a VM) writing to the page
        cache gets several times dearer in CPU once a few GB are cached (measured: 0.5 s of
        broker CPU per million 1 KiB records on a fresh broker, over 2 s after 4 GB; the cause,
        found later, is memory fresh from the hypervisor: see `recycle_page_cache`), so
        scenarios late in a shared run would pay for the ones before them."""
        groups = [[s] for s in wanted if s["kind"] != "consume"]
        consume = [s for s in wanted if s["kind"] == "consume"]
        if consume:
            groups.insert(0, consume)
        target = None
        try:
            for group in groups:
                if target is None or target.kind in STORING:
                    if target is not None:
                        target.stop()
                    target = self.start_target(make, brokers)
                self.preloaded = {}
                for s in group:
                    r = self.run(target, s)
                    if r is not None:
                        runs.setdefault((target.name, s["name"]), []).append(r)
                        print(f"   round {rnd + 1}/{self.args.repeat} {target.name} {s['name']}: "
                              f"{fmt(r.get('msgs_per_s'))} records/s, {r['status']}", flush=True)
        finally:
            if target is not None:
                target.stop()

    def run_plan(self, plan, brokers):
        """Every target's scenarios, round by round: with --repeat N, round 1 on every target,
        then round 2 on every target, ..., so that the machine's slow spells (it is shared)
        fall on all brokers alike; then the median per scenario and broker."""
        runs = {}
        for rnd in range(self.args.repeat):
            for make, wanted in plan:
                if wanted:
                    self.run_round(make, wanted, runs, brokers, rnd)
        for rs in runs.values():
            r = median_run(rs)
            r["runs"] = len(rs)
            annotate(r, self.results, self.limits)  # the sink's medians come first
            self.results.append(r)
            print(bench_line(r), flush=True)
        for name, seen in self.starts.items():
            print(f"BROKER broker={name} serve_s={fmt(median(x[0] for x in seen), 3)} "
                  f"idle_rss_MiB={fmt(median(x[1] for x in seen), 1)} starts={len(seen)}", flush=True)


def median(values):
    values = sorted(v for v in values if v is not None)
    return values[len(values) // 2] if values else None


def median_run(rs):
    """The median of repeated runs of one scenario: by p99 for latency scenarios, else by
    records/s. Failed runs count as the worst."""
    if rs[0]["kind"] == "e2e":
        key = lambda r: r.get("p99_ms") if r.get("p99_ms") is not None else float("inf")  # noqa: E731
    else:
        key = lambda r: -(r.get("msgs_per_s") or 0)  # noqa: E731
    return sorted(rs, key=key)[len(rs) // 2]


def fmt(v, digits=2):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def bench_line(r):
    fields = ["msgs_per_s", "MB_per_s", "p50_ms", "p99_ms", "p999_ms", "broker_cpu_s",
              "broker_rss_MiB", "cpu_s_per_M", "of_sink", "limit", "of_limit"]
    digits = {"MB_per_s": 1, "p50_ms": 3, "p99_ms": 3, "p999_ms": 3, "broker_rss_MiB": 1,
              "cpu_s_per_M": 3, "of_sink": 2, "of_limit": 3}
    parts = [f"BENCH test={r['test']}", f"broker={r['broker']}"]
    parts += [f"{k}={fmt(r.get(k), digits.get(k, 2))}" for k in fields]
    if r.get("produce_p99_ms") is not None:
        parts += [f"produce_p50_ms={fmt(r['produce_p50_ms'], 3)}",
                  f"produce_p99_ms={fmt(r['produce_p99_ms'], 3)}",
                  f"produce_p999_ms={fmt(r['produce_p999_ms'], 3)}"]
    if r.get("broker_produce_p99_ms") is not None:
        parts.append(f"broker_produce_p99_le_ms={fmt(r['broker_produce_p99_ms'], 3)}")
    if r.get("create_s") is not None:
        parts.append(f"create_s={fmt(r['create_s'], 2)} ready_s={fmt(r['ready_s'], 2)}")
    if r.get("stored_ratio") is not None:
        parts.append(f"stored_ratio={fmt(r['stored_ratio'], 3)}")
    if r.get("allocs_per_req") is not None:
        parts.append(f"allocs_per_req={fmt(r['allocs_per_req'], 1)}")
    if r.get("consumed_msgs_per_s") is not None:
        parts.append(f"consumed_msgs_per_s={r['consumed_msgs_per_s']}")
    if r.get("runs", 1) > 1:
        parts.append(f"runs={r['runs']}")
    parts.append(f"status={r['status']}")
    return " ".join(parts)


# ---------------------------------------------------------------------------------------------
# Machine limits


def measure_limits(args):
    limits = {}
    out = subprocess.run([args.limits, "loopback", "--seconds", "2"], capture_output=True,
                         text=True, check=True, timeout=60).stdout
    out += subprocess.run([args.limits, "disk", "--dir", args.data_root, "--mib",
                           "512" if args.mode == "quick" else "2048", "--syncs", "200"],
                          capture_output=True, text=True, check=True, timeout=300).stdout
    for line in out.splitlines():
        if not line.startswith("LIMIT "):
            continue
        print(line, flush=True)
        kv = dict(p.split("=", 1) for p in line.split()[1:])
        name = kv.pop("test")
        limits[name] = {k: float(v) for k, v in kv.items()}
    return limits


def relevant_limit(r, limits):
    """The machine limit a result is compared with, and the fraction of it reached."""
    kind = r.get("limit")
    mbs = r.get("MB_per_s")
    if kind is None:
        return None, None
    loop = limits.get("loopback_tcp", {}).get("MB_per_s")
    if kind == "latency":
        # The floor under a produce-to-consume latency: one loopback round trip.
        floor = limits.get("loopback_rtt_100B", {}).get("p50_ms")
        return "loopback_rtt_p50", (floor / r["p50_ms"]) if floor and r.get("p50_ms") else None
    if mbs is None:
        return None, None
    if kind == "consume":
        return "loopback_tcp", mbs / loop if loop else None
    if kind == "durable":
        d = limits.get("disk_write_fdatasync_each_MiB", {}).get("MB_per_s")
        return "disk_fdatasync_each_MiB", mbs / d if d else None
    buffered = limits.get("disk_write_buffered", {}).get("MB_per_s")
    # A produce crosses loopback and lands in the page cache: the lower of the two bounds it.
    candidates = [(n, v) for n, v in (("loopback_tcp", loop), ("disk_write_buffered", buffered)) if v]
    if not candidates:
        return None, None
    name, value = min(candidates, key=lambda c: c[1])
    return name, mbs / value


def annotate(r, earlier, limits):
    """Adds the fraction of the relevant machine limit and of the sink's figure."""
    name, frac = relevant_limit(r, limits)
    r["limit"], r["of_limit"] = name, frac
    sink = [e for e in earlier if e["broker"] == "discard-sink" and e["test"] == r["test"]
            and e["status"] == "ok" and e.get("msgs_per_s")]
    if sink and r["broker"] != "discard-sink" and r.get("msgs_per_s"):
        r["of_sink"] = r["msgs_per_s"] / sink[-1]["msgs_per_s"]


# ---------------------------------------------------------------------------------------------
# Report


def machine_description(args):
    def sh(cmd):
        try:
            return subprocess.run(cmd, shell=True, capture_output=True, text=True,
                                  timeout=10).stdout.strip()
        except Exception:  # noqa: BLE001
            return "?"

    cpu = sh("lscpu | sed -n 's/^Model name: *//p' | head -n1")
    # The vector extensions CRC-32C's speed depends on (storage/src/crc32c.rs picks by them).
    flags = set(sh("grep -m1 '^flags' /proc/cpuinfo").split())
    vector = ", ".join(f for f in ("avx2", "vpclmulqdq", "avx512vl") if f in flags) or "none"
    mem = sh("free -g | awk '/^Mem:/ {print $2}'")
    fs = sh(f"df -T {args.data_root} | awk 'NR==2 {{print $2}}'")
    return {
        "cpu": f"{cpu}, {os.cpu_count()} cores (vector extensions: {vector})",
        "memory": f"{mem} GiB",
        "kernel": platform.release(),
        "data filesystem": f"{fs} ({args.data_root})",
        "load average (1, 5, 15 min) at the start": LOAD_AT_START,
        "load average at the end": " ".join(open("/proc/loadavg").read().split()[:3]),
        "rustc": sh("rustc --version"),
        "load generator": "rdkafka_performance, librdkafka " + sh(
            f"{args.perf} 2>&1 | sed -n 's/^librdkafka version \\([^ ]*\\).*/\\1/p'"),
    }


def write_svg(path, results, brokers):
    """Two panels of horizontal bars: throughput per scenario, latency per latency scenario."""
    palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
               "#bcbd22"]
    # Kafka's bars in reds, whatever else the run measured.
    colours = {b: palette[i % len(palette)] for i, b in
               enumerate(b for b in brokers if not b.startswith("kafka"))}
    colours.update({"kafka": "#d62728", "kafka-durable": "#ff9896"})
    ok = [r for r in results if r.get("msgs_per_s") and not r["status"].startswith("failed")]
    thr_tests = [t for t in dict.fromkeys(r["test"] for r in ok if r["kind"] != "e2e")]
    lat_rows = [r for r in ok if r.get("p99_ms") is not None and r["kind"] in ("e2e", "tail")]
    lat_tests = list(dict.fromkeys(r["test"] for r in lat_rows))
    bar_h, gap, label_w, plot_w, width = 9, 8, 300, 560, 1000
    y = 60
    parts = []

    def text(x, y, s, size=11, anchor="start", weight="normal"):
        s = s.replace("&", "&amp;").replace("<", "&lt;")
        parts.append(f'<text x="{x}" y="{y}" font-size="{size}" text-anchor="{anchor}" '
                     f'font-weight="{weight}" font-family="sans-serif">{s}</text>')

    def panel(title, tests, value, unit, rows, higher_is_better, log=False):
        nonlocal y
        text(10, y, title, 14, weight="bold")
        y += 14
        vmax = max([value(r) for r in rows if value(r)] or [1])
        # A log scale keeps sub-millisecond and multi-second latencies on one panel.
        vmin = min([value(r) for r in rows if value(r)] or [1]) / 2

        def scale(v):
            if not log:
                return v / vmax
            span = max(1e-9, math.log10(vmax) - math.log10(vmin))
            return (math.log10(v) - math.log10(vmin)) / span

        for t in tests:
            mine = [r for r in rows if r["test"] == t and value(r)]
            if not mine:
                continue
            block = len(mine) * bar_h
            text(label_w - 8, y + block / 2 + 4, t, 10, "end")
            for r in mine:
                v = value(r)
                w = max(1.0, plot_w * scale(v))
                parts.append(f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h - 1}" '
                             f'fill="{colours[r["broker"]]}"/>')
                text(label_w + w + 4, y + bar_h - 1, f"{v:,.0f}" if v >= 100 else f"{v:.2f}", 9)
                y += bar_h
            y += gap
        text(label_w, y + 4, f"({unit}{', log scale' if log else ''}; longer is "
                             f"{'better' if higher_is_better else 'worse'})", 10)
        y += 30

    text(10, 24, "Samsa benchmark: " + ", ".join(brokers), 15, weight="bold")
    lx = 10
    for b in brokers:
        parts.append(f'<rect x="{lx}" y="34" width="10" height="10" fill="{colours[b]}"/>')
        text(lx + 14, 43, b, 11)
        lx += 20 + 7 * len(b)
    panel("Throughput", thr_tests, lambda r: r.get("msgs_per_s"), "records/s", ok, True)
    panel("End-to-end latency p99 (produce to consume)", lat_tests, lambda r: r.get("p99_ms"),
          "ms", lat_rows, False, log=True)
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y}" '
           f'viewBox="0 0 {width} {y}"><rect width="100%" height="100%" fill="white"/>'
           + "".join(parts) + "</svg>\n")
    with open(path, "w") as f:
        f.write(svg)


def notes(results):
    """Things a reader should not miss, found in the results themselves."""
    out = []
    for r in results:
        codec = r["test"].rsplit(".", 1)[-1]
        if codec in ("lz4", "zstd") and (r.get("stored_ratio") or 0) > 0.9:
            out.append(f"`{r['test']}` on `{r['broker']}`: the log holds "
                       f"{r['stored_ratio']:.2f}x the payload, so {codec} did not reach it "
                       "(librdkafka compresses with LZ4 only when the broker advertises "
                       "FindCoordinator).")
        if r["status"].startswith(("skipped", "partial", "failed")):
            out.append(f"`{r['test']}` on `{r['broker']}`: {r['status']}.")
    return out


def write_markdown(path, svg_name, args, results, limits, machine, brokers, command, took_s,
                   starts=None):
    lines = ["# Samsa benchmarks", ""]
    lines += [f"Measured {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')} in {took_s:.0f} s "
              f"with `{command}` ({args.mode} mode). Everything runs on one machine over "
              "loopback: the load generator shares the cores with the broker, as it does for "
              "the discard sink, whose figures are the ceiling the client allows here.", ""]
    lines += ["## Machine", ""]
    lines += [f"- {k}: {v}" for k, v in machine.items()]
    lines += ["", "Limits measured in the same run (`samsa-bench-limits`):", ""]
    for name, kv in limits.items():
        lines.append(f"- {name}: " + ", ".join(f"{k}={v:g}" for k, v in kv.items()))
    lines += ["", "## Brokers", "", "Start to serving: from the process's start (for Kafka the JVM's, "
              "after its storage format) until it answers ApiVersions; idle RSS: 2 s later, "
              "before any load (medians over the starts).", "",
              "| broker | what | start to serving s | idle RSS MiB | starts |", "|---|---|---|---|---|"]
    for b, d in brokers.items():
        seen = (starts or {}).get(b, [])
        lines.append(f"| `{b}` | {d} | {fmt(median(x[0] for x in seen), 2)} | "
                     f"{fmt(median(x[1] for x in seen), 1)} | {len(seen) or '-'} |")
    lines += ["", f"![throughput and latency per scenario]({svg_name})", ""]
    lines += ["## Results", "",
              "`of_sink` is the broker's records/s over the discard sink's in the same scenario; "
              "`of_limit` is its MB/s over the named machine limit (for latency rows: the "
              "loopback round-trip p50 over the broker's p50). Latency: produce timestamp to consume for e2e "
              "and tail rows; delivery latency (produce call to ack) for produce rows only when "
              "run with `--latency` (it costs the client throughput, so the default leaves it "
              "out of throughput runs). "
              "`CPU s/M`: broker CPU seconds per million records. `allocs/req`: the broker's "
              "heap allocations per request served during the scenario (its allocator counts "
              "them; samsa only). `stored`: bytes the broker's log "
              "holds over the payload bytes produced (samsa and Kafka; shows whether a codec "
              "reached the log). `×K` columns, samsa rows only, against Kafka's same row "
              "(`samsa-*-durable` against `kafka-durable`): `rec/s` samsa's records/s over "
              "Kafka's, `CPU` Kafka's CPU per record over samsa's (records per CPU-second, "
              "samsa over Kafka), `RSS` samsa's over Kafka's, `p99` samsa's over Kafka's.", ""]
    lines.append("| test | broker | records/s | MB/s | p50 ms | p99 ms | p99.9 ms | broker CPU s "
                 "| CPU s/M | RSS MiB | allocs/req | of_sink | of_limit (limit) | stored | status "
                 "| ×K rec/s | ×K CPU | ×K RSS | ×K p99 |")
    lines.append("|" + "---|" * 19)
    for r in results:
        vs = targets.versus(r, results) or (None,) * 4
        lines.append("| " + " | ".join([
            r["test"], r["broker"], fmt(r.get("msgs_per_s")), fmt(r.get("MB_per_s"), 1),
            fmt(r.get("p50_ms"), 3), fmt(r.get("p99_ms"), 3), fmt(r.get("p999_ms"), 3),
            fmt(r.get("broker_cpu_s")), fmt(r.get("cpu_s_per_M"), 3),
            fmt(r.get("broker_rss_MiB"), 1), fmt(r.get("allocs_per_req"), 1), fmt(r.get("of_sink")),
            f"{fmt(r.get('of_limit'), 3)} ({r.get('limit') or '-'})",
            fmt(r.get("stored_ratio"), 3), r["status"]] + [targets.x(v) for v in vs]) + " |")
    checks = targets.target_checks(results, limits)
    if checks:
        lines += ["", "## Targets (issue 7) in this run", "",
                  "| target | broker | figure | met |", "|---|---|---|---|"]
        lines += [f"| {t} | {b} | {f} | {'yes' if ok else 'no'} |" for t, b, f, ok in checks]
    against = targets.checks(results)
    if against:
        lines += ["", "## Targets against Kafka 4.4 (issue 46) in this run", "",
                  "| target | broker | figures (samsa's over Kafka's) | met |", "|---|---|---|---|"]
        lines += [f"| {t} | {b} | {f} | {'pass' if ok else 'miss'} |" for t, b, f, ok in against]
    created = [r for r in results if r.get("create_s") is not None]
    if created:
        lines += ["", "Topic creation in the many-partition rows: until the create answered; "
                  "until Metadata showed every partition with a leader. Kafka refuses 10,000 "
                  "partitions in one CreateTopics (its controller takes at most 10,000 records "
                  "per operation: POLICY_VIOLATION); it gets half in CreateTopics and the rest "
                  "in CreatePartitions, timed together (2 requests):", ""]
        lines += [f"- `{r['test']}` on `{r['broker']}`: {r['create_s']:.2f} s; "
                  f"{r['ready_s']:.2f} s ({r.get('create_steps', 1)} request"
                  f"{'s' if r.get('create_steps', 1) > 1 else ''})" for r in created]
    found = notes(results)
    if found:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in found]
    extra = [r for r in results if r.get("produce_p99_ms") is not None]
    if extra:
        lines += ["", "Produce latency (acks=all, linger.ms=0) in the fixed-rate runs, as the "
                  "client sees it (produce call to acknowledgement) and, for samsa, the p99 of the "
                  "broker's own handling from its request-duration histogram (an upper bound: "
                  "the bucket it falls in; the rest of the client's figure is loopback and the "
                  "wake-ups of the threads on both sides):", "",
                  "| test | broker | p50 ms | p99 ms | p99.9 ms | broker's handling p99 ms |",
                  "|---|---|---|---|---|---|"]
        for r in extra:
            own = r.get("broker_produce_p99_ms")
            lines.append(f"| {r['test']} | {r['broker']} | {fmt(r['produce_p50_ms'], 3)} | "
                         f"{fmt(r['produce_p99_ms'], 3)} | {fmt(r['produce_p999_ms'], 3)} | "
                         f"{'<= ' + fmt(own, 3) if own is not None else '-'} |")
    lines += ["", "## Raw lines", "", "```"] + [bench_line(r) for r in results] + ["```", ""]
    lines += ["## How to read and rerun", "",
              "- `scripts/bench/run` (quick), `scripts/bench/run --full`, "
              "`--baseline` to measure Apache Kafka 4.4 too (`kafka`, default flushing, and "
              "`kafka-durable`, log.flush.interval.messages=1, on the durability rows), `--tansu` "
              "to build and measure Tansu (its SQLite and in-memory storage engines, "
              "`tansu-sqlite` and `tansu-memory`; `--tansu-engine sqlite|memory` for one), `--engine "
              "uring|epoll|both`, `--bootstrap HOST:PORT` to measure a broker already running "
              "on loopback (no CPU/RSS figures then), `--only REGEX` to pick scenarios, `--repeat N` "
              "to report the median of N runs (use it for before/after comparisons: single runs "
              "on this shared 2-core machine vary by tens of percent); the targets alternate, "
              "round 1 on every broker, then round 2, and so on.",
              "- Every scenario gets a fresh broker and data directory (the consume scenarios "
              "share one with their preloaded topic): on this VM, page-cache writes get several "
              "times dearer once a few GB are cached, so a shared broker would make late "
              "scenarios pay for early ones.",
              "- Before each scenario that writes, a broker that stores data writes as much to a "
              "scratch topic and deletes it, outside the measured time (`--no-recycle` skips "
              "it): its page cache then reuses memory its own deleted segments freed, as a "
              "broker whose retention deletes old segments does. Without it the pages come "
              "fresh from this VM's free memory, which the hypervisor reclaims while unused "
              "(free page reporting); touching such a page again cost about ten times the CPU "
              "(1.35-1.94 CPU s per GiB of buffered writes after 8 s idle, 0.14-0.15 s straight "
              "after freeing as much), and broker CPU figures then follow the machine's idle "
              "time more than the broker.",
              "- The CPU target's row shows a floor: the discard sink's CPU per million records "
              "of that size (receiving, decoding and acknowledging them; the median over its "
              "uncompressed produce scenarios) plus the CPU "
              "the `disk_write_buffered_appends` probe spent writing as many bytes into the "
              "page cache (1,000,000-byte writes into reserved blocks, shaped like a broker's "
              "appends). A broker that keeps records in the page cache spends at least that; "
              "it spends more when it is the bottleneck, because the kernel then runs the "
              "client's loopback transmits in the broker's context when the broker's reads "
              "open the TCP window. The same row names the cheapest of the four ways the "
              "`socket_to_file_*` probes move a loopback stream into a file (`copy`: read, "
              "then pwrite, as the broker does; `splice` through a pipe; `mmap`: read into a "
              "mapping of the file; `direct`: read into aligned memory, then O_DIRECT), with "
              "no protocol, checksum or index work at all: no broker design can go below it "
              "here (`socket_to_file_discard` is the receive alone).",
              "- Raw tool output and per-message latency files of the last run are under "
              "`.tools/bench-runs/`.",
              "- Scenario names: `produce.<size>.acks_<1|all>.p<partitions>[.keyed][.<codec>]"
              "[.linger5]` (keyed: one fixed key, so all records go to one partition, as "
              "rdkafka_performance `-k` does). Produce rows run with rdkafka_performance's own "
              "setting, linger.ms=1000, unless named `.linger5`: with it, librdkafka's "
              "default linger.ms=5 (what an application gets), the client sends about three "
              "times as fast on this machine (the discard sink's 1 KiB ceiling goes from about "
              "0.7M to about 2.1M records/s; with linger.ms=1000 the machine idles most of the "
              "time against the sink), so those rows load the broker hardest and leave it the "
              "least CPU; `consume.<size>.<assigned|group>` reads a 1M-record topic (from the page "
              "cache); `consume.1KiB.cold` reads it after its files were written out and dropped "
              "from the page cache (posix_fadvise DONTNEED), from the disk; "
              "`e2e.<size>.rate_<n>` produces at a fixed rate with acks=all and linger.ms=0 while "
              "a consumer tails the partition; `tail` is the same at full speed with acks=1; "
              "`producers_8` runs 8 producer processes at once (one partition each); "
              "`producers_64` 64 producer connections (8 processes of 8 librdkafka clients, "
              "scripts/bench/many.py, one partition each, linger.ms=5); "
              "`produce.1KiB.acks_all.p10000.linger5` creates a 10,000-partition topic (timed) "
              "and produces across it; `kt.produce` and `kt.consume` are Kafka's own "
              "kafka-producer-perf-test.sh (1M records, acks=all, no rate limit; its p99 is "
              "delivery latency at full load) and kafka-consumer-perf-test.sh (the consume rows' "
              "1M-record topic, in a group; its fetch figures, which leave out the group join). "
              "`samsa-*-durable` (log.durable=true) and `kafka-durable` "
              "(log.flush.interval.messages=1) run produce.1KiB.acks_all.p1 and the producers_* "
              "rows.", ""]
    text = "\n".join(lines)
    # Sections other benchmark scripts write into the same file stay as they were.
    previous = open(path).read() if os.path.exists(path) else ""
    for name in KEPT_SECTIONS:
        kept = marked_section(previous, name)
        if kept is not None:
            text = replace_marked_section(text, name, kept)
    with open(path, "w") as f:
        f.write(text)


# Sections of BENCHMARKS.md that other scripts write, between `<!-- NAME:start ... -->` and
# `<!-- NAME:end -->` lines: scripts/bench/metadata writes "metadata-at-scale",
# scripts/bench/replication writes "replication", scripts/bench/tls writes "tls",
# scripts/bench/share writes "share-groups", scripts/bench/groups writes "group-rebalance",
# scripts/bench/streams writes "streams-start"; "against-kafka" (the profiles behind the rows
# against Kafka) and "client-quotas" (the quota_unreached row against its twin) by hand.
KEPT_SECTIONS = ("metadata-at-scale", "replication", "tls", "share-groups", "group-rebalance",
                 "streams-start", "against-kafka", "client-quotas")


def marked_section(text, name):
    """The lines of `text` from `<!-- NAME:start` to `<!-- NAME:end -->`, both included, or None."""
    m = re.search(r"^<!-- " + re.escape(name) + r":start\b.*?^<!-- " + re.escape(name)
                  + r":end -->$", text, re.S | re.M)
    return m.group(0) if m else None


def replace_marked_section(text, name, block):
    """`text` with its section `name` replaced by `block`, or with `block` appended."""
    old = marked_section(text, name)
    if old is not None:
        return text.replace(old, block, 1)
    return text.rstrip("\n") + "\n\n" + block + "\n"


# ---------------------------------------------------------------------------------------------


def main():
    global RUN_DIR, LOAD_AT_START
    LOAD_AT_START = " ".join(open("/proc/loadavg").read().split()[:3])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=["quick", "full"], default="quick")
    ap.add_argument("--engine", choices=["uring", "epoll", "both"], default="both")
    ap.add_argument("--bootstrap", help="measure a broker already running at HOST:PORT")
    ap.add_argument("--baseline", action="store_true",
                    help="also measure Apache Kafka 4.4 (scripts/reference/kafka's install), "
                         "default flushing and, on the durability rows, flushing every append")
    ap.add_argument("--tansu", help="path of a Tansu broker binary: measure it too")
    ap.add_argument("--tansu-version", default="?")
    ap.add_argument("--tansu-engine", action="append", choices=list(BASELINE_ENGINES),
                    help="Tansu's storage engine (repeatable; default: every one)")
    ap.add_argument("--no-samsa", action="store_true", help="skip the samsa brokers")
    ap.add_argument("--no-sink", action="store_true", help="skip the discard sink")
    ap.add_argument("--only", help="regex: run only scenarios whose name matches")
    ap.add_argument("--no-recycle", action="store_true",
                    help="skip the scratch write-and-delete before each writing scenario "
                         "(brokers then write into memory fresh from the hypervisor)")
    ap.add_argument("--samsa-arg", action="append", default=[],
                    help="one more flag for every samsa broker, such as --num.shards=1 "
                         "(repeatable; named in the brokers' descriptions)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="run each scenario N times (fresh broker each time) and report the "
                         "median: single runs on a shared 2-core machine vary by tens of percent")
    ap.add_argument("--latency", action="store_true",
                    help="record per-message delivery latency in throughput scenarios too "
                         "(rdkafka_performance -l formats a timestamp into every payload and "
                         "writes a line per delivery, which costs the client throughput)")
    ap.add_argument("--samsa", required=True)
    ap.add_argument("--sink", required=True)
    ap.add_argument("--limits", required=True)
    ap.add_argument("--e2e", required=True)
    ap.add_argument("--perf", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--data-root", default=None, help="where brokers keep data (default: .tools)")
    ap.add_argument("--out", default=os.path.join(ROOT, "BENCHMARKS.md"))
    ap.add_argument("--command", default="scripts/bench/run")
    args = ap.parse_args()

    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    RUN_DIR = os.path.join(ROOT, ".tools", "bench-runs", stamp)
    os.makedirs(RUN_DIR, exist_ok=True)
    args.data_root = os.path.abspath(args.data_root or os.path.join(ROOT, ".tools", "bench-data"))
    os.makedirs(args.data_root, exist_ok=True)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: (stop_all(), sys.exit(130)))

    began = time.time()
    runner = Runner(args)
    all_scenarios = [s for s in scenarios() if args.mode == "full" or s["quick"]]
    if args.only:
        all_scenarios = [s for s in all_scenarios if re.search(args.only, s["name"])]
    brokers = {}
    try:
        limits = measure_limits(args)
        runner.limits = limits
        plan = []  # (make target, scenarios); the sink first, so others compare with it
        if not args.no_sink:
            # The sink serves 1 KiB records, so it takes part in the 1 KiB consume only.
            plan.append((lambda: sink_target(args),
                         [s for s in all_scenarios if s["kind"] in SINK_KINDS
                          and s["name"] not in NEW_ROWS
                          and (s["kind"] != "consume" or s["size"] == 1024)]))
        if args.bootstrap:
            plan.append((lambda: external_target(args.bootstrap), all_scenarios))
        engines = ["uring", "epoll"] if args.engine == "both" else [args.engine]
        if not args.no_samsa:
            for i, engine in enumerate(engines):
                wanted = all_scenarios if i == 0 or args.mode == "full" else \
                    [s for s in all_scenarios if s["name"] in OTHER_ENGINE]
                plan.append((lambda e=engine: samsa_target(args, e), wanted))
            durable = [s for s in all_scenarios if s["name"] in DURABLE]
            plan.append((lambda: samsa_target(args, engines[0], durable=True), durable))
        if args.baseline:
            if not kafka.installed():
                sys.exit("bench: Kafka 4.4 is not installed: run scripts/reference/kafka bin")
            # Quick mode measures Kafka on the key scenarios only, to stay in time.
            plan.append((lambda: kafka.kafka_target(args, False, advertised_api_keys, STARTED),
                         all_scenarios if args.mode == "full" else
                         [s for s in all_scenarios if s["name"] in KAFKA_QUICK]))
            plan.append((lambda: kafka.kafka_target(args, True, advertised_api_keys, STARTED),
                         [s for s in all_scenarios if s["name"] in DURABLE]))
        if args.tansu:
            for engine in args.tansu_engine or list(BASELINE_ENGINES):
                plan.append((lambda e=engine: tansu_target(args, e),
                             all_scenarios if args.mode == "full" else
                             [s for s in all_scenarios if s["name"] in OTHER_ENGINE]))
        runner.run_plan(plan, brokers)
    finally:
        stop_all()

    took = time.time() - began
    with open(os.path.join(RUN_DIR, "results.json"), "w") as f:
        json.dump(dict(limits=limits, results=runner.results, brokers=brokers,
                       starts=runner.starts), f, indent=1)
    svg_name = os.path.splitext(os.path.basename(args.out))[0] + ".svg"
    write_svg(os.path.join(os.path.dirname(args.out), svg_name), runner.results, list(brokers))
    write_markdown(args.out, svg_name, args, runner.results, limits, machine_description(args),
                   brokers, args.command, took, runner.starts)
    print(f"bench: wrote {args.out} and {svg_name} in {took:.0f} s (raw output in {RUN_DIR})",
          flush=True)


if __name__ == "__main__":
    main()
