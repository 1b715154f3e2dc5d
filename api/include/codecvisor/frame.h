// File: codecvisor/frame.h
//
// codecvisor::Frame: one decoded frame. A frame returned by a decoder is a
// view of the backend's shared memory (no copy): it holds its slot until it
// is destroyed or Detach()ed, so a caller that keeps many frames should
// detach them (DecoderOptions::arena_slots says how many may be held).
// A Frame can be moved, not copied; CopyOut() makes an owned copy. Frames of
// one decoder may be used and destroyed from different threads, one thread
// per frame at a time.
//
// SECURITY: while shared() is true the backend process could still write
// the pixels; copy (or Detach) what must not change under you.

#ifndef CODECVISOR_FRAME_H_
#define CODECVISOR_FRAME_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "codecvisor/types.h"

namespace codecvisor {
namespace api {
struct FrameAccess;
}  // namespace api

class Frame {
 public:
  Frame();  // empty: no planes, no bytes
  ~Frame();
  Frame(Frame&&) noexcept;
  Frame& operator=(Frame&&) noexcept;

  uint32_t width() const;
  uint32_t height() const;
  OutputFormat format() const;
  // The decoded pixel format for kNative ("yuv420p", ...); "rgb24" for
  // kRgb24, "rgbp" for kRgb24Planar; "" for a default-constructed Frame.
  const std::string& pixel_format() const;
  int64_t index() const;  // in the stream, from 0
  int64_t pts() const;    // in the stream's time base
  double pts_seconds() const;
  double duration_seconds() const;
  bool key_frame() const;

  // Plane `i` (i < num_planes()): rows of stride(i) bytes. kRgb24 has one plane
  // (HWC), kRgb24Planar three (R, G, B), kNative one per component. Past the
  // last plane (and on an empty frame): an empty span and a stride of 0.
  size_t num_planes() const;
  std::span<const uint8_t> plane(size_t i) const;
  uint32_t stride(size_t i) const;
  // Every byte of the frame, planes in order: for a frame the backend
  // decoded in place (a frame pool's, see DecoderOptions::native_formats),
  // with the decoder's own gaps between planes; read planes through
  // plane() and stride().
  std::span<const uint8_t> data() const;

  bool shared() const;
  Frame CopyOut() const;
  void Detach();

 private:
  friend struct api::FrameAccess;
  struct Impl;
  explicit Frame(std::unique_ptr<Impl> impl);
  // impl_, or an empty frame's once this one was moved from.
  const Impl& impl() const;
  std::unique_ptr<Impl> impl_;
};

}  // namespace codecvisor

#endif  // CODECVISOR_FRAME_H_
