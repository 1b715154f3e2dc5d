#!/usr/bin/env bash
# `codecvisor backends` across commands: each command is a host of its own,
# so what one saw (a poison request's crashes, a quarantine) reaches the
# next through the per-user backend history ($XDG_STATE_HOME); `backends`
# load-checks every plugin by default and shows why one cannot load;
# `--reset NAME` clears the record.
set -euo pipefail

cv="$TEST_SRCDIR/codecvisor/tools/codecvisor"
testing="$TEST_SRCDIR/codecvisor/backends/testing"
tmp="$TEST_TMPDIR"
export XDG_STATE_HOME="$tmp/state"
history="$XDG_STATE_HOME/codecvisor/backends.toml"
source "$TEST_SRCDIR/codecvisor/tools/cli/cli_checks.sh"
out="$tmp/out" err="$tmp/err"

# The faulty test backend, and two plugins whose libraries cannot load.
plugins="$tmp/plugins"
mkdir -p "$plugins"
cp "$testing/faulty.toml" "$testing/libcodecvisor_faulty.so" "$plugins/"
printf 'name = "nolib"\ndevices = ["nolib"]\nlibrary = "libmissing.so"\nentry = "codecvisor_backend_v1"\nabi_version = 1\n' \
  >"$plugins/nolib.toml"
printf 'void vendor_dep_init(void);\nvoid *codecvisor_backend_v1(void) { vendor_dep_init(); return 0; }\n' >"$tmp/undef.c"
cc -shared -fPIC -o "$plugins/libundef.so" "$tmp/undef.c"
printf 'name = "undef"\ndevices = ["undef"]\nlibrary = "libundef.so"\nentry = "codecvisor_backend_v1"\nabi_version = 1\n' \
  >"$plugins/undef.toml"
export CODECVISOR_BACKEND_PATH="$plugins"

# By default every backend is started: the broken ones say why, the
# command still lists everything and exits 0 (--start makes it exit 1).
check "backends checks by default" run_cv 0 "$out" "$err" backends
check "cpu started" grep -qE '^cpu +cpu +ready +[0-9]+ ' "$tmp/out"
check "faulty started" grep -qE '^faulty +faulty +ready +[0-9]+ ' "$tmp/out"
check "nolib failed" grep -qE '^nolib +nolib +failed ' "$tmp/out"
check "nolib says why" grep -q "diagnostic: .*libmissing.so: cannot open shared object file" "$tmp/out"
check "undef failed" grep -qE '^undef +undef +failed ' "$tmp/out"
check "undef names the symbol and the fix" grep -q \
  "diagnostic: .*the plugin uses vendor_dep_init, which no library it is linked against defines: link the plugin" \
  "$tmp/out"
check "backends --start fails for them" run_cv 1 "$out" "$err" backends --start
check "--start repeats why on stderr" grep -q "^codecvisor backends: .*libmissing.so" "$tmp/err"
check "--no-check starts nothing" run_cv 0 "$out" "$err" backends --no-check
check "--no-check: nolib only discovered" grep -qE '^nolib +nolib +discovered +- ' "$tmp/out"
check "--no-check excludes --start" run_cv 108 "$out" "$err" backends --no-check --start
check "no history yet" [ ! -e "$history" ]

# A poison request: its frame crashes the backend every time. That command
# exits with the error; the next `backends` shows the crashes it caused.
printf 'synthetic frames=8 width=32 height=24 fps=10 fault=segfault fault_frame=5\n' >"$tmp/poison.syn"
check "poison decode fails" run_cv 1 "$out" "$err" decode "$tmp/poison.syn" --device faulty --indices 5 --out "$tmp/frames"
check "poison message names the backtrace switch" grep -q "CODECVISOR_BACKEND_BACKTRACE=1" "$tmp/err"
check "history written" [ -s "$history" ]
check "history is private" [ "$(stat -c %a "$history")" = 600 ]
check "backends after the crash" run_cv 0 "$out" "$err" backends
check "earlier crash shown" grep -qE '^  earlier runs: [1-9][0-9]* restarts?, last exit: killed by signal 11 \(SIGSEGV\) at 20' \
  "$tmp/out"
check "backends --json after the crash" run_cv 0 "$out" "$err" backends --json
check "json history" grep -qE '"name":"faulty".*"history":\{"restarts":[1-9][0-9]*,"last_exit":"killed by signal 11 \(SIGSEGV\)"' \
  "$tmp/out"
check "json names the file" grep -qF "\"history_file\":\"$history\"" "$tmp/out"
check "cpu has no history" grep -qE '"name":"cpu"[^}]*"history":null}' "$tmp/out"

# Crashes add up across commands.
restarts() { sed -n 's/^  earlier runs: \([0-9]*\) restart.*/\1/p' "$tmp/out" | head -n 1; }
"$cv" backends >"$tmp/out"
before=$(restarts)
check "second poison decode fails" run_cv 1 "$out" "$err" decode "$tmp/poison.syn" --device faulty --indices 5 --out "$tmp/frames"
"$cv" backends >"$tmp/out"
check "restarts add up ($before, then $(restarts))" [ "$(restarts)" -gt "$before" ]

