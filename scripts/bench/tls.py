#!/usr/bin/env python3
"""Samsa's TLS benchmark: what TLS and SASL_SSL cost against plaintext, on one broker, in the
same run.

One release `samsa` with three client listeners, PLAINTEXT, SSL and SASL_SSL (SASL PLAIN), the
same certificate on both TLS listeners (made here with the openssl CLI: a CA and a server
certificate for IP:127.0.0.1 and DNS:localhost, ECDSA P-256 by default, RSA 2048 with --key-type
rsa). On each listener, interleaved (plaintext, ssl, sasl_ssl, then again, --runs times):

- produce: rdkafka_performance -P, 1 KiB records, acks=all, a fixed count into a fresh topic;
- consume: rdkafka_performance -C of that topic from the beginning, as many records as were
  acknowledged; then the topic is deleted, so that the next run writes into the page cache its
  deletion freed (see `recycle` below).

Broker CPU is user + system time from /proc/<pid>/stat around each tool run, per million records.
The load generator is the same rdkafka_performance binary for every listener (built with SSL by
scripts/bench/build-rdkafka-performance), configured with -X security.protocol=...

Every figure is printed as one parseable line (medians over the runs):

  TLSBENCH test=<name> listener=<plaintext|ssl|sasl_ssl> msgs_per_s=.. MB_per_s=..
           broker_cpu_s_per_M=.. runs=..

then the ratios to plaintext:

  TLSBENCH-RATIO test=<name> listener=<ssl|sasl_ssl> of=plaintext msgs_per_s=..
                 broker_cpu_s_per_M=..

and the "TLS" section of BENCHMARKS.md (between its marker comments) is rewritten, or inserted
after the "Replication" section when it is missing; the rest of the file is left byte for byte.

Run it through scripts/bench/tls, which builds what it needs first. Needs the project's .venv
(confluent-kafka) for creating and deleting topics.
"""

import argparse
import datetime
import json
import os
import re
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time

import bench  # scripts/bench/bench.py: load generator runs, /proc readings, BENCHMARKS.md
import metadata  # scripts/bench/metadata.py: process bookkeeping, line formatting

ROOT = bench.ROOT
SECTION = "tls"
AFTER_SECTION = "replication"  # a missing TLS section goes right after this one
RECORD_BYTES = 1024
LISTENERS = ("plaintext", "ssl", "sasl_ssl")
PRODUCE = "produce.1KiB.acks_all"
CONSUME = "consume.1KiB.from_beginning"
TESTS = (PRODUCE, CONSUME)
SASL_USER, SASL_PASSWORD = "bench", "bench-secret"
KEY_TYPES = {
    "ecdsa": (["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"], "ECDSA P-256"),
    "rsa": (["-newkey", "rsa:2048"], "RSA 2048"),
}


