// File: codecvisor/rgb_converter.h
//
// codecvisor::RgbConverter: RGB pixels, in memory the caller owns, from a
// backend's native frames (the decoder's own planes; for 4:2:0 video half
// the bytes of RGB), converted in this process. A caller that copies every
// frame into memory of its own anyway (a batch, a tensor) converts straight
// into it instead of copying the backend's RGB: one pass over the pixels
// instead of two, and the conversion runs beside the backend's decoding.
//
//   DecoderOptions options;
//   options.native_formats = RgbConverter::Formats();
//   auto decoder = host->OpenDecoder(path, options);
//   RgbConverter rgb((*decoder)->metadata());
//   ... for each Frame f: f.format() == OutputFormat::kNative
//         ? rgb.Convert(f, OutputFormat::kRgb24, out) : copy f's RGB planes
//
// Bit-exact: a frame converted here is byte for byte the frame the cpu
// backend sends when asked for that RGB format (and so what the ffmpeg CLI
// writes), converted with the stream's colour space and range
// (StreamMetadata). A backend sends natively only frames that match the
// stream in pixel format, size, colour space and range; at the first frame
// that does not (a spliced broadcast stream), the decoder opens a new
// session for RGB and the frames from there on come as RGB.
//
// What it takes: the stream's native pixel format is one of Formats()
// (8-bit YUV and grey), and the stream is not rotated (rotation_degrees 0: a
// rotated stream's RGB is rotated after conversion, which this does not do).
// A display matrix that only mirrors up-down also has angle 0: a backend
// must send such a stream in RGB (the cpu backend does), as nothing here
// flips it.
// Accepts() says whether a stream qualifies; the backend only sends native
// frames for one that does.
//
// SECURITY: a backend's frame is never trusted: its pixel format and size
// must be the stream's, and every plane must hold the rows the format needs
// at the stride it says, or Convert fails with kDataLoss and writes nothing.
// Pixels a backend rewrites during a conversion give wrong colours, nothing
// worse.
//
// Thread-safety: one RgbConverter per thread at a time (it keeps a swscale
// context and a scratch buffer); distinct converters may run in parallel.

#ifndef CODECVISOR_RGB_CONVERTER_H_
#define CODECVISOR_RGB_CONVERTER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "codecvisor/frame.h"
#include "codecvisor/status.h"
#include "codecvisor/types.h"

namespace codecvisor {

class RgbConverter {
 public:
  // Bytes past a frame's end that Convert may overwrite, when `out` has them.
  static constexpr size_t kSlack = 256;

  // The native pixel formats converted here, for DecoderOptions::native_formats.
  static std::vector<std::string> Formats();
  // Whether native frames of `stream` can be converted here (see above).
  static bool Accepts(const StreamMetadata& stream);

  // A converter for the native frames of `stream`, a stream Accepts().
  explicit RgbConverter(const StreamMetadata& stream);
  ~RgbConverter();
  RgbConverter(RgbConverter&&) noexcept;
  RgbConverter& operator=(RgbConverter&&) noexcept;

  // Writes `frame` (kNative, of the stream's pixel format and size) as `to`:
  // kRgb24 (height x width x 3, interleaved) or kRgb24Planar (3 x height x
  // width, R, G, B), width * height * 3 bytes at the start of `out`. When
  // `out` holds kSlack more bytes than that, kRgb24 of a width that is a
  // multiple of 16 is converted straight into it and those kSlack bytes may
  // be overwritten (a caller filling consecutive frames in order can let
  // them spill into the next frame's place); otherwise through a scratch
  // buffer, with nothing past the frame written. kInvalidArgument: `to` is
  // kNative, or `out` is too small. kDataLoss: the frame is not one of the
  // stream's native frames (see SECURITY above), or the stream does not
  // qualify (a backend sends native frames only for streams that do).
  Status Convert(const Frame& frame, OutputFormat to, std::span<uint8_t> out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace codecvisor

#endif  // CODECVISOR_RGB_CONVERTER_H_
