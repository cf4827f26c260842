#!/usr/bin/env bash
# Kafka's own Java client (org.apache.kafka:kafka-clients 4.4.0) against Samsa: the JUnit 5 suite
# of compat-tests/java/suite (Admin API, producers, classic consumers and rebalances,
# read_committed, KafkaShareConsumer, group.protocol=consumer), run by Maven against brokers
# this script starts on free loopback ports with private data directories.
#
#   scripts/compat/java-client.sh                # one Samsa node
#   scripts/compat/java-client.sh --cluster 3    # three Samsa nodes, RF=3 topics
#   scripts/compat/java-client.sh --kafka        # the same suite against the reference Kafka 4.4
#   scripts/compat/java-client.sh --quick        # the tests tagged "quick" (a few minutes)
#   scripts/compat/java-client.sh --test 'AdminTopicsTest#createPartitions'
#
# Maven's downloads (the pinned plugins, kafka-clients, JUnit) go to Maven's local repository
# (~/.m2, as for scripts/reference/kafka install), once: later runs are offline (mvn -o).
# Writes target/compat/java-client[-cluster3][-kafka][-quick].json; prints a line per failed test
# and `java-client: N passed, M failed (K skipped)`; exit status 0 only when nothing failed.
# Tests skipped on Samsa are listed in java-client-skip.txt, each with its reason.
set -euo pipefail
cd "$(dirname "$0")/../.."

for tool in java mvn; do
  command -v "$tool" >/dev/null || { echo "java-client.sh: $tool is not on PATH (Java 17 and Maven are needed)" >&2; exit 1; }
done
SUITE=compat-tests/java/suite
STAMP=.tools/java-client-suite.installed
WANT="$(sha256sum "$SUITE/pom.xml" | cut -d' ' -f1)"
if [ "$(cat "$STAMP" 2>/dev/null)" != "$WANT" ]; then
  echo "java-client.sh: fetching the suite's pinned Maven dependencies and plugins from Maven Central" >&2
  tmp="$(mktemp -d)"
  # Compiles and runs the one test that needs no broker: resolves everything a run needs.
  mvn -B -q -f "$SUITE/pom.xml" test -Dsuite.build.dir="$tmp" -Dtest=ClientVersionTest \
    >/dev/null 2>&1 || { echo "java-client.sh: the install failed; run: mvn -B -f $SUITE/pom.xml test -Dtest=ClientVersionTest" >&2; exit 1; }
  rm -rf "$tmp"
  mkdir -p .tools
  echo "$WANT" >"$STAMP"
fi

for arg in "$@"; do
  if [ "$arg" = "--kafka" ]; then
    scripts/reference/kafka install
  fi
done
if [ -z "${TEST_SAMSA_BIN:-}" ]; then
  cargo build --quiet -p samsa-broker --bin samsa
fi
exec python3 scripts/compat/run_java_client.py --samsa "${TEST_SAMSA_BIN:-target/debug/samsa}" "$@"