def log(msg):
    print(f"tls: {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Certificates, broker, topics


def make_certificates(directory, key_type):
    """A CA and a server certificate signed by it (SAN IP:127.0.0.1, DNS:localhost), with the
    openssl CLI. Returns (keystore PEM: the server's private key and certificate, CA PEM)."""
    newkey, _ = KEY_TYPES[key_type]

    def openssl(*argv):
        subprocess.run(["openssl", *argv], check=True, cwd=directory,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    openssl("req", "-x509", "-new", *newkey, "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
            "-days", "30", "-subj", "/CN=samsa-bench-tls CA",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    openssl("req", "-new", *newkey, "-nodes", "-keyout", "server.key", "-out", "server.csr",
            "-subj", "/CN=localhost")
    with open(os.path.join(directory, "server.ext"), "w") as f:
        f.write("basicConstraints=CA:FALSE\n"
                "keyUsage=critical,digitalSignature,keyEncipherment\n"
                "extendedKeyUsage=serverAuth\n"
                "subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "server.pem", "-days", "30", "-extfile", "server.ext")
    keystore = os.path.join(directory, "keystore.pem")
    with open(keystore, "w") as out:
        for name in ("server.key", "server.pem"):
            with open(os.path.join(directory, name)) as f:
                out.write(f.read())
    os.chmod(keystore, 0o600)
    return keystore, os.path.join(directory, "ca.pem")


def distinct_ports(n):
    ports = []
    while len(ports) < n:
        p = bench.free_port()
        if p not in ports:
            ports.append(p)
    return ports


class Broker:
    """One samsa with a PLAINTEXT, an SSL and a SASL_SSL listener on loopback."""

    def __init__(self, args, data_dir, log_path, keystore, ca):
        self.args, self.data_dir, self.log_path = args, data_dir, log_path
        self.keystore, self.ca = keystore, ca
        self.ports = dict(zip(LISTENERS, distinct_ports(len(LISTENERS))))
        self.proc = None
        self.startup = ""

    def command(self):
        listeners = ",".join(f"{name.upper()}://127.0.0.1:{port}"
                             for name, port in self.ports.items())
        return [self.args.samsa, f"--listeners={listeners}", f"--log.dirs={self.data_dir}",
                "--num.partitions=1", "--metrics.listener=",
                "--ssl.keystore.type=PEM", f"--ssl.keystore.location={self.keystore}",
                "--ssl.truststore.type=PEM", f"--ssl.truststore.location={self.ca}",
                "--sasl.enabled.mechanisms=PLAIN",
                "--listener.name.sasl_ssl.plain.sasl.jaas.config="
                "org.apache.kafka.common.security.plain.PlainLoginModule required "
                f'user_{SASL_USER}="{SASL_PASSWORD}";'] + self.args.samsa_arg

    def start(self, timeout_s=120.0):
        with open(self.log_path, "ab") as out:
            offset = out.tell()
            self.proc = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT,
                                         env=metadata.clean_env(), start_new_session=True)
        metadata.STARTED.append(self.proc)
        if metadata.wait_for_line(self.log_path, offset, r"samsa is serving", self.proc,
                                  timeout_s) is None:
            raise RuntimeError(f"samsa did not serve within {timeout_s:.0f} s (see "
                               f"{self.log_path})")
        # Every listener is bound before that line. No probe connection to the TLS ports: the
        # broker would log each as a failed handshake.
        self.startup = metadata.read_from(self.log_path, offset)
        bench.wait_listening(self.ports["plaintext"], self.proc, "samsa")

    def stop(self):
        if self.proc is not None:
            metadata.terminate(self.proc, 60.0)

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def bootstrap(self, listener):
        return f"127.0.0.1:{self.ports[listener]}"

    def engine(self):
        m = re.search(r"samsa is serving.*?\bengine=(\S+)", self.startup) or \
            re.search(r"\bengine=(\w+)", self.startup)
        return m.group(1) if m else "?"

    def tls_line(self):
        m = re.search(r"TLS: rustls;[^\n]*", self.startup)
        return m.group(0).strip() if m else None


def client_config(listener, ca):
    """librdkafka properties of a client of `listener`."""
    if listener == "plaintext":
        return {}
    conf = {"security.protocol": listener, "ssl.ca.location": ca}
    if listener == "sasl_ssl":
        conf.update({"sasl.mechanisms": "PLAIN", "sasl.username": SASL_USER,
                     "sasl.password": SASL_PASSWORD})
    return conf


def client_args(listener, ca):
    return [x for k, v in client_config(listener, ca).items() for x in ("-X", f"{k}={v}")]


def negotiated(port, ca, timeout_s=10.0):
    """(TLS version, cipher suite) a client with OpenSSL's defaults (Python's ssl module, the
    same library librdkafka uses here) gets from the listener."""
    ctx = ssl.create_default_context(cafile=ca)
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as raw:
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
            return s.version(), s.cipher()[0]


def admin(bootstrap):
    from confluent_kafka.admin import AdminClient  # the .venv's confluent-kafka (librdkafka)
    # log_level 5: without the informational line about the events it purges when dropped.
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 5})


def create_topic(bootstrap, name):
    """One partition. 64 MiB segments and file.delete.delay.ms=0, so that deleting the topic
    frees its page cache at once."""
    from confluent_kafka.admin import NewTopic
    client = admin(bootstrap)  # kept until the futures are done: dropping it cancels them
    topic = NewTopic(name, 1, 1, config={"segment.bytes": str(64 << 20),
                                         "file.delete.delay.ms": "0"})
    for f in client.create_topics([topic], operation_timeout=30).values():
        f.result(timeout=60)


def delete_topic(broker, name, timeout_s=60.0):
    """Deletes the topic and waits until the data directory no longer holds it."""
    client = admin(broker.bootstrap("plaintext"))
    for f in client.delete_topics([name], operation_timeout=30).values():
        f.result(timeout=60)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not any(e.startswith(name + "-") for e in os.listdir(broker.data_dir)):
            return True
        time.sleep(0.1)
    log(f"{name}: its directory was not deleted within {timeout_s:.0f} s")
    return False


# ---------------------------------------------------------------------------------------------
# Runs


CONSUMED_BYTES = re.compile(r"% (\d+) messages \((\d+) bytes\) consumed in")


def produce(args, broker, listener, topic, name):
    cmd = bench.perf_cmd(args, broker.bootstrap(listener), "-P", topic,
                         ["-s", str(RECORD_BYTES), "-a", "-1", "-c", str(args.count)]
                         + client_args(listener, broker.ca))
    cpu0 = bench.cpu_seconds(broker.pid)
    out, took = bench.run_tool(cmd, args.cap_s, name)
    cpu1 = bench.cpu_seconds(broker.pid)
    p = bench.parse_produced(out)
    if p is None or p["delivered"] == 0:
        raise RuntimeError(f"{name}: rdkafka_performance delivered nothing (see "
                           f"{bench.RUN_DIR}/{name}.out; broker log {broker.log_path})")
    status = "ok"
    if p["failed"]:
        status = f"failed:{p['failed']}"
    elif p["delivered"] < args.count:
        status = f"partial:{p['delivered']}-of-{args.count}"
    return dict(msgs_per_s=p["msgs_per_s"], MB_per_s=p["MB_per_s"], records=p["delivered"],
                failed=p["failed"], seconds=took, broker_cpu_s=cpu1 - cpu0,
                broker_cpu_s_per_M=(cpu1 - cpu0) * 1e6 / p["delivered"], status=status)


def consume(args, broker, listener, topic, records, name):
    cmd = bench.perf_cmd(args, broker.bootstrap(listener), "-C", topic,
                         ["-p", "0", "-o", "beginning", "-c", str(records)]
                         + client_args(listener, broker.ca))
    cpu0 = bench.cpu_seconds(broker.pid)
    out, took = bench.run_tool(cmd, args.cap_s, name)
    cpu1 = bench.cpu_seconds(broker.pid)
    c = bench.parse_consumed(out)
    if c is None or c["msgs"] == 0:
        raise RuntimeError(f"{name}: rdkafka_performance consumed nothing (see "
                           f"{bench.RUN_DIR}/{name}.out; broker log {broker.log_path})")
    nbytes = int(CONSUMED_BYTES.findall(out)[-1][1])
    status = "ok"
    if c["msgs"] < records:
        status = f"partial:{c['msgs']}-of-{records}"
    elif nbytes != c["msgs"] * RECORD_BYTES:
        status = f"wrong-bytes:{nbytes}-for-{c['msgs']}-records"
    return dict(msgs_per_s=c["msgs_per_s"], MB_per_s=c["MB_per_s"], records=c["msgs"],
                bytes=nbytes, seconds=took, broker_cpu_s=cpu1 - cpu0,
                broker_cpu_s_per_M=(cpu1 - cpu0) * 1e6 / c["msgs"], status=status)


def recycle(args, broker):
    """Writes as much as a run to a scratch topic over plaintext and deletes it, outside the
    measured time, so that the first measured run (plaintext's) writes into page cache a
    deletion freed, as every later run does after the topic before it was deleted. On this VM,
    memory the guest has not touched lately costs several times the CPU to write (the hypervisor
    backs it on first touch; see `recycle_page_cache` in bench.py and `bounded_log` in
    replication.py): without it the first listener measured would pay for it alone."""
    if args.no_recycle:
        return
    topic = "tlsbench-recycle"
    create_topic(broker.bootstrap("plaintext"), topic)
    bench.run_tool(bench.perf_cmd(args, broker.bootstrap("plaintext"), "-P", topic,
                                  ["-s", str(RECORD_BYTES), "-a", "1", "-c", str(args.count)]),
                   args.cap_s, "recycle")
    delete_topic(broker, topic)
    time.sleep(0.5)


def measure(args, broker):
    """Every listener, `--runs` times, interleaved; returns the per-run rows."""
    rows = []
    for run in range(args.runs):
        for listener in LISTENERS:
            log(f"run {run + 1} of {args.runs}: {listener}")
            topic = f"tlsbench-{listener}-{run}"
            create_topic(broker.bootstrap("plaintext"), topic)
            time.sleep(0.2)
            p = produce(args, broker, listener, topic, f"{listener}-{run}.produce")
            rows.append(dict(test=PRODUCE, listener=listener, run=run, **p))
            log(f"  produce: {p['msgs_per_s']:,} records/s, {p['MB_per_s']:.1f} MB/s, broker "
                f"{p['broker_cpu_s_per_M']:.3f} CPU s per M ({p['status']})")
            c = consume(args, broker, listener, topic, p["records"],
                        f"{listener}-{run}.consume")
            rows.append(dict(test=CONSUME, listener=listener, run=run, **c))
            log(f"  consume: {c['msgs_per_s']:,} records/s, {c['MB_per_s']:.1f} MB/s, broker "
                f"{c['broker_cpu_s_per_M']:.3f} CPU s per M ({c['status']})")
            if not broker.alive():
                raise RuntimeError(f"samsa exited (see {broker.log_path})")
            delete_topic(broker, topic)
            time.sleep(0.5)
    return rows


# ---------------------------------------------------------------------------------------------
# Figures


def summary(rows):
    """{(test, listener): medians and each run's figures}, and the ratios to plaintext."""
    out = {}
    for test in TESTS:
        for listener in LISTENERS:
            rs = [r for r in rows if r["test"] == test and r["listener"] == listener]
            if not rs:
                continue
            med = {k: statistics.median(r[k] for r in rs)
                   for k in ("msgs_per_s", "MB_per_s", "broker_cpu_s_per_M")}
            bad = [r["status"] for r in rs if r["status"] != "ok"]
            out[(test, listener)] = dict(runs=len(rs), **med,
                                         each_msgs_per_s=[r["msgs_per_s"] for r in rs],
                                         each_cpu_s_per_M=[r["broker_cpu_s_per_M"] for r in rs],
                                         status=",".join(bad) or "ok")
    for test in TESTS:
        base = out.get((test, "plaintext"))
        for listener in LISTENERS[1:]:
            x = out.get((test, listener))
            if base and x:
                x["ratio_msgs_per_s"] = x["msgs_per_s"] / base["msgs_per_s"]
                x["ratio_cpu_s_per_M"] = (x["broker_cpu_s_per_M"] / base["broker_cpu_s_per_M"]
                                          if base["broker_cpu_s_per_M"] else None)
    return out


def value(v):
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1000 else f"{v:.0f}"
    if isinstance(v, (list, tuple)):
        return ",".join(value(x) for x in v)
    return "-" if v is None else str(v)


def lines(s):
    out = []
    for (test, listener), x in s.items():
        out.append(f"TLSBENCH test={test} listener={listener} msgs_per_s={value(x['msgs_per_s'])} "
                   f"MB_per_s={value(x['MB_per_s'])} "
                   f"broker_cpu_s_per_M={value(x['broker_cpu_s_per_M'])} runs={x['runs']} "
                   f"each_msgs_per_s={value(x['each_msgs_per_s'])} "
                   f"each_broker_cpu_s_per_M={value(x['each_cpu_s_per_M'])} "
                   f"status={x['status']}")
    for (test, listener), x in s.items():
        if "ratio_msgs_per_s" in x:
            out.append(f"TLSBENCH-RATIO test={test} listener={listener} of=plaintext "
                       f"msgs_per_s={x['ratio_msgs_per_s']:.3f} "
                       f"broker_cpu_s_per_M={value(x['ratio_cpu_s_per_M'])}")
    return out


# ---------------------------------------------------------------------------------------------
# Report


def fmt(v, digits=1):
    return metadata.f(v, digits)


def section(s, raw, args, machine, setup, took_s):
    L = [f"<!-- {SECTION}:start (written by scripts/bench/tls; scripts/bench/metadata and "
         "scripts/bench/replication keep it) -->", "## TLS", ""]
    L += [f"Measured {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')} in {took_s:.0f} s with "
          f"`{args.command}` ({args.mode} mode) on a release build. Machine at this run: "
          + "; ".join(f"{k} {v}" for k, v in machine.items()) + ".", ""]
    L += ["One samsa (" + f"io.engine {setup['engine']}"
          + "".join(f", `{a}`" for a in args.samsa_arg)
          + ") with three client listeners on loopback: PLAINTEXT, SSL and SASL_SSL (SASL "
          f"PLAIN), the load generator on the same cores. Certificate: {setup['key']}, signed by "
          "a CA made for the run (openssl CLI), SAN IP:127.0.0.1 and DNS:localhost; the key "
          "type changes the handshakes' cost only, and a run makes a handful of connections. "
          f"Negotiated: {setup['tls']} (rustls on the broker, OpenSSL {setup['openssl']} in "
          "librdkafka). Every listener is measured with the same rdkafka_performance binary, "
          "built with SSL, interleaved (plaintext, ssl, sasl_ssl, then again), "
          f"{args.runs} run{'s' if args.runs > 1 else ''} each; medians. Produce: `-P -a -1 -s "
          f"{RECORD_BYTES} -c {args.count}` (acks=all, rdkafka_performance's own "
          "linger.ms=1000) into a fresh topic of one partition; consume: `-C -p 0 -o beginning "
          "-c <records produced>` of that topic, read from the page cache; the topic is "
          "deleted before the next run (and a scratch topic as large is written and deleted "
          "before the first), so every run writes into page cache a deletion freed. Broker "
          "CPU: user + system seconds from `/proc/<pid>/stat` around the tool's run (the "
          "connections' handshakes included), per million records; it counts in "
          f"{1000 // bench.CLK_TCK} ms ticks, so a figure is within about "
          f"{2e6 / bench.CLK_TCK / args.count:.3f} s per M. The client's own encryption "
          "runs on the same two cores, so records/s falls by more than the broker's CPU alone "
          "explains.", ""]
    L += ["| test | listener | runs | records/s | MB/s | broker CPU s per M records | "
          "records/s vs plaintext | CPU per record vs plaintext |",
          "|---|---|---|---|---|---|---|---|"]
    for (test, listener), x in s.items():
        flag = "" if x["status"] == "ok" else f" ({x['status']})"
        L.append(f"| {test} | {listener}{flag} | {x['runs']} | {fmt(x['msgs_per_s'], 0)} | "
                 f"{fmt(x['MB_per_s'])} | {fmt(x['broker_cpu_s_per_M'], 3)} | "
                 + (f"{x['ratio_msgs_per_s']:.2f} x | {fmt(x['ratio_cpu_s_per_M'], 2)} x |"
                    if "ratio_msgs_per_s" in x else "baseline | baseline |"))
    L.append("")
    ssl_p, ssl_c = s.get((PRODUCE, "ssl"), {}), s.get((CONSUME, "ssl"), {})
    L += [f"Produce over TLS costs the broker {fmt(ssl_p.get('ratio_cpu_s_per_M'), 2)} times "
          "plaintext's CPU per record (decrypting each request before the same append); "
          f"consume {fmt(ssl_c.get('ratio_cpu_s_per_M'), 2)} times, because a fetch over TLS "
          "cannot use sendfile: the broker reads every batch from the page cache into memory "
          "and encrypts it, where plaintext hands the file's pages to the socket without "
          "touching them. "
          + {False: "This kernel has no kernel TLS (TCP_ULP tls), which would let the kernel "
                    "encrypt what sendfile sends",
             True: "This kernel offers kernel TLS, which would let the kernel encrypt what "
                   "sendfile sends, but Samsa does not use it yet",
             None: "Kernel TLS, which would let the kernel encrypt what sendfile sends, is not "
                   "used (the broker's start-up log did not say whether this kernel has it)",
             }[setup.get("ktls")]
          + "; SASL_SSL adds only its authentication at connect time, so it should match SSL "
          "within the runs' spread.", ""]
    L += ["Raw lines:", "", "```"] + raw + ["```", "",
          "Rerun: `scripts/bench/tls` (default: 3 runs per listener of 2,000,000 records), "
          "`--quick` (1 run of 500,000), `--runs N`, `--count N`, `--key-type ecdsa|rsa`, "
          "`--samsa-arg=--io-engine=epoll` (one more broker flag, repeatable), `--no-write` "
          "(figures on stdout only). Raw tool output and the broker's log are under "
          "`.tools/bench-runs/tls-*/`.", "", f"<!-- {SECTION}:end -->"]
    return "\n".join(L)


def write_section(path, block):
    """Replaces the TLS section of `path`, or inserts it after the replication section (at the
    end when that is missing too); every other byte of the file stays as it was."""
    text = open(path).read() if os.path.exists(path) else "# Samsa benchmarks\n"
    if bench.marked_section(text, SECTION) is not None:
        text = bench.replace_marked_section(text, SECTION, block)
    else:
        after = bench.marked_section(text, AFTER_SECTION)
        if after is not None:
            at = text.index(after) + len(after)
            text = text[:at] + "\n\n" + block + text[at:]
        else:
            text = bench.replace_marked_section(text, SECTION, block)
    with open(path, "w") as fh:
        fh.write(text)


# ---------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samsa", required=True)
    ap.add_argument("--perf", required=True, help="rdkafka_performance, built with SSL")
    ap.add_argument("--quick", action="store_true", help="1 run of 500,000 records")
    ap.add_argument("--runs", type=int, help="runs per listener (default 3; quick 1)")
    ap.add_argument("--count", type=int,
                    help="records per produce run (default 2,000,000; quick 500,000)")
    ap.add_argument("--cap-s", type=float,
                    help="seconds a tool run may take before it is stopped (default: scaled to "
                         "--count, at least 60)")
    ap.add_argument("--key-type", choices=list(KEY_TYPES), default="ecdsa",
                    help="the server certificate's key (default ecdsa: P-256)")
    ap.add_argument("--samsa-arg", action="append", default=[],
                    help="one more --key=value flag for the broker (repeatable; use the "
                         "--samsa-arg=--key=value form)")
    ap.add_argument("--no-recycle", action="store_true",
                    help="skip the scratch write-and-delete before the first run")
    ap.add_argument("--data-root", default=os.path.join(ROOT, ".tools", "bench-data"))
    ap.add_argument("--out", default=os.path.join(ROOT, "BENCHMARKS.md"))
    ap.add_argument("--no-write", action="store_true", help="print the figures only")
    ap.add_argument("--command", default="scripts/bench/tls")
    args = ap.parse_args()
    args.mode = "quick" if args.quick else "default"
    args.runs = args.runs or (1 if args.quick else 3)
    args.count = args.count or (500_000 if args.quick else 2_000_000)
    args.cap_s = args.cap_s or max(60.0, args.count / 10_000)

    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = os.path.join(ROOT, ".tools", "bench-runs", f"tls-{stamp}")
    os.makedirs(run_dir, exist_ok=True)
    bench.RUN_DIR = run_dir  # where bench.run_tool keeps the load generators' output
    os.makedirs(args.data_root, exist_ok=True)
    work = tempfile.mkdtemp(prefix="tls-", dir=args.data_root)
    bench.LOAD_AT_START = " ".join(open("/proc/loadavg").read().split()[:3])
    log(f"work in {work}, logs in {run_dir}")

    def stop(*_):
        bench.stop_tools()
        metadata.stop_everything()
        shutil.rmtree(work, ignore_errors=True)
        sys.exit(130)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop)
    began = time.monotonic()
    setup = {"key": KEY_TYPES[args.key_type][1]}
    try:
        certs = os.path.join(work, "certs")
        os.makedirs(certs)
        keystore, ca = make_certificates(certs, args.key_type)
        broker = Broker(args, os.path.join(work, "data"), os.path.join(run_dir, "samsa.log"),
                        keystore, ca)
        broker.start()
        setup["engine"] = broker.engine()
        version, cipher = negotiated(broker.ports["ssl"], ca)
        setup["tls"] = f"{version}, {cipher}"
        setup["openssl"] = ssl.OPENSSL_VERSION.split()[1]
        kernel_tls = broker.tls_line()
        # True: the kernel offers kernel TLS (Samsa does not use it yet); False: it does not;
        # None: the broker's start-up log did not say.
        setup["ktls"] = None if kernel_tls is None else "has kernel TLS" in kernel_tls
        log(f"samsa pid {broker.pid}, listeners {broker.ports}, io.engine {setup['engine']}; "
            f"certificate {setup['key']}; negotiated {setup['tls']}; "
            f"{kernel_tls or 'no TLS line in the start-up log'}")
        print(f"TLSBENCH-SETUP certificate={setup['key'].replace(' ', '_')} "
              f"tls={version} cipher={cipher} engine={setup['engine']} runs={args.runs} "
              f"count={args.count}", flush=True)
        recycle(args, broker)
        rows = measure(args, broker)
    finally:
        bench.stop_tools()
        metadata.stop_everything()
        shutil.rmtree(work, ignore_errors=True)
    took = time.monotonic() - began
    s = summary(rows)
    raw = lines(s)
    for line in raw:
        print(line, flush=True)
    with open(os.path.join(run_dir, "results.json"), "w") as fh:
        json.dump(dict(setup=setup, runs=rows), fh, indent=1)
    if args.no_write:
        return
    machine = bench.machine_description(argparse.Namespace(data_root=args.data_root,
                                                           perf=args.perf))
    flags = set(open("/proc/cpuinfo").read().split("\n\n")[0].split())
    machine["AES instructions"] = ", ".join(f for f in ("aes", "vaes", "pclmulqdq")
                                            if f in flags) or "none"
    write_section(args.out, section(s, raw, args, machine, setup, took))
    log(f"wrote the TLS section of {args.out} in {took:.0f} s")


if __name__ == "__main__":
    main()
