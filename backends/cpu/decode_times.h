// File: backends/cpu/decode_times.h
//
// H.264 and HEVC streams that reorder pictures but whose container gives
// every packet its dts for a pts (an elementary stream muxed without
// presentation times: `ffmpeg -i raw.h264 -c copy out.mp4`). Those times
// are decode times; the decoder shows the pictures in picture order count
// order. Exact mode re-times such a stream by its counts
// (PlaceByPictureOrderOverDecodeTimes, in FrameIndex::Scan); approximate
// mode, which seeks by container times, detects one
// (FirstPtsIsADecodeTime) and scans it as exact mode does.

#ifndef CODECVISOR_BACKENDS_CPU_DECODE_TIMES_H_
#define CODECVISOR_BACKENDS_CPU_DECODE_TIMES_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cpu/demuxer.h"
#include "backends/cpu/frame_timeline.h"

namespace codecvisor::cpu {

// `frames` (decode order) were read from the demuxer's stream and every
// pts is its packet's dts. Where the stream's picture order counts (read
// in a second pass over the packets, the container opened again) show
// pictures out of decode order, the key frames keep their times (an IDR
// picture is shown in its decode place) and every other frame takes its
// place in display order between them (PlaceUntimedByPictureOrder); a
// clip of one group of pictures whose key frame the container dropped
// starts at the earliest decode time. True if the frames were re-timed;
// false, changing nothing, where the counts cannot be read, do not place
// every frame, or only rise between key frames (the decode times are
// display times after all).
bool PlaceByPictureOrderOverDecodeTimes(Demuxer& demuxer, std::vector<FrameEntry>& frames, int64_t fallback_duration);

// Whether the first frame's packet of an H.264 or HEVC stream that shows
// pictures out of decode order carries its dts for a pts. In such a stream
// the first picture is decoded at least one frame before it is shown, so
// that pts is a decode time, whose container times approximate mode
// cannot use. Only in the MP4 family, where that is how such a stream ends
// up, and whose seeks go to the sample asked for: the packets read (up to
// kMaxDiscarded the container drops before that one) are read again after
// a seek to the first one. The demuxer is at the start after it either
// way.
[[nodiscard]] absl::StatusOr<bool> FirstPtsIsADecodeTime(Demuxer& demuxer);

}  // namespace codecvisor::cpu

#endif  // CODECVISOR_BACKENDS_CPU_DECODE_TIMES_H_
