#!/usr/bin/env bash
# Runs the `codecvisor` command line with the given arguments, from the
# caller's folder, after installing what is missing and building it
# optimised (with the test backends `bench restart` and `bench soak` drive).
# E.g.: tools/codecvisor.sh decode clip.mp4 --indices 0,9 --format ppm --out frames/
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
"$repo/tools/bootstrap.sh"
(cd "$repo" && bazel build -c opt --ui_event_filters=-info,-stdout,-stderr --noshow_progress //tools:codecvisor \
  //backends/testing:libcodecvisor_synthetic.so //backends/testing:libcodecvisor_faulty.so)
exec "$repo/bazel-bin/tools/codecvisor" "$@"