mkdir -p "$tmp/no_plugins"
# Another manifest of the same name (another version of the plugin): the
# record is not its past.
other="$tmp/other_plugins"
mkdir -p "$other"
cp "$testing/faulty.toml" "$testing/libcodecvisor_faulty.so" "$other/"
CODECVISOR_BACKEND_PATH="$other" "$cv" backends >"$tmp/out"
check "faulty from another manifest started" grep -qE '^faulty +faulty +ready ' "$tmp/out"
check "another manifest of the name has no earlier runs" bash -c "! grep -q 'earlier runs' '$tmp/out'"
"$cv" backends >"$tmp/out"
check "the record is still the first manifest's" grep -q 'earlier runs' "$tmp/out"
# Manifests are told apart by where they are, not by how they were typed.
(cd "$other" && CODECVISOR_BACKEND_PATH="$tmp/no_plugins" "$cv" backends --backend-manifest ./faulty.toml) >"$tmp/out"
check "the other manifest, typed relative, has no earlier runs" bash -c "! grep -q 'earlier runs' '$tmp/out'"
(cd "$plugins" && CODECVISOR_BACKEND_PATH="$tmp/no_plugins" "$cv" backends --backend-manifest ./faulty.toml) >"$tmp/out"
check "the first manifest, typed relative, has its earlier runs" grep -q 'earlier runs' "$tmp/out"

# --reset clears the record.
check "backends --reset faulty" run_cv 0 "$out" "$err" backends --reset faulty
check "reset says it cleared the record" grep -q "reset backend 'faulty': cleared its record in $history" "$tmp/err"
"$cv" backends >"$tmp/out"
check "record gone" bash -c "! grep -q 'earlier runs' '$tmp/out'"
# ...also when no manifest of that name is found any more.
check "poison decode for a new record" run_cv 1 "$out" "$err" decode "$tmp/poison.syn" --device faulty --indices 5 --out "$tmp/frames"
mkdir -p "$tmp/no_plugins"
CODECVISOR_BACKEND_PATH="$tmp/no_plugins" check "reset of a backend no manifest provides now" \
  run_cv 0 "$out" "$err" backends --reset faulty
check "it says it cleared the record" grep -q "no backend 'faulty' is found now; cleared its record in $history" "$tmp/err"
check "that record is gone" bash -c "! grep -q 'backend.faulty' '$history'"
CODECVISOR_BACKEND_PATH="$tmp/no_plugins" check "reset of a name never recorded fails" \
  run_cv 1 "$out" "$err" backends --reset faulty

# A history damaged after its first line: a warning, never a failure; the
# next write replaces it.
{ head -n 1 "$history"; echo 'backend = [ not toml'; } >"$tmp/damaged" && mv "$tmp/damaged" "$history"
check "backends with a broken history" run_cv 0 "$out" "$err" backends --no-check
check "broken history warned about" grep -q "^warning: $history: not a backend history" "$tmp/out"
check "decode with a broken history" run_cv 1 "$out" "$err" decode "$tmp/poison.syn" --device faulty --indices 5 --out "$tmp/frames"
check "history rewritten" grep -q '^\[backend.faulty\]' "$history"

# A file there that no host wrote (a path set by mistake): warned about,
# never replaced.
echo 'backend = [ not toml' >"$history"
check "decode beside a file that is not a history" run_cv 1 "$out" "$err" decode "$tmp/poison.syn" --device faulty --indices 5 --out "$tmp/frames"
check "that file is left as it is" [ "$(cat "$history")" = 'backend = [ not toml' ]

check "... and says its record was not kept" grep -q "^codecvisor: the backends' failures in this process were not recorded for \`codecvisor backends\`: " "$tmp/err"

# A state folder that cannot be made (XDG_STATE_HOME through a file): the
# failure is said, not dropped.
: >"$tmp/a_file"
XDG_STATE_HOME="$tmp/a_file/state" check "decode with no history folder" \
  run_cv 1 "$out" "$err" decode "$tmp/poison.syn" --device faulty --indices 5 --out "$tmp/frames"
check "... says its record was not kept" grep -q "^codecvisor: the backends' failures in this process were not recorded" "$tmp/err"
# With no failure to record, a history that cannot be read or made (a HOME
# of another user's) costs nothing, and nothing is said.
XDG_STATE_HOME="$tmp/a_file/state" check "a clean decode with no history folder" \
  run_cv 0 "$out" "$err" decode "$tmp/poison.syn" --device faulty --indices 0 --out "$tmp/frames"
check "... says nothing of a record" bash -c "! grep -q 'not recorded' '$tmp/err'"

echo "$fails checks failed"
[[ $fails == 0 ]]
