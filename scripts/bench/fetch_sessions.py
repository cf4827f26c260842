#!/usr/bin/env python3
"""What fetch sessions (KIP-227) save while a cluster is idle: three nodes
(`samsa cluster local`), one topic of --partitions partitions with three replicas each, nothing
produced; then, over --seconds, each node's CPU and, on the replica fetchers' connections, the
fetches the leaders answered (their Fetch request counters) and the bytes of requests and
responses per fetch on those connections (from the kernel's TCP counters, `ss -ti`).

    scripts/bench/fetch_sessions.py sessions=target/release/samsa \\
        'no-slots=target/release/samsa --max.incremental.fetch.session.cache.slots=0' \\
        main=../target-base/release/samsa

Each argument is LABEL=BINARY [--key=value ...]: a run with that binary and those properties
for every node. Loopback only, free ports, data in a temporary directory; every process it
starts is stopped on exit. Prints one line per run. Not part of scripts/test or CI.
"""

import argparse
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request


def free_base():
    for _ in range(200):
        base = 20_000 + int.from_bytes(os.urandom(2), "big") % 30_000
        try:
            for p in [base + 100 * i + k for i in range(3) for k in (0, 1, 2)]:
                with socket.socket() as s:
                    s.bind(("127.0.0.1", p))
        except OSError:
            continue
        return base
    raise RuntimeError("no free ports")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fetcher_sockets(client_ports):
    """Per socket whose peer is a node's client port: (bytes out, bytes in)."""
    out = subprocess.run(["ss", "-tinH", "state", "established"], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    found = {}
    for head, info in zip(out[::2], out[1::2]):
        cols = head.split()
        local, peer = cols[-2], cols[-1]
        if int(peer.rsplit(":", 1)[1]) not in client_ports:
            continue
        num = lambda k: int(m.group(1)) if (m := re.search(rf"\b{k}:(\d+)", info)) else 0
        found[(local, peer)] = (num("bytes_acked"), num("bytes_received"))
    return found


def metric(port, name):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return sum(float(l.rsplit(" ", 1)[1]) for l in text.splitlines() if l.startswith(name))


def run(label, binary, props, partitions, seconds, settle_s):
    work = tempfile.mkdtemp(prefix="samsa-fsess-bench-")
    base = free_base()
    cmd = [binary, "cluster", "local", "--nodes", "3", "--port", str(base), "--dir",
           os.path.join(work, "cluster"), "--",
           *props]
    out_path = os.path.join(work, "launcher.out")
    out = open(out_path, "wb")
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not re.search(r"all \d+ node\(s\) serving", open(out_path).read()):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{label}: the cluster did not start (see {out_path})")
            time.sleep(0.2)
        pids = {int(a): int(b) for a, b in re.findall(r"^node (\d+)  pid (\d+)",
                                                       open(out_path).read(), re.M)}
        bootstrap = f"127.0.0.1:{base}"
        while True:
            r = subprocess.run([binary, "topic", "create", "idle", "-p", str(partitions), "-r",
                                "3", "-b", bootstrap], capture_output=True, text=True)
            if r.returncode == 0:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{label}: cannot create the topic: {r.stderr}")
            time.sleep(1)
        while True:
            r = subprocess.run([binary, "topic", "describe", "--under-replicated", "-b",
                                bootstrap], capture_output=True, text=True)
            if r.returncode == 0 and "idle" not in r.stdout:
                break
            if time.monotonic() > deadline + 300:
                raise RuntimeError(f"{label}: partitions stay under-replicated")
            time.sleep(1)
        time.sleep(settle_s)
        client_ports = {base + 100 * i for i in range(3)}
        before_cpu = {i: cpu_seconds(p) for i, p in pids.items()}
        fetch_count = lambda: sum(metric(base + 100 * i + 2, 'samsa_requests_total{api="Fetch"')
                                  for i in range(3))
        before, fetches_before = fetcher_sockets(client_ports), fetch_count()
        time.sleep(seconds)
        after, fetches = fetcher_sockets(client_ports), fetch_count() - fetches_before
        cpu = {i: (cpu_seconds(p) - before_cpu[i]) * 100 / seconds for i, p in pids.items()}
        req = resp = 0
        for k, (sent, got) in after.items():
            b0, r0 = before.get(k, (0, 0))
            req += sent - b0
            resp += got - r0
        sessions = [metric(base + 100 * i + 2, "samsa_fetch_sessions ") for i in range(3)]
        print(f"{label}: partitions={partitions} cpu_pct_per_node="
              f"{'/'.join(f'{cpu[i]:.1f}' for i in sorted(cpu))} "
              f"mean={sum(cpu.values()) / len(cpu):.2f} fetches_per_s={fetches / seconds:.1f} "
              f"request_bytes_per_fetch={req / max(fetches, 1):.0f} "
              f"response_bytes_per_fetch={resp / max(fetches, 1):.0f} "
              f"fetch_sessions_per_node={'/'.join(f'{s:.0f}' for s in sessions)}", flush=True)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        subprocess.run(["rm", "-rf", work])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", help="LABEL=BINARY [--key=value ...]")
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=30.0)
    # After the last partition is in sync, followers still meet leaders that do not know the
    # topic yet for a while (thousands of partitions take tens of seconds to publish).
    ap.add_argument("--settle", type=float, default=60.0)
    args = ap.parse_args()
    for spec in args.runs:
        label, rest = spec.split("=", 1)
        binary, *props = shlex.split(rest)
        run(label, binary, props, args.partitions, args.seconds, args.settle)


if __name__ == "__main__":
    sys.exit(main())
