// File: backends/cpu/frame_output.h
//
// FrameOutput: a decoded frame into the caller's buffer, rotated as the
// stream's display matrix says and converted to the session's layout, in
// the order the ffmpeg CLI's filter graph runs those steps.
//
// The CLI inserts its rotation filters (FrameRotator) first in the chain,
// but libavfilter then negotiates pixel formats across the whole chain:
//   - RGB output at the stream's size (`-vf format=rgb24`, `-pix_fmt
//     rgb24`): the rotation filters accept rgb24, so the auto-inserted scale
//     converts the unrotated frame to RGB first (`ffmpeg -v debug`:
//     "auto-inserting filter 'auto_scale_0' between ... input ... and the
//     filter 'transpose'"), and the RGB picture is rotated.
//   - Resized output (`-vf scale=W:H,format=rgb24`) and native output
//     (`-pix_fmt <decoder's>`): the decoder's format reaches the rotation
//     filters, which rotate it; the scale then resizes and converts.
// Rotating in the other order gives different pixels (chroma is
// interpolated along other axes), so both orders are kept.
//
// Not thread-safe: one per session.

#ifndef CODECVISOR_BACKENDS_CPU_FRAME_OUTPUT_H_
#define CODECVISOR_BACKENDS_CPU_FRAME_OUTPUT_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/cpu/av_util.h"
#include "backends/cpu/frame_converter.h"
#include "backends/cpu/frame_rotator.h"
#include "backends/sdk/codecvisor_backend.h"

namespace codecvisor::cpu {

class FrameOutput {
 public:
  // Output into `layout` (post-rotation sizes) of frames decoded as
  // `native`, `coded_width` x `coded_height` before rotation. `resized`:
  // the caller asked for an output size (so the CLI reference is
  // "scale=W:H" after the rotation). Unimplemented when the frames would
  // have to be rotated in a format that cannot be (CheckRotatable).
  static absl::StatusOr<std::unique_ptr<FrameOutput>> Create(const cv_frame_layout& layout,
                                                             AVPixelFormat native,
                                                             uint32_t coded_width,
                                                             uint32_t coded_height,
                                                             Rotation rotation, bool resized);

  // Writes `frame` into `dst` (at least layout.size bytes). Errors as
  // FrameConverter::Convert and FrameRotator::Apply.
  absl::Status Write(const AVFrame* frame, uint8_t* dst);

 private:
  FrameOutput(Rotation rotation) : rotator_(rotation) {}

  FrameRotator rotator_;
  // Rotation first (or none): the conversion into the caller's layout.
  std::unique_ptr<FrameConverter> converter_;
  // Conversion first: to RGB24 at the coded size, in rgb_, then rotated.
  std::unique_ptr<FrameConverter> rgb_converter_;
  cv_frame_layout layout_{};
  cv_frame_layout rgb_layout_{};
  std::vector<uint8_t> rgb_;
  FramePtr rgb_view_;  // rgb_ as an AVFrame for the rotator; owns nothing
};

}  // namespace codecvisor::cpu

#endif  // CODECVISOR_BACKENDS_CPU_FRAME_OUTPUT_H_
