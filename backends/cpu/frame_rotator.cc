// File: backends/cpu/frame_rotator.cc

#include "backends/cpu/frame_rotator.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "backends/cpu/av_enums.h"

extern "C" {
#include <libavutil/common.h>
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

// out(y, x) = in(x', y') as vf_transpose moves samples: clockwise reads the
// input's rows bottom-up, counter-clockwise writes the output's bottom-up.
void TransposePlane(const uint8_t* src, int src_stride, uint8_t* dst, int dst_stride,
                    const Plane& in, bool clockwise) {
  // The output is in.height samples wide and in.width rows high.
  for (int y = 0; y < in.width; ++y) {
    const int src_x = clockwise ? y : in.width - 1 - y;
    uint8_t* out = dst + ptrdiff_t{y} * dst_stride;
    for (int x = 0; x < in.height; ++x) {
      const int src_y = clockwise ? in.height - 1 - x : x;
      std::memcpy(out + ptrdiff_t{x} * in.step,
                  src + ptrdiff_t{src_y} * src_stride + ptrdiff_t{src_x} * in.step, in.step);
    }
  }
}

// hflip then vflip: out(y, x) = in(h-1-y, w-1-x).
void HalfTurnPlane(const uint8_t* src, int src_stride, uint8_t* dst, int dst_stride,
                   const Plane& in) {
  for (int y = 0; y < in.height; ++y) {
    const uint8_t* row = src + ptrdiff_t{in.height - 1 - y} * src_stride;
    uint8_t* out = dst + ptrdiff_t{y} * dst_stride;
    for (int x = 0; x < in.width; ++x) {
      std::memcpy(out + ptrdiff_t{x} * in.step, row + ptrdiff_t{in.width - 1 - x} * in.step,
                  in.step);
    }
  }
}

}  // namespace

Rotation RotationFromDegrees(double degrees) {
  if (!std::isfinite(degrees)) return Rotation::kNone;
  // fftools' get_rotation: clockwise degrees in [0, 360).
  double theta = -std::round(degrees);
  theta -= 360 * std::floor(theta / 360 + 0.9 / 360);
  if (std::fabs(theta - 90) < 1.0) return Rotation::kClockwise;
  if (std::fabs(theta - 180) < 1.0) return Rotation::kHalfTurn;
  if (std::fabs(theta - 270) < 1.0) return Rotation::kCounterClockwise;
  return Rotation::kNone;
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

absl::StatusOr<const AVFrame*> FrameRotator::Apply(const AVFrame* frame) {
  if (rotation_ == Rotation::kNone) return frame;
  const std::optional<AVPixelFormat> format = KnownPixelFormat(frame->format);
  if (!format || !CheckRotatable(rotation_, *format).ok()) {
    return absl::DataLossError(absl::StrCat("a decoded frame has pixel format ",
                                            PixelFormatName(frame->format),
                                            ", which cannot be rotated"));
  }
  const bool swap = SwapsSides(rotation_);
  const int out_width = swap ? frame->height : frame->width;
  const int out_height = swap ? frame->width : frame->height;
  if (rotated_ == nullptr || rotated_->width != out_width || rotated_->height != out_height ||
      rotated_->format != frame->format) {
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
  const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(*format);
  int steps[4] = {};
  av_image_fill_max_pixsteps(steps, nullptr, desc);
  for (int p = 0; p < av_pix_fmt_count_planes(*format); ++p) {
    const Plane in = PlaneOf(desc, steps, p, frame->width, frame->height);
    if (swap) {
      TransposePlane(frame->data[p], frame->linesize[p], rotated_->data[p], rotated_->linesize[p],
                     in, rotation_ == Rotation::kClockwise);
    } else {
      HalfTurnPlane(frame->data[p], frame->linesize[p], rotated_->data[p], rotated_->linesize[p],
                    in);
    }
  }
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
