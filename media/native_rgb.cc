// File: media/native_rgb.cc

#include "media/native_rgb.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "media/cli_scaler.h"

extern "C" {
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

namespace codecvisor::media {
namespace {

constexpr AVPixelFormat kFormats[] = {AV_PIX_FMT_YUV420P, AV_PIX_FMT_YUV422P, AV_PIX_FMT_YUV444P,
                                      AV_PIX_FMT_NV12,    AV_PIX_FMT_NV21,    AV_PIX_FMT_GRAY8};

// Sides as the cpu backend's output allows.
constexpr uint32_t kMaxSide = 16384;

AVPixelFormat Qualifying(const std::string& name) {
  const AVPixelFormat f = av_get_pix_fmt(name.c_str());
  return std::find(std::begin(kFormats), std::end(kFormats), f) != std::end(kFormats) ? f : AV_PIX_FMT_NONE;
}

}  // namespace

struct NativeRgb::Impl {
  ~Impl() { sws_freeContext(scaler); }

  AVPixelFormat format = AV_PIX_FMT_NONE;  // none: the stream does not qualify
  std::string format_name;
  uint32_t width = 0, height = 0;
  int colorspace = AVCOL_SPC_UNSPECIFIED;
  int color_range = AVCOL_RANGE_UNSPECIFIED;
  int planes = 0;
  int row_bytes[4] = {};  // of each plane, at most its stride
  int rows[4] = {};
  SwsContext* scaler = nullptr;
  std::vector<uint8_t> scratch;
};

std::vector<std::string> NativeRgb::Formats() {
  std::vector<std::string> names;
  for (AVPixelFormat f : kFormats) names.emplace_back(av_get_pix_fmt_name(f));
  return names;
}

bool NativeRgb::Accepts(const NativeStream& stream) {
  return Qualifying(stream.pixel_format) != AV_PIX_FMT_NONE && stream.rotation_degrees == 0 && stream.width >= 1 &&
         stream.height >= 1 && stream.width <= kMaxSide && stream.height <= kMaxSide;
}

NativeRgb::NativeRgb(const NativeStream& stream) : impl_(std::make_unique<Impl>()) {
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

NativeRgb::~NativeRgb() = default;
NativeRgb::NativeRgb(NativeRgb&&) noexcept = default;
NativeRgb& NativeRgb::operator=(NativeRgb&&) noexcept = default;

absl::Status NativeRgb::Convert(absl::string_view pixel_format, uint32_t width, uint32_t height,
                                std::span<const NativePlane> planes, bool planar, std::span<uint8_t> out) {
  Impl& m = *impl_;
  if (m.format == AV_PIX_FMT_NONE) {
    // The backend should have sent RGB: only qualifying streams' frames are
    // offered native.
    return absl::DataLossError(absl::StrCat("the backend sent a native frame of a ", m.format_name,
                                            " stream (rotated, or of a format the host does not convert)"));
  }
  const size_t bytes = size_t{m.width} * m.height * 3;
  if (out.size() < bytes) {
    return absl::InvalidArgumentError(absl::StrCat("a ", m.width, "x", m.height, " frame takes ", bytes,
                                                   " bytes, not ", out.size()));
  }
  if (pixel_format != m.format_name || width != m.width || height != m.height) {
    return absl::DataLossError(absl::StrCat("the backend sent a native ", pixel_format, " frame of ", width, "x",
                                            height, " for this stream's native ", m.format_name, " frames of ",
                                            m.width, "x", m.height));
  }
  if (planes.size() != static_cast<size_t>(m.planes)) {
    return absl::DataLossError(
        absl::StrCat("the backend sent ", planes.size(), " planes of ", m.format_name, ", which has ", m.planes));
  }
  const uint8_t* src[4] = {};
  int src_stride[4] = {};
  for (int p = 0; p < m.planes; ++p) {
    const NativePlane& plane = planes[p];
    // Rows of `stride` bytes, the last of them at least row_bytes long.
    if (plane.stride < static_cast<uint64_t>(m.row_bytes[p]) || plane.stride > INT_MAX ||
        plane.bytes.size() < plane.stride * (m.rows[p] - 1) + m.row_bytes[p]) {
      return absl::DataLossError(absl::StrCat("the backend sent plane ", p, " of ", plane.bytes.size(),
                                              " bytes, stride ", plane.stride, ", for ", m.rows[p], " rows of ",
                                              m.row_bytes[p], " bytes"));
    }
    src[p] = plane.bytes.data();
    src_stride[p] = static_cast<int>(plane.stride);
  }
  const int w = static_cast<int>(m.width), h = static_cast<int>(m.height);
  if (m.scaler == nullptr) {
    absl::StatusOr<SwsContext*> s = NewCliScaler(w, h, m.format, w, h, AV_PIX_FMT_RGB24);
    if (!s.ok()) return s.status();
    m.scaler = *s;
    // Constant for the stream, so set once rather than before every frame.
    SetCliColorDetails(m.scaler, m.colorspace, m.color_range, InputFullRange(m.scaler));
  }
  // Straight into `out` only with rows swscale fills whole (cli_scaler.h).
  const bool direct = !planar && out.size() - bytes >= kSlack && TightRgb24Rows(w);
  const int stride = direct ? w * 3 : Rgb24Stride(w);
  if (!direct) m.scratch.resize(size_t(stride) * m.height + kSlack);
  uint8_t* dst[4] = {direct ? out.data() : m.scratch.data(), nullptr, nullptr, nullptr};
  const int dst_stride[4] = {stride, 0, 0, 0};
  if (int rows = sws_scale(m.scaler, src, src_stride, 0, h, dst, dst_stride); rows != h) {
    return absl::DataLossError(absl::StrCat("swscale converted ", rows, " of ", h, " rows"));
  }
  if (direct) return absl::OkStatus();
  if (!planar) {
    for (uint32_t y = 0; y < m.height; ++y) {
      std::memcpy(out.data() + size_t{y} * w * 3, m.scratch.data() + size_t{y} * stride, size_t(w) * 3);
    }
  } else {
    const size_t plane = size_t{m.width} * m.height;
    SplitRgb24(m.scratch.data(), stride, m.width, m.height, out.data(), out.data() + plane, out.data() + 2 * plane);
  }
  return absl::OkStatus();
}

}  // namespace codecvisor::media
