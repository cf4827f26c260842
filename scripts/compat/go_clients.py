"""What the Go client suites (franz-go's kgo suite, the Sarama program) share: the brokers they
run against and the parsing of `go test -json` into report.py's shape.

The brokers: one Samsa node, N Samsa nodes (RF=3 internal topics), or the reference Kafka 4.4
(scripts/reference/kafka, one node or N), all with scripts/reference/test.properties and the
suite's own settings. A SASL_PLAINTEXT listener (SCRAM-SHA-256 and unsecured OAUTHBEARER, as
franz-go's CI sets up its Kafka) is added on Samsa when asked; scripts/reference/kafka gives
its nodes PLAINTEXT listeners only, so on Kafka `sasl` is None.

Every process started here is stopped by stop() (by pid), which the runners call in `finally`."""
import json
import os
import re
import subprocess
import tempfile
import time

from report import Summary, read_list
from samsa_broker import Broker, Cluster, Nodes, add_scram_user, cluster_props

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
KAFKA = os.path.join(ROOT, "scripts", "reference", "kafka")
TEST_PROPERTIES = os.path.join(ROOT, "scripts", "reference", "test.properties")

# Three nodes: every internal topic on every node, as a production cluster has them.
CLUSTER_PROPS = {
    "default.replication.factor": "3",
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "share.coordinator.state.topic.replication.factor": "3",
    "share.coordinator.state.topic.min.isr": "2",
}

SASL_USER, SASL_PASSWORD = "testuser", "testpass"
SASL_PROPS = {
    "sasl.enabled.mechanisms": "SCRAM-SHA-256,OAUTHBEARER",
    # Kafka's unsecured validator, as franz-go's CI configures its broker's listener.
    "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config":
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
        "unsecuredLoginStringClaim_sub=\"admin\";",
}


def go_env():
    """The Go toolchain's environment: module and build caches under .tools/go, so that a
    fresh machine fetches each pinned module once from the module proxy the machine has
    configured and every later run builds from the caches; the installed toolchain only."""
    base = os.path.join(ROOT, ".tools", "go")
    env = dict(os.environ)
    env.update({"GOPATH": os.path.join(base, "path"), "GOMODCACHE": os.path.join(base, "mod"),
                "GOCACHE": os.path.join(base, "cache"), "GOTOOLCHAIN": "local"})
    return env


def read_properties(path):
    props = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith(("#", "!")):
                key, _, value = line.partition("=")
                props[key.strip()] = value.strip()
    return props


class ReferenceKafka:
    """The reference Kafka 4.4 through scripts/reference/kafka, stopped by pid in stop()."""

    def __init__(self, workdir, nodes, props):
        self.dir = os.path.join(workdir, "kafka")
        self.sasl = None
        cmd = [KAFKA, "start", self.dir, "--nodes", str(nodes)]
        for k, v in props.items():
            cmd += ["--set", "%s=%s" % (k, v)]
        try:
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        except subprocess.CalledProcessError:
            self.stop()
            raise SystemExit("the reference Kafka did not start; see " + self.dir)
        with open(os.path.join(self.dir, "cluster.json")) as f:
            self.bootstrap = json.load(f)["bootstrap"]
        self.log_path = self.dir

    def stop(self):
        subprocess.run([KAFKA, "stop", self.dir])


class SamsaBrokers:
    """One Samsa node (Broker) or `nodes` (Cluster, or Nodes when a SASL listener is wanted);
    `sasl` is the SASL_PLAINTEXT bootstrap with a SCRAM-SHA-256 user SASL_USER, or None."""

    def __init__(self, samsa, workdir, nodes, props, sasl=False):
        samsa = os.path.abspath(samsa)
        self.sasl = None
        if sasl:
            props = dict(props, **SASL_PROPS)
            if nodes > 1:
                self.inner = Nodes(samsa, workdir, nodes, cluster_props(props), listeners=["SASL_PLAINTEXT"])
            else:
                self.inner = Broker(samsa, workdir, props, listeners=["SASL_PLAINTEXT"])
            self.sasl = self.inner.address("SASL_PLAINTEXT")
            add_scram_user(self.inner.bootstrap.split(",")[0], SASL_USER, SASL_PASSWORD)
            if nodes > 1:
                time.sleep(1)  # the credential reaches the other nodes through the metadata log
        elif nodes > 1:
            self.inner = Cluster(samsa, workdir, nodes, cluster_props(props))
        else:
            self.inner = Broker(samsa, workdir, props)
        self.bootstrap = self.inner.bootstrap
        self.log_path = self.inner.log_path

    def stop(self):
        self.inner.stop()


def start_brokers(args, workdir, extra_props, sasl=False):
    """The brokers a run asks for (args.kafka, args.cluster, args.samsa)."""
    nodes = args.cluster or 1
    props = read_properties(TEST_PROPERTIES)
    props.update(extra_props)
    if nodes >= 3:
        props.update(CLUSTER_PROPS)
    if args.kafka:
        return ReferenceKafka(workdir, nodes, props)
    return SamsaBrokers(args.samsa, workdir, nodes, props, sasl=sasl)


def report_stem(suite, args):
    return suite + ("-cluster%d" % args.cluster if args.cluster else "") + \
        ("-kafka" if args.kafka else "") + ("-quick" if args.quick else "")


def report_mode(args):
    return ("quick" if args.quick else "full") + ("-cluster%d" % args.cluster if args.cluster else "") + \
        ("-kafka" if args.kafka else "")


