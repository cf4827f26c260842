"""A Samsa broker for the compatibility-suite runners: the real binary on a free loopback port
with a private data directory, configured through its ordinary command-line properties.

Used by run_librdkafka.py, run_kafka_python.py, run_confluent_kafka.py and run_rust_rdkafka.py.
SAMSA_IO_ENGINE (and any other SAMSA_* variable) in the environment reaches the broker as usual.

For the suites' security tests: Broker(..., listeners=["SASL_SSL"]) adds secured listeners beside
the PLAINTEXT one, make_pki() writes a CA and certificates with the openssl command, and
add_scram_user() creates a SCRAM user through the PLAINTEXT listener (AlterUserScramCredentials)."""
import base64
import hashlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
import uuid

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
    value becomes the broker's port (`"advertised.listeners": "PLAINTEXT://127.0.0.1:{port}"`),
    `{port:NAME}` the port of listener NAME.
    `preferred_port` is used when it is free (for suites that assume Kafka's 9092).
    `listeners` names more listeners beside PLAINTEXT, each named as its security protocol
    (`["SASL_SSL"]`), each on a free port of its own: `address(name)` is its host:port."""

    def __init__(self, samsa, workdir, props=None, preferred_port=None, listeners=()):
        self.samsa = samsa
        self.workdir = workdir
        self.props = dict(props or {})
        self.data = os.path.join(workdir, "data")
        self.log_path = os.path.join(workdir, "samsa.log")
        self.log = None
        self.proc = None
        self.ports = {}
        for attempt in range(START_ATTEMPTS):
            self.port = free_port(preferred_port if attempt == 0 else None)
            self.ports = {"PLAINTEXT": self.port}
            for name in listeners:
                port = free_port()
                while port in self.ports.values():
                    port = free_port()
                self.ports[name] = port
            if self._start() or attempt + 1 == START_ATTEMPTS:
                break
        if not self.alive():
            raise SystemExit("samsa exited at start; see " + self.log_path)

    @property
    def bootstrap(self):
        return "127.0.0.1:%d" % self.port

    def address(self, listener):
        return "127.0.0.1:%d" % self.ports[listener]

    def _start(self):
        """Starts the process and waits for it to serve; False when it exited at start."""
        listeners = ",".join("%s://127.0.0.1:%d" % (name, port) for name, port in self.ports.items())
        args = [self.samsa, "--listeners=" + listeners, "--log.dirs=" + self.data,
                "--metrics.listener="]
        args += ["--%s=%s" % (k, self._fill(v)) for k, v in self.props.items()]
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

    def _fill(self, value):
        """`{port}` is the PLAINTEXT port, `{port:NAME}` the port of listener NAME."""
        for name, port in self.ports.items():
            value = value.replace("{port:%s}" % name, str(port))
        return value.replace("{port}", str(self.port))

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


class Nodes:
    """`nodes` Samsa nodes on loopback, each a broker and a voter of the metadata quorum, started
    here one process each with the settings `samsa cluster local` gives its nodes, and with
    the listeners named in `listeners` beside PLAINTEXT and CONTROLLER (`samsa cluster local`
    gives each node PLAINTEXT only). The same interface as Broker: `bootstrap` names every
    node's PLAINTEXT listener, `address(name)` every node's `name` listener."""

    def __init__(self, samsa, workdir, nodes, props=None, listeners=(), rack_prefix=None, standalone=False,
                 advertise_all=False):
        """`standalone`: one node formatted as the only voter of a dynamic quorum (KIP-853,
        kraft.version 1: `samsa storage format --standalone`, then
        `controller.quorum.bootstrap.servers`), as Kafka's `kafka-storage format --standalone`.
        `advertise_all`: `advertised.listeners` names every listener, the controller's too, as
        Kafka's KRaft nodes are configured."""
        assert not standalone or nodes == 1, "a standalone quorum has one node"
        self.samsa = samsa
        self.workdir = workdir
        self.log_path = os.path.join(workdir, "node-1.log")
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        taken = set()

        def port():
            p = free_port()
            while p in taken:
                p = free_port()
            taken.add(p)
            return p

        self.ports = [dict([("PLAINTEXT", port()), ("CONTROLLER", port())] + [(l, port()) for l in listeners])
                      for _ in range(nodes)]
        voters = ",".join("%d@127.0.0.1:%d" % (i + 1, p["CONTROLLER"]) for i, p in enumerate(self.ports))
        self.procs, self.logs, self.args = [], [], []
        for i, ports in enumerate(self.ports):
            node = i + 1
            quorum = ["--controller.listener.names=CONTROLLER", "--process.roles=broker,controller"]
            if standalone:
                quorum += ["--controller.quorum.bootstrap.servers=127.0.0.1:%d" % ports["CONTROLLER"]]
            else:
                quorum += ["--controller.quorum.voters=" + voters]
            listening = ",".join("%s://127.0.0.1:%d" % kv for kv in ports.items())
            common = ["--node.id=%d" % node, "--log.dirs=" + os.path.join(workdir, "node-%d" % node),
                      "--listeners=" + listening] + quorum
            if advertise_all:
                common.append("--advertised.listeners=" + listening)
            if standalone:
                with open(os.path.join(workdir, "format-%d.log" % node), "w") as out:
                    if subprocess.run([samsa, "storage", "format", "--standalone"] + common,
                                      stdout=out, stderr=subprocess.STDOUT).returncode != 0:
                        raise SystemExit("samsa storage format failed; see " + out.name)
                args = [samsa] + common + ["--metrics.listener="]
            else:
                args = [samsa, "--cluster.id=" + cluster_id] + common + ["--metrics.listener="]
            if rack_prefix:
                args.append("--broker.rack=%s%d" % (rack_prefix, node))
            args += ["--%s=%s" % (k, v) for k, v in (props or {}).items()]
            log = open(os.path.join(workdir, "node-%d.log" % node), "a")
            self.logs.append(log)
            self.args.append(args)
            self.procs.append(subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT))
        deadline = time.time() + START_TIMEOUT_S * 2
        waiting = set(range(nodes))
        while waiting and time.time() < deadline:
            for i in list(waiting):
                if self.procs[i].poll() is not None:
                    self.stop()
                    raise SystemExit("samsa node %d exited at start; see %s" % (i + 1, self.logs[i].name))
                with open(self.logs[i].name) as f:
                    text = f.read()
                if "samsa is serving" in text and "the controller unfenced this broker" in text:
                    waiting.discard(i)
            time.sleep(0.1)
        if waiting:
            self.stop()
            raise SystemExit("samsa nodes %s did not serve within %d s; see %s" % (
                sorted(i + 1 for i in waiting), START_TIMEOUT_S * 2, workdir))
        self.bootstrap = self.address("PLAINTEXT")
        self.port = self.ports[0]["PLAINTEXT"]
        # As Cluster: the first node's metadata must list them all too.
        while time.time() < deadline and self.live_brokers() < nodes:
            time.sleep(0.2)

    def address(self, listener):
        return ",".join("127.0.0.1:%d" % p[listener] for p in self.ports)

    def kill_node(self, node):
        """SIGKILL of node `node` (1-based): a crash of one node."""
        proc = self.procs[node - 1]
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    def start_node(self, node):
        """Starts node `node` (1-based) again with its arguments and data, and waits until it
        serves and the controller has unfenced it again."""
        i = node - 1
        log = self.logs[i]
        log.flush()
        start_offset = os.path.getsize(log.name)
        self.procs[i] = subprocess.Popen(self.args[i], stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + START_TIMEOUT_S * 2
        while time.time() < deadline:
            if self.procs[i].poll() is not None:
                raise SystemExit("samsa node %d exited at restart; see %s" % (node, log.name))
            with open(log.name) as f:
                f.seek(start_offset)
                text = f.read()
            if "samsa is serving" in text and "the controller unfenced this broker" in text:
                return
            time.sleep(0.1)
        raise SystemExit("samsa node %d did not serve again within %d s; see %s" % (node, START_TIMEOUT_S * 2, log.name))

    def live_brokers(self):
        return Cluster.live_brokers(self)

    def alive(self):
        return all(p.poll() is None for p in self.procs)

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for log in self.logs:
            log.close()


PKI_PASSWORD = "12345678"  # the client keys' and the PKCS#12 file's password (trivup's default)


def make_pki(folder):
    """Certificates for a TLS listener and its clients, made with the openssl command as
    librdkafka's test cluster (trivup's SslApp) makes them: a CA; a second, unused CA that
    comes first in all_cas.pem (multi-CA files); the broker's key and certificate chain in one
    PEM file (SAN IP:127.0.0.1 and DNS:localhost: clients verify the host name), signed by the
    CA; and a client key and certificate signed by the CA, in PEM, DER and PKCS#12. Returns the
    paths: ca_pem, ca_der, all_cas_pem, server_pem (the broker's keystore), priv_pem, priv_der,
    pub_pem, pub_der, pkcs (the client's), and password."""
    os.makedirs(folder, exist_ok=True)

    def path(name):
        return os.path.join(folder, name)

    def openssl(*args):
        r = subprocess.run(["openssl"] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            raise SystemExit("openssl %s failed:\n%s" % (" ".join(args), r.stdout))

    def ca(name):
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", path(name + ".key"),
                "-out", path(name + ".pem"), "-days", "3650", "-subj", "/O=samsa-compat/CN=" + name)

    def signed(name, subject, extensions):
        with open(path(name + ".ext"), "w") as f:
            f.write(extensions)
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", path(name + "-priv.pem"),
                "-out", path(name + ".csr"), "-subj", subject)
        openssl("x509", "-req", "-in", path(name + ".csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"),
                "-CAcreateserial", "-out", path(name + "-pub.pem"), "-days", "3650", "-extfile", path(name + ".ext"))

    ca("unused-ca")
    ca("ca")
    with open(path("all_cas.pem"), "w") as out:
        for name in ("unused-ca.pem", "ca.pem"):
            with open(path(name)) as f:
                out.write(f.read())
    openssl("x509", "-in", path("ca.pem"), "-outform", "der", "-out", path("ca.der"))
    signed("server", "/O=samsa-compat/CN=localhost",
           "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
           "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n")
    with open(path("server.pem"), "w") as out:  # key, then the chain
        for name in ("server-priv.pem", "server-pub.pem", "ca.pem"):
            with open(path(name)) as f:
                out.write(f.read())
    signed("client", "/O=samsa-compat/CN=client",
           "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
           "extendedKeyUsage=clientAuth\n")
    openssl("x509", "-in", path("client-pub.pem"), "-outform", "der", "-out", path("client-pub.der"))
    openssl("rsa", "-in", path("client-priv.pem"), "-outform", "der", "-out", path("client-priv.der"))
    openssl("pkcs12", "-export", "-out", path("client.pfx"), "-inkey", path("client-priv.pem"),
            "-in", path("client-pub.pem"), "-certfile", path("all_cas.pem"), "-passout", "pass:" + PKI_PASSWORD)
    return {"ca_pem": path("ca.pem"), "ca_der": path("ca.der"), "all_cas_pem": path("all_cas.pem"),
            "server_pem": path("server.pem"), "priv_pem": path("client-priv.pem"),
            "priv_der": path("client-priv.der"), "pub_pem": path("client-pub.pem"),
            "pub_der": path("client-pub.der"), "pkcs": path("client.pfx"), "password": PKI_PASSWORD}


