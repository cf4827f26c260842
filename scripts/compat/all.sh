#!/usr/bin/env bash
# Every compatibility suite in full, then COMPATIBILITY.md from their reports:
#   librdkafka's regression suite in quick mode, in full mode and with idempotence forced on,
#   kafka-python's and rust-rdkafka's integration tests, and the confluent-kafka-python check;
#   then librdkafka's (quick mode, and with idempotence), kafka-python's and rust-rdkafka's
#   against a cluster of three nodes, and librdkafka's security tests over SASL_SSL; then the
#   reference clients and tools (Kafka's Java client and CLI tools, Streams, Connect and
#   MirrorMaker 2, franz-go, Sarama) on one node and three, and the same against the reference
#   Kafka 4.4 on one node and three.
# Each suite starts its own Samsa (SAMSA_IO_ENGINE picks the engine, as everywhere). A suite
# with failures does not stop the others; the exit status is 1 when any suite failed.
# Takes about three hours on two cores, most of it librdkafka's. With --resume, a suite whose
# report is already in target/compat (from an earlier, interrupted run) is not run again: its
# row keeps the commit and date it was tested at.
#
# --quick runs what scripts/test runs instead, a few minutes a suite: each suite's quick subset
# (scripts/compat/<suite>-ci.txt or the runner's --quick) on the default engine and on epoll,
# librdkafka's against three nodes (also with group.protocol=consumer) and its security tests
# over SASL_SSL on three, and the
# reference clients' and tools' --quick runs on one node (java-client, kafka-tools,
# kafka-workloads, franz-go, sarama: about ten minutes together); it stops at
# the first suite that fails and leaves COMPATIBILITY.md alone.
#
#   scripts/compat/all.sh [--resume]
#   scripts/compat/all.sh --quick
set -uo pipefail
cd "$(dirname "$0")/../.."
resume=false
quick=false
case "${1:-}" in
  --resume) resume=true ;;
  --quick) quick=true ;;
  "") ;;
  *) echo "usage: scripts/compat/all.sh [--resume | --quick]" >&2; exit 2 ;;
esac

cargo build --quiet -p samsa-broker --bin samsa || exit 1
export TEST_SAMSA_BIN="${TEST_SAMSA_BIN:-$PWD/target/debug/samsa}"

if $quick; then
  set -e
  for engine in "${SAMSA_IO_ENGINE:-auto}" epoll; do
    echo "== the clients' own suites, quick subsets (io engine: $engine)" >&2
    SAMSA_IO_ENGINE=$engine scripts/compat/librdkafka.sh --subset ci
    SAMSA_IO_ENGINE=$engine scripts/compat/kafka-python.sh --subset ci
    SAMSA_IO_ENGINE=$engine scripts/compat/rust-rdkafka.sh --subset ci
  done
  echo "== librdkafka's quick subset against a cluster of three nodes" >&2
  scripts/compat/librdkafka.sh --subset ci --cluster 3
  echo "== librdkafka's quick subset with group.protocol=consumer (KIP-848), three nodes" >&2
  scripts/compat/librdkafka.sh --subset ci --consumer-protocol --cluster 3
  echo "== librdkafka's SSL and SASL tests over SASL_SSL, three nodes" >&2
  scripts/compat/librdkafka.sh --subset security --security sasl_ssl --cluster 3
  echo "== the reference clients and tools, quick subsets" >&2
  for suite in java-client kafka-tools kafka-workloads franz-go sarama; do
    scripts/compat/$suite.sh --quick
  done
  exit 0
fi

status=0
run() {
  local report="target/compat/$1"
  shift
  if $resume && [[ -f "$report" ]]; then
    echo "== $* (skipped: $report is there)" >&2
    return
  fi
  echo "== $*" >&2
  "$@" || status=1
}
run librdkafka-quick.json scripts/compat/librdkafka.sh
run librdkafka-full.json scripts/compat/librdkafka.sh --full
run librdkafka-quick-idempotence.json scripts/compat/librdkafka.sh --idempotence
run kafka-python.json scripts/compat/kafka-python.sh
run rust-rdkafka.json scripts/compat/rust-rdkafka.sh
run confluent-kafka.json scripts/compat/confluent-kafka.sh
# The same suites against a cluster of three nodes (samsa cluster local).
run librdkafka-quick-cluster3.json scripts/compat/librdkafka.sh --cluster 3
run librdkafka-quick-idempotence-cluster3.json scripts/compat/librdkafka.sh --idempotence --cluster 3
run kafka-python-cluster3.json scripts/compat/kafka-python.sh --cluster 3
run rust-rdkafka-cluster3.json scripts/compat/rust-rdkafka.sh --cluster 3
# librdkafka's SSL and SASL tests (and ordinary traffic) over SASL_SSL on three nodes.
run librdkafka-quick-security-cluster3-sasl_ssl.json scripts/compat/librdkafka.sh --subset security --security sasl_ssl --cluster 3
# The reference clients and tools (Kafka's Java client, CLI tools, Streams, Connect and
# MirrorMaker 2, franz-go, Sarama): one node and three, then the same against the reference
# Kafka 4.4 (scripts/reference/kafka), for COMPATIBILITY.md's table of both.
for suite in java-client kafka-tools kafka-workloads franz-go sarama; do
  run $suite.json scripts/compat/$suite.sh
  run $suite-cluster3.json scripts/compat/$suite.sh --cluster 3
done
for suite in java-client kafka-tools kafka-workloads franz-go sarama; do
  run $suite-kafka.json scripts/compat/$suite.sh --kafka
  run $suite-cluster3-kafka.json scripts/compat/$suite.sh --kafka --cluster 3
done
python3 scripts/compat/matrix.py || status=1
exit $status
