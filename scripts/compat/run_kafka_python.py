#!/usr/bin/env python3
"""Runs kafka-python's own integration tests (test/integration of its PyPI source distribution)
against a Samsa broker started here, the way the suite targets an external broker: KAFKA_URI
names the broker, KAFKA_VERSION the Kafka release it stands for.

Called by scripts/compat/kafka-python.sh, which unpacks the suite and prepares its venv."""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

from report import Summary, junit_results, read_list
from samsa_broker import Broker, Cluster, cluster_props

HERE = os.path.dirname(os.path.abspath(__file__))

# The suite's own broker fixture (KafkaFixture) starts Kafka as node 0 with 4 partitions per
# topic and advertised listeners set; Samsa gets the same through its ordinary properties.
BROKER_PROPS = {
    "node.id": "0",
    "advertised.listeners": "PLAINTEXT://127.0.0.1:{port}",
    "num.partitions": "4",
    "auto.create.topics.enable": "true",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "offsets.topic.num.partitions": "4",
    # The suite's own fixture runs Kafka with an authorizer that allows where no ACL applies
    # (test/integration/fixtures.py); test_create_describe_delete_acls needs one.
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
}
# The suite's SASL and SSL tests, which ask their fixture for a broker of another transport: run
# apart, without KAFKA_URI (they skip themselves with it), with samsa_secured_fixture.py pointing
# their fixture at Samsa's SSL and SASL_PLAINTEXT listeners (single node only).
SECURED = ("test/integration/test_sasl_integration.py", "test/integration/test_ssl_integration.py")
# The fixture's user (KafkaFixture.broker_user / broker_password).
SASL_USER, SASL_PASSWORD = "alice", "alice-secret"

