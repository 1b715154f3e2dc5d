#!/usr/bin/env bash
# The product's `codecvisor` links no decoder: every decode happens in a
# backend's sandboxed child process (the benchmarks, which decode in
# process as a baseline, are the separate codecvisor-bench). Checked on the
# binary itself: no libavformat among the libraries it needs, and none of
# FFmpeg's demuxing or decoding entry points, nor a backend's entry, among
# the symbols it imports or defines. The PNG encoder it does call shows
# that the symbols were read.
set -euo pipefail
bin="$TEST_SRCDIR/codecvisor/tools/codecvisor"

needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
symbols=$(nm -D "$bin"; nm "$bin" 2>/dev/null || true)
fails=0
grep -q '^libavcodec\.so' <<<"$needed" || { echo "FAIL: no libavcodec among $needed (the PNG encoder's)" >&2; fails=1; }
grep -qw avcodec_find_encoder <<<"$symbols" || { echo "FAIL: avcodec_find_encoder not found: symbols unread?" >&2; fails=1; }
if grep '^libavformat\.so' <<<"$needed"; then
  echo "FAIL: the binary needs libavformat (a demuxer)" >&2
  fails=1
fi
for symbol in avformat_open_input avcodec_find_decoder avcodec_send_packet avcodec_receive_frame codecvisor_backend_v1; do
  if grep -w "$symbol" <<<"$symbols"; then
    echo "FAIL: the binary refers to $symbol" >&2
    fails=1
  fi
done
[[ $fails == 0 ]] && echo PASS
