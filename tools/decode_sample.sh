#!/usr/bin/env bash
# The README's main job: decode a video through a sandboxed backend process
# into PNG frames. With no VIDEO, it first makes a 2-second 640x360 H.264
# sample with the ffmpeg CLI. Installs what is missing, builds optimised.
#
# usage: tools/decode_sample.sh [VIDEO [OUT_DIR]]
set -euo pipefail
cd "$(dirname "$0")/.."
tools/bootstrap.sh
video=${1:-}
out=${2:-${TMPDIR:-/tmp}/codecvisor-frames}
if [ -z "$video" ]; then
  video=${TMPDIR:-/tmp}/codecvisor-sample.mp4
  echo "no video given: making a sample at $video" >&2
  ffmpeg -loglevel error -y -f lavfi -i "testsrc2=size=640x360:rate=25" -t 2 \
    -c:v libx264 -pix_fmt yuv420p -bf 2 "$video"
else
  video=$(realpath "$video")
fi
bazel build -c opt --ui_event_filters=-info,-stdout,-stderr --noshow_progress //tools:codecvisor
bazel-bin/tools/codecvisor info "$video"
bazel-bin/tools/codecvisor decode "$video" --format png --out "$out"
echo "frames written to $out" >&2
