#!/usr/bin/env bash
# End to end: the `codecvisor` binary with its runner and the built-in cpu
# backend in real child processes, on a video made with the ffmpeg CLI.
# Frames are checked byte for byte against ffmpeg's own decode of the same
# file (the cpu backend promises bit-exact RGB; y4m passes yuv420p through).
set -euo pipefail

cv="$TEST_SRCDIR/codecvisor/tools/codecvisor"
tmp="$TEST_TMPDIR"
ffmpeg=(/usr/bin/ffmpeg -nostdin -v error)
source "$TEST_SRCDIR/codecvisor/tools/cli/cli_checks.sh"

video="$tmp/clip.mp4"
"${ffmpeg[@]}" -y -f lavfi -i testsrc=size=96x64:rate=25 -t 1 -c:v libx264 -pix_fmt yuv420p -bf 2 "$video"
"${ffmpeg[@]}" -i "$video" -f rawvideo -pix_fmt rgb24 - >"$tmp/ref.rgb"
"${ffmpeg[@]}" -i "$video" -f yuv4mpegpipe -pix_fmt yuv420p - >"$tmp/ref.y4m"
frame_bytes=$((96 * 64 * 3))
ref_frame() { tail -c +$(($1 * frame_bytes + 1)) "$tmp/ref.rgb" | head -c "$frame_bytes"; }

# info
check "info --json" run_cv 0 "$tmp/info.json" "$tmp/err" info "$video" --json
json=$(cat "$tmp/info.json")
for field in '"backend":"cpu"' '"codec":"h264"' '"width":96' '"height":64' '"pixel_format":"yuv420p"' \
    '"num_frames_from_scan":25' '"average_fps":25' '"seek_mode":"exact"' \
    '"duration_seconds_from_header":1,' '"begin_stream_seconds_from_header":0,' \
    '"pixel_aspect_ratio":{"num":1,"den":1}'; do
  check "info json has $field" contains "$json" "$field"
done
check "info json has schema_version" contains "$json" '{"schema_version":1,'
# A raw H.264 stream's header has no duration: null, as Python's None,
# not 0.
"${ffmpeg[@]}" -y -i "$video" -c:v copy -bsf:v h264_mp4toannexb -f h264 "$tmp/raw.h264"
check "info --json of a raw stream" run_cv 0 "$tmp/raw.json" "$tmp/err" info "$tmp/raw.h264" --json
check "... its header's duration is null" contains "$(cat "$tmp/raw.json")" '"duration_seconds_from_header":null,'
# Every third frame kept: the header still says 25 fps; average_fps is the
# frames' own rate over the scan (9 frames from 0 to 0.96 + 0.04 s), as
# the Python package's.
"${ffmpeg[@]}" -y -i "$video" -vf "select='not(mod(n\,3))'" -fps_mode vfr -c:v libx264 "$tmp/thirds.mkv"
check "info --json thirds" run_cv 0 "$tmp/thirds.json" "$tmp/err" info "$tmp/thirds.mkv" --json
json=$(cat "$tmp/thirds.json")
check "thirds average_fps_from_header" contains "$json" '"average_fps_from_header":25,'
check "thirds average_fps" contains "$json" '"average_fps":9,'
check "info json is one line" [ "$(wc -l <"$tmp/info.json")" = 1 ]
check "info text" run_cv 0 "$tmp/info.txt" "$tmp/err" info "$video" --seek-mode approximate
check "info text has pixel_format" grep -qE '^pixel_format +yuv420p$' "$tmp/info.txt"
check "info text has seek_mode" grep -qE '^seek_mode +approximate$' "$tmp/info.txt"

# decode: raw RGB24 on stdout is ffmpeg's rgb24 decode, byte for byte
check "decode rgb24 to stdout" run_cv 0 "$tmp/all.rgb" "$tmp/err" decode "$video" --format rgb24 --out -
check "rgb24 equals ffmpeg" cmp "$tmp/all.rgb" "$tmp/ref.rgb"
check "summary on stderr" grep -q 'wrote 25 frames (rgb24) to stdout' "$tmp/err"

# Frames to a terminal (script(1) gives the command one): refused before
# anything is written, whatever a backend's frames hold.
tty_refused() {
  local rc=0
  script -qefc "$(printf '%q ' "$cv" decode "$video" --format rgb24 --out -)" /dev/null >"$tmp/tty.out" 2>&1 </dev/null || rc=$?
  [[ $rc == 1 ]] || { echo "  exit $rc, wanted 1: $(head -c 300 "$tmp/tty.out")" >&2; return 1; }
  grep -q "frames are not written to a terminal" "$tmp/tty.out" && [ "$(wc -c <"$tmp/tty.out")" -lt 1000 ]
}
if script -qec true /dev/null >/dev/null 2>&1; then
  check "rgb24 to a terminal is refused" tty_refused
else
  echo "skip rgb24 to a terminal is refused (script(1) cannot make a terminal here)"
fi
# In a pid namespace whose /proc is still the outer one's (unshare --pid
# without --mount-proc), /proc/PID names another process: the start is
# refused, saying so, before any id map is written there.
if unshare --pid --fork true 2>/dev/null; then
  pidns_refused() {
    local rc=0
    env -u CODECVISOR_ALLOW_DEGRADED_SANDBOX unshare --pid --fork "$cv" decode "$video" --format rgb24 --out "$tmp/pidns" >"$tmp/pidns.out" 2>&1 || rc=$?
    [[ $rc == 1 ]] || { echo "  exit $rc, wanted 1: $(head -c 500 "$tmp/pidns.out")" >&2; return 1; }
    grep -q "is not in the pid namespace its /proc shows" "$tmp/pidns.out" || { cat "$tmp/pidns.out" >&2; return 1; }
  }
  check "a pid namespace without its own /proc is named" pidns_refused
else
  echo "skip a pid namespace without its own /proc is named (unshare --pid is refused here)"
