#!/bin/sh
# Regenerates ../kafka_vectors.txt: random topologies (gen.py), configured by Kafka 4.4's own
# InternalTopicManager on a JVM (Diff.java against the jars of .tools/kafka-4.4.0), 700 of the
# answers kept (compact.py). Usage: regen.sh [SEEDS...] (default 2..11); with ALL=<file>, every
# case goes to <file> too, for KAFKA_TOPOLOGY_VECTORS=<file> cargo test ... kafka_vectors.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
# The main checkout keeps .tools (a worktree shares its git directory, not its untracked files).
main=$(cd "$here" && cd "$(git rev-parse --git-common-dir)/.." && pwd)
libs=${KAFKA_LIBS:-$main/.tools/kafka-4.4.0/libs}
cp=$(ls "$libs"/*.jar | tr '\n' ':')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
javac -d "$work" -cp "$cp" "$here/Diff.java"
seeds=${*:-2 3 4 5 6 7 8 9 10 11}
for seed in $seeds; do
    python3 "$here/gen.py" "$seed" 4000 > "$work/cases"
    java -cp "$cp:$work" Diff < "$work/cases" > "$work/results"
    python3 - "$work/cases" "$work/results" >> "$work/all" <<'PY'
import sys
cases = open(sys.argv[1]).read().split('case\n')[1:]
res = open(sys.argv[2]).read().split('result\n')[1:]
assert len(cases) == len(res)
for c, r in zip(cases, res):
    sys.stdout.write('case\n' + c + 'result\n' + r)
PY
done
python3 "$here/compact.py" "$work/all" "$here/../kafka_vectors.txt" 700
if [ -n "${ALL:-}" ]; then python3 "$here/compact.py" "$work/all" "$ALL"; fi
