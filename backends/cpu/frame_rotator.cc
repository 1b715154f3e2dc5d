// File: backends/cpu/frame_rotator.cc

#include "backends/cpu/frame_rotator.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "backends/cpu/av_enums.h"

extern "C" {
#include <libavutil/common.h>
#include <libavutil/display.h>
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
}

namespace codecvisor::cpu {
namespace {

// One plane's geometry: size in samples, bytes per sample, and rows.
struct Plane {
  int width;
  int height;
  int step;
};

Plane PlaneOf(const AVPixFmtDescriptor* desc, const int steps[4], int plane, int width,
              int height) {
  // As the flip and transpose filters: planes 1 and 2 carry chroma.
  const bool chroma = plane == 1 || plane == 2;
  return Plane{AV_CEIL_RSHIFT(width, chroma ? desc->log2_chroma_w : 0),
               AV_CEIL_RSHIFT(height, chroma ? desc->log2_chroma_h : 0), steps[plane]};
}

// Calls fn(std::integral_constant<int, S>{}) with S the sample size in
// bytes when it is a common one, so that the loops below copy a sample with
// a fixed-size move; S = 0 otherwise (the size is then read from the plane).
template <typename Fn>
void WithSampleSize(int step, Fn&& fn) {
  switch (step) {
    case 1:
      return fn(std::integral_constant<int, 1>{});
    case 2:
      return fn(std::integral_constant<int, 2>{});
    case 3:
      return fn(std::integral_constant<int, 3>{});
    case 4:
      return fn(std::integral_constant<int, 4>{});
    case 6:
      return fn(std::integral_constant<int, 6>{});
    case 8:
      return fn(std::integral_constant<int, 8>{});
    default:
      return fn(std::integral_constant<int, 0>{});
  }
}

// Where output sample (y, x) is read from, per axis: mirrored or not, and
// for a quarter turn or transpose, with the axes swapped.
struct SampleMove {
  bool swap;      // the output is the input's height wide
  bool mirror_x;  // the input column read counts from the right
  bool mirror_y;  // the input row read counts from the bottom
};

SampleMove MoveOf(Rotation rotation) {
  switch (rotation) {
    case Rotation::kNone:
      return {false, false, false};
    case Rotation::kClockwise:
      return {true, false, true};
    case Rotation::kHalfTurn:
      return {false, true, true};
    case Rotation::kCounterClockwise:
      return {true, true, false};
    case Rotation::kHorizontalFlip:
      return {false, true, false};
    case Rotation::kVerticalFlip:
      return {false, false, true};
    case Rotation::kTranspose:
      return {true, false, false};
    case Rotation::kAntiTranspose:
      return {true, true, true};
  }
  return {false, false, false};
}

// out(y, x) = in(x', y') as vf_transpose moves samples: x' = y (from the
// right with mirror_x), y' = x (from the bottom with mirror_y). In square
// tiles, so that the input rows one output row reads down stay in cache for
// the next output rows (a 1080p RGB24 frame walked a whole column at a time
// misses the cache on nearly every sample).
template <int kStep>
void TransposeTiles(const uint8_t* src, int src_stride, uint8_t* dst, int dst_stride, const Plane& in,
                    SampleMove move) {
  constexpr int kTile = 32;
  const size_t step = kStep != 0 ? kStep : static_cast<size_t>(in.step);
  // The output is in.height samples wide and in.width rows high.
  for (int y0 = 0; y0 < in.width; y0 += kTile) {
    const int y1 = std::min(y0 + kTile, in.width);
    for (int x0 = 0; x0 < in.height; x0 += kTile) {
      const int x1 = std::min(x0 + kTile, in.height);
      for (int y = y0; y < y1; ++y) {
        const int src_x = move.mirror_x ? in.width - 1 - y : y;
        const uint8_t* column = src + ptrdiff_t{src_x} * ptrdiff_t(step);
        uint8_t* out = dst + ptrdiff_t{y} * dst_stride;
        for (int x = x0; x < x1; ++x) {
          const int src_y = move.mirror_y ? in.height - 1 - x : x;
          std::memcpy(out + ptrdiff_t{x} * ptrdiff_t(step), column + ptrdiff_t{src_y} * src_stride, step);
        }
      }
    }
  }
}

// hflip and vflip: out(y, x) = in(y', x'), each axis counted from the far
// side when mirrored.
template <int kStep>
void FlipRows(const uint8_t* src, int src_stride, uint8_t* dst, int dst_stride, const Plane& in,
              SampleMove move) {
  const size_t step = kStep != 0 ? kStep : static_cast<size_t>(in.step);
  for (int y = 0; y < in.height; ++y) {
    const uint8_t* row = src + ptrdiff_t{move.mirror_y ? in.height - 1 - y : y} * src_stride;
    uint8_t* out = dst + ptrdiff_t{y} * dst_stride;
    if (!move.mirror_x) {
      std::memcpy(out, row, size_t(in.width) * step);
      continue;
    }
    for (int x = 0; x < in.width; ++x) {
      std::memcpy(out + ptrdiff_t{x} * ptrdiff_t(step), row + ptrdiff_t{in.width - 1 - x} * ptrdiff_t(step), step);
    }
  }
}

}  // namespace

Rotation RotationFromMatrix(const int32_t* matrix) {
  if (matrix == nullptr) return Rotation::kNone;
  // fftools' get_rotation: clockwise degrees in [0, 360). A degenerate
  // matrix gives NaN, which no comparison below takes.
  double theta = -std::round(av_display_rotation_get(matrix));
  theta -= 360 * std::floor(theta / 360 + 0.9 / 360);
  if (std::fabs(theta - 90) < 1.0) return matrix[3] > 0 ? Rotation::kTranspose : Rotation::kClockwise;
  if (std::fabs(theta - 180) < 1.0) {
    const bool h = matrix[0] < 0, v = matrix[4] < 0;
    return h && v ? Rotation::kHalfTurn : h ? Rotation::kHorizontalFlip : v ? Rotation::kVerticalFlip : Rotation::kNone;
  }
  if (std::fabs(theta - 270) < 1.0) return matrix[3] < 0 ? Rotation::kAntiTranspose : Rotation::kCounterClockwise;
  // Another angle: the CLI's "rotate" filter, not reproduced. NaN: no
  // branch of the CLI's takes it.
  if (!(std::fabs(theta) < 1.0)) return Rotation::kNone;
  return matrix[4] < 0 ? Rotation::kVerticalFlip : Rotation::kNone;
}

absl::Status CheckRotatable(Rotation rotation, AVPixelFormat format) {
  if (rotation == Rotation::kNone) return absl::OkStatus();
  const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(format);
  if (desc == nullptr) return absl::UnimplementedError("a rotated stream has no pixel format");
  const bool movable =
      (desc->flags & (AV_PIX_FMT_FLAG_PAL | AV_PIX_FMT_FLAG_HWACCEL | AV_PIX_FMT_FLAG_BITSTREAM)) ==
      0;
  // Packed formats with chroma shared between neighbours (yuyv422) cannot be
  // flipped sample by sample either.
  const bool uneven = desc->log2_chroma_w != desc->log2_chroma_h;
  const bool packed_uneven = uneven && desc->comp[0].plane == desc->comp[1].plane;
  if (!movable || packed_uneven || (SwapsSides(rotation) && uneven)) {
    return absl::UnimplementedError(
        absl::StrCat("the stream's display matrix rotates it, and frames in pixel format ",
                     desc->name,
                     " cannot be rotated without resampling, which the ffmpeg CLI would do in a "
                     "way this backend does not reproduce"));
  }
  return absl::OkStatus();
}

absl::StatusOr<AVPixelFormat> FrameRotator::RotatableFormat(const AVFrame* frame) const {
  const std::optional<AVPixelFormat> format = KnownPixelFormat(frame->format);
  if (!format || !CheckRotatable(rotation_, *format).ok()) {
    return absl::DataLossError(absl::StrCat("a decoded frame has pixel format ",
                                            PixelFormatName(frame->format),
                                            ", which cannot be rotated"));
  }
  return *format;
}

absl::Status FrameRotator::RotateInto(const AVFrame* frame, uint8_t* const data[4], const int linesize[4]) const {
  const absl::StatusOr<AVPixelFormat> format = RotatableFormat(frame);
  if (!format.ok()) return format.status();
  if (rotation_ == Rotation::kNone) {
    uint8_t* dst_data[4] = {data[0], data[1], data[2], data[3]};
    int dst_linesize[4] = {linesize[0], linesize[1], linesize[2], linesize[3]};
    const uint8_t* src_data[4] = {frame->data[0], frame->data[1], frame->data[2], frame->data[3]};
    av_image_copy(dst_data, dst_linesize, src_data, frame->linesize, *format, frame->width, frame->height);
    return absl::OkStatus();
  }
  const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(*format);
  int steps[4] = {};
  av_image_fill_max_pixsteps(steps, nullptr, desc);
  for (int p = 0; p < av_pix_fmt_count_planes(*format); ++p) {
    const Plane in = PlaneOf(desc, steps, p, frame->width, frame->height);
    WithSampleSize(in.step, [&](auto size) {
      constexpr int kStep = decltype(size)::value;
      const SampleMove move = MoveOf(rotation_);
      if (move.swap) {
        TransposeTiles<kStep>(frame->data[p], frame->linesize[p], data[p], linesize[p], in, move);
      } else {
        FlipRows<kStep>(frame->data[p], frame->linesize[p], data[p], linesize[p], in, move);
      }
    });
  }
  return absl::OkStatus();
}

absl::StatusOr<const AVFrame*> FrameRotator::Apply(const AVFrame* frame) {
  if (rotation_ == Rotation::kNone) return frame;
  const bool swap = SwapsSides(rotation_);
  const int out_width = swap ? frame->height : frame->width;
  const int out_height = swap ? frame->width : frame->height;
  if (rotated_ == nullptr || rotated_->width != out_width || rotated_->height != out_height ||
      rotated_->format != frame->format) {
    // Before allocating: av_frame_get_buffer takes no unknown format.
    if (absl::Status s = RotatableFormat(frame).status(); !s.ok()) return s;
    rotated_ = MakeFrame();
    rotated_->width = out_width;
    rotated_->height = out_height;
    rotated_->format = frame->format;
    if (int ret = av_frame_get_buffer(rotated_.get(), 0); ret < 0) {
      rotated_.reset();
      return absl::ResourceExhaustedError(
          absl::StrCat("cannot allocate a rotated frame: ", AvErrorText(ret)));
    }
  }
  if (absl::Status s = RotateInto(frame, rotated_->data, rotated_->linesize); !s.ok()) return s;
  // What the conversion reads (colour), and what callers may (timing).
  rotated_->color_range = frame->color_range;
  rotated_->colorspace = frame->colorspace;
  rotated_->color_primaries = frame->color_primaries;
  rotated_->color_trc = frame->color_trc;
  rotated_->chroma_location = frame->chroma_location;
  rotated_->pts = frame->pts;
  rotated_->best_effort_timestamp = frame->best_effort_timestamp;
  rotated_->pkt_duration = frame->pkt_duration;
  rotated_->key_frame = frame->key_frame;
  return rotated_.get();
}

}  // namespace codecvisor::cpu
