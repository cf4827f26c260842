"""Run by scripts/package/test with the python of a clean virtualenv into which only the
samsa wheel and kafka-python were installed: the installed binary and the `samsa` helper,
through a real client."""

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import uuid

import samsa
from kafka import KafkaConsumer, KafkaProducer
from kafka.errors import KafkaTimeoutError

failures = []


def check(name, ok, detail=""):
    print("%s: %s%s" % ("ok" if ok else "FAILED", name, (" (%s)" % detail) if detail else ""))
    if not ok:
        failures.append(name)


def gone(pid, within=10.0):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # A zombie of ours counts as gone once reaped; not ours, so just look at /proc.
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().split(")")[-1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


venv_bin = sysconfig.get_path("scripts")
installed = os.path.join(venv_bin, "samsa")
check("the wheel put samsa on PATH", shutil.which("samsa") == installed, shutil.which("samsa"))
check("the helper finds the installed binary", samsa.binary() == installed, samsa.binary())
check("the module comes from the wheel, not the source tree",
      os.path.realpath(samsa.__file__).startswith(os.path.realpath(sys.prefix)), samsa.__file__)
version = subprocess.run(["samsa", "--version"], capture_output=True, text=True).stdout.strip()
check("samsa --version names the version and the commit",
      version.startswith("samsa ") and "(commit " in version, version)

# Produce and consume through a node the helper started.
began = time.monotonic()
node = samsa.start()
took_ms = (time.monotonic() - began) * 1000
print("samsa.start() returned after %.0f ms: %r" % (took_ms, node))
check("bootstrap_servers is host:port on loopback",
      node.bootstrap_servers.startswith("127.0.0.1:") and node.port > 0, node.bootstrap_servers)
topic = "wheel-" + uuid.uuid4().hex[:8]
producer = KafkaProducer(bootstrap_servers=node.bootstrap_servers, acks="all")
producer.send(topic, key=b"k", value=b"hello from the wheel").get(timeout=30)
producer.close()
consumer = KafkaConsumer(topic, bootstrap_servers=node.bootstrap_servers, group_id="g-" + topic,
                         auto_offset_reset="earliest", consumer_timeout_ms=20000)
got = []
for m in consumer:  # up to consumer_timeout_ms for the first record; stop at it
    got.append((m.key, m.value))
    break
consumer.close()
check("a record produced is consumed (kafka-python, auto-created topic, a group)",
      got == [(b"k", b"hello from the wheel")], got)
data_dir, pid = node.data_dir, node.pid
code = node.stop()
check("stop() ends the node cleanly", code == 0 and gone(pid), "exit code %s" % code)
check("stop() deletes the node's temporary data", not os.path.exists(data_dir), data_dir)
check("stop() twice is harmless", node.stop() == 0)

# A stop right after start is a clean shutdown too (the node catches SIGTERM before it says
# it serves).
for _ in range(10):
    node = samsa.start()
    code = node.stop()
    if code != 0:
        break
check("a stop right after start is a clean shutdown", code == 0, "exit code %s" % code)

# Broker properties pass through, with underscores for dots and by Kafka's names.
with samsa.start(num_partitions=3, properties={"auto.create.topics.enable": False}) as node:
    producer = KafkaProducer(bootstrap_servers=node.bootstrap_servers, max_block_ms=3000)
    try:
        parts = producer.partitions_for("p3")
    except KafkaTimeoutError:
        parts = None
    producer.close()
    check("properties reach the broker (auto.create.topics.enable=False)", not parts, parts)
with samsa.start(num_partitions=3) as node:
    producer = KafkaProducer(bootstrap_servers=node.bootstrap_servers)
    producer.send("p3", b"x").get(timeout=30)
    parts = producer.partitions_for("p3")
    producer.close()
    check("num_partitions=3 gives auto-created topics three partitions", parts == {0, 1, 2}, parts)
    pid = node.pid
check("the with block stops the node", gone(pid))

# A data directory given is kept; the pytest-style generator starts and stops.
kept = tempfile.mkdtemp(prefix="samsa-kept-")
gen = samsa.running(data_dir=kept)
node = next(gen)
pid = node.pid
gen.close()
check("running() stops its node when closed", gone(pid))
check("a data_dir given is kept", os.path.isdir(os.path.join(kept, "__cluster_metadata-0")), kept)
shutil.rmtree(kept)

# A node left running is stopped at interpreter exit.
out = subprocess.run(
    [sys.executable, "-c",
     "import samsa; n = samsa.start(); print(n.pid, n.data_dir, flush=True)"],
    capture_output=True, text=True, timeout=60)
pid, left = out.stdout.split()
check("a node left running is stopped at interpreter exit", gone(int(pid), within=2.0),
      out.stderr[-500:])
check("... and its data deleted", not os.path.exists(left), left)

# A node that cannot start says why.
try:
    samsa.start(properties={"no.such.key": 1})
    check("a bad property fails start() with the node's message", False, "started")
except samsa.SamsaError as e:
    check("a bad property fails start() with the node's message", "no.such.key" in str(e), str(e)[-300:])

print("python package: %s" % ("all checks passed" if not failures else "FAILED: " + ", ".join(failures)))
sys.exit(1 if failures else 0)
