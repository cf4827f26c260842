#!/usr/bin/env python3
"""Rebalance time of a large consumer group, classic protocol and consumer protocol (KIP-848),
on Samsa and on Apache Kafka 4.4 in the same run.

For each broker (release `samsa`, then Kafka 4.4 with a 1 GiB heap; the order alternates with
--runs above 1), one node on free loopback ports with its own data directory under
.tools/bench-data, and each protocol, scripts/bench/GroupRebalance.java (compiled against
Kafka 4.4's jars) creates a topic of --partitions partitions, starts --members KafkaConsumers
(Kafka 4.4's Java client, one JVM, a thread each, polling every 100 ms, auto commit on,
max.poll.records=10, otherwise the client's defaults: for classic the range and
cooperative-sticky assignors, so eager range rebalances, and a 3 s heartbeat; for consumer the
broker's assignor and heartbeat interval, 5 s on both), waits until the group is stable, then
--rounds times, each after a pause of 1 to 6 s (a fixed pseudo-random sequence, the same for
every broker: members heartbeat on a fixed interval counted from the last rebalance, so how long
a change waits depends on where in that interval it falls, and the pauses sample it):

- join: one more member subscribes; the time from its subscribe() until the group is stable
  again with it holding a partition;
- leave: one of the first members closes; the time from its close() until the group is stable
  again without it.

Stable means both sides agree: the members' own assignment() views hold every partition
exactly once, and the broker describes the group (Admin describeConsumerGroups) as STABLE with
exactly those members, each with the partitions its consumer sees and, for a consumer group,
with its target assignment reached (no revocation pending). The views are read after each
poll, so a figure may be late by up to one poll (100 ms).

Settings: each broker's defaults (group.initial.rebalance.delay.ms 3000 on both: it delays
only the first rebalance of an empty group, the group's forming, not the rounds measured),
except the replication factors of the internal topics, 1 for one node, and
group.consumer.assignment.interval.ms=0 on both (--assignment-interval sets another): both
brokers recompute a consumer group's target assignment at most once per this interval (KIP-1263,
1000 ms by default), so with the default a change is assigned at a member's first heartbeat a
second after the last one, a wait that depends on the heartbeats' phase more than on the broker.

Prints GBENCH lines (medians), GBENCH-RATIO lines (Samsa over Kafka, below 1 is faster) and
rewrites the "Group rebalance" section of BENCHMARKS.md between its marker comments (appended
when missing).

  scripts/bench/groups [--runs N] [--rounds N] [--members N] [--partitions N] [--no-write]
                       [--brokers samsa,kafka-4.4] [--protocols classic,consumer]
"""

import argparse
import datetime
import hashlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import bench  # scripts/bench/bench.py: ports, BENCHMARKS.md sections

ROOT = bench.ROOT
SECTION = "group-rebalance"
KAFKA = os.path.join(ROOT, "scripts", "reference", "kafka")
SOURCE = os.path.join(ROOT, "scripts", "bench", "GroupRebalance.java")
PROTOCOLS = ("classic", "consumer")
BROKERS = ("samsa", "kafka-4.4")


def log(msg):
    print(f"groups: {msg}", file=sys.stderr, flush=True)


def kafka_home():
    """Kafka 4.4 as an installation (installed on first use): its libs/ and config/."""
    return subprocess.run([KAFKA, "bin"], check=True, capture_output=True, text=True).stdout.strip()


def build_harness(libs):
    """Compiles GroupRebalance.java into .tools/bench-groups/<digest>, again only when it
    changed. Returns the classpath to run it with."""
    cp = ":".join(os.path.join(libs, j) for j in sorted(os.listdir(libs)) if j.endswith(".jar"))
    with open(SOURCE, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:16]
    out = os.path.join(ROOT, ".tools", "bench-groups", digest)
    if not os.path.isdir(out):
        staging = f"{out}.partial-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        os.makedirs(staging)
        subprocess.run(["javac", "-nowarn", "-d", staging, "-cp", cp, SOURCE], check=True)
        try:
            os.rename(staging, out)
        except OSError:
            # Another run compiled the same source first.
            shutil.rmtree(staging, ignore_errors=True)
            if not os.path.isdir(out):
                raise
    return out + ":" + cp