fi
# y4m passes yuv420p through: same frames as ffmpeg's yuv4mpegpipe
check "decode y4m to stdout" run_cv 0 "$tmp/out.y4m" "$tmp/err" decode "$video" --format y4m --out - --quiet
check "y4m header (the pixel shape as ffmpeg writes it)" [ "$(head -n 1 "$tmp/out.y4m")" = "YUV4MPEG2 W96 H64 F25:1 Ip A1:1 C420mpeg2" ]
check "y4m frames equal ffmpeg" cmp <(tail -n +2 "$tmp/out.y4m") <(tail -n +2 "$tmp/ref.y4m")
check "--quiet prints nothing" [ ! -s "$tmp/err" ]
# A .y4m decoded to y4m into its own folder: refused, the input kept.
mkdir -p "$tmp/y4m_in" && cp "$tmp/ref.y4m" "$tmp/y4m_in/clip.y4m"
check "y4m over its own input is refused" run_cv 1 "$tmp/stdout" "$tmp/err" decode "$tmp/y4m_in/clip.y4m" --format y4m \
  --out "$tmp/y4m_in" --indices 0
check "it says why" grep -q "clip.y4m is the input video, which the output would replace" "$tmp/err"
check "the input is intact" cmp -s "$tmp/ref.y4m" "$tmp/y4m_in/clip.y4m"
# The default device from the environment is held to --device's rule.
export CODECVISOR_DEFAULT_DEVICE=cpu:1
check "CODECVISOR_DEFAULT_DEVICE=cpu:1 is refused" run_cv 1 "$tmp/stdout" "$tmp/err" info "$video"
unset CODECVISOR_DEFAULT_DEVICE
check "it names the variable" grep -q "CODECVISOR_DEFAULT_DEVICE='cpu:1': the cpu device has no index" "$tmp/err"
# So is an input named as a frame file the output would write (it was replaced).
mkdir -p "$tmp/frame_in" && cp "$video" "$tmp/frame_in/frame_000000.png"
check "a frame file over its own input is refused" run_cv 1 "$tmp/stdout" "$tmp/err" decode \
  "$tmp/frame_in/frame_000000.png" --format png --out "$tmp/frame_in" --indices 0
check "it says why (frame file)" grep -q "frame_000000.png is the input video, which the output would replace" "$tmp/err"
check "the frame-named input is intact" cmp -s "$video" "$tmp/frame_in/frame_000000.png"

# png files, one per selected frame, named by stream index
check "decode png range" run_cv 0 "$tmp/stdout" "$tmp/err" decode "$video" --frames 0:25:6 --out "$tmp/png"
check "png file names" [ "$(ls "$tmp/png" | tr '\n' ' ')" = "frame_000000.png frame_000006.png frame_000012.png frame_000018.png frame_000024.png " ]
check "nothing on stdout" [ ! -s "$tmp/stdout" ]
check "png pixels" cmp <("${ffmpeg[@]}" -i "$tmp/png/frame_000012.png" -f rawvideo -pix_fmt rgb24 -) <(ref_frame 12)

# ppm by index, negative from the end; by time
check "decode ppm indices" run_cv 0 "$tmp/stdout" "$tmp/err" decode "$video" --format ppm --indices 3,-1 --out "$tmp/ppm"
check "ppm frame 3" cmp "$tmp/ppm/frame_000003.ppm" <(printf 'P6\n96 64\n255\n'; ref_frame 3)
check "ppm frame -1 is 24" cmp "$tmp/ppm/frame_000024.ppm" <(printf 'P6\n96 64\n255\n'; ref_frame 24)
check "decode times" run_cv 0 "$tmp/stdout" "$tmp/err" decode "$video" --format ppm --times 0.5 --out "$tmp/t"
check "frame played at 0.5 s" cmp "$tmp/t/frame_000012.ppm" <(printf 'P6\n96 64\n255\n'; ref_frame 12)
check "decode time range" run_cv 0 "$tmp/stdout" "$tmp/err" decode "$video" --format ppm --time-range 0.2:0.36 --out "$tmp/tr"
check "time range frames" [ "$(ls "$tmp/tr" | tr '\n' ' ')" = "frame_000005.ppm frame_000006.ppm frame_000007.ppm frame_000008.ppm " ]

