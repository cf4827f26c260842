#!/usr/bin/env bash
# Sarama (github.com/IBM/sarama v1.61.1, pinned in compat-tests/go/sarama/go.mod and go.sum)
# against Samsa: the Go tests of compat-tests/go/sarama, each a named check (sync and async
# producers with every codec, partition consumers, offsets by time, consumer groups with every
# assignor and a rebalance, resume from committed offsets, the offset manager, the admin
# client, transactions), run with `go test -json` by run_sarama.py.
#
#   scripts/compat/sarama.sh                # one Samsa node
#   scripts/compat/sarama.sh --cluster 3    # three Samsa nodes, RF=3 topics
#   scripts/compat/sarama.sh --kafka        # the same checks against the reference Kafka 4.4
#   scripts/compat/sarama.sh --quick        # one or two codecs and assignors instead of all
#   scripts/compat/sarama.sh --run 'TestConsumerGroup'   # go test -run
#
# The modules come from the Go module proxy the machine has configured, once, into .tools/go
# (module and build caches); later runs fetch nothing. Writes
# target/compat/sarama[-cluster3][-kafka][-quick].json; prints a line per failed check and
# `sarama: N passed, M failed (K skipped)`; exit status 0 only when nothing failed.
set -euo pipefail
cd "$(dirname "$0")/../.."

command -v go >/dev/null || { echo "sarama.sh: go is not on PATH" >&2; exit 1; }
export GOPATH="$PWD/.tools/go/path" GOMODCACHE="$PWD/.tools/go/mod" GOCACHE="$PWD/.tools/go/cache" GOTOOLCHAIN=local
STAMP=.tools/go/sarama.installed
WANT="$(cat compat-tests/go/sarama/go.sum | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$STAMP" 2>/dev/null)" != "$WANT" ]; then
  echo "sarama.sh: fetching the pinned modules of compat-tests/go/sarama from the Go module proxy ($(go env GOPROXY)), once" >&2
  (cd compat-tests/go/sarama && go mod download && go vet ./...) \
    || { echo "sarama.sh: the install failed; run: (cd compat-tests/go/sarama && go vet ./...)" >&2; exit 1; }
  mkdir -p .tools/go
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
exec python3 scripts/compat/run_sarama.py --samsa "${TEST_SAMSA_BIN:-target/debug/samsa}" "$@"