def shared_settings(args):
    """The settings both brokers get: one node's replication factors, the assignment interval."""
    interval = str(args.assignment_interval)
    return {"offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.consumer.assignment.interval.ms": interval}


class Samsa:
    name = "samsa"

    def __init__(self, binary, data, settings):
        self.binary, self.data, self.settings = binary, data, settings
        self.proc = None
        self.bootstrap = None

    def start(self):
        os.makedirs(self.data)
        port = bench.free_port()
        cmd = [self.binary, f"--listeners=PLAINTEXT://127.0.0.1:{port}",
               f"--log.dirs={os.path.join(self.data, 'data')}", "--metrics.listener="]
        cmd += [f"--{k}={v}" for k, v in self.settings.items()]
        self.log = open(os.path.join(self.data, "samsa.log"), "w")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.log,
                                     stdin=subprocess.DEVNULL)
        bench.wait_listening(port, self.proc, "samsa")
        self.bootstrap = f"127.0.0.1:{port}"

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


class Kafka:
    name = "kafka-4.4"

    def __init__(self, data, settings):
        self.data, self.settings = data, settings
        self.started = False
        self.bootstrap = None

    def start(self):
        os.makedirs(self.data)
        config = os.path.join(self.data, "bench.properties")
        with open(config, "w") as f:
            f.write("# written by scripts/bench/groups: what both brokers are given\n")
            for k, v in self.settings.items():
                f.write(f"{k}={v}\n")
        env = dict(os.environ, KAFKA_HEAP_OPTS="-Xmx1G -Xms1G")
        self.started = True  # from here on its cluster.json may name pids to stop
        self.bootstrap = subprocess.run([KAFKA, "start", os.path.join(self.data, "cluster"),
                                         "--config", config], check=True, env=env,
                                        capture_output=True, text=True).stdout.strip()

    def stop(self):
        if self.started:
            # Stops the node by the pid its cluster.json names (SIGTERM, SIGKILL after 30 s).
            subprocess.run([KAFKA, "stop", os.path.join(self.data, "cluster")])
            self.started = False


def run_harness(classpath, home, broker, protocol, args, data):
    """One broker, one protocol: returns {"form": ms, "join": [ms..], "leave": [ms..]} and the
    status ("ok" or "failed:<phase>: <reason>")."""
    tag = f"{broker.name.replace('.', '')}-{protocol}"
    cmd = ["java", "-Xmx1g", "-XX:+UseG1GC",
           "-Dlog4j2.configurationFile=" + os.path.join(home, "config", "tools-log4j2.properties"),
           "-cp", classpath, "GroupRebalance", "--bootstrap", broker.bootstrap,
           "--protocol", protocol, "--topic", f"groups-{protocol}", "--group", f"bench-{tag}",
           "--members", str(args.members), "--partitions", str(args.partitions),
           "--rounds", str(args.rounds)]
    out = {"form": None, "join": [], "leave": []}
    status = "ok"
    err = open(os.path.join(data, f"harness-{tag}.log"), "w")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL,
                            text=True)
    try:
        for line in proc.stdout:
            line = line.rstrip("\n")
            if line.startswith("RESULT "):
                parts = line.split()
                phase = parts[1]
                ms = float(parts[3].split("=", 1)[1])
                if phase == "form":
                    out["form"] = ms
                else:
                    out[phase].append(ms)
                log(f"{broker.name} {protocol}: {phase} {parts[2]} {ms:.0f} ms")
            elif line.startswith("FAILED "):
                status = "failed:" + line[len("FAILED "):]
                log(f"{broker.name} {protocol}: {line}")
            elif line:
                log(f"{broker.name} {protocol}: {line}")
        proc.wait(120)
        if proc.returncode != 0 and status == "ok":
            status = f"failed:harness exited with {proc.returncode} (see {err.name})"
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        err.close()
    return out, status