# failures: one line naming the file, exit 1; bad usage: CLI11's codes
check "missing file" run_cv 1 "$tmp/stdout" "$tmp/err" decode "$tmp/nope.mp4" --out "$tmp/x"
check "missing file message" grep -q "^codecvisor decode: $tmp/nope.mp4: No such file or directory$" "$tmp/err"
# a file name with a newline or an escape sequence: still one line, the name escaped once
odd="$tmp/bad"$'\n'"name"$'\e'"[31m.mp4"
echo "not a video" >"$odd"
check "odd file name" run_cv 1 "$tmp/stdout" "$tmp/err" info -- "$odd"
check "odd file name: one line" [ "$(wc -l <"$tmp/err")" = 1 ]
check "odd file name: escaped once" grep -qF "codecvisor info: $tmp/bad\\x0aname\\x1b[31m.mp4 (backend 'cpu'): video '" "$tmp/err"
check "odd file name: no raw escape" bash -c "! grep -q $'\e' '$tmp/err'"
: >"$tmp/empty.mp4"
check "empty file" run_cv 1 "$tmp/stdout" "$tmp/err" decode "$tmp/empty.mp4" --out "$tmp/x"
check "empty file message" grep -q "^codecvisor decode: $tmp/empty.mp4: the file is empty (0 bytes)$" "$tmp/err"
check "odd missing file" run_cv 1 "$tmp/stdout" "$tmp/err" decode "$tmp/missing"$'\n'"file.mp4" --out "$tmp/x"
check "odd missing file: one line" [ "$(wc -l <"$tmp/err")" = 1 ]
# --frames is a Python slice: clamped at the ends, and an empty slice is no frames
check "stop past the end" run_cv 0 "$tmp/stdout" "$tmp/err" decode "$video" --format ppm --frames 20:26 --out "$tmp/past"
check "stop past the end is clamped" [ "$(ls "$tmp/past" | tr '\n' ' ')" = "frame_000020.ppm frame_000021.ppm frame_000022.ppm frame_000023.ppm frame_000024.ppm " ]
check "negative start before the first frame" run_cv 0 "$tmp/stdout" "$tmp/err" decode "$video" --format ppm --frames=-30:2 --out "$tmp/neg"
check "negative start is clamped to 0" [ "$(ls "$tmp/neg" | tr '\n' ' ')" = "frame_000000.ppm frame_000001.ppm " ]
check "empty slice" run_cv 0 "$tmp/stdout" "$tmp/err" decode "$video" --frames 30:40 --json --out "$tmp/empty"
check "empty slice message" grep -q "^codecvisor decode: $tmp/clip.mp4: --frames 30:40 selects no frames (of 25); nothing written$" "$tmp/err"
check "empty slice json" [ "$(cat "$tmp/stdout")" = "{\"schema_version\":1,\"file\":\"$video\",\"format\":\"png\",\"frames\":[]}" ]
check "empty slice writes nothing" [ ! -e "$tmp/empty" ]
# an empty time range, as Python's get_frames_played_in_range(t, t): no frames, no error
check "empty time range" run_cv 0 "$tmp/stdout" "$tmp/err" decode "$video" --time-range 0.4:0.4 --json --out "$tmp/empty_tr"
check "empty time range message" grep -q "^codecvisor decode: $tmp/clip.mp4: --time-range 0.4:0.4 selects no frames (of 25); nothing written$" "$tmp/err"
check "empty time range writes nothing" [ ! -e "$tmp/empty_tr" ]
check "empty time range json" [ "$(cat "$tmp/stdout")" = "{\"schema_version\":1,\"file\":\"$video\",\"format\":\"png\",\"frames\":[]}" ]
# empty wherever it is, as torchcodec's (it checks that before the stream's bounds)
check "empty time range outside the stream" run_cv 0 "$tmp/stdout" "$tmp/err" decode "$video" --time-range 999:999 --out "$tmp/empty_tr"
check "empty time range outside the stream selects nothing" grep -q "^codecvisor decode: $tmp/clip.mp4: --time-range 999:999 selects no frames (of 25); nothing written$" "$tmp/err"
check "time range starting past the end" run_cv 1 "$tmp/stdout" "$tmp/err" decode "$video" --time-range 999:1000 --out "$tmp/empty_tr"
check "reversed time range" run_cv 105 "$tmp/stdout" "$tmp/err" decode "$video" --time-range 0.4:0.3 --out "$tmp/rev_tr"

# repeated indices: every frame kept, named by its position in the request
check "decode repeated indices" run_cv 0 "$tmp/stdout" "$tmp/err" decode "$video" --format ppm --indices 5,3,5,-20 --out "$tmp/rep"
check "repeated indices summary" grep -q "wrote 4 frames (ppm)" "$tmp/err"
check "repeated indices file names" [ "$(ls "$tmp/rep" | tr '\n' ' ')" = "000000_frame_000005.ppm 000001_frame_000003.ppm 000002_frame_000005.ppm 000003_frame_000005.ppm " ]
check "repeated frame 5 pixels" cmp "$tmp/rep/000002_frame_000005.ppm" <(printf 'P6\n96 64\n255\n'; ref_frame 5)
check "repeated frame 3 pixels" cmp "$tmp/rep/000001_frame_000003.ppm" <(printf 'P6\n96 64\n255\n'; ref_frame 3)
check "decode one frame" run_cv 0 "$tmp/stdout" "$tmp/err" decode "$video" --format ppm --indices 3 --out "$tmp/one"
check "one frame summary" grep -q "wrote 1 frame (ppm)" "$tmp/err"

# --json: each frame written with its index, pts and duration (as ffprobe reports them) and its file
check "decode --json" run_cv 0 "$tmp/decode.json" "$tmp/err" decode "$video" --format ppm --indices 2,0 --json --out "$tmp/js"
check "decode json is one line" [ "$(wc -l <"$tmp/decode.json")" = 1 ]
check "decode json" [ "$(cat "$tmp/decode.json")" = "{\"schema_version\":1,\"file\":\"$video\",\"format\":\"ppm\",\"frames\":[{\"index\":2,\"pts_seconds\":0.08,\"duration_seconds\":0.04,\"file\":\"$tmp/js/frame_000002.ppm\"},{\"index\":0,\"pts_seconds\":0,\"duration_seconds\":0.04,\"file\":\"$tmp/js/frame_000000.ppm\"}]}" ]
check "ffprobe agrees on frame 2's pts" [ "$(/usr/bin/ffprobe -v error -select_streams v:0 -show_entries frame=pts_time,pkt_duration_time -of csv=p=0 "$video" | grep . | sed -n 3p | cut -d, -f1,2)" = "0.080000,0.040000" ]
check "decode json y4m names the stream file" run_cv 0 "$tmp/decode.json" "$tmp/err" decode "$video" --format y4m --frames 0:1 --json --out "$tmp/jy"
check "decode json y4m file" contains "$(cat "$tmp/decode.json")" "\"index\":0,\"pts_seconds\":0,\"duration_seconds\":0.04,\"file\":\"$tmp/jy/clip.y4m\""
check "--json with --out - is bad usage" run_cv 108 "$tmp/stdout" "$tmp/err" decode "$video" --format y4m --json --out -
check "... and says why" grep -q "^--json: stdout carries the frames with --out -" "$tmp/err"
check "an empty --out is bad usage" run_cv 105 "$tmp/stdout" "$tmp/err" decode "$video" --out ""
check "... and says why" grep -q "give a folder, or -" "$tmp/err"

