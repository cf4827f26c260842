#!/usr/bin/env bash
# Runs rust-rdkafka's own integration tests against a Samsa broker this script starts on a
# private port.
#
# The tests come from the `rdkafka` crate as published on crates.io, the version the
# compatibility tests use (from Cargo.lock): the crate's source in the cargo registry has its
# tests/ folder. It is copied to .tools/rust-rdkafka-<version> and its tests built there once
# (their own target folder, so the workspace build is untouched).
#
#   scripts/compat/rust-rdkafka.sh                 # every integration test
#   scripts/compat/rust-rdkafka.sh --subset ci     # the tests listed in rust-rdkafka-ci.txt
#
# Prints one line per failed test and a final `rust-rdkafka: N passed, M failed` line; writes
# target/compat/rust-rdkafka[-subset].json. Exit status 0 only when nothing failed.
# SAMSA_RUST_RDKAFKA_LOG sets the tests' RUST_LOG (default off), for example
# `librdkafka=trace,rdkafka=trace` to see the client's own debug log in the test's log file.
set -euo pipefail
cd "$(dirname "$0")/../.."

VERSION="$(awk '/^name = "rdkafka"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)"
[ -n "$VERSION" ] || { echo "rust-rdkafka.sh: no rdkafka in Cargo.lock" >&2; exit 1; }
DEST=".tools/rust-rdkafka-$VERSION"
STAMP="$DEST/.built"

if [ ! -f "$STAMP" ]; then
  find_src() {
    ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"rdkafka-$VERSION" 2>/dev/null | head -n 1
  }
  SRC="$(find_src)"
  if [ -z "$SRC" ]; then
    cargo fetch --quiet   # compat-tests depend on rdkafka: this brings its source
    SRC="$(find_src)"
  fi
  [ -n "$SRC" ] || { echo "rust-rdkafka.sh: rdkafka-$VERSION is not in the cargo registry" >&2; exit 1; }
  echo "rust-rdkafka.sh: building rdkafka $VERSION's tests from $SRC (a few minutes, once)" >&2
  rm -rf "$DEST"
  mkdir -p .tools
  cp -r "$SRC" "$DEST"
  chmod -R u+w "$DEST"
  # A workspace of its own: otherwise cargo takes it for a stray member of Samsa's.
  printf '\n[workspace]\n' >>"$DEST/Cargo.toml"
  (cd "$DEST" && cargo test --tests --no-run --quiet) || { echo "rust-rdkafka.sh: building the tests failed" >&2; exit 1; }
  touch "$STAMP"
fi

SAMSA_BIN="${TEST_SAMSA_BIN:-target/debug/samsa}"
if [ -z "${TEST_SAMSA_BIN:-}" ]; then
  cargo build --quiet -p samsa-broker --bin samsa
fi
exec python3 scripts/compat/run_rust_rdkafka.py --crate-dir "$DEST" --version "$VERSION" --samsa "$SAMSA_BIN" "$@"
