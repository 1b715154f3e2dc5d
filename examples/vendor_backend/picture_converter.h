// File: examples/vendor_backend/picture_converter.h
//
// Output layouts and the conversion of libdav1d pictures into the runner's
// frame buffer.
//
// Bit-exactness. RGB24 output equals what
//   ffmpeg -i FILE -map 0:v:0 -vf "select=eq(n\,N),format=rgb24" -f rawvideo -
// writes, where libavcodec's libdav1d wrapper decodes and the scale filter
// that libavfilter inserts before `format` converts. So a picture is given
// the pixel format that wrapper would give it (PixelFormatOf), and the
// SwsContext is set up as that auto-inserted vf_scale sets up its own in
// FFmpeg 5.1: no sws flags (swscale's default, bicubic), default bicubic
// parameters, one thread, chroma positions left at -513 except the
// vertical 128 vf_scale forces for progressive yuv420p, and before every
// picture the colour matrix of the sequence header (BT.601 when it names
// none vf_scale knows) and its range (full or limited). Resized output
// matches "-vf scale=W:H,format=rgb24": one conversion.
//
// Not thread-safe: one per session (it keeps its SwsContext).

#ifndef CODECVISOR_EXAMPLES_VENDOR_BACKEND_PICTURE_CONVERTER_H_
#define CODECVISOR_EXAMPLES_VENDOR_BACKEND_PICTURE_CONVERTER_H_

#include <dav1d/dav1d.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "status.h"

extern "C" {
#include <libavutil/pixfmt.h>
}

struct SwsContext;

namespace dav1d_plugin {

// A libdav1d picture format as libavcodec names it: gray, yuv420p, yuv422p,
// yuv444p, or gbrp for 4:4:4 identity-matrix sRGB; 10 and 12 bits with the
// "10le"/"12le" suffix. AV_PIX_FMT_NONE for a layout libdav1d should never
// produce.
AVPixelFormat PixelFormatOf(const Dav1dSequenceHeader& seq);

// Output limits, so a crafted header or option cannot make a session ask
// for gigabytes per frame: 16384 per side and 2^28 pixels.
inline constexpr uint32_t kMaxSide = 16384;
inline constexpr uint64_t kMaxPixels = uint64_t{1} << 28;

class PictureConverter {
 public:
  // A converter writing `format` at width x height; `native` is the
  // stream's pixel format (the layout of CV_OUTPUT_NATIVE). Planes are
  // packed one after another with no row padding, byte for byte what
  // `ffmpeg -f rawvideo` writes. INVALID_ARGUMENT for an unknown output
  // format; UNSUPPORTED for a size past kMaxSide or kMaxPixels or an
  // unknown pixel format; CORRUPT_DATA for a size of 0.
  static Status Create(cv_output_format format, AVPixelFormat native, uint32_t width, uint32_t height,
                       std::unique_ptr<PictureConverter>* out);
  PictureConverter(const PictureConverter&) = delete;
  PictureConverter& operator=(const PictureConverter&) = delete;
  ~PictureConverter();

  const cv_frame_layout& layout() const { return layout_; }

  // Writes `picture` into `dst` (at least layout().size bytes). A native
  // picture of the layout's own size and format is copied plane by plane;
  // anything else goes through swscale. RGB24_PLANAR is converted as RGB24
  // into a scratch buffer and then split, so that it is exactly RGB24's
  // transpose. CORRUPT_DATA for a picture swscale cannot take.
  Status Convert(const Dav1dPicture& picture, uint8_t* dst);

 private:
  PictureConverter() = default;
  Status EnsureScaler(AVPixelFormat source, int width, int height);
  void CopyNative(const Dav1dPicture& picture, uint8_t* dst) const;

  cv_frame_layout layout_{};
  AVPixelFormat native_ = AV_PIX_FMT_NONE;
  AVPixelFormat target_ = AV_PIX_FMT_NONE;  // what swscale writes
  SwsContext* sws_ = nullptr;
  AVPixelFormat sws_source_ = AV_PIX_FMT_NONE;
  int sws_width_ = 0;
  int sws_height_ = 0;
  std::vector<uint8_t> interleaved_;  // RGB24_PLANAR's scratch
};

}  // namespace dav1d_plugin

#endif  // CODECVISOR_EXAMPLES_VENDOR_BACKEND_PICTURE_CONVERTER_H_