# inputs and flags the CLI refuses with a clear message
check "http URL" run_cv 1 "$tmp/stdout" "$tmp/err" info "http://example.com/clip.mp4"
check "http URL message" grep -q "^codecvisor info: http://example.com/clip.mp4: URLs are not supported" "$tmp/err"
check "file URL" run_cv 1 "$tmp/stdout" "$tmp/err" decode "file://$video" --out "$tmp/x"
check "file URL message" grep -q "URLs are not supported" "$tmp/err"
check "--stream -1 is bad usage" run_cv 105 "$tmp/stdout" "$tmp/err" info "$video" --stream=-1
check "--stream -1 message" grep -q "'-1' is not a stream index: give 0 or more" "$tmp/err"
check "--stream -1 message is short" [ "$(wc -c <"$tmp/err")" -lt 300 ]
check "--device cpu:1 is bad usage" run_cv 105 "$tmp/stdout" "$tmp/err" info "$video" --device cpu:1
check "--device cpu:1 message" grep -q "the cpu device has no index; use --device cpu" "$tmp/err"
check "--device cpu is fine" run_cv 0 "$tmp/stdout" "$tmp/err" info "$video" --device cpu
check "--device cpu:0 (torch's name) is the cpu" run_cv 0 "$tmp/stdout" "$tmp/err" info "$video" --device cpu:0
check "CODECVISOR_DEFAULT_DEVICE=cpu:0 is the cpu" bash -c 'CODECVISOR_DEFAULT_DEVICE=cpu:0 "$0" info "$1" >/dev/null' "$cv" "$video"
check "an extra argument exits 109" run_cv 109 "$tmp/stdout" "$tmp/err" info "$video" extra
check "an unknown option exits 109" run_cv 109 "$tmp/stdout" "$tmp/err" info "$video" --bogus
check "exit codes in --help" contains "$("$cv" --help)" "109 an unknown option or an extra argument"
check "not a video" run_cv 1 "$tmp/stdout" "$tmp/err" info "$tmp/ref.rgb"
check "not a video names the file" grep -q "$tmp/ref.rgb" "$tmp/err"
check "unknown device" run_cv 1 "$tmp/stdout" "$tmp/err" info "$video" --device acme
check "png to stdout is bad usage" run_cv 105 "$tmp/stdout" "$tmp/err" decode "$video" --out -
check "bad --frames is bad usage" run_cv 105 "$tmp/stdout" "$tmp/err" decode "$video" --frames 1:5:0 --out "$tmp/x"
check "bad --frames message" grep -q "STEP must be a positive integer" "$tmp/err"
check "an unknown command" run_cv 106 "$tmp/stdout" "$tmp/err" decdoe "$video"
check "an unknown command is named" grep -q "^codecvisor: 'decdoe' is not a command (the commands: info, decode, " "$tmp/err"
check "conformance with an empty manifest path" run_cv 105 "$tmp/stdout" "$tmp/err" conformance --backend-manifest ""
check "... asks about a command substitution" grep -q "did a command substitution print nothing" "$tmp/err"
check "two selections are bad usage" run_cv 108 "$tmp/stdout" "$tmp/err" decode "$video" --indices 1 --times 1 --out "$tmp/x"
check "--out is required" run_cv 106 "$tmp/stdout" "$tmp/err" decode "$video"
# The exit codes tools/README.md gives for these two.
check "a range is checked before the type" run_cv 105 "$tmp/stdout" "$tmp/err" decode "$video" --threads abc --out "$tmp/x"
check "a wrong type exits 104" run_cv 104 "$tmp/stdout" "$tmp/err" info "$video" --stream abc
cp "$video" "$tmp/-dash.mp4"
check "a file named -... is read as options" run_cv 106 "$tmp/stdout" "$tmp/err" info "-dash.mp4"
check "a file named -... after --" bash -c 'cd "$1" && "$0" info -- -dash.mp4 >/dev/null' "$cv" "$tmp"
check "exit code note in --help" contains "$("$cv" --help)" "A FILE beginning with '-' goes after '--'"
check "no partial output" [ ! -e "$tmp/x" ] || [ -z "$(ls -A "$tmp/x")" ]

# backends
check "backends --json" run_cv 0 "$tmp/backends.json" "$tmp/err" backends --json
check "backends json has schema_version" contains "$(cat "$tmp/backends.json")" '{"schema_version":1,'
check "backends lists cpu" contains "$(cat "$tmp/backends.json")" '"name":"cpu","devices":["cpu"]'
check "backends text" run_cv 0 "$tmp/backends.txt" "$tmp/err" backends --no-check
check "backends header" grep -qE '^NAME +DEVICES +STATE +PID +RESTARTS +MANIFEST$' "$tmp/backends.txt"

# backends --start: each child started, with its pid and engaged sandbox
sandbox_re='landlock v[0-9]+.*seccomp, cgroup v[12] \(memory 8192 MiB, tasks 4096\)'
check "backends --start" run_cv 0 "$tmp/started.txt" "$tmp/err" backends --start
check "cpu ready with a pid" grep -qE '^cpu +cpu +ready +[0-9]+ ' "$tmp/started.txt"
check "cpu sandbox listed" grep -qE "^  sandbox: .*namespaces.*$sandbox_re" "$tmp/started.txt"
check "backends --start --json" run_cv 0 "$tmp/started.json" "$tmp/err" backends --start --json
check "json: cpu ready, pid, sandbox" grep -qE \
  "\"name\":\"cpu\".*\"state\":\"ready\",\"pid\":[0-9]+,.*\"sandbox\":\"[^\"]*$sandbox_re" "$tmp/started.json"
check "backends --start with a broken manifest" run_cv 1 "$tmp/stdout" "$tmp/err" backends --start --backend-manifest "$tmp/nope.toml"
check "broken manifest listed" grep -qE "^nope +- +failed " "$tmp/stdout"
check "backends --no-check starts nothing" grep -qE '^cpu +cpu +discovered +- ' "$tmp/backends.txt"
# --reset: in this command's own host; unknown names fail
check "backends --reset cpu --start" run_cv 0 "$tmp/reset.txt" "$tmp/err" backends --reset cpu --start
check "reset reported" grep -q "reset backend 'cpu': .*reset it in this command's own host" "$tmp/err"
check "reset then started" grep -qE '^cpu +cpu +ready +[0-9]+ ' "$tmp/reset.txt"
check "backends --reset unknown" run_cv 1 "$tmp/stdout" "$tmp/err" backends --reset nope
check "reset unknown message" grep -q "^codecvisor backends: --reset nope: no backend named 'nope' (installed backends: cpu.*CODECVISOR_BACKEND_PATH" "$tmp/err"
check "--reset help says per process" contains "$("$cv" backends --help)" "per host"
# A history file it may not replace (not one it wrote): the record asked to
# be cleared is not, which is a failure (it exited 0).
mkdir -p "$tmp/state/codecvisor" && echo "not a history" >"$tmp/state/codecvisor/backends.toml"
export XDG_STATE_HOME="$tmp/state"
check "--reset with a history it cannot clear fails" run_cv 1 "$tmp/stdout" "$tmp/err" backends --reset cpu --no-check
check "it says so" grep -q "could not clear its record" "$tmp/err"
# A command whose host saw no failure has nothing to record: no warning
# that its record was lost, and no lock file beside that file.
check "no failure, no history warning" run_cv 0 "$tmp/stdout" "$tmp/err" backends --no-check
check "... nothing said" bash -c "! grep -q 'not recorded' '$tmp/err'"
check "... no lock file" test ! -e "$tmp/state/codecvisor/backends.toml.lock"
check "... the file kept" [ "$(cat "$tmp/state/codecvisor/backends.toml")" = "not a history" ]
# A history a crash zeroed is repaired by the next command, failure or not.
head -c 4096 /dev/zero >"$tmp/state/codecvisor/backends.toml"
check "a zeroed history" run_cv 0 "$tmp/stdout" "$tmp/err" backends --no-check
check "... is written anew" grep -q "^# Backend failures seen by codecvisor hosts" "$tmp/state/codecvisor/backends.toml"
unset XDG_STATE_HOME

