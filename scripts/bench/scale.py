#!/usr/bin/env python3
"""Samsa's partitions-on-one-node benchmark: what a node holding many partitions costs, at a
reference size and at the scale issue's 100,000 partitions, measured in the same run on one
real node (a release build on loopback, its own data directory and free ports; every process
it starts is stopped on exit). The node runs under the machine's file-handle limit, unraised.

For each size: creating the partitions (topics of 1,000 partitions, raw CreateTopics v2 in
batches, until the last is answered and every partition directory exists); the node's RSS and
open descriptors, idle, afterwards; a Metadata request for every topic (v12, raw socket, p50
and p99); after one record is written to every partition, ListOffsets (v7) and Fetch (v12,
from the record and from the end) across every partition, raw, p50 and p99; a scrape of the
Prometheus endpoint at each `metrics.partition.level`; the time from exec to "samsa is
serving" after a clean stop (SIGTERM) and after a SIGKILL.

Every figure is also printed as one line `SBENCH size=<partitions> <key>=<value> ...`, and
the "Partitions on one node" section of BENCHMARKS.md (between its marker comments) is
rewritten. Run it through scripts/bench/scale, which builds the release binary first.
"""

import argparse
import datetime
import os
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

import bench
import metadata as m

ROOT = bench.ROOT
SECTION = "partitions-on-one-node"
TOPIC_PARTITIONS = 1000


def log(msg):
    print(f"scale: {msg}", file=sys.stderr, flush=True)


class ScaleNode:
    def __init__(self, samsa, data_dir, log_path, level):
        self.samsa, self.data_dir, self.log_path, self.level = samsa, data_dir, log_path, level
        self.port, self.metrics_port, self.proc = bench.free_port(), bench.free_port(), None

    def start(self, topics=0, timeout_s=1800.0):
        """Seconds from exec to "samsa is serving", and to every one of `topics` topics having
        its logs open here (its "created topic" line)."""
        cmd = [self.samsa, f"--log.dirs={self.data_dir}",
               f"--listeners=PLAINTEXT://127.0.0.1:{self.port}",
               f"--metrics.listener=127.0.0.1:{self.metrics_port}",
               f"--metrics.partition.level={self.level}"]
        with open(self.log_path, "ab") as out:
            offset = out.tell()
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                         env=m.clean_env(), start_new_session=True)
        m.STARTED.append(self.proc)
        took = m.wait_for_line(self.log_path, offset, r"samsa is serving", self.proc, timeout_s)
        if took is None:
            raise RuntimeError(f"samsa did not serve within {timeout_s:.0f} s (see {self.log_path})")
        self.forced = any("serving anyway" in line
                          for line in m.read_from(self.log_path, offset).splitlines())
        start = time.monotonic() - took
        while True:
            installed = m.read_from(self.log_path, offset).count("created topic")
            if installed >= topics:
                return took, time.monotonic() - start
            if self.proc.poll() is not None or time.monotonic() - start > timeout_s:
                raise RuntimeError(f"{installed} of {topics} topics installed (see {self.log_path})")
            time.sleep(0.05)

    def kill(self):
        self.proc.kill()
        self.proc.wait()
        m.STARTED.remove(self.proc)

    def stop(self):
        return m.terminate(self.proc, 600.0)