# A line of a test's output that says why it failed or skipped: `file_test.go:123: message`.
WHY = re.compile(r"^\s*(\w+_test\.go:\d+: .*)$")


def go_test_results(json_path):
    """(test name, state, duration, reason) for every test and subtest of a `go test -json`
    output file, in the order they ended. A test that started and never ended (the binary
    panicked or hit -timeout) is FAILED; so is a package that failed outside any test."""
    outputs, ended, started, order = {}, {}, [], []
    package_fail, package_output = None, []
    with open(json_path) as f:
        for line in f:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            test, action = ev.get("Test"), ev.get("Action")
            if not test:
                if action == "output":
                    package_output.append(ev.get("Output", ""))
                elif action == "fail":
                    package_fail = ev
                continue
            if action == "run":
                started.append(test)
            elif action == "output":
                outputs.setdefault(test, []).append(ev.get("Output", ""))
            elif action in ("pass", "fail", "skip"):
                ended[test] = (action, float(ev.get("Elapsed") or 0))
                order.append(test)
    out = []
    for test in order:
        action, elapsed = ended[test]
        state = {"pass": "PASSED", "fail": "FAILED", "skip": "SKIPPED"}[action]
        reason = ""
        if state != "PASSED":
            why = [m.group(1) for m in (WHY.match(l.rstrip("\n")) for l in outputs.get(test, [])) if m]
            if why:
                reason = why[0] if state == "SKIPPED" else "; ".join(why[:3])
            elif state == "FAILED":
                reason = "a subtest failed" if any(t.startswith(test + "/") and ended.get(t, ("fail",))[0] == "fail"
                                                   for t in started) else "failed (see the log)"
        out.append((test, state, elapsed, reason))
    for test in started:
        if test not in ended:
            tail = "".join(outputs.get(test, [])[-5:]).strip().replace("\n", " | ")
            out.append((test, "FAILED", 0.0, "did not finish (the test binary ended: panic or -timeout) " + tail[-300:]))
    if package_fail is not None and not any(s == "FAILED" for _, s, _, _ in out):
        tail = "".join(package_output[-8:]).strip().replace("\n", " | ")
        out.append(("(package)", "FAILED", float(package_fail.get("Elapsed") or 0),
                    "the package failed outside any test: " + tail[-400:]))
    return out


def skip_reason(skips, test):
    """The skip file's reason for `test`: its exact name or a glob pattern (fnmatch) of it."""
    import fnmatch
    if test in skips:
        return skips[test]
    for pattern, reason in skips.items():
        if fnmatch.fnmatchcase(test, pattern):
            return reason
    return None


def load_skips(path):
    return read_list(path) if os.path.exists(path) else {}


def run_go_suite(suite, version, args, module_dir, package, broker_props, suite_env, skip_file, sasl=False,
                 timeout="40m", extra=None):
    """Starts the brokers, runs `go test -json` of `package` in `module_dir` with the
    environment `suite_env(broker, nodes)` gives, stops the brokers, and reports one entry per
    test and subtest in target/compat/<suite>[-cluster3][-kafka][-quick].json. On Samsa a test
    that skips itself must be listed in `skip_file` with its reason (else it is a failure);
    on Kafka skips keep the test's own words. Returns the exit status."""
    nodes = args.cluster or 1
    stem, mode = report_stem(suite, args), report_mode(args)
    workdir = tempfile.mkdtemp(prefix="samsa-%s-" % suite)
    skips = {} if args.kafka else load_skips(skip_file)
    started = time.time()
    broker = start_brokers(args, workdir, broker_props, sasl=sasl)
    json_path = os.path.join(workdir, "go-test.json")
    try:
        env = go_env()
        env.update(suite_env(broker, nodes))
        cmd = ["go", "test", "-json", "-count=1", "-timeout", timeout]
        if getattr(args, "run", None):
            cmd += ["-run", args.run]
        cmd.append(package)
        print("%s %s: %s, %s %s, logs in %s" % (suite, version, mode, "kafka" if args.kafka else "samsa",
                                               broker.bootstrap, workdir), flush=True)
        with open(json_path, "w") as out, open(os.path.join(workdir, "go-test.stderr"), "w") as err:
            subprocess.run(cmd, cwd=module_dir, env=env, stdout=out, stderr=err)
    finally:
        broker.stop()
    elapsed = time.time() - started

    summary = Summary(suite, version, mode)
    summary.data.update({"broker": "kafka" if args.kafka else "samsa", "nodes": nodes, "wall_s": round(elapsed, 1)})
    summary.data.update(extra or {})
    results = go_test_results(json_path)
    if not results:
        summary.add("(go test)", "(go test)", "FAILED", 0, "go test reported no test; see %s and go-test.stderr"
                    % json_path, log=json_path)
    for test, state, duration, reason in results:
        if state == "SKIPPED" and not args.kafka:
            listed = skip_reason(skips, test)
            if listed is None:
                state = "FAILED"
                reason = "skipped itself on Samsa, and %s does not say why: %s" % (os.path.basename(skip_file), reason)
            else:
                reason = "%s (the test: %s)" % (listed, reason)
        summary.add(test, test, state, duration, reason, **({"log": json_path} if state != "PASSED" else {}))
    print("%s: wall time %.0f s" % (suite, elapsed), flush=True)
    return summary.finish(stem)
