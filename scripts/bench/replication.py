#!/usr/bin/env python3
"""Samsa's replication benchmark: what replication costs, and how long an application goes
without an acknowledgement when a partition's leader dies or shuts down.

- Cost: 1 KiB acks=all records into one partition at replication factor 3 on three nodes
  (min.insync.replicas=2) against replication factor 1 on one node, measured in the same run
  with the same binary: throughput (rdkafka_performance), broker CPU seconds per million
  records (every node's user + system time from /proc/<pid>/stat, summed), and produce
  latency at a fixed 1,000 records/s (samsa-e2e-latency, linger.ms=0). The figures are ratios
  of RF=3 over RF=1.
- Failover: an idempotent acks=all producer (samsa-e2e-latency --idempotence, librdkafka) sends
  1 KiB records at a steady rate to a partition of RF=3 on three nodes; the partition's
  leader gets SIGKILL (it is fenced once broker.session.timeout.ms passes without a heartbeat)
  or SIGTERM (a controlled shutdown moves its leadership first). Each delivery report's time
  is recorded: the longest time between two acknowledgements, and every error the
  application was told (failed deliveries, and the client's error callback).
- Against Apache Kafka 4.4 (--kafka, the default when scripts/reference/kafka has installed
  it): the same cost figures on a three-node Kafka cluster (RF=3) and a one-node one (RF=1),
  CPU and RSS summed over the JVMs, and the same SIGKILL failovers, Kafka's nodes started with
  scripts/bench/kafka-rf3.properties (Kafka's defaults, with the session, heartbeat and quorum
  timeouts Samsa's nodes run with in the same run). Samsa's and Kafka's rounds alternate, one
  system's cluster at a time; every Samsa figure is also given as a ratio of Kafka's.

Every figure is printed as one parseable line:

  RBENCH test=<name> target=<rf1|rf3|cluster3> <key>=<value> ...

(Kafka's: target=kafka-rf1, kafka-rf3 and kafka3; `test=samsa_over_kafka target=rf1|rf3` holds
Samsa's figures as ratios of Kafka's), then one `RBENCH-TARGET met=yes|no PASS|MISS ...` line
per target,

and the "Replication" section of BENCHMARKS.md (between its marker comments) is rewritten; the
rest of the file is left as it is (scripts/bench/run and scripts/bench/metadata keep this
section when they rewrite theirs).

Run it through scripts/bench/replication, which builds what it needs first. Needs the
project's .venv (confluent-kafka) for creating and deleting topics.
"""

import argparse
import datetime
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import bench  # scripts/bench/bench.py: load generator runs, /proc readings, BENCHMARKS.md
import kafka_cluster  # scripts/bench/kafka_cluster.py: Apache Kafka 4.4 clusters
import metadata  # scripts/bench/metadata.py: clusters, Metadata and DescribeQuorum, lines

ROOT = bench.ROOT
SECTION = "replication"
RECORD_BYTES = 1024
# The targets for RF=3 on this 2-core machine.
CPU_RATIO_MAX = 3.3
P99_MS_MAX = 2.0
CONTROLLED_GAP_S_MAX = 1.0
# Against Apache Kafka 4.4 in the same run (--kafka): RF=3 records per broker CPU-second at
# least this many times Kafka's, and the longest gap after a leader's SIGKILL (median over the
# runs) no longer than Kafka's with the same broker.session.timeout.ms.
KAFKA_CPU_EFFICIENCY_MIN = 1.5
# SIGKILL: the leader is fenced after broker.session.timeout.ms, then a new one is elected and
# the client finds it; what that may add on top of the session timeout before the gap counts
# as too long (an election is one metadata record; the client's metadata refresh backs off
# up to retry.backoff.max.ms=1000).
ELECTION_ALLOWANCE_S = 2.0

# name -> (signal, whether the leader is also the metadata quorum's leader)
FAILOVER_CASES = {
    "sigkill": (signal.SIGKILL, False),
    "sigterm": (signal.SIGTERM, False),
    "sigkill-controller": (signal.SIGKILL, True),
}


def log(msg):
    print(f"replication: {msg}", file=sys.stderr, flush=True)


def emit(results, test, target, **figures):
    return metadata.emit(results, test, target, tag="RBENCH", **figures)


QUORUM_KEYS = ("controller.quorum.fetch.timeout.ms", "controller.quorum.election.timeout.ms",
               "controller.quorum.election.backoff.max.ms", "broker.session.timeout.ms")


def target_of(system, rf):
    """The RBENCH target of a cost figure: rf1/rf3 for Samsa, kafka-rf1/kafka-rf3 for Kafka."""
    return f"rf{rf}" if system == "samsa" else f"kafka-rf{rf}"


def new_cluster(args, system, directory, out_path, nodes):
    if system == "kafka":
        return kafka_cluster.KafkaCluster(directory, out_path, nodes=nodes,
                                          overrides=args.kafka_overrides)
    return metadata.Cluster(args.samsa, directory, out_path, nodes=nodes, extra=args.node_args)


def keep_logs(system, cluster, run_dir, name):
    if system == "kafka":
        kafka_cluster.keep_logs(cluster, run_dir, name)
    else:
        metadata.keep_logs(cluster.dir, run_dir)


# ---------------------------------------------------------------------------------------------
# Topics and partition state


def admin(bootstrap):
    from confluent_kafka.admin import AdminClient  # the .venv's confluent-kafka (librdkafka)
    return AdminClient({"bootstrap.servers": bootstrap})


def create_topic(bootstrap, name, replication_factor, assignment=None, extra_config=None):
    """One partition; min.insync.replicas=2 when replicated (so that acks=all survives one
    replica's loss and no more), 1 otherwise. `assignment` lists the replicas, the preferred
    leader first; without it the controller places them."""
    from confluent_kafka.admin import NewTopic
    config = {"min.insync.replicas": "2" if replication_factor > 1 else "1"}
    config.update(extra_config or {})
    if assignment:
        topic = NewTopic(name, 1, replica_assignment=[assignment], config=config)
    else:
        topic = NewTopic(name, 1, replication_factor, config=config)
    client = admin(bootstrap)  # kept until the futures are done: dropping it cancels them
    for f in client.create_topics([topic], operation_timeout=30).values():
        f.result(timeout=60)


def delete_topic(cluster, name, timeout_s=60.0):
    """Deletes the topic and waits until no node's data directory holds it any more."""
    client = admin(bootstrap_of(cluster))
    for f in client.delete_topics([name], operation_timeout=30).values():
        f.result(timeout=60)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        left = [e for i in cluster.pids for e in os.listdir(cluster.data_dir(i))
                if e.startswith(name + "-")]
        if not left:
            return True
        time.sleep(0.1)
    return False


def bootstrap_of(cluster, nodes=None):
    return ",".join(f"127.0.0.1:{cluster.client_port(i)}"
                    for i in sorted(nodes if nodes is not None else cluster.alive()))


def partition_state(port, topic, timeout_s=2.0):
    """(leader, leader epoch, replicas, isr) of the topic's partition 0 in the Metadata of the
    node at `port`, or None when it does not answer or has no leader for it."""
    out = {}
    try:
        metadata.topic_count(port, timeout_s, out)
    except OSError:
        return None
    state = out.get((topic, 0))
    if state is None or state[0] != 0 or state[1] < 0:
        return None
    return state[1:]


def wait_in_sync(cluster, topic, replicas, leader=None, timeout_s=60.0):
    """Waits until every live node reports the partition with all `replicas` in its ISR (and
    `leader` as its leader, when given); returns that state."""
    deadline = time.monotonic() + timeout_s
    state = None
    while time.monotonic() < deadline:
        states = [partition_state(cluster.client_port(i), topic) for i in cluster.alive()]
        state = states[0] if states else None
        if state and all(s == state for s in states) and len(state[3]) == replicas \
                and (leader is None or state[0] == leader):
            return state
        time.sleep(0.05)
    raise RuntimeError(f"{topic}: not in sync within {timeout_s:.0f} s (last seen: {state})")


