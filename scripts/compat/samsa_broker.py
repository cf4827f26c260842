"""A Samsa broker for the compatibility-suite runners: the real binary on a free loopback port
with a private data directory, configured through its ordinary command-line properties.

Used by run_librdkafka.py, run_kafka_python.py, run_confluent_kafka.py and run_rust_rdkafka.py.
SAMSA_IO_ENGINE (and any other SAMSA_* variable) in the environment reaches the broker as usual."""
import json
import os
import signal
import socket
import subprocess
import sys
import time

START_TIMEOUT_S = 60
# Another process may take the free port between our probe and the broker's bind: try again
# on a new port that many times.
START_ATTEMPTS = 3


# Set in the environment of a runner started again inside its own network namespace.
NETNS_MARK = "COMPAT_PRIVATE_NETNS"


def in_private_network(argv):
    """Runs the calling script again (same arguments) inside a network namespace of its own,
    for suites that assume Kafka's port 9092: there 127.0.0.1:9092 is always free, whatever
    the machine runs, and nothing outside can reach the broker. Returns True when this process
    is that private copy; False when `unshare -n` is not allowed here (the caller then falls
    back to 9092 only when it is free). Does not return when the copy ran."""
    if os.environ.get(NETNS_MARK) == "1":
        _loopback_up()
        return True
    env = dict(os.environ, **{NETNS_MARK: "1"})
    try:
        probe = subprocess.run(["unshare", "-n", "true"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except FileNotFoundError:
        return False
    if probe.returncode != 0:
        return False
    os.execvpe("unshare", ["unshare", "-n", "--", sys.executable] + argv, env)


def _loopback_up():
    """A new network namespace starts with `lo` down: bring it up (SIOCGIFFLAGS/SIOCSIFFLAGS),
    so that 127.0.0.1 works without needing iproute2."""
    import fcntl
    import struct

    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        ifreq = struct.pack("16sH", b"lo", 0)
        flags = struct.unpack("16sH", fcntl.ioctl(s, siocgifflags, ifreq)[:18])[1]
        fcntl.ioctl(s, siocsifflags, struct.pack("16sH", b"lo", flags | iff_up))


def free_port(preferred=None):
    """`preferred` when nothing listens on it, else any free port."""
    for port in ([preferred] if preferred else []) + [0]:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return s.getsockname()[1]


class Broker:
    """`props` are Kafka property names and values (`{"num.partitions": "4"}`); `{port}` in a
    value becomes the broker's port (`"advertised.listeners": "PLAINTEXT://127.0.0.1:{port}"`).
    `preferred_port` is used when it is free (for suites that assume Kafka's 9092)."""

    def __init__(self, samsa, workdir, props=None, preferred_port=None):
        self.samsa = samsa
        self.workdir = workdir
        self.props = dict(props or {})
        self.data = os.path.join(workdir, "data")
        self.log_path = os.path.join(workdir, "samsa.log")
        self.log = None
        self.proc = None
        for attempt in range(START_ATTEMPTS):
            self.port = free_port(preferred_port if attempt == 0 else None)
            if self._start() or attempt + 1 == START_ATTEMPTS:
                break
        if not self.alive():
            raise SystemExit("samsa exited at start; see " + self.log_path)

    @property
    def bootstrap(self):
        return "127.0.0.1:%d" % self.port

    def _start(self):
        """Starts the process and waits for it to serve; False when it exited at start."""
        args = [self.samsa, "--listeners=PLAINTEXT://127.0.0.1:%d" % self.port, "--log.dirs=" + self.data,
                "--metrics.listener="]
        args += ["--%s=%s" % (k, v.replace("{port}", str(self.port))) for k, v in self.props.items()]
        if self.log is not None:
            self.log.close()
        self.log = open(self.log_path, "a")
        start_offset = self.log.tell()  # this start's lines only
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + START_TIMEOUT_S
        while time.time() < deadline:
            if self.proc.poll() is not None:
                return False
            with open(self.log_path) as f:
                f.seek(start_offset)
                if "samsa is serving" in f.read():
                    return True
            time.sleep(0.05)
        raise SystemExit("samsa did not start within %d s; see %s" % (START_TIMEOUT_S, self.log_path))

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def restart(self):
        """SIGTERM, then start again on the same port and data (a broker bounce)."""
        self._terminate()
        if not self._start():
            raise SystemExit("samsa exited at restart; see " + self.log_path)

    def kill(self):
        """SIGKILL: a crash."""
        if self.alive():
            self.proc.kill()
            self.proc.wait()

    def _terminate(self):
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def stop(self):
        self._terminate()
        if self.log is not None:
            self.log.close()
            self.log = None


def cluster_props(props):
    """A suite's broker properties for the nodes of a Cluster: without those that name one node
    (its id and its listeners), which `samsa cluster local` sets per node."""
    return {k: v for k, v in props.items() if k not in ("node.id", "advertised.listeners", "listeners")}


class Cluster:
    """`nodes` Samsa nodes on loopback through `samsa cluster local` (one process that runs and
    stops them all), with the same interface as Broker: `bootstrap` names every node."""

    def __init__(self, samsa, workdir, nodes, props=None, preferred_port=None, rack_prefix=None):
        self.samsa = samsa
        self.workdir = workdir
        self.log_path = os.path.join(workdir, "cluster.log")
        self.log = open(self.log_path, "a")
        # Node i listens on base + 100 * (i - 1) and the two ports after it.
        for attempt in range(START_ATTEMPTS * 10):
            base = preferred_port if attempt == 0 and preferred_port else free_port()
            if base + 100 * nodes + 3 < 65535 and all(
                free_port(p) == p for i in range(nodes) for p in range(base + 100 * i, base + 100 * i + 3)
            ):
                break
        args = [samsa, "cluster", "local", "--nodes", str(nodes), "--port", str(base),
                "--dir", os.path.join(workdir, "cluster")]
        if rack_prefix:
            args += ["--rack-prefix", rack_prefix]
        args += ["--", "--metrics.listener="]
        args += ["--%s=%s" % (k, v) for k, v in (props or {}).items()]
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)
        self.bootstrap = None
        deadline = time.time() + START_TIMEOUT_S * 2
        while time.time() < deadline and self.bootstrap is None:
            if self.proc.poll() is not None:
                raise SystemExit("samsa cluster local exited at start; see " + self.log_path)
            with open(self.log_path) as f:
                for line in f:
                    if "serving; bootstrap " in line:
                        self.bootstrap = line.split("serving; bootstrap ", 1)[1].split(";")[0].strip()
            time.sleep(0.1)
        if self.bootstrap is None:
            raise SystemExit("the cluster did not start within %d s; see %s" % (START_TIMEOUT_S * 2, self.log_path))
        self.port = int(self.bootstrap.split(",")[0].rsplit(":", 1)[1])
        # `samsa cluster local` announces the cluster once every node is registered and
        # unfenced; the first node's metadata must list them all too (its image may lag), or
        # topics with one replica per node cannot be placed.
        while time.time() < deadline and self.live_brokers() < nodes:
            time.sleep(0.2)

    def live_brokers(self):
        """How many brokers the first node reports in its metadata (0 when it does not answer)."""
        try:
            out = subprocess.run([self.samsa, "cluster", "info", "-b", self.bootstrap.split(",")[0],
                                  "--format", "json", "--timeout-ms", "2000"],
                                 capture_output=True, text=True, timeout=10).stdout
            return len(json.loads(out).get("brokers") or [])
        except (subprocess.TimeoutExpired, ValueError):
            return 0

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
