#!/usr/bin/env bash
# Runs the benchmarks' command line, `codecvisor-bench ipc|decode|restart|soak`,
# with the given arguments, from the caller's folder, after installing what
# is missing and building it optimised, with the test backends `restart`
# and `soak` drive next to it. E.g.: tools/codecvisor-bench.sh decode --json
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
"$repo/tools/bootstrap.sh"
(cd "$repo" && bazel build -c opt --ui_event_filters=-info,-stdout,-stderr --noshow_progress \
  //tools/bench:codecvisor-bench //backends/testing:libcodecvisor_synthetic.so //backends/testing:libcodecvisor_faulty.so)
exec "$repo/bazel-bin/tools/bench/codecvisor-bench" "$@"
