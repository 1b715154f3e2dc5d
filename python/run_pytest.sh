#!/usr/bin/env bash
# Runs pytest suites of the codecvisor package with Debian's Python (the one
# that sees python3-torch), on the package as built in this test's runfiles:
#   run_pytest.sh [--sanitizer=NAME] tests/test_x.py [pytest args]
# Under a sanitizer the extension module is instrumented and Python is not:
# the sanitizer's runtime is preloaded (base/sanitizer_env.sh).
set -euo pipefail
sanitizer=""
if [[ ${1:-} == --sanitizer=* ]]; then
  sanitizer=${1#--sanitizer=}
  shift
fi
source "$TEST_SRCDIR/codecvisor/base/sanitizer_env.sh"
sanitizer_env "$sanitizer"
if [[ -n $SANITIZER_PRELOAD ]]; then
  export LD_PRELOAD="$SANITIZER_PRELOAD"
  ASAN_OPTIONS=$(python_asan_options)
  export ASAN_OPTIONS
fi
root="$TEST_SRCDIR/codecvisor/python"
# tests/ too: spawned DataLoader workers import the test modules by name.
export PYTHONPATH="$root:$root/tests${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
cd "$root/tests"
exec /usr/bin/python3 -m pytest -p no:cacheprovider -q --basetemp="$TEST_TMPDIR/pytest" "$@"
