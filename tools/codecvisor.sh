#!/usr/bin/env bash
# The README's main-job command: installs what is missing, builds the
# `codecvisor` command line optimised, and runs it with the given arguments.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/bootstrap.sh
bazel build -c opt --ui_event_filters=-info,-stdout,-stderr --noshow_progress //tools:codecvisor
exec bazel-bin/tools/codecvisor "$@"