# The release kafka-python infers from the API versions Samsa advertises (Kafka 4.4's): its
# table ends at 4.3 (DescribeLogDirs v5), which it also infers from Kafka 4.4 itself, and
# test_kafka_version_infer checks that the two agree.
KAFKA_VERSION = "4.3.0"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--suite-dir", required=True, help="the unpacked sdist (holds test/integration)")
    p.add_argument("--python", required=True, help="the python of the suite's venv")
    p.add_argument("--version", required=True, help="kafka-python's version, for the report")
    p.add_argument("--samsa", required=True)
    p.add_argument("--subset", help="run the tests listed in kafka-python-<subset>.txt")
    p.add_argument("--cluster", type=int, default=0,
                   help="run against this many Samsa nodes (samsa cluster local) instead of one")
    p.add_argument("--timeout", type=int, default=60, help="seconds per test")
    p.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    args = p.parse_args()

    targets = ["test/integration"]
    mode = "full"
    if args.subset:
        targets = list(read_list(os.path.join(HERE, "kafka-python-%s.txt" % args.subset)))
        mode = args.subset

    workdir = tempfile.mkdtemp(prefix="samsa-kafka-python-")
    secured = [] if args.cluster else [
        f for f in SECURED if any(f.startswith(t) or t.startswith(f) for t in targets)]
    if args.cluster:
        mode += "-cluster%d" % args.cluster
        broker = Cluster(os.path.abspath(args.samsa), workdir, args.cluster, cluster_props(BROKER_PROPS))
    elif secured:
        ssl_dir = make_certificates(workdir)
        props = dict(BROKER_PROPS, **secured_props(ssl_dir))
        # Every listener advertised, so that a client of the SASL listener is sent to SASL
        # endpoints.
        props["advertised.listeners"] = ",".join(
            "%s://127.0.0.1:{port:%s}" % (name, name) for name in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT"))
        broker = Broker(os.path.abspath(args.samsa), workdir, props, listeners=("SSL", "SASL_PLAINTEXT"))
        add_scram_user(args.samsa, broker.bootstrap)
    else:
        broker = Broker(os.path.abspath(args.samsa), workdir, BROKER_PROPS)
    junit = os.path.join(workdir, "junit.xml")
    log_path = os.path.join(workdir, "pytest.log")
    env = dict(os.environ)
    env.update({
        "KAFKA_URI": "PLAINTEXT://%s" % broker.bootstrap.split(",")[0],
        "KAFKA_VERSION": KAFKA_VERSION,
        # The fixture checks that a Kafka installation directory exists even for an external
        # broker; nothing in it is used.
        "KAFKA_ROOT": workdir,
        "PYTHONPATH": HERE + os.pathsep + env.get("PYTHONPATH", ""),
    })
    # The secured files run apart (below); pytest collects a file named on its command line even
    # when --ignore names it, so they leave the list as well.
    main_targets = [t for t in targets if not any(t.startswith(f) for f in secured)]
    cmd = [args.python, "-m", "pytest", *main_targets, "-p", "no:cacheprovider", "-p", "pytest_skip_list",
           "--skip-list", os.path.join(HERE, "kafka-python-skip.txt"),
           *(["--skip-list", os.path.join(HERE, "kafka-python-cluster-skip.txt")] if args.cluster else []),
           # signal, not the suite's thread method: that one ends the whole run at the first
           # timeout, losing every later result.
           "--timeout=%d" % args.timeout, "--timeout-method=signal",
           "-o", "log_level=WARNING", "-o", "junit_family=xunit1", "--junitxml=" + junit,
           "-rfE", *["--ignore=" + f for f in secured], *args.pytest_args]
    print("kafka-python %s: %s, broker %s (io engine %s), logs in %s" % (
        args.version, mode, broker.bootstrap, os.environ.get("SAMSA_IO_ENGINE", "auto"), workdir), flush=True)
    try:
        with open(log_path, "w") as log:
            runs = []
            if main_targets:
                code = subprocess.run(cmd, cwd=args.suite_dir, env=env, stdout=log,
                                      stderr=subprocess.STDOUT).returncode
                runs.append((junit, code))
            if secured:
                secured_junit = os.path.join(workdir, "junit-secured.xml")
                secured_env = dict(env, SAMSA_SSL_DIR=ssl_dir, SAMSA_LISTENERS=",".join(
                    "%s=%s" % (name, broker.address(name)) for name in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT")))
                del secured_env["KAFKA_URI"]
                secured_cmd = [a for a in cmd if not a.startswith(("--junitxml=", "--ignore="))
                               and a not in main_targets]
                secured_cmd[secured_cmd.index("-m") + 2:secured_cmd.index("-m") + 2] = secured
                secured_cmd += ["-p", "samsa_secured_fixture", "--junitxml=" + secured_junit]
                log.flush()
                secured_code = subprocess.run(secured_cmd, cwd=args.suite_dir, env=secured_env, stdout=log,
                                              stderr=subprocess.STDOUT).returncode
                runs.append((secured_junit, secured_code))
    finally:
        broker.stop()

    summary = Summary("kafka-python", args.version, mode)
    for path, exit_code in runs:
        if not os.path.exists(path):
            summary.add("pytest", "pytest", "FAILED", reason="exit status %d and no report" % exit_code, log=log_path)
        else:
            for test_id, state, duration, reason in junit_results(path):
                summary.add(test_id, test_id, state, duration, reason, log=log_path)
    status = summary.finish("kafka-python" + ("-" + args.subset if args.subset else "")
                            + ("-cluster%d" % args.cluster if args.cluster else ""))
    if status == 0:
        shutil.rmtree(workdir, ignore_errors=True)
    sys.exit(status)


def make_certificates(workdir):
    """A CA (`ca-cert`, the name the suite's fixture looks for) and the broker's PEM keystore
    (`server.pem`: key and certificate, SANs localhost and 127.0.0.1), made with openssl."""
    d = os.path.join(workdir, "ssl")
    os.makedirs(d)

    def openssl(*a):
        subprocess.run(["openssl", *a], cwd=d, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca-cert", "-days", "2",
            "-subj", "/CN=samsa kafka-python CA")
    openssl("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost")
    with open(os.path.join(d, "san.ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca-cert", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.crt", "-days", "2", "-extfile", "san.ext")
    with open(os.path.join(d, "server.pem"), "w") as out:
        for name in ("server.key", "server.crt"):
            with open(os.path.join(d, name)) as f:
                out.write(f.read())
    return d


def secured_props(ssl_dir):
    """The SSL and SASL_PLAINTEXT listeners' settings: the fixture's user for PLAIN in the JAAS
    config, and (add_scram_user) for SCRAM in the metadata."""
    return {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": os.path.join(ssl_dir, "server.pem"),
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config":
            'org.apache.kafka.common.security.plain.PlainLoginModule required user_%s="%s";'
            % (SASL_USER, SASL_PASSWORD),
    }


def add_scram_user(samsa, bootstrap):
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        subprocess.run([os.path.abspath(samsa), "user", "scram-set", "--bootstrap", bootstrap,
                        "--mechanism", mechanism, "--password-stdin", SASL_USER],
                       input=SASL_PASSWORD + "\n", text=True, check=True, stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