def quorum_leader(cluster, timeout_s=30.0):
    """The node id of the metadata quorum's leader (the active controller)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for i in cluster.alive():
            found = metadata.describe_quorum(cluster.client_port(i), 1.0)
            if found is not None:
                return found[0]
        time.sleep(0.1)
    raise RuntimeError("no node reports a metadata quorum leader")


def node_cpu(cluster):
    """{node id: CPU seconds} of every live node."""
    return {i: bench.cpu_seconds(pid) for i, pid in cluster.alive().items()}


# ---------------------------------------------------------------------------------------------
# Replication cost


def cost_run(results, args, work, run_dir, rf, run, system="samsa"):
    """One cluster of `rf` nodes of `system` (samsa or kafka): idle CPU, a scratch
    write-and-delete, then throughput and fixed-rate latency on fresh topics of replication
    factor `rf`."""
    target = target_of(system, rf)
    name = f"{target}-{run}"
    cluster = new_cluster(args, system, os.path.join(work, name),
                          os.path.join(run_dir, f"{name}.out"), rf)
    cluster.start(timeout_s=180 if system == "kafka" else 120)
    try:
        bootstrap = bootstrap_of(cluster)
        time.sleep(1.0)
        before = sum(node_cpu(cluster).values())
        time.sleep(args.idle_s)
        idle_cpu_per_s = (sum(node_cpu(cluster).values()) - before) / args.idle_s

        recycle(args, cluster, rf, run, name)

        topic = f"rbench-throughput-rf{rf}-{run}"
        create_topic(bootstrap, topic, rf, extra_config=bounded_log(args))
        state = wait_in_sync(cluster, topic, rf)
        cpu0 = node_cpu(cluster)
        out, took = bench.run_tool(
            bench.perf_cmd(args, bootstrap, "-P", topic,
                           ["-s", str(RECORD_BYTES), "-a", "-1", "-c", str(args.count)]
                           + args.perf_arg),
            args.cap_s, f"{name}.throughput")
        cpu1 = node_cpu(cluster)
        rss = sum(bench.rss_mib(pid) or 0 for pid in cluster.alive().values())
        p = bench.parse_produced(out)
        if p is None or p["delivered"] == 0:
            raise RuntimeError(f"{name}: rdkafka_performance delivered nothing (see "
                               f"{run_dir}/{name}.throughput.out)")
        after = partition_state(cluster.client_port(state[0]), topic)
        cpu = {i: cpu1[i] - cpu0[i] for i in cpu1}
        per_m = 1e6 / p["delivered"]
        thr = emit(results, "throughput.1KiB.acks_all", target, run=run, nodes=rf,
                   msgs_per_s=p["msgs_per_s"], MB_per_s=p["MB_per_s"],
                   delivered=p["delivered"], failed=p["failed"], seconds=took,
                   broker_cpu_s=sum(cpu.values()),
                   cpu_s_per_M=sum(cpu.values()) * per_m,
                   # Without what the nodes spend idle in as much time (heartbeats, the
                   # quorum's no-op records, followers' long polls).
                   net_cpu_s_per_M=(sum(cpu.values()) - idle_cpu_per_s * took) * per_m,
                   leader_cpu_s_per_M=cpu[state[0]] * per_m,
                   follower_cpu_s_per_M=[cpu[i] * per_m for i in sorted(cpu) if i != state[0]]
                   or None,
                   idle_cpu_pct=idle_cpu_per_s * 100,
                   # Every node's resident memory summed, just after the run.
                   rss_mib=rss,
                   isr_after=len(after[3]) if after else None)

        topic = f"rbench-latency-rf{rf}-{run}"
        create_topic(bootstrap, topic, rf)
        wait_in_sync(cluster, topic, rf)
        cpu0 = node_cpu(cluster)
        journal = os.path.join(run_dir, f"{name}.latency.deliveries")
        out, _ = bench.run_tool(
            [args.e2e, "--bootstrap", bootstrap, "--topic", topic, "--rate", "1000",
             "--seconds", str(args.latency_s), "--warmup-seconds", "1",
             "--size", str(RECORD_BYTES), "--acks", "all", "--linger-ms", "0",
             "--deliveries", journal],
            args.latency_s + 90, f"{name}.latency")
        cpu1 = node_cpu(cluster)
        kv = bench.parse_e2e(out)
        if kv is None or kv.get("produce_p99_ms", "-") == "-":
            raise RuntimeError(f"{name}: no latency figures (see {run_dir}/{name}.latency.out)")
        num = lambda k: None if kv.get(k, "-") == "-" else float(kv[k])  # noqa: E731
        lat = emit(results, "latency.1KiB.rate_1000", target, run=run, nodes=rf,
                   produced=int(kv["produced"]), failed=kv["failed"],
                   # Records acknowledged per second: under 1,000 when the broker fell behind
                   # the offered rate (the latencies then grow with the backlog).
                   acked_per_s=num("msgs_per_s"),
                   produce_p50_ms=num("produce_p50_ms"), produce_p99_ms=num("produce_p99_ms"),
                   produce_p999_ms=num("produce_p999_ms"), e2e_p50_ms=num("e2e_p50_ms"),
                   e2e_p99_ms=num("e2e_p99_ms"),
                   broker_cpu_s=sum(cpu1[i] - cpu0[i] for i in cpu1),
                   **slow_episodes(journal))
        return thr, lat
    finally:
        cluster.stop()
        keep_logs(system, cluster, run_dir, name)
        shutil.rmtree(cluster.dir, ignore_errors=True)


def bounded_log(args):
    """The throughput topic's configs: with --retention-bytes, every replica deletes its oldest
    64 MiB segments once it holds more, so that the run writes into page cache its own deletions
    keep freeing. On this VM, memory the guest has not touched lately costs several times the
    CPU to write (the hypervisor backs it on first touch): unbounded, RF=3's three copies take
    three times as much of it as RF=1's one, and the ratio measures the VM's memory rather than
    replication (on one cluster, alternate runs gave 5.6 x to 15.8 x unbounded and 4.2 x to 5.7 x
    bounded). Both replication factors get the same bound."""
    if not args.retention_bytes:
        return {}
    return {"retention.bytes": str(args.retention_bytes),
            "segment.bytes": str(64 << 20),
            "file.delete.delay.ms": "0"}


def recycle(args, cluster, rf, run, name):
    """Writes as much as a throughput run to a scratch topic of the same replication factor
    and deletes it, outside the measured time, so that the measured writes reuse page-cache
    memory the nodes' own deleted segments freed (see bench.py's `recycle_page_cache`: memory
    fresh from this VM's hypervisor costs several times the CPU to touch, and RF=3 writes three
    times as much of it)."""
    if args.no_recycle:
        return
    topic = f"rbench-recycle-rf{rf}-{run}"
    create_topic(bootstrap_of(cluster), topic, rf)
    wait_in_sync(cluster, topic, rf)
    bench.run_tool(bench.perf_cmd(args, bootstrap_of(cluster), "-P", topic,
                                  ["-s", str(RECORD_BYTES), "-a", "-1", "-c", str(args.count)]),
                   args.cap_s, f"{name}.recycle")
    if not delete_topic(cluster, topic):
        log(f"rf{rf}: the scratch topic's directories were not all deleted within 60 s")
    time.sleep(0.5)


def cost(results, args, work, run_dir):
    """RF=1 and RF=3 alternately, `--cost-runs` times each, so that a shared machine's drift
    touches both alike; with --kafka, a Samsa round and a Kafka round alternately too."""
    for run in range(args.cost_runs):
        for system in args.systems:
            for rf in (1, 3):
                log(f"cost: {system}, replication factor {rf}, run {run + 1} of {args.cost_runs}")
                cost_run(results, args, work, run_dir, rf, run, system)
        kernel_floor(results, args, work, run)
        latency_floor(results, args, run, run_dir)


def latency_floor(results, args, run, run_dir):
    """The same fixed-rate latency run against samsa-discard-sink (acknowledges Produce,
    stores nothing): what the client and this machine's loopback and scheduling give with no
    broker work at all."""
    sink = subprocess.Popen([args.sink, "--listen", "127.0.0.1:0", "--partitions", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = sink.stdout.readline()
        addr = line.strip().rsplit(" ", 1)[-1]
        journal = os.path.join(run_dir, f"sink-{run}.latency.deliveries")
        out, _ = bench.run_tool(
            [args.e2e, "--bootstrap", addr, "--topic", "rbench-latency-sink", "--rate", "1000",
             "--seconds", str(args.latency_s), "--warmup-seconds", "1",
             "--size", str(RECORD_BYTES), "--acks", "all", "--linger-ms", "0",
             "--no-consumer", "--deliveries", journal], args.latency_s + 90, f"sink-{run}.latency")
        kv = bench.parse_e2e(out)
        if kv is None or kv.get("produce_p99_ms", "-") == "-":
            log(f"the latency floor run gave no figures (see {run_dir}/sink-{run}.latency.out)")
            return
        emit(results, "floor.latency", "sink", run=run,
             produce_p50_ms=float(kv["produce_p50_ms"]), produce_p99_ms=float(kv["produce_p99_ms"]),
             produce_p999_ms=float(kv["produce_p999_ms"]),
             **slow_episodes(journal))
    finally:
        sink.kill()
        sink.wait()


def kernel_floor(results, args, work, run):
    """The kernel's own RF=3 / RF=1 CPU ratio for moving the same bytes on this machine
    (samsa-bench-limits replication: read + pwrite per replica, the leader's sendfile to two
    followers, 64 MiB segments, four kept), in the same run: the floor under the broker's."""
    out = subprocess.run([args.limits, "replication", "--dir", work, "--mib", "1024"],
                         capture_output=True, text=True, timeout=600)
    line = next((x for x in out.stdout.splitlines() if "replication_floor" in x), None)
    if out.returncode != 0 or line is None:
        log(f"the kernel floor probe failed: {out.stderr.strip()}")
        return
    kv = dict(x.split("=", 1) for x in line.split()[2:])
    emit(results, "floor.replication", "kernel", run=run,
         rf1_cpu_s_per_GiB=float(kv["rf1_cpu_s_per_GiB"]),
         rf3_cpu_s_per_GiB=float(kv["rf3_cpu_s_per_GiB"]), ratio=float(kv["ratio"]))


