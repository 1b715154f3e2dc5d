#!/usr/bin/env bash
# Checks the boundary's targets over repeated runs, for a quiet machine:
# runs `codecvisor-bench decode` (the generated 1080p and 360p videos, one
# JSON line each) and `codecvisor-bench ipc` RUNS times each (3 unless $RUNS
# says), alternating, and before each run records the load average and the
# idle settings (haltpoll module parameters, haltpoll arguments on the
# kernel command line, the cpuidle driver and governor). Prints each run's
# settings as it starts, then one table of every run's targets: value,
# target, met or NOT MET; the JSON lines stay in the folder it names.
#
#   tools/bench_quiet.sh                 about 10 minutes on a 2-CPU machine
#
# BUSY=1 keeps the machine busy while it measures, to check that the
# targets do not depend on an idle machine: one compile after another
# (g++ -O2 of a file that includes <regex>, one process at a time, at
# normal priority) runs from before the first run until the last ends, and
# every run's row says so. The loop runs in a session of its own, as a
# build started from another terminal does: with autogroup scheduling
# (Linux's default) the CPU is shared fairly between sessions, and a loop
# in the bench's own session would take its share from the in-process
# decoder only (the backend process has a session of its own).
#
# $DECODE_ROUNDS and $IPC_ROUNDS set each run's --rounds; $CODECVISOR_BENCH
# names a codecvisor-bench binary to run instead of building one
# (tools/codecvisor-bench.sh).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
bench=${CODECVISOR_BENCH:-"$repo/tools/codecvisor-bench.sh"}
runs=${RUNS:-3}
decode_rounds=${DECODE_ROUNDS:-3}
ipc_rounds=${IPC_ROUNDS:-5}
out=$(mktemp -d /tmp/bench_quiet.XXXXXX)
busy=${BUSY:-0}

# One compile after another until killed: a build on one core.
compile_loop() {
  printf '#include <regex>\n#include <string>\nbool f(const std::string& s) { return std::regex_match(s, std::regex("(a|b)*c")); }\n' \
    >"$out/busy.cc"
  while :; do g++ -O2 -std=c++20 -c "$out/busy.cc" -o "$out/busy.o"; done
}
if [[ $busy == 1 ]]; then
  command -v g++ >/dev/null || { echo "BUSY=1 needs g++" >&2; exit 1; }
  export -f compile_loop
  export out
  setsid bash -c compile_loop &
  busy_pid=$!
  # setsid made the loop's shell a process group leader: end the group.
  trap 'kill -- -$busy_pid 2>/dev/null; wait $busy_pid 2>/dev/null || true' EXIT
  sleep 5  # the load average starts to show it
fi

# One line: the idle settings that decide how fast a halted vCPU wakes.
idle_settings() {
  local f parts=()
  for f in /sys/module/haltpoll/parameters/*; do
    [[ -r $f ]] && parts+=("haltpoll.$(basename "$f")=$(cat "$f")")
  done
  local cmdline
  cmdline=$(grep -o '[^ ]*haltpoll[^ ]*' /proc/cmdline | tr '\n' ' ' || true)
  parts+=("cmdline: ${cmdline:-none}")
  for f in current_driver current_governor_ro current_governor; do
    [[ -r /sys/devices/system/cpu/cpuidle/$f ]] && parts+=("cpuidle.$f=$(cat "/sys/devices/system/cpu/cpuidle/$f")")
  done
  printf '%s; ' "${parts[@]}"
}

# run NAME N ARGS...: one bench run, its JSON lines tagged with the run,
# the load and the idle settings taken just before it.
run() {
  local name=$1 n=$2
  shift 2
  local load settings
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  settings=$(idle_settings)
  [[ $busy == 1 ]] && settings="busy: a compile loop; $settings"
  printf 'run %d %s: load %s; %s\n' "$n" "$name" "$load" "$settings" >&2
  local start=$SECONDS
  "$bench" "$name" --json "$@" | jq -c --arg bench "$name" --argjson run "$n" --arg load "$load" \
    --arg idle "$settings" '. + {bench: $bench, run: $run, load: $load, idle: $idle}' >>"$out/runs.jsonl"
  printf 'run %d %s: %d s\n' "$n" "$name" $((SECONDS - start)) >&2
}

for ((n = 1; n <= runs; n++)); do
  run decode "$n" --rounds "$decode_rounds"
  run ipc "$n" --rounds "$ipc_rounds"
done

printf '\n`%stools/bench_quiet.sh` (RUNS=%d, decode --rounds %d, ipc --rounds %d) on %d CPUs, Linux %s; JSON in %s\n\n' \
  "$([[ $busy == 1 ]] && echo 'BUSY=1 ')" "$runs" "$decode_rounds" "$ipc_rounds" "$(nproc)" "$(uname -r)" "$out/runs.jsonl"
jq -rs '
  def fmt: if type == "number" then (. * 1000 | round / 1000 | tostring) else tostring end;
  def what: if .width then "decode \(.height)p" else .bench end;
  "| run | bench | load (1, 5, 15 min) | figure | value | target | met |",
  "| --- | --- | --- | --- | --- | --- | --- |",
  (sort_by(what, .run)[] as $r | $r.targets[]
   | "| \($r.run) | \($r | what) | \($r.load) | \(.figure) | \($r[.figure] | fmt) | \(.target) | \(if .met then "met" else "NOT MET" end) |"),
  "",
  (group_by(what)[] | "\(.[0] | what): all targets met in \(map(select(.targets_met)) | length) of \(length) runs")
' "$out/runs.jsonl"