# doctor: on this machine every mechanism is present and cpu starts fully sandboxed
check "doctor" run_cv 0 "$tmp/doctor.txt" "$tmp/err" doctor
for feature in 'user namespace' 'pid namespace' 'net namespace' 'ipc namespace' 'new proc mount' 'seccomp-bpf' 'landlock' \
    'no_new_privs' 'pidfd' 'memfd sealing' 'clone3 \(or clone\) with a pidfd' 'cgroup \(memory, pids\)'; do
  check "doctor: $feature present" grep -qE "^$feature +present +(always|unless allow_degraded|where available) +[^ ]" "$tmp/doctor.txt"
done
check "doctor: cgroup hierarchy" grep -qE '^cgroup \(memory, pids\) +present +where available +cgroup v[12]' "$tmp/doctor.txt"
check "doctor: landlock ABI" grep -qE '^landlock +present +unless allow_degraded +ABI [1-9][0-9]*$' "$tmp/doctor.txt"
check "doctor: cpu ready" grep -qE '^backend cpu \(cpu\): ready, pid [0-9]+$' "$tmp/doctor.txt"
check "doctor: cpu sandbox" grep -qE "^  sandbox: user\+pid\+net\+ipc\+mount namespaces, empty root, .*$sandbox_re" "$tmp/doctor.txt"
check "doctor: verdict" grep -q '^ok: every mechanism' "$tmp/doctor.txt"
check "doctor --json" run_cv 0 "$tmp/doctor.json" "$tmp/err" doctor --json
json=$(cat "$tmp/doctor.json")
for field in '{"schema_version":1,"ok":true,"degraded":false' '"user_namespace":{"present":true' '"seccomp":{"present":true' \
    '"landlock":{"present":true' '"name":"cpu","devices":["cpu"],"state":"ready","pid":' '"problems":[]'; do
  check "doctor json has $field" contains "$json" "$field"
done
check "doctor json is one line" [ "$(wc -l <"$tmp/doctor.json")" = 1 ]
# A /proc with a part masked, as container runtimes mount it (a file bound
# over /proc/keys): the kernel refuses the backend a new proc, and doctor
# says so and names the setting that unmasks it.
if unshare -m --propagation private sh -c 'mount --bind /dev/null /proc/keys' 2>/dev/null; then
  masked_proc() {
    local rc=0
    env -u CODECVISOR_ALLOW_DEGRADED_SANDBOX unshare -m --propagation private \
      sh -c 'mount --bind /dev/null /proc/keys && exec "$0" doctor' "$cv" >"$tmp/masked.txt" 2>&1 || rc=$?
    [[ $rc == 1 ]] || { echo "  exit $rc, wanted 1: $(head -c 500 "$tmp/masked.txt")" >&2; return 1; }
    grep -qE '^new proc mount +MISSING +unless allow_degraded +mount\(proc\) .*EPERM.*systempaths=unconfined' \
      "$tmp/masked.txt" || { cat "$tmp/masked.txt" >&2; return 1; }
  }
  check "doctor: a masked /proc refuses a new proc mount, and says what unmasks it" masked_proc
else
  echo "skip doctor: a masked /proc (unshare -m or a bind mount over /proc/keys is refused here)"
fi
# a manifest that does not load is a problem: listed, and exit 1
check "doctor with a broken manifest" run_cv 1 "$tmp/doctor.txt" "$tmp/err" doctor --backend-manifest "$tmp/nope.toml"
check "doctor names it" grep -q "^problem: backend 'nope' is not ready (failed): .*nope.toml" "$tmp/doctor.txt"
# Where no user namespace can be made (a container's seccomp profile,
# user.max_user_namespaces = 0; here a user namespace of the test's own
# that forbids further ones): the missing namespaces are a problem while
# cpu cannot start, and a warning once CODECVISOR_ALLOW_DEGRADED_SANDBOX=1
# lets it start without them.
cv_binary=$cv
without_user_namespaces() {
  unshare --user --map-root-user sh -c 'echo 0 >/proc/sys/user/max_user_namespaces && exec "$@"' sh "$cv_binary" "$@"
}
cv=without_user_namespaces
check "a user namespace that forbids further ones can be made here" \
  unshare --user --map-root-user sh -c 'echo 0 >/proc/sys/user/max_user_namespaces'
check "doctor without user namespaces" run_cv 1 "$tmp/doctor.txt" "$tmp/err" doctor
check "doctor: cpu cannot start" grep -q "^problem: backend 'cpu' is not ready" "$tmp/doctor.txt"
check "doctor: that is a problem" grep -q "^problem: user namespace is missing: " "$tmp/doctor.txt"
export CODECVISOR_ALLOW_DEGRADED_SANDBOX=1
check "doctor, degraded allowed" run_cv 0 "$tmp/doctor.txt" "$tmp/err" doctor
check "doctor: one warning, for what it lacks" [ "$(grep -c "WARNING: backend 'cpu': no" "$tmp/err")" = 1 ]
check "doctor: ... the namespaces" grep -q "WARNING: backend 'cpu': no namespaces" "$tmp/err"
check "doctor: cpu started" grep -qE '^backend cpu \(cpu\): ready, pid [0-9]+$' "$tmp/doctor.txt"
check "doctor: degraded" grep -q "^  note: running with a DEGRADED sandbox: not engaged: namespaces, empty root" "$tmp/doctor.txt"
check "doctor: a warning" grep -q "^warning: user namespace is missing: .*; every backend started without it, as allowed" \
  "$tmp/doctor.txt"
