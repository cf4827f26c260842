#!/usr/bin/env bash
# Runs kafka-python's own integration tests against a Samsa broker this script starts on a
# private port.
#
# The tests come from kafka-python's source distribution on PyPI (the version the project
# tests with, from scripts/install-test-deps), unpacked into .tools/kafka-python-<version>;
# they run in their own venv, .tools/kafka-python-venv, with the suite's test requirements
# and the compression libraries (so every codec is exercised, not skipped).
#
#   scripts/compat/kafka-python.sh                 # every integration test
#   scripts/compat/kafka-python.sh --subset ci     # the tests listed in kafka-python-ci.txt
#   scripts/compat/kafka-python.sh -- -k consumer  # more pytest arguments after --
#
# Prints one line per failed test and a final `kafka-python: N passed, M failed` line; writes
# target/compat/kafka-python[-subset].json. Exit status 0 only when nothing failed. Tests that
# cannot run against Samsa are skipped by kafka-python-skip.txt, each with its reason.
set -euo pipefail
cd "$(dirname "$0")/../.."

VERSION="$(sed -n 's/^KAFKA_PYTHON_VERSION=//p' scripts/install-test-deps)"
[ -n "$VERSION" ] || { echo "kafka-python.sh: no KAFKA_PYTHON_VERSION in scripts/install-test-deps" >&2; exit 1; }
# The suite's [testing] extra and the optional codecs, pinned so that runs are comparable.
TEST_REQUIREMENTS=(pytest==9.2.0 pytest-mock==3.17.0 pytest-timeout==2.4.0
  lz4==4.4.5 python-snappy==0.7.3 zstandard==0.25.0 crc32c==2.9.post0)

SUITE=".tools/kafka-python-$VERSION"
VENV=.tools/kafka-python-venv
STAMP="$VENV/.installed"
WANT="kafka-python==$VERSION ${TEST_REQUIREMENTS[*]}"

if [ ! -f "$SUITE/test/integration/conftest.py" ]; then
  echo "kafka-python.sh: fetching kafka-python $VERSION's source distribution from PyPI" >&2
  mkdir -p .tools
  tmp="$(mktemp -d)"
  python3 -m pip download -q --disable-pip-version-check --no-binary :all: --no-deps \
    "kafka-python==$VERSION" -d "$tmp"
  rm -rf "$SUITE"
  tar -xzf "$tmp"/kafka_python-"$VERSION".tar.gz -C .tools
  mv ".tools/kafka_python-$VERSION" "$SUITE"
  rm -rf "$tmp"
  # The sdist leaves out two files of the repository's test/ folder: the package marker
  # (without it `test` resolves to Python's own test package) and test/service.py, of which
  # the fixtures need only ExternalService for a broker they do not start.
  touch "$SUITE/test/__init__.py"
  cat >"$SUITE/test/service.py" <<'PY'
"""Written by Samsa's scripts/compat/kafka-python.sh: the sdist lacks this module. Only an
external broker is supported here (KAFKA_URI)."""


class ExternalService:
    def __init__(self, host, port):
        self.host = host
        self.port = port

    def open(self):
        pass

    def close(self):
        pass

    def stop(self):
        pass

    def dump_logs(self):
        pass

    def wait_for(self, pattern, timeout=30):
        return True


class SpawnedService:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("this copy of the suite only runs against an external broker (KAFKA_URI)")
PY
fi

if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$WANT" ]; then
  echo "kafka-python.sh: installing the suite's requirements from PyPI into $VENV" >&2
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check "kafka-python==$VERSION" "${TEST_REQUIREMENTS[@]}"
  echo "$WANT" >"$STAMP"
fi

SAMSA_BIN="${TEST_SAMSA_BIN:-target/debug/samsa}"
if [ -z "${TEST_SAMSA_BIN:-}" ]; then
  cargo build --quiet -p samsa-broker --bin samsa
fi
exec python3 scripts/compat/run_kafka_python.py --suite-dir "$SUITE" --python "$PWD/$VENV/bin/python" \
  --version "$VERSION" --samsa "$SAMSA_BIN" "$@"
