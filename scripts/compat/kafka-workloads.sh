#!/usr/bin/env bash
# Kafka Streams, Kafka Connect and MirrorMaker 2 (Apache Kafka 4.4.0's, from Maven Central) as
# workloads against Samsa brokers this script starts on private ports: a Streams application with
# exactly-once v2 (repartition, changelogs, a windowed count) checked exactly, also across a
# SIGKILL of the application and of a broker; Connect in distributed mode running a file source
# and sink across a worker restart; MirrorMaker 2 copying a topic and a group's offsets from a
# reference Kafka (scripts/reference/kafka) to Samsa and back. See run_kafka_workloads.py.
#
#   scripts/compat/kafka-workloads.sh               # every test, one Samsa node
#   scripts/compat/kafka-workloads.sh --cluster 3   # three Samsa nodes, replication factor 3
#   scripts/compat/kafka-workloads.sh --kafka       # the same tests against the reference Kafka 4.4
#   scripts/compat/kafka-workloads.sh --quick       # Streams without kills, Connect without restart
#   scripts/compat/kafka-workloads.sh --only streams-eos,connect-file
#
# Prints one line per test and a final `kafka-workloads: N passed, M failed (K skipped)` line;
# writes target/compat/kafka-workloads[-cluster3][-kafka][-quick].json. Exit status 0 only when
# nothing failed. Skips on Samsa: kafka-workloads-skip.txt, each with its reason.
set -euo pipefail
cd "$(dirname "$0")/../.."

VERSION=4.4.0
LIBS=".tools/kafka-workloads-$VERSION/libs"
# Compiled per run, so that runs at the same time (one node, three) do not share a folder.
CLASSES="target/compat/kafka-workloads/classes-$$"

for tool in java javac mvn; do
  command -v "$tool" >/dev/null || { echo "kafka-workloads.sh: $tool is not on PATH (Java 17 and Maven)" >&2; exit 1; }
done
# The jars, once per version of the pom.
scripts/compat/workloads-libs >/dev/null
# The programs (and the two shims the 4.3.1 plugins need, see the pom), compiled each run.
mkdir -p "$CLASSES"
trap 'rm -rf "$CLASSES"' EXIT
javac -nowarn -d "$CLASSES" -cp "$LIBS/*" $(find compat-tests/java/workloads/src -name '*.java')

ARGS=("$@")
if [[ " ${ARGS[*]} " == *" --kafka "* ]] || [[ " ${ARGS[*]} " != *" --quick "* ]]; then
  python3 scripts/reference/kafka install  # the reference broker: MirrorMaker 2's source, and --kafka
fi
SAMSA_BIN="${TEST_SAMSA_BIN:-target/debug/samsa}"
if [ -z "${TEST_SAMSA_BIN:-}" ]; then
  cargo build --quiet -p samsa-broker --bin samsa
fi
python3 scripts/compat/run_kafka_workloads.py --samsa "$SAMSA_BIN" --libs "$PWD/$LIBS" \
  --classes "$PWD/$CLASSES" --version "$VERSION" "$@"