check "doctor: the note says what goes with the user namespace" grep -qF \
  "note: CODECVISOR_ALLOW_DEGRADED_SANDBOX=1: it runs without user namespace (and with it the pid, net, ipc and mount namespaces and the empty root made inside one), with a warning" \
  "$tmp/doctor.txt"
check "doctor: the verdict" grep -q "^ok: every backend started, in a DEGRADED sandbox (without user namespace" "$tmp/doctor.txt"
check "doctor --json, degraded allowed" run_cv 0 "$tmp/doctor.json" "$tmp/err" doctor --json
check "doctor json: ok, degraded" contains "$(cat "$tmp/doctor.json")" '"ok":true,"degraded":true'
unset CODECVISOR_ALLOW_DEGRADED_SANDBOX
cv=$cv_binary

# AV1 in Matroska: no frame count in the header. libdav1d logs its version
# at FFmpeg's info level: quiet by default, one whole prefixed line per
# message with --loglevel.
av1="$tmp/clip_av1.mkv"
"${ffmpeg[@]}" -y -f lavfi -i testsrc=size=64x48:rate=25 -frames:v 30 -c:v libaom-av1 -cpu-used 8 -g 10 "$av1"
"${ffmpeg[@]}" -i "$av1" -f rawvideo -pix_fmt rgb24 - >"$tmp/ref_av1.rgb"
check "decode av1" run_cv 0 "$tmp/stdout" "$tmp/err" decode "$av1" --format ppm --indices 3 --out "$tmp/av1"
check "ffmpeg is quiet by default" bash -c "! grep -q libdav1d '$tmp/err'"
check "decode av1 --loglevel info" run_cv 0 "$tmp/stdout" "$tmp/err" decode "$av1" --format ppm --indices 3 --out "$tmp/av1" --loglevel info
check "--loglevel info shows ffmpeg's lines" grep -qE "^codecvisor: backend 'cpu': \[libdav1d @ 0x[0-9a-f]+\] libdav1d " "$tmp/err"
check "--loglevel takes ffmpeg's names only" run_cv 105 "$tmp/stdout" "$tmp/err" info "$av1" --loglevel loud
# approximate mode counts from duration x rate: -1 is the last frame
check "approximate --indices -1 without a header count" run_cv 0 "$tmp/stdout" "$tmp/err" decode "$av1" --seek-mode approximate --format ppm --indices -1 --out "$tmp/av1_last"
check "approximate -1 is frame 29" cmp "$tmp/av1_last/frame_000029.ppm" <(printf 'P6\n64 48\n255\n'; tail -c +$((29 * 64 * 48 * 3 + 1)) "$tmp/ref_av1.rgb")
check "approximate past the estimate" run_cv 1 "$tmp/stdout" "$tmp/err" decode "$av1" --seek-mode approximate --indices 30 --out "$tmp/av1_past"
check "past the estimate says so" grep -q "the stream has about 30 frames, estimated from its duration" "$tmp/err"

# A damaged file (20 KB of fixed text over the middle): exact mode stops at
# the first frame that cannot be decoded; --skip-bad-frames writes the rest
# and names the ones skipped.
dmg="$tmp/damaged.mp4"
"${ffmpeg[@]}" -y -f lavfi -i testsrc2=size=320x240:rate=25 -frames:v 200 -c:v libx264 -preset veryfast -bf 2 -g 50 -pix_fmt yuv420p "$dmg"
printf 'codecvisor%.0s' $(seq 2000) | dd of="$dmg" bs=1 seek=$(($(stat -c %s "$dmg") / 2)) conv=notrunc status=none
check "damaged file fails by default" run_cv 1 "$tmp/stdout" "$tmp/err" decode "$dmg" --format ppm --out "$tmp/dmg1" --quiet
check "the failure names the frame" grep -qE "frame [0-9]+ \(at [0-9.e+-]+ s\) could not be decoded" "$tmp/err"
check "--skip-bad-frames" run_cv 0 "$tmp/dmg.json" "$tmp/err" decode "$dmg" --format ppm --out "$tmp/dmg2" --skip-bad-frames --json
skipped=$(grep -oE 'skipped [0-9]+ undecodable frames' "$tmp/err" | grep -oE '[0-9]+' || echo 0)
check "some frames were skipped" [ "$skipped" -gt 0 ]
check "the others were written" [ $(($(ls "$tmp/dmg2" | wc -l) + skipped)) = 200 ]
check "--json lists the skipped" grep -qE '"skipped":\[[0-9]+(,[0-9]+)*\]\}$' "$tmp/dmg.json"
# Out of order, decoded in stream order: --json lists frames and the
# skipped index in the order and form given (a negative index as typed).
bad=$(grep -oE '"skipped":\[[0-9]+' "$tmp/dmg.json" | grep -oE '[0-9]+$')
check "--skip-bad-frames, indices out of order" run_cv 0 "$tmp/dmg3.json" "$tmp/err" decode "$dmg" --format ppm \
  --out "$tmp/dmg3" --skip-bad-frames --json --indices "199,$((bad - 200)),0"
check "... frames in the order given" grep -qE '"frames":\[\{"index":199,[^]]*\{"index":0,' "$tmp/dmg3.json"
check "... the skipped index as given" grep -qE "\"skipped\":\[$((bad - 200))\]\}\$" "$tmp/dmg3.json"
check "--skip-bad-frames takes no time selection" run_cv 108 "$tmp/stdout" "$tmp/err" decode "$dmg" --skip-bad-frames --times 1 --out "$tmp/x"
# An approximate-mode slice is clamped to the header's count (25 frames
# here), as the Python package's len() bounds it: a STOP past it used to
# be kept, and the run failed at the end of the stream, writing nothing.
check "approximate --frames past the count" run_cv 0 "$tmp/stdout" "$tmp/err" decode "$video" --seek-mode approximate \
  --format ppm --frames 20:100 --out "$tmp/approx_past"
