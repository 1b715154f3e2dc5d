#!/usr/bin/env bash
# Runs the benchmarks with --json and prints one markdown table per
# benchmark (figure / value / target / met), its caption naming the command
# and the machine: README.md's "Measured" section is this script's output.
#
#   tools/bench_tables.sh [BENCH...]     BENCH: ipc, decode, seek, restart (default: all four)
#
# Each figure is one run's: on a shared machine, rerun before trusting a
# small difference (the ratios are measured side by side within the run,
# the absolute figures are not). Builds codecvisor-bench optimised first
# (tools/codecvisor-bench.sh), unless $CODECVISOR_BENCH names a
# codecvisor-bench binary to run instead (a copy of another build, say).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
bench=${CODECVISOR_BENCH:-"$repo/tools/codecvisor-bench.sh"}

# The figures each table shows, in order, as "key|what it is".
ipc_figures=(
  "futex_rtt_us|raw futex ping-pong between two processes, us: the baseline"
  "channel_rtt_us|Ping -> Pong over the channel: encode, ring, doorbell, copy-out, decode, us"
  "rtt_ratio|channel / futex round trip"
  "frame_fps|1080p RGB24 frames through the arena: the backend writes every byte, the host reads every byte"
  "local_fps|the same writes and reads by two threads of one process"
  "frame_ratio|arena / two threads"
  "single_thread_fps|one thread writing then reading one buffer: no data crosses cores"
  "single_thread_ratio|arena / one thread"
  "host_cpu_us_per_frame|CPU per frame of the host's reading thread, us"
  "peer_cpu_us_per_frame|CPU per frame of the backend's writing thread, us"
  "local_reader_cpu_us_per_frame|CPU per frame of the local reading thread, us"
  "local_writer_cpu_us_per_frame|CPU per frame of the local writing thread, us"
)
decode_figures=(
  "in_process_fps|the cpu backend's code linked in, frames/s"
  "out_of_process_fps|host, channel, sandboxed child, frames/s"
  "out_of_process_unsandboxed_fps|the same without the sandbox, frames/s"
  "ffmpeg_cli_fps|ffmpeg -threads 0 -i F -pix_fmt rgb24 -f null -, frames/s"
  "ratio|out of process / in process, per round, median"
  "chunk_ratio_quartiles|the same per chunk pair: 25th / 50th / 75th percentile"
  "random_ratio|the same on random indices with exact seeks"
  "cli_ratio|out of process / ffmpeg CLI"
  "sandbox_cost|1 - sandboxed / unsandboxed"
  "in_process_cpu_ms_per_frame|CPU per frame in process, ms"
  "out_of_process_cpu_ms_per_frame|CPU per frame out of process (host and child), ms"
  "in_process_caller_cpu_ms_per_frame|of which in process: the caller's thread, ms"
  "out_of_process_host_cpu_ms_per_frame|of which out of process: the host's thread, ms"
  "out_of_process_host_cpu_share|the host's thread / CPU per frame in process"
  "out_of_process_session_cpu_ms_per_frame|of which out of process: the runner's session thread, ms"
  "in_process_other_cpu_ms_per_frame|of which in process: other threads (FFmpeg's), ms"
  "out_of_process_other_cpu_ms_per_frame|of which out of process: the child's other threads, ms"
  "in_process_caller_wakeups_per_frame|in-process caller woken per frame"
  "out_of_process_host_wakeups_per_frame|host thread woken per frame"
  "out_of_process_slot_use|frames per arena slot, most used first (shares)"
  "host_private_kb_300|the host's own RSS after 300 frames, KiB"
  "host_private_kb_3000|the host's own RSS after 3000 frames, KiB"
)
seek_figures=(
  "index|the frame asked for by a fresh decoder (the backend already running)"
  "approximate_ms|approximate mode: open + that frame, ms"
  "exact_ms|exact mode (scans the file first): open + that frame, ms"
  "ffmpeg_ss_ms|ffmpeg -ss T -i F -frames:v 1 -pix_fmt rgb24 -f rawvideo -, ms"
  "approx_first_vs_ffmpeg_ss|approximate / ffmpeg -ss, per round, median"
  "approx_first_vs_ffmpeg_ss_quartiles|the same: 25th / 50th / 75th percentile over rounds"
  "approx_first_vs_exact|approximate / exact, per round, median"
  "approx_first_vs_exact_quartiles|the same: 25th / 50th / 75th percentile over rounds"
)
restart_figures=(
  "discovery_ms_100|host creation with 100 manifests, no spawn, ms"
  "discovery_ms_builtin|host creation with the built-in manifest only, ms"
  "cold_spawn_ms|first request on a fresh sandboxed backend, ms"
  "cold_spawn_ms_unsandboxed|the same without the sandbox, ms"
  "failover_ms_cold_p50|SIGKILL mid-request to the re-issued request's first frame, median, ms"
  "failover_ms_cold_p95|the same, 95th percentile, ms"
  "failover_ms_warm_p50|the same with a warm spare, median, ms"
  "failover_ms_warm_p95|the same with a warm spare, 95th percentile, ms"
  "backend_exit_ms_p50|of a failover: SIGKILL to the child's pidfd readable, median, ms"
)

machine="$(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)), Linux $(uname -r)"

# table NAME: runs `codecvisor-bench NAME --json` (one JSON object per line,
# one per video for decode) and prints its table: a value column per line.
table() {
  local name=$1 figures_var="$1_figures[@]"
  local json load
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  json=$("$bench" "$name" --json)
  printf '`codecvisor-bench %s --json` on %s, load average %s before the run:\n\n' "$name" "$machine" "$load"
  printf '%s\n' "${!figures_var}" | jq -Rrs --argjson runs "$(jq -s . <<<"$json")" '
    def cell: if type == "array" then map(tostring) | join(" / ") elif . == null then "-" else tostring end;
    def column: if .width then "\(.width)x\(.height)" else "value" end;
    def check($f): [.targets[]? | select(.figure == $f)] | first;
    ($runs | map(column) | join(" | ")) as $heads
    | "| figure | \($heads) | target | met |",
      "| --- |\($runs | map(" --- |") | join("")) --- | --- |",
      (split("\n")[] | select(length > 0) | split("|") as [$key, $what]
       | ($runs[0] | check($key)) as $check
       | "| `\($key)`: \($what) | \($runs | map(.[$key] | cell) | join(" | ")) | \($check.target // "") | "
         + (if $check == null then "" else ($runs | map(if check($key).met then "yes" else "no" end) | join(" / ")) end)
         + " |")'
  echo
}

benches=("$@")
[ ${#benches[@]} -gt 0 ] || benches=(ipc decode seek restart)
for b in "${benches[@]}"; do
  case $b in
    ipc | decode | seek | restart) table "$b" ;;
    *) echo "bench_tables.sh: unknown benchmark '$b' (ipc, decode, seek, restart)" >&2; exit 2 ;;
  esac
done
