# Checks for the shell tests (sourced): each prints "ok   NAME" or
# "FAIL NAME" and counts failures in $fails; $out and $err (set them first)
# receive the output of the command `expect` ran.

fails=0

# holds NAME CMD...: a check that CMD succeeds.
holds() {
  local name=$1
  shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name" >&2; fails=$((fails + 1)); fi
}

# expect RC NAME CMD...: a check that CMD exits with RC; its stdout is left
# in $out and its stderr in $err.
expect() {
  local want=$1 name=$2 rc=0
  shift 2
  "$@" >"$out" 2>"$err" || rc=$?
  holds "$name" [ "$rc" = "$want" ] || true
  [[ $rc == "$want" ]] || echo "  $*: exit $rc, wanted $want; stderr: $(cat "$err")" >&2
}
