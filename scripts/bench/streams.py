#!/usr/bin/env python3
"""Time for a Kafka Streams application of three instances to reach RUNNING, with the classic
group protocol and with the streams group protocol (KIP-1071), on Samsa and on Apache Kafka 4.4
in the same run.

For each broker (release `samsa`, then Kafka 4.4 with a 1 GiB heap; the order alternates with
--runs above 1), one node on free loopback ports with its own data directory under
.tools/bench-data (the brokers' defaults but the internal topics' replication factors, 1), and
each protocol, --rounds times with a new application id each time: an input topic of
--partitions partitions is created (with some records in it), then three instances of
compat-tests/java/workloads' StreamsApp (exactly-once v2, a repartition, a count and a windowed
count with changelogs: 3 subtopologies' worth of tasks) start at the same moment, each its own
JVM; the figure is the time from their start until the last of them prints STATE RUNNING, and
the time until the first does. The instances are then closed (SIGTERM) before the next round.

Both protocols wait for their initial rebalance delay (group.initial.rebalance.delay.ms and
group.streams.initial.rebalance.delay.ms, 3000 ms by default on both brokers), and the JVMs'
start (about a second on this machine) is in every figure: the broker's share is the difference
between the rows.

Prints SBENCH lines (medians) and SBENCH-RATIO lines (Samsa over Kafka, below 1 is faster) and
rewrites the "Streams application start" section of BENCHMARKS.md between its marker comments.

  scripts/bench/streams [--runs N] [--rounds N] [--partitions N] [--no-write]
                        [--brokers samsa,kafka-4.4] [--protocols classic,streams]
"""

import argparse
import datetime
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import bench  # scripts/bench/bench.py: ports, BENCHMARKS.md sections
import groups  # scripts/bench/groups.py: the two brokers

ROOT = bench.ROOT
SECTION = "streams-start"
PROTOCOLS = ("classic", "streams")
BROKERS = ("samsa", "kafka-4.4")
INSTANCES = 3


def log(msg):
    print(f"streams: {msg}", file=sys.stderr, flush=True)


def settings():
    return {"offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1"}