# ---------------------------------------------------------------------------------------------
# Failover


def read_journal(path):
    """(acknowledgements [(scheduled_us, acked_us)], failed deliveries [(acked_us, error)],
    client errors [(at_us, text)]) from samsa-e2e-latency --deliveries."""
    acks, failed, client = [], [], []
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split(" ", 3)
            if parts[0] == "D":
                if parts[3] == "ok":
                    acks.append((int(parts[1]), int(parts[2])))
                else:
                    failed.append((int(parts[2]), parts[3]))
            elif parts[0] == "E":
                client.append((int(parts[1]), " ".join(parts[2:])))
    return acks, failed, client


def slow_episodes(journal, over_ms=2.0, warmup_s=1.0):
    """Where a latency run's tail comes from: the acknowledgements slower than `over_ms` after
    the warm-up, grouped into episodes (slow records less than 50 ms apart), with the longest
    episode's worst latency and when it began (seconds into the measured part)."""
    try:
        acks, _, _ = read_journal(journal)
    except OSError:
        return {}
    if not acks:
        return {}
    acks.sort()
    start = acks[0][0] + warmup_s * 1e6
    slow = [(s, a - s) for s, a in acks if s >= start and a - s > over_ms * 1000]
    episodes = []
    for s, lat in slow:
        if episodes and s - episodes[-1][1] < 50_000:
            episodes[-1][1] = s
            episodes[-1][2] = max(episodes[-1][2], lat)
            episodes[-1][3] += 1
        else:
            episodes.append([s, s, lat, 1])
    worst = max(episodes, key=lambda e: e[2], default=None)
    return dict(slow_records=len(slow), slow_episodes=len(episodes),
                worst_episode_ms=worst[2] / 1000 if worst else None,
                worst_episode_records=worst[3] if worst else None,
                worst_episode_at_s=(worst[0] - start) / 1e6 if worst else None)


def error_kind(text):
    """The name of an error the client reported, as in "Global error: BrokerTransportFailure
    (Local: Broker transport failure): ..." (the whole first word when it has none)."""
    m = re.search(r"\b([A-Z]\w+) \(", text)
    return m.group(1) if m else text.split()[0]


def gaps(acks, kill_us, end_us=None):
    """Figures of the acknowledgement times around the signal at `kill_us`: the longest gap
    between consecutive acknowledgements (and where it starts, from the signal), from the
    signal to where it ends, and the longest delivery latency. With
    `end_us` (records were never acknowledged: the producer gave up waiting then), the time
    from the last acknowledgement to it counts as a gap too."""
    acked = sorted(a for _, a in acks)
    times = acked + ([max(end_us, acked[-1])] if end_us is not None and acked else [])
    if len(times) < 2:
        return None
    widest = max(range(1, len(times)), key=lambda k: times[k] - times[k - 1])
    return dict(
        longest_gap_s=(times[widest] - times[widest - 1]) / 1e6,
        gap_starts_s=(times[widest - 1] - kill_us) / 1e6,
        resumed_s=(times[widest] - kill_us) / 1e6,
        max_latency_s=max(a - s for s, a in acks) / 1e6)


def failover_run(args, cluster, run_dir, case, run, system="samsa"):
    sig, with_controller = FAILOVER_CASES[case]
    label = f"{'kafka-' if system == 'kafka' else ''}failover-{case}-{run}"
    controller = quorum_leader(cluster)
    others = sorted(i for i in cluster.pids if i != controller)
    victim = controller if with_controller else others[run % len(others)]
    assignment = [victim] + sorted(i for i in cluster.pids if i != victim)
    topic = f"rbench-failover-{case}-{run}"
    create_topic(bootstrap_of(cluster), topic, 3, assignment)
    wait_in_sync(cluster, topic, 3, leader=victim)

    journal = os.path.join(run_dir, f"{label}.deliveries")
    after_s = args.session_timeout_ms / 1000 + 10 if sig == signal.SIGKILL else 10
    seconds = args.kill_after_s + after_s
    proc, out_log = bench.start_tool(
        [args.e2e, "--bootstrap", bootstrap_of(cluster), "--topic", topic,
         "--rate", str(args.rate), "--seconds", str(seconds), "--warmup-seconds", "0",
         "--size", str(RECORD_BYTES), "--acks", "all", "--linger-ms", str(args.linger_ms),
         "--idempotence", "--no-consumer", "--deliveries", journal]
        + [x for kv in args.producer_arg for x in ("-X", kv)],
        label)
    time.sleep(args.kill_after_s)
    if proc.poll() is not None:
        raise RuntimeError(f"failover {case} run {run}: the producer exited before the signal "
                           f"(see {out_log.name})")
    state = partition_state(cluster.client_port(victim), topic)
    if state is None or state[0] != victim or len(state[3]) != 3:
        raise RuntimeError(f"failover {case} run {run}: before the signal the partition is "
                           f"{state}, not led by node {victim} with 3 in sync")
    controller_at_kill = quorum_leader(cluster)
    survivors = [i for i in cluster.pids if i != victim]
    pid = cluster.pids[victim]
    outcome = {}

    def watch_leader(t0):
        # Until a survivor's Metadata names another leader in a later epoch.
        while time.monotonic() - t0 < after_s + 30 and "leader" not in outcome:
            for i in survivors:
                s = partition_state(cluster.client_port(i), topic, 0.5)
                if s is not None and s[0] != victim and s[1] > state[1]:
                    outcome.setdefault("leader", (time.monotonic() - t0, s[0]))
                    return
            time.sleep(0.01)

    kill_us = int(time.time() * 1e6)
    t0 = time.monotonic()
    os.kill(pid, sig)
    watcher = threading.Thread(target=watch_leader, args=(t0,), daemon=True)
    watcher.start()
    exited_s = None
    while time.monotonic() - t0 < 60:
        if metadata.is_zombie(pid) or not os.path.exists(f"/proc/{pid}"):
            exited_s = time.monotonic() - t0
            break
        time.sleep(0.005)
    out = bench.finish_tool(proc, out_log, seconds + 90)
    end_us = int(time.time() * 1e6)
    watcher.join(timeout=after_s + 35)
    kv = bench.parse_e2e(out) or {}
    acks, failed, client = read_journal(journal) if os.path.exists(journal) else ([], [], [])
    produced = int(kv.get("produced", 0))
    # Records the producer sent but never heard of again within its 30 s flush: the partition
    # stalled (the gap then runs to the producer's end, a lower bound of the real one).
    unacked = int(kv.get("unacknowledged", 0)) if kv else max(0, produced - len(acks) - len(failed))
    g = gaps(acks, kill_us, end_us if unacked else None)
    if g is None:
        raise RuntimeError(f"failover {case} run {run}: no acknowledgement at all (see "
                           f"{out_log.name} and {journal})")
    kinds = sorted({error_kind(text) for _, text in client})
    return dict(victim=victim, controller=controller_at_kill,
                produced=produced, acked=len(acks), unacknowledged=unacked,
                delivery_errors=len(failed),
                delivery_error_kinds=sorted({e for _, e in failed}),
                client_errors=len(client), client_error_kinds=kinds,
                new_leader_s=outcome.get("leader", (None,))[0],
                # From the new leader's appearance in Metadata to the end of the longest gap:
                # the client's and the new leader's share of it.
                leader_to_ack_s=(g["resumed_s"] - outcome["leader"][0]
                                 if "leader" in outcome else None),
                victim_exit_s=exited_s, **g)


