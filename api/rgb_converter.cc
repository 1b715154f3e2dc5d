// File: api/rgb_converter.cc

#include "codecvisor/rgb_converter.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "api/absl_interop.h"
#include "media/cli_scaler.h"

extern "C" {
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

namespace codecvisor {
namespace {

// Native formats converted here: 8-bit YUV and grey. The yuvj formats stay
// with the backend: swscale warns that they are deprecated, in FFmpeg's log,
// which in this process goes to the caller's stderr.
constexpr AVPixelFormat kFormats[] = {AV_PIX_FMT_YUV420P, AV_PIX_FMT_YUV422P, AV_PIX_FMT_YUV444P,
                                      AV_PIX_FMT_NV12,    AV_PIX_FMT_NV21,    AV_PIX_FMT_GRAY8};

// Sides as the cpu backend's output allows.
constexpr uint32_t kMaxSide = 16384;

AVPixelFormat Qualifying(const std::string& name) {
  const AVPixelFormat f = av_get_pix_fmt(name.c_str());
  return std::find(std::begin(kFormats), std::end(kFormats), f) != std::end(kFormats) ? f : AV_PIX_FMT_NONE;
}

Status DataLoss(std::string message) { return Status(StatusCode::kDataLoss, std::move(message)); }

}  // namespace

struct RgbConverter::Impl {
  ~Impl() { sws_freeContext(scaler); }

  AVPixelFormat format = AV_PIX_FMT_NONE;  // none: the stream does not qualify
  std::string format_name;
  uint32_t width = 0, height = 0;
  int colorspace = AVCOL_SPC_UNSPECIFIED;
  int color_range = AVCOL_RANGE_UNSPECIFIED;
  int planes = 0;
  int row_bytes[4] = {};  // of each plane, at least its stride
  int rows[4] = {};
  SwsContext* scaler = nullptr;
  std::vector<uint8_t> scratch;
};

std::vector<std::string> RgbConverter::Formats() {
  std::vector<std::string> names;
  for (AVPixelFormat f : kFormats) names.emplace_back(av_get_pix_fmt_name(f));
  return names;
}

bool RgbConverter::Accepts(const StreamMetadata& stream) {
  return Qualifying(stream.pixel_format) != AV_PIX_FMT_NONE && stream.rotation_degrees == 0 && stream.width >= 1 &&
         stream.height >= 1 && stream.width <= kMaxSide && stream.height <= kMaxSide;
}

RgbConverter::RgbConverter(const StreamMetadata& stream) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.format_name = stream.pixel_format;
  m.width = stream.width;
  m.height = stream.height;
  if (!Accepts(stream)) return;
  m.format = Qualifying(stream.pixel_format);
  if (int c = av_color_space_from_name(stream.color_space.c_str()); c >= 0) m.colorspace = c;
  if (int r = av_color_range_from_name(stream.color_range.c_str()); r >= 0) m.color_range = r;
  const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(m.format);
  m.planes = av_pix_fmt_count_planes(m.format);
  (void)av_image_fill_linesizes(m.row_bytes, m.format, static_cast<int>(m.width));
  for (int p = 0; p < m.planes; ++p) {
    // As av_image_fill_plane_sizes: planes 1 and 2 carry chroma.
    m.rows[p] = (p == 1 || p == 2) ? AV_CEIL_RSHIFT(static_cast<int>(m.height), desc->log2_chroma_h)
                                   : static_cast<int>(m.height);
  }
}

RgbConverter::~RgbConverter() = default;
RgbConverter::RgbConverter(RgbConverter&&) noexcept = default;
RgbConverter& RgbConverter::operator=(RgbConverter&&) noexcept = default;

Status RgbConverter::Convert(const Frame& frame, OutputFormat to, std::span<uint8_t> out) {
  Impl& m = *impl_;
  if (m.format == AV_PIX_FMT_NONE) {
    return Status(StatusCode::kInvalidArgument, "frames of " + m.format_name + " (or rotated) are not converted here");
  }
  if (to == OutputFormat::kNative) return Status(StatusCode::kInvalidArgument, "convert to kRgb24 or kRgb24Planar");
  const size_t bytes = size_t{m.width} * m.height * 3;
  if (out.size() < bytes) {
    return Status(StatusCode::kInvalidArgument, "a " + std::to_string(m.width) + "x" + std::to_string(m.height) +
                                                    " frame takes " + std::to_string(bytes) + " bytes, not " +
                                                    std::to_string(out.size()));
  }
  if (frame.format() != OutputFormat::kNative || frame.pixel_format() != m.format_name || frame.width() != m.width ||
      frame.height() != m.height) {
    return DataLoss("the backend sent a " + std::string(OutputFormatName(frame.format())) + " " +
                    frame.pixel_format() + " frame of " + std::to_string(frame.width()) + "x" +
                    std::to_string(frame.height()) + " for this stream's native " + m.format_name + " frames of " +
                    std::to_string(m.width) + "x" + std::to_string(m.height));
  }
  if (frame.num_planes() != static_cast<size_t>(m.planes)) {
    return DataLoss("the backend sent " + std::to_string(frame.num_planes()) + " planes of " + m.format_name +
                    ", which has " + std::to_string(m.planes));
  }
  const uint8_t* src[4] = {};
  int src_stride[4] = {};
  for (int p = 0; p < m.planes; ++p) {
    const std::span<const uint8_t> plane = frame.plane(p);
    const uint64_t stride = frame.stride(p);
    // Rows of `stride` bytes, the last of them at least row_bytes long. A
    // Frame has padding after its bytes for swscale's loads past the last
    // pixel (core/frame.h).
    if (stride < static_cast<uint64_t>(m.row_bytes[p]) || stride > INT_MAX ||
        plane.size() < stride * (m.rows[p] - 1) + m.row_bytes[p]) {
      return DataLoss("the backend sent plane " + std::to_string(p) + " of " + std::to_string(plane.size()) +
                      " bytes, stride " + std::to_string(stride) + ", for " + std::to_string(m.rows[p]) +
                      " rows of " + std::to_string(m.row_bytes[p]) + " bytes");
    }
    src[p] = plane.data();
    src_stride[p] = static_cast<int>(stride);
  }
  const int w = static_cast<int>(m.width), h = static_cast<int>(m.height);
  if (m.scaler == nullptr) {
    absl::StatusOr<SwsContext*> s = media::NewCliScaler(w, h, m.format, w, h, AV_PIX_FMT_RGB24);
    if (!s.ok()) return FromAbsl(s.status());
    m.scaler = *s;
    // Constant for the stream, so set once rather than before every frame.
    media::SetCliColorDetails(m.scaler, m.colorspace, m.color_range);
  }
  // Straight into `out` only with rows swscale fills whole (media/cli_scaler.h).
  const bool direct = to == OutputFormat::kRgb24 && out.size() - bytes >= kSlack && media::TightRgb24Rows(w);
  const int stride = direct ? w * 3 : media::Rgb24Stride(w);
  if (!direct) m.scratch.resize(size_t(stride) * m.height + kSlack);
  uint8_t* dst[4] = {direct ? out.data() : m.scratch.data(), nullptr, nullptr, nullptr};
  const int dst_stride[4] = {stride, 0, 0, 0};
  if (int rows = sws_scale(m.scaler, src, src_stride, 0, h, dst, dst_stride); rows != h) {
    return DataLoss("swscale converted " + std::to_string(rows) + " of " + std::to_string(h) + " rows");
  }
  if (direct) return Status();
  if (to == OutputFormat::kRgb24) {
    for (uint32_t y = 0; y < m.height; ++y) {
      std::memcpy(out.data() + size_t{y} * w * 3, m.scratch.data() + size_t{y} * stride, size_t(w) * 3);
    }
  } else {
    const size_t plane = size_t{m.width} * m.height;
    media::SplitRgb24(m.scratch.data(), stride, m.width, m.height, out.data(), out.data() + plane,
                      out.data() + 2 * plane);
  }
  return Status();
}

}  // namespace codecvisor