class Java:
    def __init__(self, libs, classes, work):
        self.cp = classes + ":" + os.path.join(libs, "*")
        self.work = work
        # The workloads' records carry timestamps from this base (Workload.BASE_TS).
        self.env = dict(os.environ, WORKLOAD_BASE_TS=str(int(time.time()) // 10 * 10000))
        self.log4j = os.path.join(work, "log4j2.properties")
        with open(self.log4j, "w") as f:
            f.write("status = warn\nappender.file.type = File\nappender.file.name = FILE\n"
                    "appender.file.fileName = ${sys:workload.log}\n"
                    "appender.file.layout.type = PatternLayout\n"
                    "appender.file.layout.pattern = [%d] %p [%t] %m (%c)%n\n"
                    "rootLogger.level = INFO\nrootLogger.appenderRef.file.ref = FILE\n")

    def cmd(self, name, main, *args):
        return ["java", "-Xmx512m", "-Dlog4j2.configurationFile=" + self.log4j,
                "-Dworkload.log=" + os.path.join(self.work, name + ".log"), "-cp", self.cp, main] + [
                    str(a) for a in args]

    def tool(self, *args):
        out = os.path.join(self.work, "tools.out")
        with open(out, "a") as f:
            subprocess.run(self.cmd("tools", "samsa.workloads.Workload", *args), check=True,
                           stdout=f, stderr=subprocess.STDOUT, env=self.env)


def one_round(java, broker, protocol, app_id, partitions, work):
    """Starts three instances at once; returns (first RUNNING ms, last RUNNING ms) or raises."""
    prefix = app_id
    java.tool("create-topics", broker.bootstrap, 1, f"{prefix}-input:{partitions}",
              f"{prefix}-totals:{partitions}", f"{prefix}-windowed:{partitions}")
    java.tool("produce-streams", broker.bootstrap, prefix + "-input", 0, 1000)
    procs, outs = [], []
    started = time.monotonic()
    for i in range(INSTANCES):
        out = os.path.join(work, f"{app_id}-{i}.out")
        outs.append(out)
        with open(out, "w") as f:
            procs.append(subprocess.Popen(
                java.cmd(f"{app_id}-{i}", "samsa.workloads.StreamsApp", broker.bootstrap, app_id, prefix,
                         os.path.join(work, f"{app_id}-state-{i}"), protocol),
                stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=java.env))
    running = [None] * INSTANCES
    try:
        deadline = started + 120
        while None in running:
            if time.monotonic() > deadline:
                raise RuntimeError(f"not RUNNING within 120 s: {outs}")
            for i, out in enumerate(outs):
                if running[i] is None and "STATE RUNNING" in open(out).read():
                    running[i] = (time.monotonic() - started) * 1000
                if procs[i].poll() is not None:
                    raise RuntimeError(f"instance {i} exited: {out}")
            time.sleep(0.02)
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    return min(running), max(running)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--brokers", default=",".join(BROKERS))
    ap.add_argument("--protocols", default=",".join(PROTOCOLS))
    ap.add_argument("--libs", required=True)
    ap.add_argument("--classes", required=True)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--command", default="scripts/bench/streams")
    args = ap.parse_args()
    brokers = [b for b in BROKERS if b in args.brokers.split(",")]
    protocols = [p for p in PROTOCOLS if p in args.protocols.split(",")]
    if len(brokers) < len(BROKERS) or len(protocols) < len(PROTOCOLS):
        args.no_write = True
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.time()
    load_at_start = " ".join(open("/proc/loadavg").read().split()[:3])
    target_dir = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    binary = os.path.join(target_dir, "release", "samsa")
    data_root = os.path.join(ROOT, ".tools", "bench-data")
    os.makedirs(data_root, exist_ok=True)
    work = tempfile.mkdtemp(prefix="streams-", dir=data_root)
    java = Java(args.libs, args.classes, work)
    samples = {(b, p): {"first": [], "last": []} for b in BROKERS for p in PROTOCOLS}
    failed = False
    try:
        for run in range(args.runs):
            order = brokers if run % 2 == 0 else list(reversed(brokers))
            for name in order:
                data = os.path.join(work, f"{name}-{run + 1}")
                broker = (groups.Samsa(binary, data, settings()) if name == "samsa"
                          else groups.Kafka(data, settings()))
                log(f"run {run + 1}: starting {name}")
                try:
                    broker.start()
                    for protocol in protocols:
                        for r in range(args.rounds):
                            app = f"bench-{protocol}-{run}-{r}"
                            try:
                                first, last = one_round(java, broker, protocol, app, args.partitions, work)
                            except (RuntimeError, subprocess.CalledProcessError) as e:
                                log(f"{name} {protocol}: {e}")
                                failed = True
                                continue
                            samples[(name, protocol)]["first"].append(first)
                            samples[(name, protocol)]["last"].append(last)
                            log(f"{name} {protocol} round {r + 1}: first RUNNING {first:.0f} ms, "
                                f"all three {last:.0f} ms")
                finally:
                    broker.stop()
    finally:
        if failed:
            log(f"logs: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    med = {k: {m: (statistics.median(v) if v else None) for m, v in s.items()} for k, s in samples.items()}
    fmt = groups.fmt_ms
    for (b, p), r in med.items():
        if b in brokers and p in protocols:
            print(f"SBENCH test=streams.start broker={b} protocol={p} instances={INSTANCES} "
                  f"partitions={args.partitions} first_running_ms={fmt(r['first'])} "
                  f"all_running_ms={fmt(r['last'])} rounds={len(samples[(b, p)]['last'])} "
                  f"samples_ms={','.join(fmt(v) for v in samples[(b, p)]['last']) or '-'}", flush=True)

    def ratio(p):
        s, k = med[("samsa", p)]["last"], med[("kafka-4.4", p)]["last"]
        return None if s is None or not k else s / k

    if len(brokers) == 2:
        for p in protocols:
            r = ratio(p)
            print(f"SBENCH-RATIO protocol={p} of=kafka-4.4 all_running={'-' if r is None else f'{r:.2f}'}",
                  flush=True)
    if args.no_write or failed:
        # A failed round leaves the section as it was: its figures would be partial.
        return 1 if failed else 0
    took = time.time() - started
    lines = [
        f"<!-- {SECTION}:start (written by scripts/bench/streams) -->",
        "## Streams application start: three instances to RUNNING, classic and streams protocol",
        "",
        f"`{args.command}` on {datetime.date.today().isoformat()}: one node of each broker on loopback, "
        f"{os.cpu_count()} cores, load average {load_at_start} at the start. A Kafka Streams 4.4 "
        "application (exactly-once v2; a repartition, a count and a windowed count with changelogs) "
        f"reading a topic of {args.partitions} partitions, {INSTANCES} instances (a JVM each) started "
        f"at once, {args.rounds} rounds per broker and protocol with a new application id each, "
        f"{args.runs} start(s) of each broker; medians in ms from the start of the JVMs until the first "
        "and the last instance prints STATE RUNNING. Both brokers run their defaults but the internal "
        "topics' replication factors (1): both protocols wait for the group's initial rebalance delay "
        "(3000 ms on both brokers, classic and streams), and the JVMs' start is in every figure. With "
        "the streams protocol the broker also creates the application's repartition and changelog "
        f"topics. Took {took:.0f} s.",
        "",
        "| broker | protocol | first RUNNING (ms) | all three RUNNING (ms) | Samsa/Kafka (all) | every round, all three (ms) |",
        "|---|---|---|---|---|---|",
    ]
    for p in PROTOCOLS:
        for b in BROKERS:
            r = med[(b, p)]
            rt = ratio(p) if b == "samsa" else None
            lines.append(f"| {b} | {p} | {fmt(r['first'])} | {fmt(r['last'])} | "
                         f"{'' if rt is None else f'{rt:.2f}'} | "
                         f"{' '.join(fmt(v) for v in samples[(b, p)]['last'])} |")
    lines.append(f"<!-- {SECTION}:end -->")
    path = os.path.join(ROOT, "BENCHMARKS.md")
    with open(path) as fh:
        text = fh.read()
    with open(path, "w") as fh:
        fh.write(bench.replace_marked_section(text, SECTION, "\n".join(lines)))
    log(f"wrote the {SECTION} section of BENCHMARKS.md")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
