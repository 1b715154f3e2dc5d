# Checks for the CLI's shell tests (sourced, after setting $cv to the
# codecvisor binary): each check prints "ok   NAME" or "FAIL NAME" and
# counts failures in $fails.

fails=0

check() {  # check NAME COMMAND...: runs the command, counts a failure
  local name=$1
  shift
  if "$@"; then
    echo "ok   $name"
  else
    echo "FAIL $name" >&2
    fails=$((fails + 1))
  fi
}
contains() { [[ $1 == *"$2"* ]] || { echo "  expected to find: $2" >&2; echo "  in: $1" >&2; return 1; }; }
# run_cv RC STDOUT_FILE STDERR_FILE ARGS...: runs codecvisor, checks its exit code.
run_cv() {
  local want=$1 out=$2 err=$3
  shift 3
  local rc=0
  "$cv" "$@" >"$out" 2>"$err" || rc=$?
  [[ $rc == "$want" ]] || { echo "  codecvisor $*: exit $rc, wanted $want; stderr: $(cat "$err")" >&2; return 1; }
}
