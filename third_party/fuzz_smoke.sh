#!/usr/bin/env bash
# Runs a libFuzzer binary for a fixed number of executions from its seed corpus.
# usage: fuzz_smoke.sh FUZZER RUNS [SEED...]
set -euo pipefail
fuzzer=$1 runs=$2
shift 2
corpus="${TEST_TMPDIR:-$(mktemp -d)}/corpus"
mkdir -p "$corpus"
for seed in "$@"; do cp "$seed" "$corpus/"; done
exec "$fuzzer" -runs="$runs" -seed=1 -rss_limit_mb=2048 -print_final_stats=1 "$corpus"