def log_run(system, case, run, r):
    log(f"failover {system} {case} run {run + 1}: node {r['victim']} (controller: node "
        f"{r['controller']}); longest gap {r['longest_gap_s']:.3f} s, starting "
        f"{r['gap_starts_s']:+.3f} s from the signal; new leader after "
        f"{fmt(r['new_leader_s'], 3)} s; {r['unacknowledged']} records never "
        f"acknowledged; delivery errors {r['delivery_errors']}, client errors "
        f"{r['client_errors']} {r['client_error_kinds']}")


def samsa_failover_round(args, cluster, run_dir, run, each):
    """Run `run` of every Samsa case, each from the cluster (re)started with all in sync."""
    for case, runs in args.failover_runs.items():
        if run >= runs:
            continue
        log(f"failover: samsa {case}, run {run + 1} of {runs}")
        cluster.start(timeout_s=120)
        try:
            r = failover_run(args, cluster, run_dir, case, run)
        finally:
            cluster.stop()
        log_run("samsa", case, run, r)
        each.setdefault(case, []).append(r)
        if r["unacknowledged"]:
            # The nodes' data as the stall left it, for whoever looks into it.
            kept = os.path.join(run_dir, f"failover-{case}-{run}-data")
            # Segments included (*.log); the nodes' own logs are kept beside already.
            shutil.copytree(cluster.dir, kept, ignore=shutil.ignore_patterns("node-*.log"))
            log(f"failover {case} run {run + 1}: the partition stalled; the nodes' data "
                f"is kept in {kept}")


def kafka_failover_round(args, cluster, run_dir, run, each):
    """Run `run` of the SIGKILL case on Kafka: the killed node is started again afterwards and
    the partition waited for until all three replicas are back in its ISR (`victim_back_s`,
    from the restart), so that the cluster is whole again."""
    runs = args.failover_runs.get("sigkill", 0)
    if run >= runs:
        return
    log(f"failover: kafka sigkill, run {run + 1} of {runs}")
    cluster.start(timeout_s=180)
    try:
        r = failover_run(args, cluster, run_dir, "sigkill", run, "kafka")
        began = time.monotonic()
        cluster.restart_node(r["victim"])
        wait_in_sync(cluster, f"rbench-failover-sigkill-{run}", 3, timeout_s=120)
        r["victim_back_s"] = time.monotonic() - began
    finally:
        cluster.stop()
    log_run("kafka", "sigkill", run, r)
    log(f"failover kafka sigkill run {run + 1}: node {r['victim']} restarted and back in the "
        f"ISR after {r['victim_back_s']:.1f} s")
    each.setdefault("sigkill", []).append(r)


def failover(results, args, work, run_dir):
    """Rounds: run k of every Samsa case, then (with --kafka) run k of Kafka's SIGKILL case, one
    system's cluster running at a time. Each round gets a new cluster on ports free then: a
    stopped cluster's fixed ports may meanwhile be taken (by the other system's clients'
    ephemeral ports, say) and it could not start again."""
    each = {system: {} for system in args.systems}
    for run in range(max(args.failover_runs.values(), default=0)):
        for system in args.systems:
            if system == "kafka" and run >= args.failover_runs.get("sigkill", 0) or \
                    system == "samsa" and all(run >= n for n in args.failover_runs.values()):
                continue
            name = f"{system}-failover-{run}"
            cluster = new_cluster(args, system, os.path.join(work, name),
                                  os.path.join(run_dir, f"{name}.out"), 3)
            try:
                if system == "kafka":
                    kafka_failover_round(args, cluster, run_dir, run, each[system])
                else:
                    samsa_failover_round(args, cluster, run_dir, run, each[system])
            finally:
                if system == "kafka" or cluster.proc is not None and cluster.proc.poll() is None:
                    cluster.stop()
                if cluster.pids:
                    keep_logs(system, cluster, run_dir, name)
                shutil.rmtree(cluster.dir, ignore_errors=True)
    for system in args.systems:
        for case, rs in each[system].items():
            emit_failover(results, args, case, "kafka3" if system == "kafka" else "cluster3", rs)


def emit_failover(results, args, case, target, each):
    gap = [r["longest_gap_s"] for r in each]
    back = [r["victim_back_s"] for r in each if "victim_back_s" in r]
    emit(results, f"failover.{case}", target, runs=len(each), rate=args.rate,
         session_timeout_ms=args.session_timeout_ms,
         longest_gap_s_median=statistics.median(gap), longest_gap_s_max=max(gap),
         longest_gap_s=gap,
         gap_starts_s=[r["gap_starts_s"] for r in each],
         resumed_s=[r["resumed_s"] for r in each],
         new_leader_s=[r["new_leader_s"] for r in each],
         leader_to_ack_s=[r["leader_to_ack_s"] for r in each],
         victim_exit_s=[r["victim_exit_s"] for r in each],
         max_latency_s=max(r["max_latency_s"] for r in each),
         victim_was_controller=[int(r["victim"] == r["controller"]) for r in each],
         produced=sum(r["produced"] for r in each), acked=sum(r["acked"] for r in each),
         unacknowledged=[r["unacknowledged"] for r in each],
         delivery_errors=sum(r["delivery_errors"] for r in each),
         delivery_error_kinds=sorted({k for r in each for k in r["delivery_error_kinds"]})
         or "none",
         client_errors=sum(r["client_errors"] for r in each),
         client_error_kinds="|".join(sorted({k for r in each for k in r["client_error_kinds"]}))
         .replace(" ", "_") or "none",
         **({"victim_back_s": back} if back else {}))


# ---------------------------------------------------------------------------------------------
# Report


def find_all(results, test, target):
    return [r for r in results if r["test"] == test and r["target"] == target]


def median_of(rows, key):
    values = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(values) if values else None


def ratio(a, b):
    return a / b if a is not None and b else None


def summary(results, system="samsa"):
    """Medians per replication factor and the ratios RF=3 over RF=1, of `system`."""
    out = {}
    for rf in (1, 3):
        thr = find_all(results, "throughput.1KiB.acks_all", target_of(system, rf))
        lat = find_all(results, "latency.1KiB.rate_1000", target_of(system, rf))
        out[rf] = dict(runs=len(thr),
                       **{k: median_of(thr, k) for k in (
                           "msgs_per_s", "MB_per_s", "cpu_s_per_M", "net_cpu_s_per_M",
                           "leader_cpu_s_per_M", "idle_cpu_pct", "rss_mib")},
                       **{k: median_of(lat, k) for k in (
                           "produce_p50_ms", "produce_p99_ms", "produce_p999_ms", "e2e_p99_ms",
                           "acked_per_s")})
        followers = [x for r in thr for x in r.get("follower_cpu_s_per_M") or []]
        out[rf]["follower_cpu_s_per_M"] = statistics.median(followers) if followers else None
    sinks = find_all(results, "floor.latency", "sink")
    out["sink"] = {k: median_of(sinks, k) for k in (
        "produce_p50_ms", "produce_p99_ms", "produce_p999_ms")} if sinks else None
    floors = find_all(results, "floor.replication", "kernel")
    out["floor"] = {k: median_of(floors, k) for k in (
        "rf1_cpu_s_per_GiB", "rf3_cpu_s_per_GiB", "ratio")} if floors else None
    out["ratio"] = {k: ratio(out[3][k], out[1][k]) for k in (
        "msgs_per_s", "cpu_s_per_M", "net_cpu_s_per_M", "produce_p50_ms", "produce_p99_ms")}
    return out


