// File: backends/cpu/frame_converter.h
//
// Output layouts and the conversion of decoded frames into the runner's
// frame buffer.
//
// Bit-exactness. RGB output must equal what
//   ffmpeg -i FILE -map 0:S -vf "select=eq(n\,N),format=rgb24" -f rawvideo -
// writes: the converter's scaler is media/cli_scaler's, set up as the CLI's
// scale filter sets up its own, with the frame's colour details before every
// frame. Resized output matches "-vf scale=W:H,format=rgb24" (one
// conversion; `-s WxH` would convert, then scale RGB). Tested against the CLI
// in cpu_backend_test.cc.
//
// Not thread-safe: one per session (it caches the SwsContext).

#ifndef CODECVISOR_BACKENDS_CPU_FRAME_CONVERTER_H_
#define CODECVISOR_BACKENDS_CPU_FRAME_CONVERTER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/sdk/codecvisor_backend.h"

extern "C" {
#include <libavutil/frame.h>
#include <libavutil/pixfmt.h>
}

struct SwsContext;

namespace codecvisor::cpu {

// Limits on the output size, so that a crafted header or option cannot make
// one session ask for gigabytes: 16384 per side, 2^28 pixels.
inline constexpr uint32_t kMaxOutputSide = 16384;
inline constexpr uint64_t kMaxOutputPixels = uint64_t{1} << 28;

// The layout of every output frame: planes tightly packed one after another
// (stride = row bytes, no padding), so a frame is byte-for-byte what
// `ffmpeg -f rawvideo` writes. RGB24: one plane "rgb24". RGB24_PLANAR: three
// planes R, G, B, "rgbp". NATIVE: `native`'s planes. InvalidArgument for a bad
// format or size; Unimplemented for a native format that cannot be output
// (hardware, bitstream or paletted) or converted.
absl::StatusOr<cv_frame_layout> ComputeLayout(cv_output_format format, AVPixelFormat native,
                                              uint32_t width, uint32_t height);

// Writes an interleaved RGB24 picture of layout.width x layout.height
// (`stride` bytes a row) into `dst` at `layout`, which is RGB24 (rows
// copied) or RGB24_PLANAR (split into R, G, B planes).
void WriteRgb24(const uint8_t* rgb, int stride, const cv_frame_layout& layout, uint8_t* dst);

class FrameConverter {
 public:
  // A converter into `layout` (from ComputeLayout). `native` is the
  // decoder's pixel format the layout was computed for.
  FrameConverter(const cv_frame_layout& layout, AVPixelFormat native);
  FrameConverter(const FrameConverter&) = delete;
  FrameConverter& operator=(const FrameConverter&) = delete;
  ~FrameConverter();

  // Writes `frame` into `dst`, which holds at least layout.size bytes. RGB is
  // converted by sws_scale straight into `dst` when its rows take whole
  // blocks of pixels (media::TightRgb24Rows), else through scratch rows;
  // native frames of the layout's size and format are copied with
  // av_image_copy_plane, others scaled with sws_scale. RGB24_PLANAR is converted to interleaved RGB in a per-session
  // scratch buffer and split into planes, so that it is exactly the
  // transpose of RGB24 (swscale's own planar path rounds differently).
  // DataLoss for a frame swscale cannot take; the frame may differ in size
  // or format from earlier ones (the SwsContext is rebuilt then).
  absl::Status Convert(const AVFrame* frame, uint8_t* dst);

 private:
  // (Re)creates scaler_ for frames like `frame`, as vf_scale's config_props.
  absl::Status PrepareScaler(const AVFrame* frame);
  // vf_scale's per-frame sws_setColorspaceDetails call.
  void ApplyColorDetails(const AVFrame* frame);

  cv_frame_layout layout_;
  AVPixelFormat native_;
  AVPixelFormat scaler_output_;
  SwsContext* scaler_ = nullptr;
  int scaler_width_ = 0;
  int scaler_height_ = 0;
  int scaler_format_ = AV_PIX_FMT_NONE;
  bool scaler_default_full_ = false;  // the range scaler_ read when new: for frames that give none
  std::vector<uint8_t> scratch_;  // interleaved rows, when not straight into dst
};

}  // namespace codecvisor::cpu

#endif  // CODECVISOR_BACKENDS_CPU_FRAME_CONVERTER_H_
