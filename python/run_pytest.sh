#!/usr/bin/env bash
# Runs pytest suites of the codecvisor package with Debian's Python (the one
# that sees python3-torch), on the package as built in this test's runfiles:
#   run_pytest.sh tests/test_x.py [pytest args]
set -euo pipefail
root="$TEST_SRCDIR/codecvisor/python"
# tests/ too: spawned DataLoader workers import the test modules by name.
export PYTHONPATH="$root:$root/tests${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
cd "$root/tests"
exec /usr/bin/python3 -m pytest -p no:cacheprovider -q --basetemp="$TEST_TMPDIR/pytest" "$@"
