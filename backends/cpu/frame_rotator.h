// File: backends/cpu/frame_rotator.h
//
// Applies a stream's display-matrix rotation to decoded frames, as the
// ffmpeg CLI's autorotation does. FFmpeg 5.1's CLI turns the matrix into an
// angle theta = -round(av_display_rotation_get(matrix)), taken modulo 360,
// and inserts, first in the stream's filter chain (before any -vf filter,
// so before scaling and the RGB conversion):
//   theta ~ 90   "transpose=clock"   (rotate 90 degrees clockwise)
//   theta ~ 180  "hflip" then "vflip"
//   theta ~ 270  "transpose=cclock"  (rotate 90 degrees counter-clockwise)
// Those filters only move samples, plane by plane in the decoder's own pixel
// format, so doing the same moves here is bit-exact with them. Any other
// angle would make the CLI insert the interpolating "rotate" filter: such
// frames are left as they are (RotationFromDegrees gives kNone).
//
// Not thread-safe: one per session (it keeps the output frame's buffers).

#ifndef CODECVISOR_BACKENDS_CPU_FRAME_ROTATOR_H_
#define CODECVISOR_BACKENDS_CPU_FRAME_ROTATOR_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/cpu/av_util.h"

extern "C" {
#include <libavutil/frame.h>
#include <libavutil/pixfmt.h>
}

namespace codecvisor::cpu {

enum class Rotation { kNone, kClockwise, kHalfTurn, kCounterClockwise };

// The CLI's choice for a display matrix whose av_display_rotation_get angle
// is `degrees` (counter-clockwise, as ffprobe prints it; 0 without a matrix).
Rotation RotationFromDegrees(double degrees);

// Whether `rotation` swaps width and height.
inline bool SwapsSides(Rotation rotation) {
  return rotation == Rotation::kClockwise || rotation == Rotation::kCounterClockwise;
}

// OK when frames of `format` can be rotated by `rotation` sample by sample
// as the CLI's filters do; Unimplemented otherwise (paletted, hardware and
// bitstream formats; for a quarter turn, formats whose chroma is subsampled
// differently across and down, e.g. 4:2:2, which the transpose filter does
// not take and the CLI would first convert).
absl::Status CheckRotatable(Rotation rotation, AVPixelFormat format);

class FrameRotator {
 public:
  explicit FrameRotator(Rotation rotation) : rotation_(rotation) {}
  FrameRotator(const FrameRotator&) = delete;
  FrameRotator& operator=(const FrameRotator&) = delete;

  Rotation rotation() const { return rotation_; }

  // `frame` rotated, in a frame this rotator owns until the next call (or
  // `frame` itself for kNone). Colour properties and timestamps are copied.
  // DataLoss for a frame whose format cannot be rotated (see
  // CheckRotatable); ResourceExhausted when out of memory.
  absl::StatusOr<const AVFrame*> Apply(const AVFrame* frame);

  // `frame` rotated into the caller's planes `data` with rows of `linesize`
  // bytes, which must hold the rotated size (sides swapped for a quarter
  // turn) in `frame`'s format; for kNone, a copy. DataLoss for a frame
  // whose format cannot be rotated (it allocates nothing), and nothing is
  // written then.
  absl::Status RotateInto(const AVFrame* frame, uint8_t* const data[4], const int linesize[4]) const;

 private:
  // `frame`'s format if it can be rotated as rotation_ says; else DataLoss.
  absl::StatusOr<AVPixelFormat> RotatableFormat(const AVFrame* frame) const;

  Rotation rotation_;
  FramePtr rotated_;
};

}  // namespace codecvisor::cpu

#endif  // CODECVISOR_BACKENDS_CPU_FRAME_ROTATOR_H_
