#!/usr/bin/env bash
# Every compatibility suite in full, then COMPATIBILITY.md from their reports:
#   librdkafka's regression suite in quick mode, in full mode and with idempotence forced on,
#   kafka-python's and rust-rdkafka's integration tests, and the confluent-kafka-python check;
#   then librdkafka's (quick mode, and with idempotence), kafka-python's and rust-rdkafka's
#   against a cluster of three nodes, and librdkafka's security tests over SASL_SSL.
# Each suite starts its own Samsa (SAMSA_IO_ENGINE picks the engine, as everywhere). A suite
# with failures does not stop the others; the exit status is 1 when any suite failed.
# Takes about two hours on two cores, most of it librdkafka's.
#
#   scripts/compat/all.sh
set -uo pipefail
cd "$(dirname "$0")/../.."

cargo build --quiet -p samsa-broker --bin samsa || exit 1
export TEST_SAMSA_BIN="${TEST_SAMSA_BIN:-$PWD/target/debug/samsa}"
status=0
run() {
  echo "== $*" >&2
  "$@" || status=1
}
run scripts/compat/librdkafka.sh
run scripts/compat/librdkafka.sh --full
run scripts/compat/librdkafka.sh --idempotence
run scripts/compat/kafka-python.sh
run scripts/compat/rust-rdkafka.sh
run scripts/compat/confluent-kafka.sh
# The same suites against a cluster of three nodes (samsa cluster local).
run scripts/compat/librdkafka.sh --cluster 3
run scripts/compat/librdkafka.sh --idempotence --cluster 3
run scripts/compat/kafka-python.sh --cluster 3
run scripts/compat/rust-rdkafka.sh --cluster 3
# librdkafka's SSL and SASL tests (and ordinary traffic) over SASL_SSL on three nodes.
run scripts/compat/librdkafka.sh --subset security --security sasl_ssl --cluster 3
python3 scripts/compat/matrix.py || status=1
exit $status
