#!/usr/bin/env python3
"""Share-group consume throughput (KIP-932) against the classic consumer, in the same run.

One release `samsa`; a topic of one partition filled with --count records of 1 KiB (acks=all);
then, interleaved --runs times:

- classic: one confluent-kafka Consumer (librdkafka 2.16) in a new group reads every record
  from the beginning (auto-commit off);
- share-1: one ShareConsumer (implicit acknowledgement: each poll accepts the previous one's
  records) in a new share group starting at the earliest offset reads every record;
- share-4: four ShareConsumers, each its own process, in one new share group read every record
  between them (the broker's in-flight window decides how they interleave).

Every client is the same Python binding of the same librdkafka, so the ratio share/classic is
the cost of acquisition and acknowledgement (share sessions, locks, the state written to
__share_group_state once per acknowledgement), not of the client. Records/s is records over the
time from the first record read to the last (joining a group is not consuming: a classic group
waits group.initial.rebalance.delay.ms first); broker CPU (/proc/<pid>/stat) is counted from
the consumers' start, joining included, per million records.

Prints SHAREBENCH lines (medians), SHAREBENCH-RATIO lines (over classic), and rewrites the
"Share groups" section of BENCHMARKS.md between its marker comments (appended when missing).

  scripts/bench/share [--quick] [--runs N] [--count N] [--no-write]
"""

import argparse
import datetime
import os
import selectors
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import bench  # scripts/bench/bench.py: ports, /proc readings, BENCHMARKS.md sections

ROOT = bench.ROOT
SECTION = "share-groups"
RECORD_BYTES = 1024


def log(msg):
    print(f"share: {msg}", file=sys.stderr, flush=True)


def worker(bootstrap, group, kind):
    """One consumer process: prints the running count of records it read after every poll
    that read some, until it is killed."""
    from confluent_kafka import Consumer, ShareConsumer

    if kind == "classic":
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                      "auto.offset.reset": "earliest", "enable.auto.commit": False,
                      "fetch.max.bytes": 52428800})
        c.subscribe(["share-bench"])
        poll = lambda: c.consume(num_messages=1000, timeout=1.0)
    else:
        c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
        c.subscribe(["share-bench"])
        poll = lambda: c.poll(1.0)
    n = 0
    print("ready", flush=True)
    while True:
        got = sum(1 for m in poll() if not m.error())
        if got:
            n += got
            print(n, flush=True)


