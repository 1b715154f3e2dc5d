#!/usr/bin/env bash
# End to end: `codecvisor-bench` with its runner, the cpu backend and the
# synthetic test backend in real child processes, each benchmark on a
# workload small enough for a test. Checks that every side ran and that
# the JSON carries the figures and targets tools/bench_tables.sh reads;
# the figures' values are not judged here (a test machine's load decides
# them).
set -euo pipefail

root="$TEST_SRCDIR/codecvisor"
bench="$root/tools/bench/codecvisor-bench"
runner="$root/backends/sdk/runner/codecvisor-backend"
synthetic="$root/backends/testing/libcodecvisor_synthetic.so"
tmp="$TEST_TMPDIR"

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
# has FILE TEXT...: FILE contains every TEXT, literally.
has() {
  local file=$1
  shift
  for text in "$@"; do grep -qF -- "$text" "$file" || fail "$file lacks $text: $(cat "$file")"; done
}
# positive FILE FIELD...: each JSON number FIELD in FILE is above 0.
positive() {
  local file=$1
  shift
  for field in "$@"; do grep -qE "\"$field\":(0\\.0*[1-9]|[1-9])" "$file" || fail "$field is not above 0 in $file"; done
}

video="$tmp/clip.mp4"
/usr/bin/ffmpeg -nostdin -v error -y -f lavfi -i testsrc=size=96x64:rate=25 -t 1 -c:v libx264 -pix_fmt yuv420p \
  -bf 2 "$video"

# Every subcommand is there with its flags; there is nothing else.
for sub in ipc decode seek restart soak; do "$bench" "$sub" --help >"$tmp/help_$sub"; done
has "$tmp/help_ipc" --slots --rounds --round-trips --frames --json
has "$tmp/help_decode" --threads --frames --rounds --random-frames --arena-slots --in-process-buffers \
  --compare-runner --json
has "$tmp/help_seek" --index --rounds --threads --json
has "$tmp/help_restart" --crashes --rounds --synthetic-library --json --host-resident-mb
has "$tmp/help_soak" --seconds --decoders --crash-interval-ms --faulty-library --seed --json
rc=0
"$bench" info "$video" >/dev/null 2>&1 || rc=$?
[[ $rc != 0 ]] || fail "'codecvisor-bench info' was accepted"

# decode: every side, a second runner build (here the same one) included.
"$bench" decode "$video" --json --frames 25 --rounds 1 --random-frames 5 --in-process-buffers 2 \
  --compare-runner "$runner" >"$tmp/decode.json" 2>"$tmp/err" || fail "decode: $(cat "$tmp/err")"
[[ $(wc -l <"$tmp/decode.json") == 1 ]] || fail "decode of one file printed more than one JSON line"
has "$tmp/decode.json" '"width":96' '"in_process_buffers":2' '"chunk_pairs":' '"chunk_ratio_quartiles":[' \
  "\"compare_runner\":\"$runner\"" '"compare_runner_fps":' '"chunk_compare_runner_ratio_quartiles":[' \
  '"figure":"ratio"' '"figure":"random_ratio"' '"figure":"cli_ratio"' '"figure":"sandbox_cost"' \
  '"figure":"out_of_process_host_cpu_share"' '"figure":"host_private_kb_3000"'
positive "$tmp/decode.json" in_process_fps out_of_process_fps out_of_process_unsandboxed_fps ffmpeg_cli_fps \
  compare_runner_fps compare_runner_host_wakeups_per_frame chunk_pairs host_private_kb_3000
"$bench" decode "$video" --json --frames 25 --rounds 1 --random-frames 5 >"$tmp/decode2.json" 2>"$tmp/err" ||
  fail "decode without --compare-runner: $(cat "$tmp/err")"
! grep -q compare_runner "$tmp/decode2.json" || fail "compare_runner fields without --compare-runner"
rc=0
"$bench" decode "$video" --compare-runner /nonexistent >/dev/null 2>&1 || rc=$?
[[ $rc == 105 ]] || fail "--compare-runner /nonexistent: exit $rc, wanted 105 (a usage error)"

# seek: every side, each round's ratios and the target, on the short clip.
"$bench" seek "$video" --json --index 20 --rounds 2 >"$tmp/seek.json" 2>"$tmp/err" || fail "seek: $(cat "$tmp/err")"
[[ $(wc -l <"$tmp/seek.json") == 1 ]] || fail "seek printed more than one JSON line"
has "$tmp/seek.json" '"width":96' '"frames":25' '"index":20' '"rounds":2' '"approx_first_vs_ffmpeg_ss_quartiles":[' \
  '"approx_first_vs_exact_quartiles":[' '"figure":"approx_first_vs_ffmpeg_ss","target":"<= 1.2"'
grep -qE '"round_approx_first_vs_ffmpeg_ss":\[[0-9.]+,[0-9.]+\]' "$tmp/seek.json" || fail "not one ratio per round"
grep -qE '"round_approx_first_vs_exact":\[[0-9.]+,[0-9.]+\]' "$tmp/seek.json" || fail "not one ratio per round"
positive "$tmp/seek.json" approximate_ms exact_ms ffmpeg_ss_ms approx_first_vs_ffmpeg_ss approx_first_vs_exact
"$bench" seek "$video" --index=-1 --rounds 1 >"$tmp/seek.txt" 2>"$tmp/err" || fail "seek --index -1: $(cat "$tmp/err")"
has "$tmp/seek.txt" "first access to frame 24" "approximate / ffmpeg -ss:"
rc=0
"$bench" seek "$video" --index 25 --rounds 1 >/dev/null 2>"$tmp/err" || rc=$?
[[ $rc == 1 ]] || fail "seek --index past the end: exit $rc, wanted 1"
has "$tmp/err" "--index 25: $video has 25 frames"

# ipc: both measurements, judged against their targets.
"$bench" ipc --json --round-trips 200 --frames 10 --rounds 1 >"$tmp/ipc.json" || fail "ipc"
has "$tmp/ipc.json" '"figure":"rtt_ratio","target":"<= 1.5"' '"figure":"frame_ratio","target":">= 0.9"'
positive "$tmp/ipc.json" futex_rtt_us channel_rtt_us frame_fps local_fps

# restart: the synthetic backend, given by flag, with 64 MiB of the bench's
# own memory resident.
"$bench" restart --json --crashes 2 --rounds 1 --synthetic-library "$synthetic" --host-resident-mb 64 \
  >"$tmp/restart.json" 2>"$tmp/err" || fail "restart: $(cat "$tmp/err")"
has "$tmp/restart.json" '"figure":"discovery_ms_100"' '"figure":"failover_ms_warm_p50"' '"host_resident_mb":64'
positive "$tmp/restart.json" discovery_ms_100 cold_spawn_ms failover_ms_cold_p50 failover_ms_warm_p50 \
  resident_rewrite_ms resident_rewrite_ms_quiet

echo "PASS"
