#!/usr/bin/env bash
# End to end: the `codecvisor` binary, on videos made here with the ffmpeg
# CLI, where issue 19 found it apart from the ffmpeg CLI and torchcodec:
# FFmpeg's own log lines on a damaged file, a truncated file decoded whole,
# and a stream index that names an audio stream.
set -euo pipefail

cv="$TEST_SRCDIR/codecvisor/tools/codecvisor"
tmp="$TEST_TMPDIR"
ffmpeg=(/usr/bin/ffmpeg -nostdin -v error)
source "$TEST_SRCDIR/codecvisor/tools/cli/cli_checks.sh"
# only_cli_lines FILE: every line of FILE is the CLI's own ("codecvisor
# decode: ..."), none is FFmpeg's ("[h264 @ 0x...] ...").
only_cli_lines() {
  if grep -vq '^codecvisor decode: ' "$1"; then
    echo "  lines that are not the CLI's:" >&2
    grep -v '^codecvisor decode: ' "$1" | head -n 5 >&2
    return 1
  fi
}

# A damaged file (20 KB of fixed text over the middle): FFmpeg's decoder
# complains about every broken slice, but only with --loglevel; by default
# the one line on stderr is the CLI's error.
dmg="$tmp/damaged.mp4"
"${ffmpeg[@]}" -y -f lavfi -i testsrc2=size=320x240:rate=25 -frames:v 200 -c:v libx264 -preset veryfast -bf 2 -g 50 \
  -pix_fmt yuv420p "$dmg"
printf 'codecvisor%.0s' $(seq 2000) | dd of="$dmg" bs=1 seek=$(($(stat -c %s "$dmg") / 2)) conv=notrunc status=none
check "damaged file fails" run_cv 1 "$tmp/stdout" "$tmp/err" decode "$dmg" --format ppm --out "$tmp/dmg"
check "stderr is the CLI's lines only" only_cli_lines "$tmp/err"
check "one line: the error" [ "$(wc -l <"$tmp/err")" = 1 ]
check "the error names the frame" grep -qE "frame [0-9]+ \(at [0-9.e+-]+ s\) could not be decoded" "$tmp/err"
check "--skip-bad-frames" run_cv 0 "$tmp/stdout" "$tmp/err" decode "$dmg" --format ppm --out "$tmp/dmg2" --skip-bad-frames
check "stderr is the CLI's lines only, skipping" only_cli_lines "$tmp/err"
check "--loglevel error shows FFmpeg's lines" run_cv 1 "$tmp/stdout" "$tmp/err" decode "$dmg" --format ppm \
  --out "$tmp/dmg3" --loglevel error
check "FFmpeg's lines are whole and prefixed" grep -qE "^codecvisor: backend 'cpu': \[h264 @ 0x[0-9a-f]+\] " "$tmp/err"

# A file cut short with its index intact: the scan counts the frames that
# decode, so a plain decode of every frame succeeds and is the CLI's.
whole="$tmp/faststart.mp4"
"${ffmpeg[@]}" -y -f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 40 -c:v libx264 -preset veryfast -bf 2 -g 10 \
  -pix_fmt yuv420p -movflags +faststart "$whole"
cut="$tmp/cut.mp4"
head -c $(($(stat -c %s "$whole") * 70 / 100)) "$whole" >"$cut"
"${ffmpeg[@]}" -i "$cut" -f rawvideo -pix_fmt rgb24 - >"$tmp/cut_ref.rgb" 2>/dev/null || true
check "the cut file has fewer frames" [ "$(($(stat -c %s "$tmp/cut_ref.rgb") / (64 * 48 * 3)))" -lt 40 ]
check "truncated file decodes whole" run_cv 0 "$tmp/cut.rgb" "$tmp/err" decode "$cut" --format rgb24 --out -
check "its frames are the CLI's" cmp "$tmp/cut.rgb" "$tmp/cut_ref.rgb"

# A stream index that names an audio stream says what it is, in English.
av="$tmp/with_audio.mkv"
"${ffmpeg[@]}" -y -f lavfi -i testsrc2=size=64x48:rate=25 -f lavfi -i sine=frequency=440:sample_rate=8000 \
  -t 1 -map 0:v -map 1:a -c:v libx264 -pix_fmt yuv420p -c:a pcm_s16le "$av"
check "--stream 1 is audio" run_cv 1 "$tmp/stdout" "$tmp/err" decode "$av" --stream 1 --out "$tmp/audio"
check "it is an audio stream" grep -q "stream 1 is not a video stream (it is an audio stream)" "$tmp/err"
check "--stream 0 is the video" run_cv 0 "$tmp/stdout" "$tmp/err" decode "$av" --stream 0 --frames 0:1 --out "$tmp/video"

[[ $fails == 0 ]] || { echo "$fails checks failed" >&2; exit 1; }