def create(node, partitions, per_request):
    names = [f"s{i:05d}" for i in range(partitions // TOPIC_PARTITIONS)]
    start = time.monotonic()
    for i in range(0, len(names), per_request):
        batch = names[i:i + per_request]
        assignments = {n: [1] * TOPIC_PARTITIONS for n in batch}
        while True:
            codes = m.create_topics_raw(node.port, batch, assignments=assignments)
            bad = {n: c for n, c in codes.items() if c not in (0, m.TOPIC_ALREADY_EXISTS)}
            if not bad:
                break
            if any(c not in m.RETRIABLE for c in bad.values()):
                raise RuntimeError(f"CreateTopics failed: {bad}")
            batch = list(bad)
            time.sleep(0.2)
    answered = time.monotonic() - start
    want = len(names) * TOPIC_PARTITIONS
    while m.hosted_partitions([node.data_dir], "s") < want:
        time.sleep(0.1)
    return len(names), answered, time.monotonic() - start


def metadata_all(port, requests):
    c = m.Conn(port, 120.0)
    try:
        took, size = [], 0
        for _ in range(requests):
            _, size, t = c.call(m.METADATA, 12, m.METADATA_ALL_V12, flexible=True)
            took.append(t * 1000)
    finally:
        c.close()
    took.sort()
    return size, statistics.median(took), took[min(len(took) - 1, int(len(took) * 0.99))]


FETCH, LIST_OFFSETS = 1, 2


def produce_one_each(port, topics):
    """One record of 100 bytes to every partition (librdkafka, not timed)."""
    from confluent_kafka import Producer  # the .venv's confluent-kafka
    p = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "linger.ms": 100,
                  "queue.buffering.max.messages": 200_000, "acks": "1"})
    failed, errors = [], {}

    def report(err, msg):
        if err is not None:
            failed.append((msg.topic(), msg.partition()))
            errors[err.str()] = errors.get(err.str(), 0) + 1

    todo = [(f"s{t:05d}", part) for t in range(topics) for part in range(TOPIC_PARTITIONS)]
    for attempt in range(5):
        for i, (topic, part) in enumerate(todo):
            p.produce(topic, value=b"x" * 100, partition=part, on_delivery=report)
            if i % 1000 == 0:
                p.poll(0)
        left = p.flush(300)
        if left:
            raise RuntimeError(f"{left} records not acknowledged")
        if not failed:
            return
        log(f"{len(failed)} records failed ({errors}); sending them again")
        todo, failed, errors = failed, [], {}
        time.sleep(1)
    raise RuntimeError(f"{len(todo)} records still failing: {errors}")


def fetch_all_v12(topics, offset):
    """Fetch v12 of every partition from `offset`, no wait, 1 MiB per partition."""
    body = struct.pack(">iiiibii", -1, 0, 0, 0x7FFFFFFF, 0, 0, -1) + m.uvarint(topics + 1)
    part = lambda i: struct.pack(">iiqiqi", i, -1, offset, -1, -1, 1 << 20) + b"\x00"  # noqa: E731
    parts = m.uvarint(TOPIC_PARTITIONS + 1) + b"".join(part(i) for i in range(TOPIC_PARTITIONS))
    for t in range(topics):
        body += m.compact_string(f"s{t:05d}") + parts + b"\x00"
    return body + m.uvarint(1) + m.compact_string("") + b"\x00"


def parse_fetch_v12(body):
    """(partitions answered without error, partitions with records)."""
    r = m.Reader(body)
    r.take(">i")
    if r.take(">h") != 0:
        raise RuntimeError("Fetch failed")
    r.take(">i")
    ok = with_records = 0
    for _ in range(r.uvarint() - 1):
        name_length = r.uvarint() - 1  # read before `r.p +=` reads r.p
        r.p += name_length
        for _ in range(r.uvarint() - 1):
            r.take(">i")
            code = r.take(">h")
            r.take(">q"), r.take(">q"), r.take(">q")
            for _ in range(max(r.uvarint() - 1, 0)):
                r.take(">q"), r.take(">q")
                r.tags()
            r.take(">i")
            records = r.compact_bytes()
            r.tags()
            ok += code == 0
            with_records += bool(records)
        r.tags()
    return ok, with_records


def list_offsets_all_v7(topics):
    """ListOffsets v7 for the latest offset of every partition."""
    body = struct.pack(">ib", -1, 0) + m.uvarint(topics + 1)
    parts = m.uvarint(TOPIC_PARTITIONS + 1) + b"".join(
        struct.pack(">iiq", i, -1, -1) + b"\x00" for i in range(TOPIC_PARTITIONS))
    for t in range(topics):
        body += m.compact_string(f"s{t:05d}") + parts + b"\x00"
    return body + b"\x00"