def against_kafka(results):
    """[(figure, replication, Samsa, Kafka, Samsa as a ratio of Kafka, what the ratio is, digits)]
    of what both systems measured in this run; a ratio above 1 is Samsa's advantage except
    where `what` says otherwise."""
    s, k = summary(results, "samsa"), summary(results, "kafka")
    rows = []
    for rf in (1, 3):
        if not (s[rf]["runs"] and k[rf]["runs"]):
            continue
        rows += [
            ("records/s (1 KiB, acks=all)", rf, s[rf]["msgs_per_s"], k[rf]["msgs_per_s"],
             ratio(s[rf]["msgs_per_s"], k[rf]["msgs_per_s"]), "Samsa / Kafka", 0),
            ("broker CPU s per M records", rf, s[rf]["cpu_s_per_M"], k[rf]["cpu_s_per_M"],
             ratio(k[rf]["cpu_s_per_M"], s[rf]["cpu_s_per_M"]),
             "Kafka / Samsa: Samsa's records per CPU-second over Kafka's", 3),
            ("without idle", rf, s[rf]["net_cpu_s_per_M"], k[rf]["net_cpu_s_per_M"],
             ratio(k[rf]["net_cpu_s_per_M"], s[rf]["net_cpu_s_per_M"]), "Kafka / Samsa", 3),
            ("RSS MiB, nodes summed", rf, s[rf]["rss_mib"], k[rf]["rss_mib"],
             ratio(s[rf]["rss_mib"], k[rf]["rss_mib"]), "Samsa / Kafka (lower is Samsa's)", 0),
            ("produce p99 ms at 1,000 records/s", rf, s[rf]["produce_p99_ms"],
             k[rf]["produce_p99_ms"], ratio(s[rf]["produce_p99_ms"], k[rf]["produce_p99_ms"]),
             "Samsa / Kafka (lower is Samsa's)", 3),
            ("records/s acknowledged in that run (1,000 offered)", rf, s[rf]["acked_per_s"],
             k[rf]["acked_per_s"], ratio(s[rf]["acked_per_s"], k[rf]["acked_per_s"]),
             "Samsa / Kafka (well under 1,000: the broker fell behind)", 0)]
    fs = find_all(results, "failover.sigkill", "cluster3")
    fk = find_all(results, "failover.sigkill", "kafka3")
    if fs and fk:
        for key, what in (("longest_gap_s_median", "median"), ("longest_gap_s_max", "max")):
            rows.append((f"SIGKILL of the leader: longest gap s, {what}", 3, fs[0][key],
                         fk[0][key], ratio(fs[0][key], fk[0][key]),
                         "Samsa / Kafka (lower is Samsa's)", 3))
    return rows


def emit_comparison(results):
    """One RBENCH line per figure both systems measured: Samsa's as a ratio of Kafka's."""
    names = {"records/s (1 KiB, acks=all)": "throughput_ratio",
             "broker CPU s per M records": "cpu_per_record_kafka_over_samsa",
             "without idle": "net_cpu_per_record_kafka_over_samsa",
             "RSS MiB, nodes summed": "rss_ratio",
             "produce p99 ms at 1,000 records/s": "p99_ratio",
             "records/s acknowledged in that run (1,000 offered)": "latency_run_acked_ratio"}
    by_rf = {}
    for figure, rf, _, _, r, _, _ in against_kafka(results):
        key = names.get(figure) or ("sigkill_gap_median_ratio" if "median" in figure
                                    else "sigkill_gap_max_ratio")
        by_rf.setdefault(rf, {})[key] = r
    for rf, figures in sorted(by_rf.items()):
        emit(results, "samsa_over_kafka", f"rf{rf}", **figures)


def targets(results, args):
    """(target, figure, met) for what this run measured."""
    s = summary(results)
    checks = kafka_targets(results, args)
    r = s["ratio"]
    if r["cpu_s_per_M"] is not None:
        floor = s["floor"]
        checks.append((f"RF=3 broker CPU per record at most {CPU_RATIO_MAX:g} x RF=1",
                       f"{r['cpu_s_per_M']:.2f} x ({s[3]['cpu_s_per_M']:.3f} / "
                       f"{s[1]['cpu_s_per_M']:.3f} s per million; without idle CPU "
                       f"{fmt(r['net_cpu_s_per_M'], 2)} x)"
                       + (f"; the kernel alone, moving the same bytes: {floor['ratio']:.2f} x"
                          if floor else ""),
                       r["cpu_s_per_M"] <= CPU_RATIO_MAX))
    if s[3]["produce_p99_ms"] is not None:
        checks.append((f"RF=3 produce p99 at 1,000 records/s under {P99_MS_MAX:g} ms",
                       f"{s[3]['produce_p99_ms']:.3f} ms (RF=1: {fmt(s[1]['produce_p99_ms'], 3)} "
                       "ms" + (f"; the client against a discard sink: "
                               f"{s['sink']['produce_p99_ms']:.3f} ms" if s["sink"] else "")
                       + ")", s[3]["produce_p99_ms"] < P99_MS_MAX))
    session_s = args.session_timeout_ms / 1000
    # The leader-is-controller case has no target of its own: see the section's text.
    for case in ("sigkill", "sigterm"):
        rows = find_all(results, f"failover.{case}", "cluster3")
        if not rows:
            continue
        f = rows[0]
        stalled = sum(f["unacknowledged"])
        errors = f"; {f['delivery_errors']} delivery errors" + (
            f"; {stalled:,} records never acknowledged (the partition stalled)" if stalled else "")
        if case == "sigterm":
            checks.append((f"SIGTERM (controlled shutdown): longest gap under "
                           f"{CONTROLLED_GAP_S_MAX:g} s, no delivery error",
                           f"{f['longest_gap_s_max']:.3f} s at most{errors}",
                           f["longest_gap_s_max"] < CONTROLLED_GAP_S_MAX
                           and f["delivery_errors"] == 0 and not stalled))
        else:
            bound = session_s + ELECTION_ALLOWANCE_S
            checks.append((f"SIGKILL of the leader: longest gap about broker.session.timeout.ms "
                           f"({session_s:g} s) plus an election (at most {bound:g} s), no delivery "
                           "error", f"{f['longest_gap_s_max']:.3f} s at most{errors}",
                           f["longest_gap_s_max"] <= bound and f["delivery_errors"] == 0
                           and not stalled))
    return checks


def kafka_targets(results, args):
    """Issue 46's targets against Kafka 4.4 measured in the same run."""
    checks = []
    s, k = summary(results, "samsa"), summary(results, "kafka")
    if s[3]["cpu_s_per_M"] and k[3]["cpu_s_per_M"]:
        r = k[3]["cpu_s_per_M"] / s[3]["cpu_s_per_M"]
        checks.append((f"RF=3 records per broker CPU-second at least "
                       f"{KAFKA_CPU_EFFICIENCY_MIN:g} x Kafka 4.4's",
                       f"{r:.2f} x (broker CPU s per million records, nodes summed: Samsa "
                       f"{s[3]['cpu_s_per_M']:.3f}, Kafka {k[3]['cpu_s_per_M']:.3f}; without "
                       f"idle CPU {fmt(ratio(k[3]['net_cpu_s_per_M'], s[3]['net_cpu_s_per_M']), 2)}"
                       " x)", r >= KAFKA_CPU_EFFICIENCY_MIN))
    fs = find_all(results, "failover.sigkill", "cluster3")
    fk = find_all(results, "failover.sigkill", "kafka3")
    if fs and fk:
        a, b = fs[0], fk[0]
        checks.append((f"SIGKILL of the leader at RF=3: longest gap no longer than Kafka 4.4's "
                       f"(medians; broker.session.timeout.ms={args.session_timeout_ms} on both)",
                       f"Samsa {a['longest_gap_s_median']:.3f} s (max "
                       f"{a['longest_gap_s_max']:.3f}), Kafka {b['longest_gap_s_median']:.3f} s "
                       f"(max {b['longest_gap_s_max']:.3f}); {a['delivery_errors']} and "
                       f"{b['delivery_errors']} delivery errors",
                       a["longest_gap_s_median"] <= b["longest_gap_s_median"]))
    return checks


