#!/usr/bin/env bash
# Runs the `codecvisor` command line with the given arguments, from the
# caller's folder, after installing what is missing and building it
# optimised. E.g.: tools/codecvisor.sh decode clip.mp4 --indices 0,9 --format ppm --out frames/
# (The benchmarks: tools/codecvisor-bench.sh.)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
"$repo/tools/bootstrap.sh"
(cd "$repo" && bazel build -c opt --ui_event_filters=-info,-stdout,-stderr --noshow_progress //tools:codecvisor)
exec "$repo/bazel-bin/tools/codecvisor" "$@"