check "... writes the frames up to the end" [ "$(ls "$tmp/approx_past" | wc -l)" = 5 ]
check "... the CLI's last frame" cmp "$tmp/approx_past/frame_000024.ppm" <(printf 'P6\n96 64\n255\n'; ref_frame 24)
# Clamped where a count is known: a huge range past it selects nothing.
check "a huge range past the count" bash -c 'timeout 60 "$0" decode "$1" --seek-mode approximate \
  --skip-bad-frames --frames 9223372036854775800:9223372036854775807:5 --out "$2" 2>"$3"; [ $? = 0 ]' \
  "$cv" "$video" "$tmp/huge" "$tmp/err"
check "... selects no frames of the 25" grep -q "selects no frames (of 25)" "$tmp/err"

# An index out of range fails before any frame: the folders --out made
# are removed again (they were left behind, empty); an existing one stays.
check "an index out of range" run_cv 1 "$tmp/stdout" "$tmp/err" decode "$video" --indices 25 --out "$tmp/new/sub" --quiet
check "... leaves no folder it made" [ ! -e "$tmp/new" ]
mkdir -p "$tmp/existing"
check "... into an existing folder" run_cv 1 "$tmp/stdout" "$tmp/err" decode "$video" --indices 25 --out "$tmp/existing" --quiet
check "... which stays" [ -d "$tmp/existing" ]

# Output past stdio's buffer that fails to reach stdout (a full disk) is an
# error: the last flush, with nothing left, used to succeed (exit 0).
check "decode --json to a full stdout" bash -c '"$0" decode "$1" --format ppm --out "$2" --json -q >/dev/full 2>"$3"; [ $? = 1 ]' \
  "$cv" "$video" "$tmp/full" "$tmp/err"
check "... says so" grep -q "cannot write stdout" "$tmp/err"
check "--help to a full stdout" bash -c '"$0" --help >/dev/full 2>"$1"; [ $? = 1 ]' "$cv" "$tmp/help_err"
check "... says so" grep -q "cannot write stdout" "$tmp/help_err"
check "decode --help to a full stdout" bash -c '"$0" decode --help >/dev/full 2>/dev/null; [ $? = 1 ]' "$cv"
check "an unspecified colour is null in info --json" grep -q '"color_primaries":null' "$tmp/info.json"

# A one-second sample has one key frame: there is nothing to seek past, and
# first_seek used to fail the backend for it; it takes a long sample instead.
check "conformance with a one-key-frame --sample" run_cv 0 "$tmp/stdout" "$tmp/err" conformance --backend cpu --sample "$video"
check "... first_seek passes on a long sample" grep -qE "^PASS  first_seek_clip_mp4 .*\(a long h264 sample" "$tmp/stdout"

# conformance: the whole suite against the built-in backend, as JSON
check "conformance --backend cpu --json" run_cv 0 "$tmp/conf.json" "$tmp/err" conformance --backend cpu --json
json=$(cat "$tmp/conf.json")
for field in '"backend":"cpu"' '"failed":0' '"name":"handshake","passed":true' '"name":"frames_av1","passed":true' \
    '"name":"rotation_h264","passed":true' '"name":"crash_recovery","passed":true' '"name":"shutdown","passed":true'; do
  check "conformance json has $field" contains "$json" "$field"
done
check "an option given twice" run_cv 114 "$tmp/stdout" "$tmp/err" decode "$video" --out "$tmp/twice" --frames 0:1 \
  --frames 2:3
check "an option given twice is named" grep -q -- "--frames" "$tmp/err"
check "an empty --backend-manifest is bad usage" run_cv 105 "$tmp/stdout" "$tmp/err" backends --backend-manifest ""
check "... that says so" grep -q "an empty path names no manifest" "$tmp/err"
check "conformance needs a backend" run_cv 106 "$tmp/stdout" "$tmp/err" conformance
check "... and says which" grep -q "^conformance: give --backend NAME or --backend-manifest PATH" "$tmp/err"
check "conformance --sample of a missing file" run_cv 105 "$tmp/stdout" "$tmp/err" conformance --backend cpu \
  --sample "$tmp/no_such.mkv"
check "conformance --reference needs its timestamps" run_cv 105 "$tmp/stdout" "$tmp/err" conformance --backend cpu \
  --sample "$tmp/conf.json" --reference "$tmp/conf.json"
check "conformance says what the reference needs" grep -q "give both --reference FRAMES and --reference-timestamps" "$tmp/err"
check "conformance --reference is for one sample" run_cv 105 "$tmp/stdout" "$tmp/err" conformance --backend cpu \
  --reference "$tmp/conf.json" --reference-timestamps "$tmp/conf.json"
check "conformance --min-psnr-floor must be positive" run_cv 105 "$tmp/stdout" "$tmp/err" conformance --backend cpu \
  --min-psnr-floor 0
check "conformance of an unknown backend" run_cv 1 "$tmp/stdout" "$tmp/err" conformance --backend nope
check "conformance names what is installed" grep -q "no backend named 'nope' (installed: cpu.*CODECVISOR_BACKEND_PATH" "$tmp/err"
check "conformance --json of an unknown backend" run_cv 1 "$tmp/stdout" "$tmp/err" conformance --backend nope --json
check "conformance --json says why on stdout" grep -qE '^\{"schema_version":1,"backend":"nope","manifest":null,"version":null,"error":"no backend named .nope. \(installed: cpu.*","warnings":\[\],"passed":0,"failed":0,"skipped":0,"checks":\[\]\}$' "$tmp/stdout"
printf 'name = = "x"\n' >"$tmp/garbage.toml"
check "conformance --json of an unparsable manifest" run_cv 1 "$tmp/stdout" "$tmp/err" conformance --backend-manifest "$tmp/garbage.toml" --json
check "conformance --json names the manifest and the parse error" grep -qE '"manifest":"[^"]*garbage.toml","version":null,"error":"manifest [^"]*garbage.toml: line 1: [^"]+"' "$tmp/stdout"