def fmt(v, digits=1):
    return metadata.f(v, digits)


def kafka_section(results, args):
    """The comparison with Apache Kafka 4.4 measured in the same run, when there is one."""
    rows = against_kafka(results)
    if not rows:
        return []
    q = args.kafka_overrides
    L = ["### Against Apache Kafka 4.4", "",
         f"The same figures, measured in the same run, of Apache Kafka {kafka_cluster.VERSION} "
         "(`scripts/reference/kafka start --nodes 3`, or 1 for RF=1: KRaft nodes that are broker "
         "and controller each, one JVM per node with the 1 GiB heap and G1 flags of Kafka's own "
         "scripts), started with `scripts/bench/kafka-rf3.properties`: Kafka's defaults, with a "
         "deleted topic's files removed at once (for the scratch write-and-delete before each "
         "throughput run), and the timeouts Samsa's nodes had in this run: "
         + ", ".join(f"`{key}`={q[key]}" for key in sorted(q)) + ". Samsa's and Kafka's "
         "rounds alternate (Samsa RF=1 and RF=3, then Kafka RF=1 and RF=3, and again; in the "
         "failovers, run k of each Samsa case, then run k of Kafka's), one system's cluster "
         "running at a time. Kafka's CPU is every JVM's user + system time (its JIT compiler "
         "and garbage collector included), its RSS the JVMs' resident memory summed. Its "
         "failovers are the SIGKILL case below, the victim started again after each run until "
         "it is back in the partition's ISR. In the latency runs (linger.ms=0) every record is a "
         "Produce request of its own, and Kafka reads a connection's next request only once it "
         "has answered the one before: at acks=all a record per replication round trip. Where "
         "that is fewer than the 1,000 records/s offered, the producer's backlog grows and the "
         "latencies with it (`records/s acknowledged`; the client's own figure, over the "
         "warm-up too).", "",
         "| figure | replication | Samsa | Kafka 4.4 | ratio | ratio is |",
         "|---|---|---|---|---|---|"]
    for figure, rf, a, b, r, what, digits in rows:
        # Small ratios with three significant digits (0.00068 x, not 0.00 x).
        shown = "-" if r is None else f"{r:.2f}" if r >= 0.1 else f"{r:.3g}"
        L.append(f"| {figure} | RF={rf} | {fmt(a, digits)} | {fmt(b, digits)} | "
                 f"{shown} x | {what} |")
    return L + [""]


