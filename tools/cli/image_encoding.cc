#include "tools/cli/image_encoding.h"

#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libswscale/swscale.h>
}

namespace codecvisor::cli {
namespace {

// Bytes per row and rows of plane `i` of a `format` image.
struct PlaneShape {
  uint64_t row_bytes;
  uint64_t rows;
};

std::optional<std::vector<PlaneShape>> Shapes(absl::string_view format, uint32_t width, uint32_t height) {
  const uint64_t w = width, h = height;
  if (format == "rgb24") return std::vector<PlaneShape>{{3 * w, h}};
  if (format == "yuv444p") return std::vector<PlaneShape>{{w, h}, {w, h}, {w, h}};
  if (format == "yuv420p" || format == "yuvj420p") {
    const PlaneShape chroma{(w + 1) / 2, (h + 1) / 2};
    return std::vector<PlaneShape>{{w, h}, chroma, chroma};
  }
  return std::nullopt;
}

absl::Status RequireFormat(const ImageView& image, absl::string_view format, absl::string_view what) {
  if (image.pixel_format != format) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " needs ", format, " pixels, not ", image.pixel_format));
  }
  return CheckImage(image);
}

std::string AvError(int code) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, text, sizeof(text));
  return text;
}

}  // namespace

absl::Status CheckImage(const ImageView& image) {
  if (image.width == 0 || image.height == 0) {
    return absl::InvalidArgumentError(absl::StrCat("empty image (", image.width, "x", image.height, ")"));
  }
  std::optional<std::vector<PlaneShape>> shapes = Shapes(image.pixel_format, image.width, image.height);
  if (!shapes.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat("pixel format '", image.pixel_format, "' is not supported here"));
  }
  if (image.planes.size() != shapes->size()) {
    return absl::InvalidArgumentError(absl::StrCat(image.pixel_format, " needs ", shapes->size(), " planes, got ",
                                                   image.planes.size()));
  }
  for (size_t i = 0; i < shapes->size(); ++i) {
    const PlaneShape& shape = (*shapes)[i];
    const PlaneView& plane = image.planes[i];
    const uint64_t needed = uint64_t{plane.stride} * (shape.rows - 1) + shape.row_bytes;
    if (plane.stride < shape.row_bytes || plane.data.size() < needed) {
      return absl::InvalidArgumentError(absl::StrCat("plane ", i, " of a ", image.width, "x", image.height, " ",
                                                     image.pixel_format, " image is too small (stride ",
                                                     plane.stride, ", ", plane.data.size(), " bytes)"));
    }
  }
  return absl::OkStatus();
}

