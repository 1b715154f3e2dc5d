// File: backends/cpu/leading_frames.h
//
// Which of a stream's first packets make a frame when the stream is decoded
// from its start, as the ffmpeg CLI decodes it. A recording cut in the
// middle of a GOP (an MPEG-TS capture, `tail -c` of a program stream)
// starts with pictures whose references are missing, and a first key frame
// of an open GOP (an HEVC CRA, an H.264 recovery point, an MPEG-2 I frame
// of an open GOP) has leading pictures that refer to pictures before it:
// decoders drop both, and the CLI's frame 0 is the first picture that
// comes out. The exact-mode scan (FrameIndex::Scan) asks this of the first
// packets of such a stream only, and leaves the others out of its table.
//
// Not thread-safe; runs on the session's thread during its open.

#ifndef CODECVISOR_BACKENDS_CPU_LEADING_FRAMES_H_
#define CODECVISOR_BACKENDS_CPU_LEADING_FRAMES_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cpu/demuxer.h"

namespace codecvisor::cpu {

// Reads the first `count` packets of `demuxer`'s stream from the start
// (the container is opened again: stream() and format() change, and the
// demuxer is left after them), decodes them with `threads` decoder threads
// (0: libavcodec's choice, as the session decodes) and drains the
// decoder, and says for each (packets libavformat marks discarded are not
// counted, as the scan counts) whether a frame came out of it. Errors:
// those of the reopen and of opening a decoder; a packet the decoder
// rejects simply makes no frame.
absl::StatusOr<std::vector<bool>> FramesMadeFromStart(Demuxer& demuxer, int64_t count, unsigned threads);

}  // namespace codecvisor::cpu

#endif  // CODECVISOR_BACKENDS_CPU_LEADING_FRAMES_H_