def parse_list_offsets_v7(body):
    """(partitions answered without error, sum of their offsets)."""
    r = m.Reader(body)
    r.take(">i")
    ok = total = 0
    for _ in range(r.uvarint() - 1):
        name_length = r.uvarint() - 1  # read before `r.p +=` reads r.p
        r.p += name_length
        for _ in range(r.uvarint() - 1):
            r.take(">i")
            code = r.take(">h")
            r.take(">q")
            offset = r.take(">q")
            r.take(">i")
            r.tags()
            ok += code == 0
            total += offset
        r.tags()
    return ok, total


def timed_calls(port, api, version, body, requests, check):
    """(response bytes, p50 ms, p99 ms), each answer passed to `check`."""
    c = m.Conn(port, 120.0)
    try:
        took, size = [], 0
        for _ in range(requests):
            answer, size, t = c.call(api, version, body, flexible=True)
            check(answer)
            took.append(t * 1000)
    finally:
        c.close()
    took.sort()
    return size, statistics.median(took), took[min(len(took) - 1, int(len(took) * 0.99))]


def request_path(node, topics, partitions, requests, r):
    """ListOffsets and Fetch across every partition, each holding one record."""
    def offsets_ok(answer):
        ok, total = parse_list_offsets_v7(answer)
        if (ok, total) != (partitions, partitions):
            raise RuntimeError(f"ListOffsets: {ok} partitions answered, offsets sum {total}")

    def full(answer):
        if parse_fetch_v12(answer) != (partitions, partitions):
            raise RuntimeError(f"Fetch from 0: {parse_fetch_v12(answer)} of {partitions}")

    def empty(answer):
        if parse_fetch_v12(answer) != (partitions, 0):
            raise RuntimeError(f"Fetch from the end: {parse_fetch_v12(answer)} of {partitions}")

    r["list_offsets_bytes"], r["list_offsets_p50_ms"], r["list_offsets_p99_ms"] = timed_calls(
        node.port, LIST_OFFSETS, 7, list_offsets_all_v7(topics), requests, offsets_ok)
    r["fetch_bytes"], r["fetch_p50_ms"], r["fetch_p99_ms"] = timed_calls(
        node.port, FETCH, 12, fetch_all_v12(topics, 0), requests, full)
    r["fetch_end_bytes"], r["fetch_end_p50_ms"], r["fetch_end_p99_ms"] = timed_calls(
        node.port, FETCH, 12, fetch_all_v12(topics, 1), requests, empty)


def scrape(node, times=5):
    url = f"http://127.0.0.1:{node.metrics_port}/metrics"
    took, size = [], 0
    for _ in range(times):
        start = time.perf_counter()
        with urllib.request.urlopen(url, timeout=120) as r:
            size = len(r.read())
        took.append((time.perf_counter() - start) * 1000)
    return size, statistics.median(took)


def measure(samsa, work, run_dir, partitions, per_request, metadata_requests):
    data = os.path.join(work, f"p{partitions}")
    node = ScaleNode(samsa, data, os.path.join(run_dir, f"p{partitions}.log"), "partition")
    r = {"size": partitions}
    node.start()
    time.sleep(1)
    rss0, _ = m.proc_status(node.proc.pid)
    cpu0 = bench.cpu_seconds(node.proc.pid)
    topics, r["answered_s"], r["created_s"] = create(node, partitions, per_request)
    r["create_cpu_s"] = bench.cpu_seconds(node.proc.pid) - cpu0
    r["topics"] = topics
    time.sleep(3)
    rss, hwm = m.proc_status(node.proc.pid)
    r["rss_before_mib"], r["rss_mib"], r["hwm_mib"] = rss0 / 2**20, rss / 2**20, hwm / 2**20
    r["rss_per_partition_b"] = (rss - rss0) / partitions
    r["open_files"] = m.open_files(node.proc.pid)
    r["metadata_bytes"], r["metadata_p50_ms"], r["metadata_p99_ms"] = metadata_all(
        node.port, metadata_requests)
    r["scrape_bytes"], r["scrape_ms"] = scrape(node)
    started = time.monotonic()
    produce_one_each(node.port, topics)
    r["produce_one_each_s"] = time.monotonic() - started
    request_path(node, topics, partitions, metadata_requests, r)
    node.stop()
    r["clean_start_s"], r["clean_ready_s"] = node.start(topics)
    r["clean_start_forced"] = node.forced
    r["open_files_after_start"] = m.open_files(node.proc.pid)
    node.kill()
    r["crash_start_s"], r["crash_ready_s"] = node.start(topics)
    r["crash_start_forced"] = node.forced
    node.stop()
    node.level = "topic"
    node.start(topics)
    r["scrape_topic_bytes"], r["scrape_topic_ms"] = scrape(node)
    node.stop()
    r["limit"] = os.sysconf("SC_OPEN_MAX")
    line = "SBENCH " + " ".join(
        f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items())
    print(line, flush=True)
    r["line"] = line
    shutil.rmtree(data, ignore_errors=True)
    return r