def section(results, args, machine, took_s):
    L = [f"<!-- {SECTION}:start (written by scripts/bench/replication; scripts/bench/run and "
         "scripts/bench/metadata keep it) -->", "## Replication", ""]
    L += [f"Measured {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')} in {took_s:.0f} s with "
          f"`{args.command}` ({args.mode} mode) on a release build: every node a real process on "
          "loopback (`samsa cluster local`), with its own data directory and free ports, the load "
          "generator on the same cores. Machine at this run: "
          + "; ".join(f"{k} {v}" for k, v in machine.items()) + ".", ""]
    if args.node_args:
        L += ["Every node was started with " + ", ".join(f"`{a}`" for a in args.node_args)
              + ".", ""]
    checks = targets(results, args)
    if checks:
        L += ["| target | figure | met |", "|---|---|---|"]
        L += [f"| {t} | {f} | {'yes' if ok else 'no'} |" for t, f, ok in checks]
        L.append("")
    L += kafka_section(results, args)
    s = summary(results)
    k = summary(results, "kafka")
    if s[1]["runs"] or s[3]["runs"]:
        L += ["### Replication cost", "",
              "One partition, 1 KiB records, acks=all. `RF=1`: one node; `RF=3`: three nodes, "
              "min.insync.replicas=2, the controller placing the replicas; the baseline is RF=1, "
              "measured in the same run with the same binary (each run a fresh cluster, RF=1 and "
              "RF=3 alternately). Throughput: rdkafka_performance "
              f"(`-a -1 -s {RECORD_BYTES}`, its own linger.ms=1000), stopped after "
              f"{args.cap_s:g} s or {args.count:,} records. Broker CPU: user + system seconds "
              "of every node (`/proc/<pid>/stat`) around the run, summed, per million records "
              "acknowledged; `without idle` leaves out what the same nodes spent idle in as "
              f"long (measured for {args.idle_s:g} s before: heartbeats, the quorum's no-op "
              "records, followers' long polls); leader and follower columns split RF=3's sum "
              "(a follower's CPU is its writes and its fetches). Latency: samsa-e2e-latency at "
              f"a fixed 1,000 records/s for {args.latency_s:g} s after 1 s of warm-up, "
              "linger.ms=0, delivery latency from each record's scheduled send time to its "
              "acknowledgement (a consumer tails the partition meanwhile: `e2e p99` is to "
              "consume, which needs the high watermark past the record). Before each "
              "throughput run the nodes write as much to a scratch topic of the same "
              "replication factor and delete it (see `recycle_page_cache` in bench.py)"
              + (f"; the throughput topics keep at most {args.retention_bytes >> 20} MiB per "
                 "replica (retention.bytes, 64 MiB segments, deleted at once), so that every "
                 "replica writes into page cache its own deletions free, as a long-running "
                 "broker does, rather than into memory this VM's hypervisor has to back first "
                 "(`bounded_log` in replication.py)" if args.retention_bytes else "")
              + ". Medians over the runs.", "",
              "| replication | runs | records/s | MB/s | broker CPU s per M records | without "
              "idle | leader | each follower | nodes idle, % of a core | RSS MiB | produce p50 "
              "ms | p99 ms | p99.9 ms | e2e p99 ms |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for system, rf in [("samsa", 1), ("samsa", 3)] + (
                [("kafka", 1), ("kafka", 3)] if k[1]["runs"] or k[3]["runs"] else []):
            x = (s if system == "samsa" else k)[rf]
            who = "" if system == "samsa" else "Kafka 4.4 "
            L.append(f"| {who}RF={rf} ({rf} node{'s' if rf > 1 else ''}) | {x['runs']} | "
                     f"{fmt(x['msgs_per_s'], 0)} | {fmt(x['MB_per_s'])} | "
                     f"{fmt(x['cpu_s_per_M'], 3)} | {fmt(x['net_cpu_s_per_M'], 3)} | "
                     f"{fmt(x['leader_cpu_s_per_M'], 3)} | "
                     f"{fmt(x['follower_cpu_s_per_M'], 3) if rf > 1 else '-'} | "
                     f"{fmt(x['idle_cpu_pct'])} | {fmt(x['rss_mib'], 0)} | "
                     f"{fmt(x['produce_p50_ms'], 3)} | "
                     f"{fmt(x['produce_p99_ms'], 3)} | {fmt(x['produce_p999_ms'], 3)} | "
                     f"{fmt(x['e2e_p99_ms'], 3)} |")
        for who, x in [("", s)] + ([("Kafka 4.4 ", k)] if k[1]["runs"] and k[3]["runs"] else []):
            r = x["ratio"]
            L.append(f"| {who}RF=3 / RF=1 | | {fmt(r['msgs_per_s'], 2)} x | | "
                     f"{fmt(r['cpu_s_per_M'], 2)} x | {fmt(r['net_cpu_s_per_M'], 2)} x | | | | | "
                     f"{fmt(r['produce_p50_ms'], 2)} x | {fmt(r['produce_p99_ms'], 2)} x | | |")
        L += ["", f"Target: RF=3's CPU per record at most {CPU_RATIO_MAX:g} times RF=1's (each "
              "replica's write plus the leader's serving of the followers' fetches, nothing "
              f"more) and its p99 at 1,000 records/s under {P99_MS_MAX:g} ms.", ""]
        L += ["Each latency run, with its records slower than 2 ms (from the client's delivery "
              "journal, grouped into stalls: slow records less than 50 ms apart) and its "
              "longest stall:", ""] + [
            f"- {label}: " + "; ".join(
                f"p99 {fmt(r.get('produce_p99_ms'), 3)} ms, {r.get('slow_records', '-')} slow "
                f"in {r.get('slow_episodes', '-')} stalls, longest "
                f"{fmt(r.get('worst_episode_ms'), 1)} ms ({r.get('worst_episode_records', '-')} "
                f"records, {fmt(r.get('worst_episode_at_s'), 1)} s in)" for r in rows)
            for label, rows in (("RF=1", find_all(results, "latency.1KiB.rate_1000", "rf1")),
                                ("RF=3", find_all(results, "latency.1KiB.rate_1000", "rf3")),
                                ("discard sink", find_all(results, "floor.latency", "sink")))
            if rows] + [""]
        fl = s["floor"]
        if fl:
            GiB_per_M = RECORD_BYTES * 1e6 / (1 << 30)
            L += ["The kernel's floor, measured in the same run (`samsa-bench-limits "
                  "replication`, median of "
                  f"{len(find_all(results, 'floor.replication', 'kernel'))}): the same bytes "
                  "moved with nothing of a broker around them, a leader thread reading a "
                  "loopback stream and appending it to 64 MiB segment files (four kept), and "
                  "at RF=3 also sending each appended range to two follower threads with "
                  "sendfile, which read and append it to their own segments; CPU of the "
                  "leader and followers, not of the producer, as the broker bench counts it. "
                  f"RF=1: {fl['rf1_cpu_s_per_GiB']:.3f} CPU s per GiB, RF=3: "
                  f"{fl['rf3_cpu_s_per_GiB']:.3f}, a ratio of {fl['ratio']:.2f} x. On loopback "
                  "the kernel runs a receiver's TCP processing in the sender's context, so a "
                  "producer pays for its leader's receive, but the leader pays for its "
                  "followers': RF=3 costs the replicas more than three times RF=1 before any "
                  "broker work. Per million 1 KiB records "
                  f"({GiB_per_M:.2f} GiB), the broker's CPU over that floor: RF=1 "
                  f"{fmt(s[1]['cpu_s_per_M'] - fl['rf1_cpu_s_per_GiB'] * GiB_per_M, 3)} s, "
                  f"RF=3 {fmt(s[3]['cpu_s_per_M'] - fl['rf3_cpu_s_per_GiB'] * GiB_per_M, 3)} s "
                  "(three nodes' request handling, the followers' checksums, the leader's "
                  "fetch answers).", ""]
    if s.get("sink"):
        k = s["sink"]
        L += ["The latency floor, measured in the same run: the same samsa-e2e-latency run "
              "(without its consumer) against samsa-discard-sink, which acknowledges Produce "
              "and stores nothing: produce p50 "
              f"{k['produce_p50_ms']:.3f} ms, p99 {k['produce_p99_ms']:.3f} ms, p99.9 "
              f"{k['produce_p999_ms']:.3f} ms (median of "
              f"{len(find_all(results, 'floor.latency', 'sink'))}): the client, loopback and "
              "this VM's scheduling with no broker work at all. Stalls of a few "
              "milliseconds about once a second, in which several consecutive records wait, "
              "show up against the sink too, and set the p99.9 of every row. `perf sched "
              "timehist` shows one source: this VM's kernel is not preemptible "
              "(CONFIG_PREEMPT_NONE) and its DAMON reclaim thread (kdamond) holds a CPU for 1 "
              "to 4 ms twice a second, while a thread woken onto that CPU waits even with "
              "the other one idle.", ""]
    fo = [r for r in results if r["test"].startswith("failover.")]
    if fo:
        L += ["### Failover", "",
              f"Three nodes; a topic of one partition, RF=3, min.insync.replicas=2, its leader "
              "placed by a manual assignment on a node that is not the active controller (the "
              "metadata quorum's leader, from DescribeQuorum), except in the `...-controller` "
              "rows, where it is. An idempotent acks=all librdkafka producer "
              f"(samsa-e2e-latency --idempotence, linger.ms={args.linger_ms}, bootstrap through "
              f"all three nodes) sends 1 KiB records at {args.rate:,} records/s; "
              f"{args.kill_after_s:g} s in, the leader's process gets the signal. SIGKILL: the "
              "node is fenced once `broker.session.timeout.ms` "
              f"(**{args.session_timeout_ms:,} ms** in this run; "
              f"`broker.heartbeat.interval.ms`={args.heartbeat_ms}) passes without a heartbeat, "
              "then a new leader is elected from the ISR; SIGTERM: a controlled shutdown, which "
              "moves the node's leaderships before it stops. Each run starts from the cluster "
              "restarted with all three replicas in sync. The `SIGKILL-CONTROLLER` rows have no "
              "target: there the metadata quorum first has to elect another controller ("
              + ", ".join(f"`{k}`={args.quorum[k]}" for k in (
                  "controller.quorum.fetch.timeout.ms", "controller.quorum.election.timeout.ms"))
              + "), which, like Kafka's, starts every broker's session afresh, so expect about "
              "those plus the session timeout.", "",
              "`longest gap`: the longest time between two consecutive acknowledgements (delivery "
              "reports, timed as the client hands them to the application) over the whole run; "
              "`starts` and `ends`: where that gap begins and ends, from the signal (the "
              "acknowledgements of records already in flight may still arrive just after it). "
              "`new leader`: from the signal until a surviving "
              "node's Metadata names another leader in a later epoch; `to ack`: from then to the "
              "gap's end (the client's and the new leader's share of the gap). "
              "`victim exited`: until "
              "the signalled process was gone (SIGTERM: the controlled shutdown's length). "
              "`never acknowledged`: records still without a delivery report when the producer "
              "gave up its final 30 s flush (the partition stalled; the gap then runs to the "
              "producer's end, a lower bound, and the nodes' data is kept beside the run's logs). "
              "`delivery errors`: records whose delivery failed (what an application sees as an "
              "error); `client errors`: what librdkafka's error callback reported meanwhile (it "
              "reports a lost connection there even when it retries on its own).", "",
              "| signal | runs | longest gap s: median, max (each) | starts s (each) | ends "
              "s (each) | new leader s (each) | to ack s (each) | victim exited s (each) | "
              "longest delivery s | "
              "victim was controller | records acked / produced | delivery errors | client "
              "errors (kinds) |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]

        def each(xs, digits=3):
            return ", ".join("-" if x is None else f"{x:.{digits}f}" for x in xs)

        for r in fo:
            L.append(
                f"| {r['test'].split('.', 1)[1].upper()}"
                + (" (**Kafka 4.4**; the victim back in the ISR "
                   f"{each(r['victim_back_s'], 1)} s after its restart)"
                   if r["target"] == "kafka3" and r.get("victim_back_s") else
                   " (**Kafka 4.4**)" if r["target"] == "kafka3" else "")
                + f" | {r['runs']} | "
                f"{r['longest_gap_s_median']:.3f}, {r['longest_gap_s_max']:.3f} "
                f"({each(r['longest_gap_s'])}) | {each(r['gap_starts_s'])} | "
                f"{each(r['resumed_s'])} | {each(r['new_leader_s'])} | "
                f"{each(r['leader_to_ack_s'])} | "
                f"{each(r['victim_exit_s'])} | {r['max_latency_s']:.3f} | "
                f"{sum(r['victim_was_controller'])} of {r['runs']} | "
                f"{r['acked']:,} / {r['produced']:,}"
                + (f" (**{sum(r['unacknowledged']):,} never acknowledged**: "
                   f"{each(r['unacknowledged'], 0)})" if sum(r["unacknowledged"]) else "")
                + f" | {r['delivery_errors']}"
                + (f" ({', '.join(r['delivery_error_kinds'])})" if r['delivery_errors'] else "")
                + f" | {r['client_errors']} ({r['client_error_kinds'].replace('|', '; ')}) |")
        L.append("")
    L += metadata.section_end(
        results, SECTION,
        "Rerun: `scripts/bench/replication` (default: 3 cost runs, 5 failover runs per signal, "
        "about 35 minutes once built, Kafka included), `--quick` (1 cost run, 2 failover runs "
        "per signal, shorter), `--skip cost|failover`, `--cases sigkill,sigterm,sigkill-controller`, "
        "`--session-timeout-ms N` (passed to every node), `--rate N`, `--producer-arg "
        "debug=msg,protocol` (the failover producer's librdkafka log), `--no-kafka` (Samsa "
        "only; `--kafka` is the default once `scripts/reference/kafka install` has run), "
        "`--no-write`. Raw tool "
        "output, each failover run's delivery journal and the nodes' logs are under "
        "`.tools/bench-runs/replication-*/`.")
    return "\n".join(L)


# ---------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samsa", required=True)
    ap.add_argument("--e2e", required=True, help="samsa-e2e-latency")
    ap.add_argument("--perf", required=True, help="rdkafka_performance")
    ap.add_argument("--limits", required=True, help="samsa-bench-limits")
    ap.add_argument("--sink", required=True, help="samsa-discard-sink")
    ap.add_argument("--quick", action="store_true",
                    help="a few minutes: 1 cost run, 2 failover runs per signal, shorter runs")
    ap.add_argument("--skip", default="", help="comma-separated: cost,failover")
    ap.add_argument("--cost-runs", type=int, help="runs of RF=1 and of RF=3 (default 3; quick 1)")
    ap.add_argument("--failover-runs", type=int,
                    help="runs per signal (default 5; quick 2); the leader-is-controller case "
                         "gets half as many, at least 1")
    ap.add_argument("--cases", default=",".join(FAILOVER_CASES),
                    help="failover cases to run, comma-separated (default: all of "
                         f"{','.join(FAILOVER_CASES)})")
    ap.add_argument("--rate", type=int, default=2000, help="failover producer's records/s")
    ap.add_argument("--linger-ms", type=int, default=5,
                    help="failover producer's linger.ms (librdkafka's default: 5)")
    ap.add_argument("--kill-after-s", type=float, default=5.0,
                    help="seconds of steady production before the signal")
    ap.add_argument("--session-timeout-ms", type=int,
                    help="broker.session.timeout.ms for every node (default: the broker's)")
    ap.add_argument("--samsa-arg", action="append", default=[],
                    help="one more --key=value property for every node (repeatable)")
    ap.add_argument("--perf-arg", action="append", default=[],
                    help="one more argument for rdkafka_performance in the throughput runs")
    ap.add_argument("--producer-arg", action="append", default=[], metavar="KEY=VALUE",
                    help="a librdkafka property for the failover producer, such as "
                         "debug=msg,protocol (its log goes to the run's failover-*.out)")
    ap.add_argument("--retention-bytes", type=int, default=256 << 20,
                    help="retention.bytes of the throughput topics, 64 MiB segments (0: "
                         "unbounded); see bounded_log()")
    ap.add_argument("--no-recycle", action="store_true",
                    help="skip the scratch write-and-delete before each throughput run")
    ap.add_argument("--kafka", action=argparse.BooleanOptionalAction, default=None,
                    help="the same figures on Apache Kafka 4.4 (three nodes and one), Samsa's "
                         "as ratios of Kafka's (default: on when scripts/reference/kafka has "
                         "installed it)")
    ap.add_argument("--data-root", default=os.path.join(ROOT, ".tools", "bench-data"))
    ap.add_argument("--runs-root", default=os.path.join(ROOT, ".tools", "bench-runs"),
                    help="where the run's logs go (a replication-<time> folder in it)")
    ap.add_argument("--out", default=os.path.join(ROOT, "BENCHMARKS.md"))
    ap.add_argument("--no-write", action="store_true", help="print the figures only")
    ap.add_argument("--command", default="scripts/bench/replication")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    if skip - {"cost", "failover"}:
        ap.error(f"--skip takes cost and failover, not {','.join(sorted(skip))}")
    args.mode = "quick" if args.quick else "default"
    args.cost_runs = args.cost_runs or (1 if args.quick else 3)
    runs = args.failover_runs or (2 if args.quick else 5)
    cases = [c for c in args.cases.split(",") if c]
    if set(cases) - set(FAILOVER_CASES):
        ap.error(f"--cases takes {', '.join(FAILOVER_CASES)}")
    args.failover_runs = {c: runs if c in ("sigkill", "sigterm") else max(1, runs // 2)
                          for c in FAILOVER_CASES if c in cases}
    args.count = 1_000_000 if args.quick else 4_000_000
    args.cap_s = 5.0 if args.quick else 15.0
    args.latency_s = 5 if args.quick else 30
    args.idle_s = 3.0 if args.quick else 5.0
    args.heartbeat_ms = metadata.broker_default("broker.heartbeat.interval.ms")
    args.quorum = {key: metadata.broker_default(key) for key in QUORUM_KEYS}
    args.node_args = list(args.samsa_arg)
    if args.session_timeout_ms:
        args.node_args.append(f"--broker.session.timeout.ms={args.session_timeout_ms}")
    else:
        args.session_timeout_ms = int(metadata.broker_default("broker.session.timeout.ms"))
    if args.kafka is None:
        args.kafka = kafka_cluster.installed()
        if not args.kafka:
            log(f"Apache Kafka {kafka_cluster.VERSION} is not installed (scripts/reference/kafka "
                "install): Samsa only")
    elif args.kafka and not kafka_cluster.installed():
        ap.error(f"--kafka: Apache Kafka {kafka_cluster.VERSION} is not installed "
                 "(scripts/reference/kafka install)")
    args.systems = ["samsa", "kafka"] if args.kafka else ["samsa"]
    # Kafka's nodes get the timeouts Samsa's have in this run (--samsa-arg ones included).
    args.kafka_overrides = {k: v for k, v in args.quorum.items() if v is not None}
    args.kafka_overrides["broker.heartbeat.interval.ms"] = args.heartbeat_ms
    args.kafka_overrides["broker.session.timeout.ms"] = str(args.session_timeout_ms)
    for a in args.samsa_arg:
        key, _, value = a.lstrip("-").partition("=")
        if key in args.kafka_overrides:
            args.kafka_overrides[key] = value

    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = os.path.join(args.runs_root, f"replication-{stamp}")
    os.makedirs(run_dir, exist_ok=True)
    bench.RUN_DIR = run_dir  # where bench.run_tool keeps the load generators' output
    os.makedirs(args.data_root, exist_ok=True)
    work = tempfile.mkdtemp(prefix="replication-", dir=args.data_root)
    bench.LOAD_AT_START = " ".join(open("/proc/loadavg").read().split()[:3])
    log(f"work in {work}, logs in {run_dir}; broker.session.timeout.ms={args.session_timeout_ms}")

    def stop(*_):
        bench.stop_tools()
        metadata.stop_everything()
        kafka_cluster.stop_all()
        sys.exit(130)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop)
    results = []
    began = time.monotonic()
    try:
        if "cost" not in skip:
            cost(results, args, work, run_dir)
        if "failover" not in skip:
            failover(results, args, work, run_dir)
    finally:
        bench.stop_tools()
        metadata.stop_everything()
        kafka_cluster.stop_all()
        shutil.rmtree(work, ignore_errors=True)
    emit_comparison(results)
    took = time.monotonic() - began
    with open(os.path.join(run_dir, "results.json"), "w") as fh:
        json.dump(results, fh, indent=1)
    for t, figure, ok in targets(results, args):
        print(f"RBENCH-TARGET met={'yes' if ok else 'no'} {'PASS' if ok else 'MISS'} {t}: "
              f"{figure}", flush=True)
    if args.no_write:
        return
    machine = bench.machine_description(argparse.Namespace(data_root=args.data_root,
                                                           perf=args.perf))
    text = open(args.out).read() if os.path.exists(args.out) else "# Samsa benchmarks\n"
    with open(args.out, "w") as fh:
        fh.write(bench.replace_marked_section(text, SECTION, section(results, args, machine,
                                                                     took)))
    log(f"wrote the replication section of {args.out} in {took:.0f} s")


if __name__ == "__main__":
    main()