absl::Status AppendPackedPlanes(const ImageView& image, std::string* out) {
  if (absl::Status s = CheckImage(image); !s.ok()) return s;
  const std::vector<PlaneShape> shapes = *Shapes(image.pixel_format, image.width, image.height);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const PlaneView& plane = image.planes[i];
    if (plane.stride == shapes[i].row_bytes) {
      out->append(reinterpret_cast<const char*>(plane.data.data()), shapes[i].row_bytes * shapes[i].rows);
      continue;
    }
    for (uint64_t row = 0; row < shapes[i].rows; ++row) {
      out->append(reinterpret_cast<const char*>(plane.data.data() + row * plane.stride), shapes[i].row_bytes);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> EncodePpm(const ImageView& image) {
  if (absl::Status s = RequireFormat(image, "rgb24", "PPM"); !s.ok()) return s;
  std::string out = absl::StrCat("P6\n", image.width, " ", image.height, "\n255\n");
  out.reserve(out.size() + uint64_t{image.width} * image.height * 3);
  if (absl::Status s = AppendPackedPlanes(image, &out); !s.ok()) return s;
  return out;
}

PngEncoder::~PngEncoder() {
  avcodec_free_context(&context_);
  av_frame_free(&frame_);
  av_packet_free(&packet_);
}

absl::Status PngEncoder::Open(uint32_t width, uint32_t height) {
  avcodec_free_context(&context_);
  const AVCodec* codec = avcodec_find_encoder(AV_CODEC_ID_PNG);
  if (codec == nullptr) return absl::UnavailableError("this FFmpeg build has no PNG encoder");
  context_ = avcodec_alloc_context3(codec);
  if (frame_ == nullptr) frame_ = av_frame_alloc();
  if (packet_ == nullptr) packet_ = av_packet_alloc();
  if (context_ == nullptr || frame_ == nullptr || packet_ == nullptr) {
    return absl::ResourceExhaustedError("out of memory for the PNG encoder");
  }
  context_->width = static_cast<int>(width);
  context_->height = static_cast<int>(height);
  context_->pix_fmt = AV_PIX_FMT_RGB24;
  context_->time_base = AVRational{1, 1};
  // libavcodec writes pHYs from it whatever it is (0:1 when unset).
  if (aspect_.num > 0 && aspect_.den > 0 && aspect_.num <= INT32_MAX && aspect_.den <= INT32_MAX) {
    context_->sample_aspect_ratio = AVRational{static_cast<int>(aspect_.num), static_cast<int>(aspect_.den)};
  }
  if (int r = avcodec_open2(context_, codec, nullptr); r < 0) {
    avcodec_free_context(&context_);
    return absl::InternalError(absl::StrCat("cannot open the PNG encoder: ", AvError(r)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> PngEncoder::Encode(const ImageView& image) {
  if (absl::Status s = RequireFormat(image, "rgb24", "PNG"); !s.ok()) return s;
  if (image.width > INT32_MAX / 3 || image.height > INT32_MAX) {
    return absl::InvalidArgumentError("image too large for PNG");
  }
  if (context_ == nullptr || context_->width != static_cast<int>(image.width) ||
      context_->height != static_cast<int>(image.height)) {
    if (absl::Status s = Open(image.width, image.height); !s.ok()) return s;
  }
  // A frame that owns no buffer: avcodec_send_frame() copies its pixels
  // (av_frame_ref on an unreferenced frame), so ours are only read.
  frame_->format = AV_PIX_FMT_RGB24;
  frame_->width = static_cast<int>(image.width);
  frame_->height = static_cast<int>(image.height);
  frame_->data[0] = const_cast<uint8_t*>(image.planes[0].data.data());
  frame_->linesize[0] = static_cast<int>(image.planes[0].stride);
  const int sent = avcodec_send_frame(context_, frame_);
  frame_->data[0] = nullptr;
  if (sent < 0) return absl::InternalError(absl::StrCat("PNG encoder: ", AvError(sent)));
  if (int r = avcodec_receive_packet(context_, packet_); r < 0) {
    return absl::InternalError(absl::StrCat("PNG encoder: ", AvError(r)));
  }
  std::string out(reinterpret_cast<const char*>(packet_->data), static_cast<size_t>(packet_->size));
  av_packet_unref(packet_);
  return out;
}

Yuv444Converter::~Yuv444Converter() { sws_freeContext(scaler_); }

absl::StatusOr<ImageView> Yuv444Converter::Convert(const ImageView& rgb) {
  if (absl::Status s = RequireFormat(rgb, "rgb24", "conversion to yuv444p"); !s.ok()) return s;
  if (rgb.width > INT32_MAX / 3 || rgb.height > INT32_MAX) return absl::InvalidArgumentError("image too large");
  const int w = static_cast<int>(rgb.width), h = static_cast<int>(rgb.height);
  if (scaler_ == nullptr || width_ != rgb.width || height_ != rgb.height) {
    // Same size in and out: no scaling happens, so the filter does not
    // matter; ACCURATE_RND and BITEXACT make the result reproducible.
    scaler_ = sws_getCachedContext(scaler_, w, h, AV_PIX_FMT_RGB24, w, h, AV_PIX_FMT_YUV444P,
                                   SWS_BICUBIC | SWS_ACCURATE_RND | SWS_BITEXACT, nullptr, nullptr, nullptr);
    if (scaler_ == nullptr) {
      return absl::InternalError(absl::StrCat("cannot convert ", w, "x", h, " rgb24 to yuv444p"));
    }
    width_ = rgb.width;
    height_ = rgb.height;
    buffer_.resize(3 * size_t{rgb.width} * rgb.height);
  }
  const size_t plane = size_t{rgb.width} * rgb.height;
  const uint8_t* src[4] = {rgb.planes[0].data.data(), nullptr, nullptr, nullptr};
  const int src_stride[4] = {static_cast<int>(rgb.planes[0].stride), 0, 0, 0};
  uint8_t* dst[4] = {buffer_.data(), buffer_.data() + plane, buffer_.data() + 2 * plane, nullptr};
  const int dst_stride[4] = {w, w, w, 0};
  if (sws_scale(scaler_, src, src_stride, 0, h, dst, dst_stride) != h) {
    return absl::InternalError("rgb24 to yuv444p conversion failed");
  }
  ImageView out{rgb.width, rgb.height, "yuv444p", {}};
  for (int p = 0; p < 3; ++p) out.planes.push_back({{dst[p], plane}, rgb.width});
  return out;
}

absl::StatusOr<std::string> Y4mHeader(const Y4mStreamInfo& info) {
  std::string chroma, range;
  if (info.pixel_format == "yuv420p") {
    chroma = info.chroma_left ? "420mpeg2" : "420jpeg";
  } else if (info.pixel_format == "yuvj420p") {
    chroma = "420jpeg";
    range = "FULL";  // the j formats are full range by definition
  } else if (info.pixel_format == "yuv444p") {
    chroma = "444";
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("y4m output of pixel format '", info.pixel_format, "' is not supported"));
  }
  if (info.width == 0 || info.height == 0 || info.fps.num <= 0 || info.fps.den <= 0) {
    return absl::InvalidArgumentError("y4m needs a positive size and frame rate");
  }
  if (range.empty() && !info.color_range.empty()) range = info.color_range;
  const bool aspect = info.aspect.num > 0 && info.aspect.den > 0;
  return absl::StrCat("YUV4MPEG2 W", info.width, " H", info.height, " F", info.fps.num, ":", info.fps.den, " Ip A",
                      aspect ? info.aspect.num : 0, ":", aspect ? info.aspect.den : 0, " C", chroma,
                      range.empty() ? "" : absl::StrCat(" XCOLORRANGE=", range), "\n");
}

absl::Status AppendY4mFrame(const Y4mStreamInfo& info, const ImageView& image, std::string* out) {
  if (image.width != info.width || image.height != info.height || image.pixel_format != info.pixel_format) {
    return absl::InvalidArgumentError(absl::StrCat("a y4m stream of ", info.width, "x", info.height, " ",
                                                   info.pixel_format, " cannot take a ", image.width, "x",
                                                   image.height, " ", image.pixel_format, " frame"));
  }
  if (absl::Status s = CheckImage(image); !s.ok()) return s;
  out->append("FRAME\n");
  return AppendPackedPlanes(image, out);
}

bool CodecSitesChromaLeft(absl::string_view codec) {
  for (absl::string_view mpeg : {"h264", "hevc", "vvc", "mpeg1video", "mpeg2video", "mpeg4", "h263"}) {
    if (codec == mpeg) return true;
  }
  return false;
}

std::optional<Rational> FrameRateAsRational(double fps) {
  if (!std::isfinite(fps) || fps <= 0 || fps > 1e6) return std::nullopt;
  for (int64_t den : {int64_t{1}, int64_t{1001}}) {
    const int64_t num = std::llround(fps * static_cast<double>(den));
    if (num > 0 && std::fabs(static_cast<double>(num) / static_cast<double>(den) - fps) <= fps * 1e-9) {
      return Rational{num, den};
    }
  }
  const int64_t den = 1'000'000;
  const int64_t num = std::llround(fps * static_cast<double>(den));
  if (num <= 0) return std::nullopt;
  const int64_t g = std::gcd(num, den);
  return Rational{num / g, den / g};
}

}  // namespace codecvisor::cli
