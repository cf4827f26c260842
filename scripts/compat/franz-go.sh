#!/usr/bin/env bash
# franz-go's own kgo integration suite (pkg/kgo/*_test.go of github.com/twmb/franz-go v1.22.3)
# against Samsa, run with `go test -json` by run_franz_go.py, one report entry per test and
# subtest. pkg/kadm has no tests that reach a broker (its tests are unit tests), so the kgo
# package is the suite.
#
#   scripts/compat/franz-go.sh                # one Samsa node (KGO_TEST_RF=1)
#   scripts/compat/franz-go.sh --cluster 3    # three Samsa nodes, KGO_TEST_RF=3
#   scripts/compat/franz-go.sh --kafka        # the same suite against the reference Kafka 4.4
#   scripts/compat/franz-go.sh --quick        # fewer records through the ETL tests (KGO_TEST_RECORDS)
#   scripts/compat/franz-go.sh --run 'TestGroupETL|TestTxnEtl'   # go test -run
#
# The module comes from the Go module proxy the machine has configured (`go mod download`,
# checked against its pinned hash) and is copied once to .tools/franz-go-1.22.3 (writable: go
# test writes there); module and build caches are under .tools/go, so later runs fetch nothing.
# Writes target/compat/franz-go[-cluster3][-kafka][-quick].json; prints a line per failed test
# and `franz-go: N passed, M failed (K skipped)`; exit status 0 only when nothing failed.
# Tests that skip themselves on Samsa (KIP-848, share groups v2) are listed in
# franz-go-skip.txt, each with its reason.
set -euo pipefail
cd "$(dirname "$0")/../.."

MODULE=github.com/twmb/franz-go
VERSION=v1.22.3
SUM="h1:RHe35s34pKefMLyL+ZYJ6mQVtfFZz4zHDHVkTyACur0="
DEST=.tools/franz-go-${VERSION#v}
command -v go >/dev/null || { echo "franz-go.sh: go is not on PATH" >&2; exit 1; }
export GOPATH="$PWD/.tools/go/path" GOMODCACHE="$PWD/.tools/go/mod" GOCACHE="$PWD/.tools/go/cache" GOTOOLCHAIN=local

if [ "$(cat "$DEST/.installed" 2>/dev/null)" != "$MODULE@$VERSION $SUM" ]; then
  echo "franz-go.sh: fetching $MODULE@$VERSION from the Go module proxy ($(go env GOPROXY)), once" >&2
  info="$(cd /tmp && go mod download -json "$MODULE@$VERSION")"
  got="$(printf '%s' "$info" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("Sum",""), d.get("Dir",""), d.get("Error",""))')"
  read -r sum dir _ <<<"$got"
  [ "$sum" = "$SUM" ] || { echo "franz-go.sh: $MODULE@$VERSION has hash '$sum', expected $SUM: $got" >&2; exit 1; }
  rm -rf "$DEST" "$DEST.partial"
  mkdir -p .tools
  cp -r "$dir" "$DEST.partial"
  chmod -R u+w "$DEST.partial"
  # Builds the test binary once (its dependencies come from the proxy, checked by go.sum).
  (cd "$DEST.partial" && go test -count=1 -run '^$' ./pkg/kgo/ >/dev/null) \
    || { echo "franz-go.sh: building the kgo tests failed; run: (cd $DEST.partial && go vet ./pkg/kgo/)" >&2; exit 1; }
  mv "$DEST.partial" "$DEST"
  echo "$MODULE@$VERSION $SUM" >"$DEST/.installed"
fi

for arg in "$@"; do
  if [ "$arg" = "--kafka" ]; then
    scripts/reference/kafka install
  fi
done
if [ -z "${TEST_SAMSA_BIN:-}" ]; then
  cargo build --quiet -p samsa-broker --bin samsa
fi
exec python3 scripts/compat/run_franz_go.py --module-dir "$DEST" --samsa "${TEST_SAMSA_BIN:-target/debug/samsa}" "$@"
