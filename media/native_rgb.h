// File: media/native_rgb.h
//
// A backend's native frames (the decoder's own planes) to RGB24, exactly as
// the cpu backend converts them (cli_scaler.h), for code that receives them:
// the public RgbConverter (api/) and the conformance suite's check of a
// backend's native output.
//
// SECURITY: every number of a frame came from a backend and is checked
// against the stream before swscale reads a byte: its pixel format and size
// must be the stream's, and each plane must hold the rows the format needs
// at the stride it says. The planes' bytes must be followed by at least
// kReadPadding readable bytes (swscale's loads run past the last pixel);
// codecvisor's frames always are (core/frame.h).
//
// Thread-safety: one thread at a time per NativeRgb (it keeps a swscale
// context and a scratch buffer).

#ifndef CODECVISOR_MEDIA_NATIVE_RGB_H_
#define CODECVISOR_MEDIA_NATIVE_RGB_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace codecvisor::media {

// The stream whose frames are converted, as its metadata describes it.
struct NativeStream {
  std::string pixel_format;  // FFmpeg's name, "yuv420p"
  uint32_t width = 0;
  uint32_t height = 0;
  std::string color_space;  // FFmpeg's names ("bt709"); unknown ones: unspecified
  std::string color_range;  // "tv", "pc"
  double rotation_degrees = 0;
};

// One plane of a frame: rows of `stride` bytes.
struct NativePlane {
  std::span<const uint8_t> bytes;
  uint64_t stride = 0;
};

class NativeRgb {
 public:
  // Bytes past a frame's end that Convert may overwrite, when `out` has them.
  static constexpr size_t kSlack = 256;
  // Readable bytes a frame's planes must have after them.
  static constexpr size_t kReadPadding = 256;

  // The native formats converted here: 8-bit YUV and grey (not the yuvj
  // formats: swscale warns, in FFmpeg's log, that they are deprecated).
  static std::vector<std::string> Formats();
  // Whether `stream`'s native frames can be converted here: one of
  // Formats(), not rotated (rotated RGB is rotated after conversion), sides
  // from 1 to 16384.
  static bool Accepts(const NativeStream& stream);

  explicit NativeRgb(const NativeStream& stream);
  ~NativeRgb();
  NativeRgb(NativeRgb&&) noexcept;
  NativeRgb& operator=(NativeRgb&&) noexcept;

  // Writes a frame of `pixel_format`, width x height, in `planes`, as RGB24
  // (`planar`: three planes R, G, B) into the first width * height * 3
  // bytes of `out`. Straight into `out` when it is interleaved, of a width
  // swscale fills whole rows of (TightRgb24Rows), and `out` has kSlack more
  // bytes, which may then be overwritten; else through a scratch buffer.
  // InvalidArgument: `out` is too small. DataLoss: the frame is not one of
  // the stream's, or the stream does not qualify (a backend sends native
  // frames only of streams that do); nothing is written.
  absl::Status Convert(absl::string_view pixel_format, uint32_t width, uint32_t height,
                       std::span<const NativePlane> planes, bool planar, std::span<uint8_t> out);

  // Convert of a frame object: codecvisor's frames (core::Frame, the public
  // codecvisor::Frame) have num_planes(), plane(p), stride(p),
  // pixel_format(), width() and height(). Allocates nothing: frames have at
  // most kMostPlanes planes, and one more is refused as a plane count no
  // format has.
  template <typename FrameT>
  absl::Status ConvertFrame(const FrameT& frame, bool planar, std::span<uint8_t> out) {
    std::array<NativePlane, kMostPlanes + 1> planes;
    const size_t count = std::min<size_t>(frame.num_planes(), planes.size());
    for (size_t p = 0; p < count; ++p) planes[p] = {frame.plane(p), frame.stride(p)};
    return Convert(frame.pixel_format(), frame.width(), frame.height(),
                   std::span<const NativePlane>(planes.data(), count), planar, out);
  }

  // The most planes a frame record holds (ipc::kMaxPlanes).
  static constexpr size_t kMostPlanes = 4;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace codecvisor::media

#endif  // CODECVISOR_MEDIA_NATIVE_RGB_H_
