#!/usr/bin/env bash
# confluent-kafka-python's own tests against Samsa, as far as its PyPI source distribution
# allows: this script fetches the sdist of the version the project tests with
# (scripts/install-test-deps) and looks for what could run against an external broker.
#
# confluent-kafka-python 2.16.1's sdist has none: it ships no tests/ folder (the repository's
# tests/integration, which can target an external cluster, is left out of the sdist), and its
# kafkatest verifiable producer and consumer (the clients Kafka's own system tests drive) stop
# at start on Python 3 (`dict.iteritems`). The script checks both facts again, so that a new
# version that ships a runnable suite is noticed, and records the finding in
# target/compat/confluent-kafka.json for the matrix. The client itself is covered by
# compat-tests/python/confluent_kafka_basic.py and, through librdkafka (which it wraps), by
# librdkafka's regression suite (scripts/compat/librdkafka.sh).
#
# Exit status 0 when the finding stands, 1 when the sdist now has something to run (write the
# runner) or could not be checked.
set -euo pipefail
cd "$(dirname "$0")/../.."

VERSION="$(sed -n 's/^CONFLUENT_KAFKA_VERSION=//p' scripts/install-test-deps)"
[ -n "$VERSION" ] || { echo "confluent-kafka.sh: no CONFLUENT_KAFKA_VERSION in scripts/install-test-deps" >&2; exit 1; }
scripts/install-test-deps
SDIST=".tools/confluent-kafka-$VERSION"
if [ ! -d "$SDIST" ]; then
  tmp="$(mktemp -d)"
  python3 -m pip download -q --disable-pip-version-check --no-binary :all: --no-deps \
    "confluent-kafka==$VERSION" -d "$tmp"
  mkdir -p .tools
  tar -xzf "$tmp"/confluent_kafka-"$VERSION".tar.gz -C "$tmp"
  mv "$tmp/confluent_kafka-$VERSION" "$SDIST"
  rm -rf "$tmp"
fi

findings=()
if [ -d "$SDIST/tests" ]; then
  echo "confluent-kafka: the $VERSION sdist ships tests/: write a runner for them (scripts/compat)" >&2
  exit 1
fi
findings+=("its PyPI sdist ships no tests (the repository's tests/integration is left out)")

kafkatest="$SDIST/src/confluent_kafka/kafkatest/verifiable_producer.py"
if [ -f "$kafkatest" ]; then
  # Against a port nobody listens on: a working client starts, produces nothing and exits.
  if out="$(cd "$(dirname "$kafkatest")" && timeout 30 "$OLDPWD/.venv/bin/python" verifiable_producer.py \
      --topic probe --broker-list 127.0.0.1:9 --max-messages 0 2>&1)"; then
    echo "confluent-kafka: the $VERSION kafkatest verifiable producer starts now: write a runner for it" >&2
    exit 1
  fi
  findings+=("its kafkatest verifiable clients stop at start on Python 3: $(echo "$out" | tail -n 1)")
fi

reason="$(printf '%s; ' "${findings[@]}")"
reason="${reason%; }. It wraps librdkafka $(.venv/bin/python -c 'import confluent_kafka as c; print(c.libversion()[0])') (the librdkafka rows run the suite of the librdkafka in rdkafka-sys); compat-tests/python/confluent_kafka_basic.py covers the Python layer"
mkdir -p target/compat
python3 - "$VERSION" "$reason" <<'PY'
import json, os, sys
version, reason = sys.argv[1], sys.argv[2]
with open(os.path.join("target", "compat", "confluent-kafka.json"), "w") as f:
    json.dump({"suite": "confluent-kafka", "version": version, "mode": "full",
               "engine": os.environ.get("SAMSA_IO_ENGINE", "auto"), "tests": [],
               "passed": 0, "failed": 0, "skipped": 0, "unavailable": reason}, f, indent=1)
PY
echo "confluent-kafka: no runnable suite in $VERSION: $reason"