def section(results, machine, took_s, command):
    when = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    L = [f"<!-- {SECTION}:start (written by scripts/bench/scale) -->", "## Partitions on one node", "",
         f"Measured {when} in {took_s:.0f} s with `{command}` on a release build: one node, a real "
         "process on loopback with its own data directory, its defaults, and this machine's "
         f"file-handle limit ({results[0]['limit']:,}, unraised: the node holds at most a quarter "
         "of it in segment files, `log.open.files.max`). Machine: "
         + "; ".join(f"{k} {v}" for k, v in machine.items()) + ".", "",
         "Topics of 1,000 partitions, created with raw CreateTopics v2 requests placing every "
         "partition on the node; `created` is when every partition directory exists. RSS and "
         "open files are the idle node's afterwards (per partition: the growth over the "
         "partitions, metadata image included). `Metadata` asks for every topic (v12, one "
         "connection, raw socket). `scrape` is a GET of /metrics at the default "
         "`metrics.partition.level=partition`, and at `topic`. Starts are from exec to "
         "\"samsa is serving\" after SIGTERM (clean) and after SIGKILL (crash), then (after the "
         "slash) to every topic's logs open (its \"created topic\" line); `*`: the node "
         "said it served before the controller unfenced it (its 10 s bound), with partitions "
         "still opening. The first row is the reference measured in the same run.", "",
         "| partitions | created s (answered s) | create CPU s | RSS MiB: before -> after (HWM) | "
         "RSS per partition B | open files | Metadata bytes, p50 / p99 ms | scrape: partition "
         "level bytes, ms | scrape: topic level bytes, ms | clean start: serving / all open s | crash start: serving / all open s |",
         "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        star = lambda forced: "*" if forced else ""  # noqa: E731
        L.append(
            f"| {r['size']:,} | {r['created_s']:.1f} ({r['answered_s']:.1f}) | {r['create_cpu_s']:.1f} | "
            f"{r['rss_before_mib']:.1f} -> {r['rss_mib']:.1f} ({r['hwm_mib']:.1f}) | "
            f"{r['rss_per_partition_b']:,.0f} | {r['open_files']:,} | "
            f"{r['metadata_bytes']:,}, {r['metadata_p50_ms']:.1f} / {r['metadata_p99_ms']:.1f} | "
            f"{r['scrape_bytes']:,}, {r['scrape_ms']:.1f} | {r['scrape_topic_bytes']:,}, "
            f"{r['scrape_topic_ms']:.1f} | {r['clean_start_s']:.1f}{star(r['clean_start_forced'])} "
            f"/ {r['clean_ready_s']:.1f} | "
            f"{r['crash_start_s']:.1f}{star(r['crash_start_forced'])} / {r['crash_ready_s']:.1f} |")
    L += ["", "The request path across every partition, after one record of 100 bytes was "
          "written to each (librdkafka, acks=1, not timed): raw requests on one connection, "
          f"each kind sent as often as the Metadata request; `us per partition` is the p50 over "
          "the partitions. ListOffsets v7 asks for every partition's latest offset; Fetch v12 "
          "(no fetch session, max wait 0, 1 MiB per partition) reads every partition from "
          "offset 0 (its record) and then from its end (nothing to return: the cost of "
          "looking).", "",
          "| partitions | ListOffsets bytes, p50 / p99 ms | us per partition | Fetch of every "
          "record: bytes, p50 / p99 ms | us per partition | Fetch at the end: bytes, p50 / p99 ms "
          "| us per partition |",
          "|---|---|---|---|---|---|---|"]
    for r in results:
        us = lambda k: r[k] * 1000 / r["size"]  # noqa: E731
        L.append(
            f"| {r['size']:,} | {r['list_offsets_bytes']:,}, {r['list_offsets_p50_ms']:.2f} / "
            f"{r['list_offsets_p99_ms']:.2f} | {us('list_offsets_p50_ms'):.2f} | "
            f"{r['fetch_bytes']:,}, {r['fetch_p50_ms']:.2f} / {r['fetch_p99_ms']:.2f} | "
            f"{us('fetch_p50_ms'):.2f} | {r['fetch_end_bytes']:,}, {r['fetch_end_p50_ms']:.2f} / "
            f"{r['fetch_end_p99_ms']:.2f} | {us('fetch_end_p50_ms'):.2f} |")
    if len(results) > 1:
        a, b = results[0], results[-1]
        k = b["size"] / a["size"]
        L += ["", f"{b['size']:,} partitions against {a['size']:,} ({k:.0f}x): created in "
              f"{b['created_s'] / a['created_s']:.1f}x the time, clean start to every log open "
              f"{b['clean_ready_s'] / a['clean_ready_s']:.1f}x, Metadata p50 "
              f"{b['metadata_p50_ms'] / a['metadata_p50_ms']:.1f}x, scrape "
              f"{b['scrape_ms'] / a['scrape_ms']:.1f}x, ListOffsets p50 "
              f"{b['list_offsets_p50_ms'] / a['list_offsets_p50_ms']:.1f}x, Fetch of every record p50 "
              f"{b['fetch_p50_ms'] / a['fetch_p50_ms']:.1f}x, Fetch at the end p50 "
              f"{b['fetch_end_p50_ms'] / a['fetch_end_p50_ms']:.1f}x; open files "
              f"{b['open_files'] / a['open_files']:.1f}x."]
    L += [""] + m.section_end(results, SECTION, f"Rerun: `{command}`")
    return "\n".join(L) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samsa", required=True)
    ap.add_argument("--sizes", default="1000,100000",
                    help="partition counts, comma-separated; the first is the reference")
    # Nine: ten topics of 1,000 are 10,010 records, over the 10,000 Kafka's controller (and
    # Samsa's) takes in one operation.
    ap.add_argument("--per-request", type=int, default=9, help="topics per CreateTopics")
    ap.add_argument("--metadata-requests", type=int, default=20)
    ap.add_argument("--out", default=os.path.join(ROOT, "BENCHMARKS.md"))
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--command", default="scripts/bench/scale")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = os.path.join(ROOT, ".tools", "bench-runs", f"scale-{stamp}")
    os.makedirs(run_dir, exist_ok=True)
    data_root = os.path.join(ROOT, ".tools", "bench-data")
    os.makedirs(data_root, exist_ok=True)
    work = tempfile.mkdtemp(prefix="scale-", dir=data_root)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: (m.stop_everything(), sys.exit(130)))
    bench.LOAD_AT_START = " ".join(open("/proc/loadavg").read().split()[:3])
    began = time.monotonic()
    results = []
    try:
        for size in sizes:
            log(f"{size:,} partitions")
            results.append(measure(args.samsa, work, run_dir, size, args.per_request,
                                   args.metadata_requests))
    finally:
        m.stop_everything()
        shutil.rmtree(work, ignore_errors=True)
    took = time.monotonic() - began
    if args.no_write:
        return
    import argparse as _a
    machine = bench.machine_description(_a.Namespace(data_root=data_root, perf="true"))
    machine.pop("load generator", None)
    text = open(args.out).read() if os.path.exists(args.out) else "# Samsa benchmarks\n"
    with open(args.out, "w") as fh:
        fh.write(bench.replace_marked_section(text, SECTION, section(results, machine, took,
                                                                     args.command)))
    log(f"wrote the {SECTION} section of {args.out} in {took:.0f} s")


if __name__ == "__main__":
    main()
