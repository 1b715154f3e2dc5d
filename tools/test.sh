#!/usr/bin/env bash
# The README's test command: installs what is missing, then runs every test.
# Extra arguments go to `bazel test` (e.g. --config=asan).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/bootstrap.sh
mapfile -t cgroups < <(tools/cgroup_flags.sh)
exec bazel test --keep_going "${cgroups[@]}" "$@" //...