def median(xs):
    return statistics.median(xs) if xs else None


def fmt_ms(v):
    return "-" if v is None else f"{v:.0f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1,
                    help="start each broker this many times, alternating which goes first")
    ap.add_argument("--rounds", type=int, default=5, help="joins and leaves per group")
    ap.add_argument("--members", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=200)
    ap.add_argument("--assignment-interval", type=int, default=0,
                    help="group.consumer.assignment.interval.ms of both brokers")
    ap.add_argument("--brokers", default=",".join(BROKERS),
                    help="a subset to try things out (the section is written only with both)")
    ap.add_argument("--protocols", default=",".join(PROTOCOLS))
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--command", default="scripts/bench/groups")
    args = ap.parse_args()
    brokers = [b for b in BROKERS if b in args.brokers.split(",")]
    protocols = [p for p in PROTOCOLS if p in args.protocols.split(",")]
    if len(brokers) < len(BROKERS) or len(protocols) < len(PROTOCOLS):
        args.no_write = True
    # A SIGTERM unwinds like Ctrl-C, so that every broker and JVM this run started is stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    started = time.time()
    load_at_start = " ".join(open("/proc/loadavg").read().split()[:3])
    home = kafka_home()
    classpath = build_harness(os.path.join(home, "libs"))
    target_dir = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    binary = os.path.join(target_dir, "release", "samsa")
    data_root = os.path.join(ROOT, ".tools", "bench-data")
    os.makedirs(data_root, exist_ok=True)
    work = tempfile.mkdtemp(prefix="groups-", dir=data_root)
    settings = shared_settings(args)
    kafka_settings = dict(settings)
    samples = {(b, p): {"form": [], "join": [], "leave": []} for b in BROKERS for p in PROTOCOLS}
    statuses = {(b, p): "ok" for b in BROKERS for p in PROTOCOLS}
    failed = False
    try:
        for run in range(args.runs):
            order = brokers if run % 2 == 0 else list(reversed(brokers))
            for name in order:
                data = os.path.join(work, f"{name}-{run + 1}")
                broker = (Samsa(binary, data, settings) if name == "samsa"
                          else Kafka(data, kafka_settings))
                log(f"run {run + 1}: starting {name}")
                try:
                    broker.start()
                    for protocol in protocols:
                        got, status = run_harness(classpath, home, broker, protocol, args, data)
                        s = samples[(name, protocol)]
                        if got["form"] is not None:
                            s["form"].append(got["form"])
                        s["join"] += got["join"]
                        s["leave"] += got["leave"]
                        if status != "ok":
                            statuses[(name, protocol)] = status
                            failed = True
                finally:
                    broker.stop()
    finally:
        # Logs stay when something failed; the data of a clean run goes.
        if failed:
            log(f"logs of the brokers and harnesses: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    results = {}
    for key, s in samples.items():
        results[key] = {k: median(v) for k, v in s.items()}
        results[key]["n"] = (len(s["join"]), len(s["leave"]))
    for (b, p), r in results.items():
        if b not in brokers or p not in protocols:
            continue
        print(f"GBENCH test=group.rebalance broker={b} protocol={p} members={args.members} "
              f"partitions={args.partitions} join_ms={fmt_ms(r['join'])} "
              f"leave_ms={fmt_ms(r['leave'])} form_ms={fmt_ms(r['form'])} "
              f"joins={r['n'][0]} leaves={r['n'][1]} "
              f"join_samples_ms={','.join(fmt_ms(v) for v in samples[(b, p)]['join']) or '-'} "
              f"leave_samples_ms={','.join(fmt_ms(v) for v in samples[(b, p)]['leave']) or '-'} "
              f"status={statuses[(b, p)].split(' ')[0]}",
              flush=True)

    def ratio(p, k):
        s, kf = results[("samsa", p)][k], results[("kafka-4.4", p)][k]
        return None if s is None or not kf else s / kf

    for p in protocols:
        if len(brokers) < 2:
            break
        rj, rl = ratio(p, "join"), ratio(p, "leave")
        print(f"GBENCH-RATIO protocol={p} of=kafka-4.4 "
              f"join={'-' if rj is None else f'{rj:.2f}'} leave={'-' if rl is None else f'{rl:.2f}'}",
              flush=True)
    took = time.time() - started
    if args.no_write:
        return 1 if failed else 0
    cores = os.cpu_count()
    lines = [
        f"<!-- {SECTION}:start (written by scripts/bench/groups) -->",
        "## Group rebalance: a member joins or leaves a group of 100",
        "",
        f"`{args.command}` on {datetime.date.today().isoformat()}: one node of each broker on "
        f"loopback, {cores} cores, load average {load_at_start} at the start (other work ran on "
        "the machine, so these figures are noisy). A topic of "
        f"{args.partitions} partitions and a group of {args.members} Java consumers (Kafka "
        "4.4's client, one JVM, a thread each, polling every 100 ms, auto commit on, "
        "max.poll.records=10, otherwise the client's defaults: classic rebalances eagerly with "
        "the range assignor and heartbeats every 3 s; consumer groups heartbeat every 5 s, the "
        f"brokers' default). {args.runs} start(s) of each broker, {args.rounds} joins and "
        f"{args.rounds} leaves per group, each after a pause of 1 to 6 s (the same pseudo-random "
        "sequence on both brokers: members heartbeat on a fixed interval counted from the last "
        "rebalance, so a change's wait depends on where in it the change falls), medians in ms. "
        "**join**: from the new member's "
        "subscribe() until the group is stable with it holding a partition; **leave**: from a "
        "member's close() until the group is stable without it. Stable: the consumers' own "
        "assignment() views hold every partition exactly once, and Admin describeConsumerGroups "
        "says STABLE with exactly those members and their partitions (consumer groups: every "
        "target assignment reached). Views are read after each 100 ms poll, so a figure may be "
        "late by one poll. Both brokers run their defaults (group.initial.rebalance.delay.ms "
        "3000, which delays only the group's forming) except the internal topics' replication "
        "factors (1) and group.consumer.assignment.interval.ms, set to "
        f"{args.assignment_interval} on both (both recompute a consumer group's target at most "
        "once per that interval, 1000 ms by default, at a member's first heartbeat after it). Both "
        "protocols wait on the clients' heartbeats more than on the broker: a classic rebalance "
        "starts for the other members at their next heartbeat (every 3 s, in step since the "
        "last rebalance), and a consumer group is STABLE only when every member has heartbeated "
        "once at the new epoch, so its figures sit near the 5 s heartbeat interval. **form**: "
        "from starting the members until the first stable state, one sample per start "
        "(classic includes the initial delay; the client JVM is still warming up). "
        f"Took {took:.0f} s.",
        "",
        "| broker | protocol | join → stable (ms) | leave → stable (ms) | Samsa/Kafka join | "
        "Samsa/Kafka leave | form (ms) | every join, leave (ms) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in PROTOCOLS:
        for b in BROKERS:
            r = results[(b, p)]
            rj = ratio(p, "join") if b == "samsa" else None
            rl = ratio(p, "leave") if b == "samsa" else None
            every = (" ".join(fmt_ms(v) for v in samples[(b, p)]["join"]) + "; "
                     + " ".join(fmt_ms(v) for v in samples[(b, p)]["leave"]))
            row = (f"| {b} | {p} | {fmt_ms(r['join'])} | {fmt_ms(r['leave'])} | "
                   f"{'' if rj is None else f'{rj:.2f}'} | {'' if rl is None else f'{rl:.2f}'} | "
                   f"{fmt_ms(r['form'])} | {every} |")
            lines.append(row)
    for (b, p), status in statuses.items():
        if status != "ok":
            lines.append("")
            lines.append(f"{b} {p}: {status}")
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
