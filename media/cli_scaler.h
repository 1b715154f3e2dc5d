// File: media/cli_scaler.h
//
// libswscale set up the way FFmpeg 5.1's command line sets it up, so that a
// conversion here is byte for byte what
//   ffmpeg -i FILE -vf format=rgb24 -f rawvideo -
// writes. The CLI converts in the scale filter that libavfilter inserts before
// `format`, created with no sws flags (swscale then uses bicubic). A scaler
// from NewCliScaler() is built as vf_scale's config_props builds it
// (sws_flags 0, param0/param1 SWS_PARAM_DEFAULT, horizontal chroma positions
// -513, vertical 128 for a yuv420p input or output, ranges left unset, one
// thread), and SetCliColorDetails() is vf_scale's per-frame
// sws_setColorspaceDetails call ("in_color_matrix=auto").
//
// Used by the cpu backend (decoded frames to the requested output) and by the
// host's RgbConverter (a backend's native frames to RGB in the caller's
// memory); both must give the same bytes for the same pixels.
//
// Thread-safe: no state. A SwsContext is not: one per thread.

#ifndef CODECVISOR_MEDIA_CLI_SCALER_H_
#define CODECVISOR_MEDIA_CLI_SCALER_H_

#include <cstdint>

#include "absl/status/statusor.h"

extern "C" {
#include <libavutil/pixfmt.h>
}

struct SwsContext;

namespace codecvisor::media {

// A scaler from `src` frames of src_width x src_height to `dst` frames of
// dst_width x dst_height; the caller frees it with sws_freeContext.
// DataLoss naming the sizes and formats when swscale refuses them.
absl::StatusOr<SwsContext*> NewCliScaler(int src_width, int src_height, AVPixelFormat src,
                                         int dst_width, int dst_height, AVPixelFormat dst);

// Whether `scaler` reads its input as full range. A new scaler's is its
// input format's default: full for the YUVJ and grey formats, limited for
// other YUV.
bool InputFullRange(SwsContext* scaler);

// Sets `scaler`'s coefficients for a frame whose AVFrame::colorspace and
// AVFrame::color_range are `colorspace` and `color_range` (read as integers:
// decoders copy them from the bitstream, so any value may come): that
// colour space's coefficients both ways, BT.601 for one that is unspecified
// or unknown; the frame's range when it has one, else `unspecified_full`.
// vf_scale keeps the range it last set for a frame without one, so what
// such a frame becomes would depend on the frames converted before it (a
// stream spliced from a full-range part and one that says nothing, read in
// another order than the CLI's): callers that convert many frames with one
// scaler pass the range it had when new (InputFullRange), which is the
// CLI's for every frame up to a change of range.
void SetCliColorDetails(SwsContext* scaler, int colorspace, int color_range, bool unspecified_full);

// swscale's SIMD conversions from 4:2:0 and 4:2:2 write rows in whole blocks
// of 8 pixels, and where a row's stride has no room for its last whole block
// they leave that block's pixels out: into rows of exactly width * 3 bytes,
// the last width % 8 pixels of each row stay unwritten. Rows written with
// Rgb24Stride(width) always have room (FFmpeg's own frames have that much:
// the CLI's output is whole). A caller that needs tight rows converts into a
// scratch buffer with this stride and copies, unless TightRgb24Rows(width).
inline constexpr int kWholeBlockPixels = 16;  // FFmpeg 5.1's blocks are 8
constexpr int Rgb24Stride(int width) {
  return (width + kWholeBlockPixels - 1) / kWholeBlockPixels * kWholeBlockPixels * 3;
}
constexpr bool TightRgb24Rows(int width) { return width % kWholeBlockPixels == 0; }

// Splits width x height interleaved RGB24 pixels (`stride` bytes a row) into
// three planes of width x height bytes, R, G and B.
void SplitRgb24(const uint8_t* rgb, int stride, uint32_t width, uint32_t height, uint8_t* r,
                uint8_t* g, uint8_t* b);

}  // namespace codecvisor::media

#endif  // CODECVISOR_MEDIA_CLI_SCALER_H_
