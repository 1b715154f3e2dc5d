#!/usr/bin/env bash
# The README's main job: decode a video through a sandboxed backend process
# into PNG frames. With no VIDEO, it first makes a 2-second 640x360 H.264
# sample with the ffmpeg CLI. Installs what is missing, builds optimised.
#
# usage: tools/decode_sample.sh [VIDEO [OUT_DIR]]
# (VIDEO and OUT_DIR relative to the caller's folder.)
set -euo pipefail
video=${1:-}
out=${2:-${TMPDIR:-/tmp}/codecvisor-frames}
# Made absolute before the cd below; -m: OUT_DIR need not exist yet.
[ -z "$video" ] || video=$(realpath -- "$video")
out=$(realpath -m -- "$out")
cd "$(dirname "$0")/.."
tools/bootstrap.sh
if [ -z "$video" ]; then
  video=${TMPDIR:-/tmp}/codecvisor-sample.mp4
  echo "no video given: making a sample at $video" >&2
  ffmpeg -loglevel error -y -f lavfi -i "testsrc2=size=640x360:rate=25" -t 2 \
    -c:v libx264 -pix_fmt yuv420p -bf 2 "$video"
fi
bazel build -c opt --ui_event_filters=-info,-stdout,-stderr --noshow_progress //tools:codecvisor
bazel-bin/tools/codecvisor info "$video"
bazel-bin/tools/codecvisor decode "$video" --format png --out "$out"
echo "frames written to $out" >&2
