#!/usr/bin/env bash
# Runs librdkafka's own regression suite (the test-runner with tests 0001...01xx) against a
# Samsa broker this script starts on a private port.
#
# The librdkafka source comes from the cargo registry (the `rdkafka-sys` crate ships it whole,
# tests included); nothing is fetched from GitHub. It is copied to .tools/librdkafka-tests and
# built there once: ./configure && make libs && make -C tests build.
#
#   scripts/compat/librdkafka.sh                 # every test, quick mode (-Q)
#   scripts/compat/librdkafka.sh --full          # without -Q
#   scripts/compat/librdkafka.sh --idempotence   # with -P (enable.idempotence forced on)
#   scripts/compat/librdkafka.sh --subset ci     # the tests listed in librdkafka-ci.txt
#   scripts/compat/librdkafka.sh --tests 0001,0012
#   scripts/compat/librdkafka.sh --subset security --security sasl_ssl --cluster 3
#       # the SSL/SASL tests (librdkafka-security.txt) over SASL_SSL, as CI runs them
#   scripts/compat/librdkafka.sh --consumer-protocol --subset ci [--cluster 3]
#       # the consumer tests with group.protocol=consumer (KIP-848: TEST_CONSUMER_GROUP_PROTOCOL);
#       # the group tests in full mode take about 11 minutes:
#       # --full --tests 0018,0019,0022,0026,0029,0030,0033,0034,0040,0045,0049,0050,0051,0056,
#       #   0061,0069,0084,0089,0091,0099,0102,0106,0112,0116,0118,0120,0122,0127,0130,0132,0137,
#       #   0140,0153 (0113 in quick mode)
#   scripts/compat/librdkafka.sh --kafka --tests 0089 [--cluster 3]
#       # the same tests against the reference Kafka 4.4 (scripts/reference/kafka, Samsa's
#       # settings, PLAINTEXT only; no racks): is a failure Samsa's or the test's own?
#
# --security ssl|sasl_plaintext|sasl_ssl runs the tests over a listener of that protocol
# (test.conf names it; certificates made with openssl, a SCRAM-SHA-256 user made through the
# PLAINTEXT listener; --sasl-mechanism PLAIN|SCRAM-SHA-512 for another mechanism).
#
# Prints one line per failed test and a final `librdkafka: N passed, M failed` line; writes a
# JSON summary to target/compat/librdkafka[-mode].json. Exit status 0 only when nothing failed.
# Tests that run Kafka's tools (kafka-topics.sh, kafka-acls.sh, the Java transactional producer)
# get KAFKA_PATH: Apache Kafka 4.4.0 as an installation (scripts/reference/kafka bin).
# Tests that cannot run against Samsa are skipped by librdkafka-skip.txt, each with its reason.
set -euo pipefail
cd "$(dirname "$0")/../.."

RDKAFKA_SYS_VERSION="4.10.0+2.12.1"
DEST=.tools/librdkafka-tests
STAMP="$DEST/.built-from"
# Debian packages the build needs: zstd for compressed batches, RapidJSON for the tests that
# read the client's statistics (0053, 0098, 0101 fetch from follower, 0110; the runner skips
# them without it); OpenSSL for TLS and SCRAM (the security subset, --security). The stamp
# names them and the configure flags, so a runner built before one was added is rebuilt.
BUILD_DEPS="libzstd-dev rapidjson-dev libssl-dev"
CONFIGURE_FLAGS="--enable-ssl --disable-gssapi --disable-curl --enable-zstd --enable-zlib"
BUILT_FROM="$RDKAFKA_SYS_VERSION with $BUILD_DEPS; configure $CONFIGURE_FLAGS"

if [ ! -x "$DEST/tests/test-runner" ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$BUILT_FROM" ]; then
  for pkg in $BUILD_DEPS; do
    if ! dpkg -s "$pkg" >/dev/null 2>&1; then
      echo "librdkafka.sh: installing $pkg from Debian" >&2
      SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
      export DEBIAN_FRONTEND=noninteractive
      $SUDO apt-get install -y -q "$pkg" >/dev/null 2>&1 || { $SUDO apt-get update -q >/dev/null && $SUDO apt-get install -y -q "$pkg" >/dev/null; }
    fi
  done
  find_src() {
    ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"rdkafka-sys-$RDKAFKA_SYS_VERSION"/librdkafka 2>/dev/null | head -n 1
  }
  SRC="$(find_src)"
  if [ -z "$SRC" ]; then
    cargo fetch --quiet   # compat-tests depend on rdkafka-sys: this brings its source
    SRC="$(find_src)"
  fi
  [ -n "$SRC" ] || { echo "librdkafka.sh: rdkafka-sys-$RDKAFKA_SYS_VERSION is not in the cargo registry" >&2; exit 1; }
  echo "librdkafka.sh: building librdkafka and its test-runner from $SRC (a few minutes, once)" >&2
  rm -rf "$DEST"
  mkdir -p .tools
  cp -r "$SRC" "$DEST"
  chmod -R u+w "$DEST"
  (
    cd "$DEST"
    # shellcheck disable=SC2086  # the flags are words
    ./configure $CONFIGURE_FLAGS >../librdkafka-tests-configure.txt 2>&1 \
      || { tail -n 30 ../librdkafka-tests-configure.txt >&2; exit 1; }
    make -j"$(nproc)" libs >../librdkafka-tests-make.txt 2>&1 || { tail -n 30 ../librdkafka-tests-make.txt >&2; exit 1; }
    make -j"$(nproc)" -C tests build >>../librdkafka-tests-make.txt 2>&1 || { tail -n 30 ../librdkafka-tests-make.txt >&2; exit 1; }
  )
  echo "$BUILT_FROM" >"$STAMP"
fi

SAMSA_BIN="${TEST_SAMSA_BIN:-target/debug/samsa}"
AGAINST_KAFKA=""
for arg in "$@"; do [ "$arg" = "--kafka" ] && AGAINST_KAFKA=1; done
if [ -z "${TEST_SAMSA_BIN:-}" ] && [ -z "$AGAINST_KAFKA" ]; then
  cargo build --quiet -p samsa-broker --bin samsa
fi
exec python3 scripts/compat/run_librdkafka.py --runner-dir "$DEST/tests" --samsa "$SAMSA_BIN" "$@"