# Every --json output opens with its schema version (tools/README.md), the
# conformance report's too.
check "conformance json has schema_version" contains "$(cat "$tmp/conf.json")" '{"schema_version":1,'
check "conformance json is one line" [ "$(wc -l <"$tmp/conf.json")" = 1 ]

# A signal ignored when the command starts (nohup) stays ignored: the
# decode outlives it. The faulty test backend's slow frames (200 ms each)
# keep the decode going while the signal comes.
slow="$tmp/slow_backend"
mkdir -p "$slow"
cp "$TEST_SRCDIR/codecvisor/backends/testing/faulty.toml" "$TEST_SRCDIR/codecvisor/backends/testing/libcodecvisor_faulty.so" "$slow/"
printf 'synthetic frames=10 width=32 height=24 fps=10 decode_ms=200\n' >"$tmp/slow.syn"
(trap '' HUP; exec env CODECVISOR_BACKEND_PATH="$slow" "$cv" decode "$tmp/slow.syn" --device faulty --format ppm \
  --out "$tmp/slow_frames" -q) &
slow_pid=$!
for _ in $(seq 600); do [ -e "$tmp/slow_frames/frame_000000.ppm" ] && break; sleep 0.1; done
check "the nohup decode was running" kill -HUP "$slow_pid"
slow_rc=0
wait "$slow_pid" || slow_rc=$?
check "SIGHUP ignored at start stays ignored (exit $slow_rc)" [ "$slow_rc" = 0 ]
check "every frame written" [ "$(ls "$tmp/slow_frames" | wc -l)" = 10 ]

# --timeout bounds a hung backend's wait as Python's timeout= does: a
# decode that hangs (the faulty backend's hang, frame 2) is killed after
# 0.3 s, replayed once, then poison; the default would take a minute.
printf 'synthetic frames=10 width=8 height=4 fps=10 fault=hang fault_frame=2\n' >"$tmp/hang.syn"
check "--timeout 0.3 on a hang" bash -c 'timeout 50 env CODECVISOR_BACKEND_PATH="$4" "$0" decode "$1" \
  --device faulty --timeout 0.3 --format ppm --out "$2" -q 2>"$3"; [ $? = 1 ]' "$cv" "$tmp/hang.syn" "$tmp/hang" "$tmp/err" \
  "$slow"
check "... names the timeout" grep -q "no answer within 300 ms" "$tmp/err"
check "--timeout 0 is refused" bash -c '"$0" decode "$1" --timeout 0 --out "$2" 2>/dev/null; [ $? = 105 ]' "$cv" \
  "$video" "$tmp/t0"
# NaN passes a range check (no comparison with it is true): it was taken
# for no timeout given.
for flag in --timeout --open-timeout; do
  check "$flag nan is refused" bash -c '"$0" info "$1" "$2" nan >/dev/null 2>"$3"; [ $? = 105 ]' "$cv" "$video" \
    "$flag" "$tmp/nan_err"
  check "... saying why" grep -q "NaN is no number of seconds" "$tmp/nan_err"
done

# With no frame count known, a range is not clamped: --skip-bad-frames used
# to list a huge one whole (2^63 indices, or an endless loop where i +=
# step overflowed) and abort on std::bad_alloc. It fails as it does without.
printf 'synthetic frames=10 width=8 height=4 fps=10 count_unknown=1 nan_rate=1\n' >"$tmp/uncounted.syn"
check "--skip-bad-frames over a huge range" bash -c 'timeout 60 env CODECVISOR_BACKEND_PATH="$4" "$0" decode "$1" \
  --device faulty --skip-bad-frames --frames 9223372036854775800:9223372036854775807:5 --out "$2" 2>"$3"; [ $? = 1 ]' \
  "$cv" "$tmp/uncounted.syn" "$tmp/huge2" "$tmp/err" "$slow"
check "... says the frame is out of range" grep -q "out of range" "$tmp/err"

# Under a file-size limit (`ulimit -f`, 1 KiB blocks) below the channel's
# shared memory, which counts against it: SIGXFSZ killed the command without
# a word (exit 153). Now exit 1 with the limit named; and a frame file past
# the limit is EFBIG, an error, not the signal.
check "decode under ulimit -f" bash -c 'ulimit -f 64; "$0" decode "$1" --format rgb24 --out - >/dev/null 2>"$2"; \
  [ $? = 1 ]' "$cv" "$video" "$tmp/err"
check "... names the file-size limit" grep -q 'file-size limit of 65536 bytes (`ulimit -f`)' "$tmp/err"

# Started with stdin, stdout and stderr closed (a daemon), with the
# backend's log relayed to stderr: the channel's socket took number 2, the
# relayed lines went into it, and the backend, reading them as a forged
# message, was restarted. Its restarts are recorded in the backends'
# history under XDG_STATE_HOME.
mkdir -p "$tmp/closed_state"
check "decode with stdio closed" bash -c 'XDG_STATE_HOME="$2" "$0" decode "$1" --format ppm --out "$3" \
  --loglevel debug 0<&- 1>&- 2>&-' "$cv" "$video" "$tmp/closed_state" "$tmp/closed_frames"
check "... every frame written" [ "$(ls "$tmp/closed_frames" | wc -l)" = 25 ]
# Output to a closed stdout fails, as any write to it does: the descriptor
# the host fills is not a sink that swallows the frames.
check "decode to a closed stdout fails" bash -c '"$0" decode "$1" --format rgb24 --out - >&- 2>"$2"; [ $? = 1 ]' \
  "$cv" "$video" "$tmp/err"
check "... saying why" grep -q "cannot write stdout: Bad file descriptor" "$tmp/err"
check "info --json to a closed stdout fails" bash -c '"$0" info "$1" --json >&- 2>/dev/null; [ $? = 1 ]' "$cv" "$video"
check "... no backend was restarted" bash -c '! grep -rqsE "restarts|last_exit" "$0"' "$tmp/closed_state"

[[ $fails == 0 ]] || { echo "$fails checks failed" >&2; exit 1; }
