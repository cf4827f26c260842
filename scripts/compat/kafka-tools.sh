#!/usr/bin/env bash
# Kafka's own command-line tools (Apache Kafka 4.4.0's, from Maven Central, unchanged) against
# Samsa brokers this script starts on private ports: each command users run, through the
# bin/kafka-*.sh scripts of the installation `scripts/reference/kafka bin` writes, its output
# checked as a user reads it. See run_kafka_tools.py for the tests.
#
#   scripts/compat/kafka-tools.sh               # every test, one Samsa node
#   scripts/compat/kafka-tools.sh --cluster 3   # three Samsa nodes, RF 3; reassignment, leader election
#   scripts/compat/kafka-tools.sh --kafka       # the same tests against the reference Kafka 4.4
#   scripts/compat/kafka-tools.sh --quick       # the subset scripts/test runs (~2-3 minutes)
#   scripts/compat/kafka-tools.sh --only topics.create,groups.   # by name, or by prefix ending in '.'
#   scripts/compat/kafka-tools.sh --only groups.streams          # groups.streams-*: Kafka Streams apps
#
# Prints one line per test and a final `kafka-tools: N passed, M failed (K skipped)` line; writes
# target/compat/kafka-tools[-cluster3][-kafka][-quick].json. Exit status 0 only when nothing
# failed. Skips on Samsa: kafka-tools-skip.txt, each with its reason. KEEP_WORKDIR=1 keeps the
# logs (every command and its output, per test) also when every test passed.
set -euo pipefail
cd "$(dirname "$0")/../.."

for tool in java javac mvn; do
  command -v "$tool" >/dev/null || { echo "kafka-tools.sh: $tool is not on PATH (Java 17 and Maven)" >&2; exit 1; }
done
python3 scripts/reference/kafka install   # the jars, once; and bin/, config/ beside them
# Kafka Streams (the groups.streams-* tests run compat-tests/java/workloads' StreamsApp): the
# workloads' jars, copied once per version of their pom as kafka-workloads.sh copies them.
WORKLOADS_POM=compat-tests/java/workloads/pom.xml
WORKLOAD_LIBS=".tools/kafka-workloads-4.4.0/libs"
if [ "$(cat "$WORKLOAD_LIBS/.complete" 2>/dev/null)" != "$(sha256sum "$WORKLOADS_POM" | cut -d' ' -f1)" ]; then
  echo "kafka-tools.sh: copying Kafka Streams 4.4.0 and the workloads' jars from Maven Central into $WORKLOAD_LIBS" >&2
  rm -rf "$WORKLOAD_LIBS.partial"
  mvn -q -B -f "$WORKLOADS_POM" dependency:copy-dependencies -DincludeScope=runtime \
    -DoutputDirectory="$PWD/$WORKLOAD_LIBS.partial"
  rm -rf "$WORKLOAD_LIBS"
  mv "$WORKLOAD_LIBS.partial" "$WORKLOAD_LIBS"
  sha256sum "$WORKLOADS_POM" | cut -d' ' -f1 >"$WORKLOAD_LIBS/.complete"
fi
SAMSA_BIN="${TEST_SAMSA_BIN:-target/debug/samsa}"
if [ -z "${TEST_SAMSA_BIN:-}" ] && [[ " $* " != *" --kafka "* ]]; then
  cargo build --quiet -p samsa-broker --bin samsa
fi
exec python3 scripts/compat/run_kafka_tools.py --samsa "$SAMSA_BIN" --workload-libs "$PWD/$WORKLOAD_LIBS" "$@"
