// File: tools/cli/image_encoding.h
//
// The byte formats `codecvisor decode` writes, on plain views of pixels
// (no Frame, no files), so that each is testable byte for byte: PPM (P6),
// PNG (libavcodec's encoder), YUV4MPEG2 headers and frames, raw RGB24, and
// the RGB24 -> YUV 4:4:4 conversion that lets y4m carry streams whose own
// format is not yuv420p. This is host-side encoding of pixels the host
// already holds; no untrusted bitstream is parsed here.
//
// Every function checks that the view's planes hold the bytes its size
// and format need before reading them, and fails (kInvalidArgument)
// otherwise: a view is never read out of bounds.
//
// Thread-safety: free functions are pure; PngEncoder and Yuv444Converter
// are used by one thread at a time.

#ifndef CODECVISOR_TOOLS_CLI_IMAGE_ENCODING_H_
#define CODECVISOR_TOOLS_CLI_IMAGE_ENCODING_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "codecvisor/types.h"

struct AVCodecContext;
struct AVFrame;
struct AVPacket;
struct SwsContext;

namespace codecvisor::cli {

// One plane: `rows` rows of `stride` bytes each (the last row may be
// shorter, down to the plane's row width).
struct PlaneView {
  std::span<const uint8_t> data;
  uint32_t stride = 0;
};

// A picture as the writers see it. `pixel_format` is FFmpeg's name:
// "rgb24" (one plane, HWC), "yuv420p" / "yuvj420p" / "yuv444p" (Y, U, V).
struct ImageView {
  uint32_t width = 0;
  uint32_t height = 0;
  std::string pixel_format;
  std::vector<PlaneView> planes;
};

// OK when `image` is in one of the formats above and every plane holds the
// bytes its rows need; kInvalidArgument naming the problem otherwise.
[[nodiscard]] absl::Status CheckImage(const ImageView& image);

// Appends the pixel rows of every plane of `image`, without stride
// padding: exactly what `ffmpeg -f rawvideo -pix_fmt <format>` writes.
[[nodiscard]] absl::Status AppendPackedPlanes(const ImageView& image, std::string* out);

// A binary PPM (P6, maxval 255) of an rgb24 image.
[[nodiscard]] absl::StatusOr<std::string> EncodePpm(const ImageView& image);

// PNG encoding with libavcodec's encoder, which is reused across images of
// one size (and recreated when the size changes).
class PngEncoder {
 public:
  // `aspect`: the pixel aspect ratio written in each file's pHYs chunk, as
  // the ffmpeg CLI writes the stream's (0:0, unknown: written as 0:1, as
  // it writes an unknown one).
  explicit PngEncoder(Rational aspect = {0, 0}) : aspect_(aspect) {}
  PngEncoder(const PngEncoder&) = delete;
  PngEncoder& operator=(const PngEncoder&) = delete;
  ~PngEncoder();

  // One complete PNG file (8-bit RGB) of an rgb24 image.
  [[nodiscard]] absl::StatusOr<std::string> Encode(const ImageView& image);

 private:
  absl::Status Open(uint32_t width, uint32_t height);

  Rational aspect_;
  AVCodecContext* context_ = nullptr;
  AVFrame* frame_ = nullptr;
  AVPacket* packet_ = nullptr;
};

// rgb24 -> yuv444p with libswscale: BT.601 coefficients, limited range,
// as FFmpeg assumes for an untagged YUV stream. Reused across images.
class Yuv444Converter {
 public:
  Yuv444Converter() = default;
  Yuv444Converter(const Yuv444Converter&) = delete;
  Yuv444Converter& operator=(const Yuv444Converter&) = delete;
  ~Yuv444Converter();

  // A yuv444p view of `rgb`, valid until the next call or destruction.
  [[nodiscard]] absl::StatusOr<ImageView> Convert(const ImageView& rgb);

 private:
  SwsContext* scaler_ = nullptr;
  uint32_t width_ = 0;
  uint32_t height_ = 0;
  std::vector<uint8_t> buffer_;
};

// A YUV4MPEG2 stream's parameters: size, frame rate, chroma layout and,
// when known, colour range.
struct Y4mStreamInfo {
  uint32_t width = 0;
  uint32_t height = 0;
  Rational fps{25, 1};
  std::string pixel_format;  // "yuv420p", "yuvj420p" or "yuv444p"
  // "LIMITED" or "FULL" (the XCOLORRANGE tag), empty when unknown;
  // yuvj420p is always FULL.
  std::string color_range;
  // Where 4:2:0 chroma samples sit: between the luma samples ("C420jpeg",
  // JPEG, VP8/VP9) or left-aligned with them ("C420mpeg2", the MPEG family,
  // H.264 and HEVC). Ignored for 4:4:4.
  bool chroma_left = false;
  Rational aspect{0, 0};  // the pixel aspect ratio ("A" in the header); 0:0 unknown
};

// Whether `codec` (FFmpeg's name) places 4:2:0 chroma left-aligned when the
// bitstream says nothing, as FFmpeg's decoders assume: the MPEG family.
bool CodecSitesChromaLeft(absl::string_view codec);

// The stream header line, e.g.
// "YUV4MPEG2 W320 H240 F25:1 Ip A0:0 C420mpeg2 XCOLORRANGE=LIMITED\n".
// The pixel aspect ratio is written as unknown (A0:0): the stream's
// metadata does not carry it.
// kInvalidArgument for a pixel format y4m cannot carry here.
[[nodiscard]] absl::StatusOr<std::string> Y4mHeader(const Y4mStreamInfo& info);

// Appends "FRAME\n" and the image's planes, packed. The image must match
// the stream's size and pixel format.
[[nodiscard]] absl::Status AppendY4mFrame(const Y4mStreamInfo& info, const ImageView& image, std::string* out);

// A frame rate as a rational for the y4m header: exact for integer rates
// and NTSC rates (N*1000/1001), else to a millionth. nullopt for a rate
// that is not positive and finite.
std::optional<Rational> FrameRateAsRational(double fps);

}  // namespace codecvisor::cli

#endif  // CODECVISOR_TOOLS_CLI_IMAGE_ENCODING_H_
