"""Samsa, a Kafka-compatible broker, as a Python package.

Installing it puts the ``samsa`` binary on PATH (``samsa dev``, ``samsa --help``), and this
module starts throwaway nodes for tests::

    import samsa

    with samsa.start() as node:              # a free port, a temporary data directory
        print(node.bootstrap_servers)        # "127.0.0.1:PORT"

    # a pytest fixture in two lines
    @pytest.fixture(scope="session")
    def kafka(): yield from samsa.running()

Nodes run ``samsa dev`` (auto-created topics, share groups, internal topics at replication
factor 1, no initial rebalance delay, no fsync on the write path). Keyword arguments are broker
properties with dots written as underscores (``num_partitions=3``); ``properties={...}`` takes
Kafka's names as they are. Every node still running when the interpreter exits is stopped.
"""

import atexit
import os
import selectors
import shutil
import signal
import subprocess
import sysconfig
import tempfile
import threading
import time

__all__ = ["Node", "SamsaError", "binary", "running", "start"]


class SamsaError(RuntimeError):
    """A node that did not start or stop as asked."""


def binary():
    """The path of the ``samsa`` binary: ``$SAMSA_BIN``, else the one this package installed,
    else ``samsa`` on PATH."""
    explicit = os.environ.get("SAMSA_BIN")
    if explicit:
        return explicit
    for scheme_dir in (sysconfig.get_path("scripts"), sysconfig.get_path("scripts", "posix_user")):
        candidate = os.path.join(scheme_dir or "", "samsa")
        if scheme_dir and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("samsa")
    if found:
        return found
    raise SamsaError("no samsa binary: install this package's wheel, or set SAMSA_BIN")


def _flag(key, value):
    if isinstance(value, bool):
        value = "true" if value else "false"
    return "--%s=%s" % (key, value)


_running = set()
_running_lock = threading.Lock()


class Node:
    """One running ``samsa dev`` process. ``bootstrap_servers`` is the ``host:port`` to give
    clients; ``stop()`` ends it (SIGTERM, a clean shutdown) and deletes its data unless the
    directory was given to ``start``."""

    def __init__(self, process, bootstrap_servers, data_dir, log_path, owned_dir):
        self.process = process
        self.bootstrap_servers = bootstrap_servers
        self.data_dir = data_dir
        self.log_path = log_path
        self._owned_dir = owned_dir
        self.pid = process.pid

    @property
    def port(self):
        return int(self.bootstrap_servers.rsplit(":", 1)[1])

    def log(self):
        """The node's log so far."""
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def stop(self, timeout=10.0):
        """Stops the node: SIGTERM, then SIGKILL after ``timeout`` seconds. Returns the
        process's exit code. Safe to call twice."""
        with _running_lock:
            _running.discard(self)
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        if self._owned_dir is not None:
            shutil.rmtree(self._owned_dir, ignore_errors=True)
            self._owned_dir = None
        return self.process.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def __repr__(self):
        return "<samsa.Node pid=%d bootstrap_servers=%s>" % (self.pid, self.bootstrap_servers)


def start(port=0, data_dir=None, timeout=30.0, properties=None, **config):
    """Starts a node and returns it once it serves. ``port=0`` takes a free port; ``data_dir``
    keeps the data there (else a temporary directory, deleted by ``stop()``); ``properties``
    are broker properties by Kafka's names, ``config`` the same with underscores for dots."""
    base = tempfile.mkdtemp(prefix="samsa-")
    log_path = os.path.join(base, "samsa.log")
    owned = base
    if data_dir is None:
        data_dir = os.path.join(base, "data")
    args = [binary(), "dev", "--port", str(port), _flag("log.dirs", data_dir)]
    for key, value in (properties or {}).items():
        args.append(_flag(key, value))
    for key, value in config.items():
        args.append(_flag(key.replace("_", "."), value))
    try:
        with open(log_path, "wb") as log:
            # Its own session: a Ctrl-C meant for the tests does not stop the node under them.
            # SAMSA_* variables are broker properties to samsa; SAMSA_BIN is only ours.
            env = {k: v for k, v in os.environ.items() if k != "SAMSA_BIN"}
            process = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log,
                start_new_session=True, env=env)
    except OSError:
        shutil.rmtree(base, ignore_errors=True)
        raise
    try:
        bootstrap = _wait_serving(process, timeout)
    except BaseException:
        if process.poll() is None:
            process.kill()
            process.wait()
        with open(log_path, errors="replace") as f:
            tail = f.read()[-4000:]
        shutil.rmtree(base, ignore_errors=True)
        raise SamsaError("samsa did not start (%s); its log:\n%s" % (" ".join(args), tail))
    node = Node(process, bootstrap, data_dir, log_path, owned)
    with _running_lock:
        _running.add(node)
    return node


def _wait_serving(process, timeout):
    """Reads the node's stdout until its ``bootstrap.servers=`` line (written once it serves)."""
    deadline = time.monotonic() + timeout
    sel = selectors.DefaultSelector()
    sel.register(process.stdout, selectors.EVENT_READ)
    buffered = b""
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise SamsaError("not serving after %.0f s" % timeout)
            if not sel.select(min(left, 0.5)):
                if process.poll() is not None:
                    raise SamsaError("exited with %s" % process.returncode)
                continue
            chunk = os.read(process.stdout.fileno(), 4096)
            if not chunk:
                process.wait(timeout=max(deadline - time.monotonic(), 0.1))
                raise SamsaError("exited with %s" % process.returncode)
            buffered += chunk
            for line in buffered.split(b"\n")[:-1]:
                if line.startswith(b"bootstrap.servers="):
                    return line.split(b"=", 1)[1].decode().strip()
    finally:
        sel.close()


def running(**kwargs):
    """A generator that starts a node, yields it and stops it: ``yield from samsa.running()``
    makes a pytest fixture."""
    node = start(**kwargs)
    try:
        yield node
    finally:
        node.stop()


@atexit.register
def _stop_all():
    with _running_lock:
        nodes = list(_running)
    for node in nodes:
        try:
            node.stop()
        except Exception:
            pass
