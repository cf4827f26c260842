#!/usr/bin/env bash
# Every compatibility suite in full, then COMPATIBILITY.md from their reports:
#   librdkafka's regression suite in quick mode, in full mode and with idempotence forced on,
#   kafka-python's and rust-rdkafka's integration tests, and the confluent-kafka-python check;
#   then librdkafka's (quick mode, and with idempotence), kafka-python's and rust-rdkafka's
#   against a cluster of three nodes, and librdkafka's security tests over SASL_SSL.
# Each suite starts its own Samsa (SAMSA_IO_ENGINE picks the engine, as everywhere). A suite
# with failures does not stop the others; the exit status is 1 when any suite failed.
# Takes about two hours on two cores, most of it librdkafka's. With --resume, a suite whose
# report is already in target/compat (from an earlier, interrupted run) is not run again: its
# row keeps the commit and date it was tested at.
#
#   scripts/compat/all.sh [--resume]
set -uo pipefail
cd "$(dirname "$0")/../.."
resume=false
[[ "${1:-}" == "--resume" ]] && resume=true

cargo build --quiet -p samsa-broker --bin samsa || exit 1
export TEST_SAMSA_BIN="${TEST_SAMSA_BIN:-$PWD/target/debug/samsa}"
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
python3 scripts/compat/matrix.py || status=1
exit $status
