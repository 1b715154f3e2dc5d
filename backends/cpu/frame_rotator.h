// File: backends/cpu/frame_rotator.h
//
// Applies a stream's display matrix to decoded frames, as the ffmpeg CLI's
// autorotation does. FFmpeg 5.1's CLI turns the matrix m into an angle
// theta = -round(av_display_rotation_get(m)), taken modulo 360, and
// inserts, first in the stream's filter chain (before any -vf filter, so
// before scaling and the RGB conversion), looking at the matrix's signs for
// a mirror:
//   theta ~ 90   "transpose=cclock_flip" if m[3] > 0, else "transpose=clock"
//   theta ~ 180  "hflip" if m[0] < 0, then "vflip" if m[4] < 0
//   theta ~ 270  "transpose=clock_flip" if m[3] < 0, else "transpose=cclock"
//   theta ~ 0    "vflip" if m[4] < 0
// Those filters only move samples, plane by plane in the decoder's own pixel
// format, so doing the same moves here is bit-exact with them. Any other
// angle would make the CLI insert the interpolating "rotate" filter: such
// frames are left as they are (RotationFromMatrix gives kNone).
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

// The CLI's sample moves, by the filters it inserts.
enum class Rotation {
  kNone,
  kClockwise,         // transpose=clock
  kHalfTurn,          // hflip, vflip
  kCounterClockwise,  // transpose=cclock
  kHorizontalFlip,    // hflip: a mirror
  kVerticalFlip,      // vflip
  kTranspose,         // transpose=cclock_flip: across the main diagonal
  kAntiTranspose,     // transpose=clock_flip: across the other diagonal
};

// The CLI's choice for display matrix `matrix` (the 9 int32 values of
// AV_PKT_DATA_DISPLAYMATRIX; nullptr for a stream without one).
Rotation RotationFromMatrix(const int32_t* matrix);

// Whether `rotation` swaps width and height.
inline bool SwapsSides(Rotation rotation) {
  return rotation == Rotation::kClockwise || rotation == Rotation::kCounterClockwise ||
         rotation == Rotation::kTranspose || rotation == Rotation::kAntiTranspose;
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