SCRAM_MECHANISMS = {"SCRAM-SHA-256": (1, "sha256"), "SCRAM-SHA-512": (2, "sha512")}


def add_scram_user(bootstrap, user, password, mechanism="SCRAM-SHA-256", iterations=4096):
    """Creates or replaces a SCRAM credential with AlterUserScramCredentials v0 (KIP-554) on a
    listener that needs no authentication, written here by hand so that no client library is
    needed; the salted password is computed here, as Kafka's admin clients do. Raises
    SystemExit with the broker's error when it refuses."""
    def uvarint(n):
        out = b""
        while True:
            b = n & 0x7F
            n >>= 7
            if n:
                out += bytes([b | 0x80])
            else:
                return out + bytes([b])

    def compact(b):
        return uvarint(len(b) + 1) + b

    code, digest = SCRAM_MECHANISMS[mechanism]
    salt = os.urandom(32)
    salted = hashlib.pbkdf2_hmac(digest, password.encode(), salt, iterations)
    correlation = 1
    header = struct.pack(">hhi", 51, 0, correlation) + struct.pack(">h", 6) + b"compat" + uvarint(0)
    body = (uvarint(1)  # no deletions
            + uvarint(2) + compact(user.encode()) + struct.pack(">bi", code, iterations)
            + compact(salt) + compact(salted) + uvarint(0)
            + uvarint(0))
    request = header + body
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(struct.pack(">i", len(request)) + request)

        def read(n):
            data = b""
            while len(data) < n:
                chunk = s.recv(n - len(data))
                if not chunk:
                    raise SystemExit("AlterUserScramCredentials: the broker closed the connection")
                data += chunk
            return data

        size = struct.unpack(">i", read(4))[0]
        resp = read(size)
    pos = 0

    def take_uvarint():
        nonlocal pos
        shift = value = 0
        while True:
            b = resp[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7

    got = struct.unpack_from(">i", resp, 0)[0]
    pos = 4
    take_uvarint()  # header tags
    pos += 4  # throttle_time_ms
    results = take_uvarint() - 1
    if got != correlation or results != 1:
        raise SystemExit("AlterUserScramCredentials for %s: an answer with %d results (correlation id %d)" % (
            user, results, got))
    for _ in range(results):
        n = take_uvarint() - 1
        name = resp[pos:pos + n].decode()
        pos += n
        error = struct.unpack_from(">h", resp, pos)[0]
        pos += 2
        n = take_uvarint() - 1
        message = resp[pos:pos + n].decode() if n >= 0 else ""
        pos += max(n, 0)
        take_uvarint()
        if name != user or error != 0:
            raise SystemExit("AlterUserScramCredentials for %s (%s) failed: error %d %s" % (
                user, mechanism, error, message))
