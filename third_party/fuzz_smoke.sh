#!/usr/bin/env bash
# The smoke run of a libFuzzer target in `bazel test`: every seed is run
# once, then a fixed number of mutated inputs from a fixed seed. The verdict
# depends on the commit alone, never on the machine's speed or layout:
#  - a run count, not a time budget (-runs), and no per-input timeout short
#    enough to matter (-timeout is libFuzzer's default, 1200 s);
#  - seeds given in a fixed order (-seed_inputs, sorted by name) rather than
#    read from a folder, whose listing order varies by filesystem and which
#    libFuzzer sorts by size alone, leaving ties in listing order;
#  - no mutations from comparison operands (-use_cmp=0, -use_memmem=0): the
#    operands logged from uninstrumented FFmpeg include pointers, which
#    differ from run to run with ASLR and steer the mutator;
#  - no re-reading of the corpus folder on a timer (-reload=0).
# Long, time-bounded runs are a separate command (docs/fuzzing/README.md).
# usage: fuzz_smoke.sh FUZZER RUNS [SEED...]
set -euo pipefail
fuzzer=$1 runs=$2
shift 2
corpus="${TEST_TMPDIR:-$(mktemp -d)}/corpus"
rm -rf "$corpus"
mkdir -p "$corpus"
seeds=$(printf '%s\n' "$@" | LC_ALL=C sort | paste -sd, -)
exec "$fuzzer" -runs="$runs" -seed=1 -use_cmp=0 -use_memmem=0 -reload=0 -rss_limit_mb=2048 \
  -print_final_stats=1 ${seeds:+-seed_inputs="$seeds"} "$corpus"