def run_consumers(bootstrap, group, kind, consumers, count, pid):
    """Starts `consumers` processes and waits until they read `count` records between them.
    Returns (seconds, broker CPU seconds)."""
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", bootstrap, group, kind],
                              stdout=subprocess.PIPE)
             for _ in range(consumers)]
    try:
        # Unbuffered reads of each pipe (a buffered reader would hide lines from select).
        pending = [b""] * consumers
        counts = [0] * consumers
        ready = [False] * consumers
        first = [None]
        sel = selectors.DefaultSelector()
        for i, p in enumerate(procs):
            sel.register(p.stdout.fileno(), selectors.EVENT_READ, i)

        def read_some(timeout):
            for key, _ in sel.select(timeout=timeout):
                i = key.data
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    raise RuntimeError(f"{kind} consumer {i} exited")
                *lines, pending[i] = (pending[i] + chunk).split(b"\n")
                for line in lines:
                    if line == b"ready":
                        ready[i] = True
                    elif line.isdigit():
                        counts[i] = int(line)
                        if first[0] is None:
                            first[0] = time.time()

        while not all(ready):
            read_some(1.0)
        cpu0 = bench.cpu_seconds(pid)
        t0 = time.time()
        deadline = t0 + 600
        while sum(counts) < count:
            if time.time() > deadline:
                raise RuntimeError(f"{kind} x{consumers}: {sum(counts)} of {count} records in 600 s")
            read_some(1.0)
        # From the first record read to the last: joining the group (the classic group's
        # initial rebalance delay, 3 s) is not consuming.
        took = time.time() - (first[0] or t0)
        cpu = bench.cpu_seconds(pid) - cpu0
        if sum(counts) > count:
            raise RuntimeError(f"{kind} x{consumers}: {sum(counts)} records read, {count} written: "
                               "a record reached two consumers")
        return took, cpu, counts
    finally:
        for p in procs:
            p.kill()
            p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--count", type=int, default=300_000)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--command", default="scripts/bench/share")
    args = ap.parse_args()
    if args.quick:
        args.runs, args.count = 1, 100_000
    from confluent_kafka import Producer
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                       ConfigResource, NewTopic)

    started = time.time()
    port = bench.free_port()
    data = tempfile.mkdtemp(prefix="share-bench-", dir=os.path.join(ROOT, ".tools"))
    binary = os.path.join(ROOT, "target/release/samsa")
    broker = subprocess.Popen([binary, f"--listeners=PLAINTEXT://127.0.0.1:{port}",
                               f"--log.dirs={data}", "--metrics.listener="],
                              stdout=subprocess.DEVNULL, stderr=open(os.path.join(data, "log"), "w"))
    results = {}
    try:
        bench.wait_listening(port, broker, "samsa")
        bootstrap = f"127.0.0.1:{port}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        # The port opens before the controller unfences the broker: try until it has.
        deadline = time.time() + 30
        while True:
            try:
                for _, f in admin.create_topics([NewTopic("share-bench", 1, 1)]).items():
                    f.result(30)
                break
            except Exception as e:
                if time.time() > deadline:
                    raise
                log(f"creating the topic: {e}; trying again")
                time.sleep(0.5)
        log(f"producing {args.count} records of {RECORD_BYTES} B")
        p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                      "batch.size": 1_000_000})
        value = b"x" * RECORD_BYTES
        for i in range(args.count):
            while True:
                try:
                    p.produce("share-bench", value=value)
                    break
                except BufferError:
                    p.poll(0.1)
        assert p.flush(60) == 0
        rows = {("classic", 1): [], ("share", 1): [], ("share", 4): []}
        for run in range(args.runs):
            for kind, consumers in rows:
                group = f"bench-{kind}-{consumers}-{run}"
                if kind == "share":
                    res = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=[
                        ConfigEntry("share.auto.offset.reset", "earliest",
                                    incremental_operation=AlterConfigOpType.SET)])
                    for _, f in admin.incremental_alter_configs([res]).items():
                        f.result(30)
                took, cpu, counts = run_consumers(bootstrap, group, kind, consumers, args.count,
                                                  broker.pid)
                rate = args.count / took
                log(f"run {run + 1}: {kind} x{consumers}: {rate:,.0f} records/s, "
                    f"broker CPU {cpu / args.count * 1e6:.2f} s per M records, split {counts}")
                rows[(kind, consumers)].append((rate, cpu / args.count * 1e6))
        for key, vals in rows.items():
            results[key] = (statistics.median(v[0] for v in vals),
                            statistics.median(v[1] for v in vals), len(vals))
    finally:
        broker.terminate()
        broker.wait(30)
        shutil.rmtree(data, ignore_errors=True)
    base = results[("classic", 1)]
    for (kind, consumers), (rate, cpu, runs) in results.items():
        print(f"SHAREBENCH consumer={kind} consumers={consumers} msgs_per_s={rate:.0f} "
              f"MB_per_s={rate * RECORD_BYTES / 1e6:.1f} broker_cpu_s_per_M={cpu:.2f} runs={runs}")
    for (kind, consumers), (rate, cpu, _) in results.items():
        if kind == "share":
            print(f"SHAREBENCH-RATIO consumer={kind} consumers={consumers} of=classic "
                  f"msgs_per_s={rate / base[0]:.2f} broker_cpu_s_per_M={cpu / base[1]:.2f}")
    if args.no_write:
        return
    took = time.time() - started
    lines = [
        f"<!-- {SECTION}:start (written by scripts/bench/share) -->",
        "## Share groups (KIP-932)",
        "",
        f"`{args.command}` on {datetime.date.today().isoformat()}, {args.runs} run(s) of "
        f"{args.count:,} records of 1 KiB in one partition, medians; every consumer is "
        "confluent-kafka 2.16 (librdkafka 2.16) in Python, so the ratios compare the broker's "
        "work, not the clients'. Share consumers acknowledge implicitly (each poll accepts the "
        f"previous one's records). Took {took:.0f} s.",
        "",
        "| consumer | consumers | records/s | MB/s | broker CPU s per M records | vs classic (records/s) | vs classic (CPU) |",
        "|---|---|---|---|---|---|---|",
    ]
    for (kind, consumers), (rate, cpu, _) in results.items():
        ratio = "1.00" if kind == "classic" else f"{rate / base[0]:.2f}"
        cratio = "1.00" if kind == "classic" else f"{cpu / base[1]:.2f}"
        lines.append(f"| {kind} | {consumers} | {rate:,.0f} | {rate * RECORD_BYTES / 1e6:.1f} | "
                     f"{cpu:.2f} | {ratio} | {cratio} |")
    lines.append(f"<!-- {SECTION}:end -->")
    path = os.path.join(ROOT, "BENCHMARKS.md")
    with open(path) as fh:
        text = fh.read()
    with open(path, "w") as fh:
        fh.write(bench.replace_marked_section(text, SECTION, "\n".join(lines)))
    log(f"wrote the {SECTION} section of BENCHMARKS.md")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(*sys.argv[2:5])
    else:
        main()
