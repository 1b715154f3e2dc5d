// File: core/frame.h
//
// A decoded frame. By default it is a view of the backend's frame arena
// (zero copy): it holds its arena slot until it is destroyed or detached.
// CopyOut() makes an owned copy that outlives everything. A Frame is a value
// type that can be moved, not copied; it is not thread-safe, but frames of
// one decoder may be used and destroyed from different threads.

#ifndef CODECVISOR_CORE_FRAME_H_
#define CODECVISOR_CORE_FRAME_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ipc/frame_arena.h"
#include "ipc/messages.h"
#include "ipc/region.h"

namespace codecvisor::internal {

using ipc::OutputFormat;

class Frame {
 public:
  Frame() = default;
  // Wraps a claimed arena slot (zero copy).
  explicit Frame(ipc::FrameLease lease);
  Frame(Frame&&) noexcept = default;
  Frame& operator=(Frame&&) noexcept = default;

  uint32_t width() const { return ref_.width; }
  uint32_t height() const { return ref_.height; }
  OutputFormat format() const { return ref_.format; }
  const std::string& pixel_format() const { return ref_.pixel_format; }
  int64_t index() const { return ref_.index; }
  int64_t pts() const { return ref_.pts; }
  double pts_seconds() const { return ref_.pts_seconds; }
  double duration_seconds() const { return ref_.duration_seconds; }
  bool key_frame() const { return ref_.key_frame; }

  size_t num_planes() const { return ref_.planes.size(); }
  // Plane `i`: stride bytes per row, rows rows. RGB24 has one plane (HWC),
  // planar RGB three (R, G, B: CHW), native formats one per component.
  std::span<const uint8_t> plane(size_t i) const;
  uint32_t stride(size_t i) const { return ref_.planes[i].stride; }
  // All of the frame's bytes, planes in order as laid out by the backend.
  // At least kReadPadding readable bytes follow them (the slot's padding, or
  // zeros after an owned copy), for converters whose SIMD loads run past
  // the last pixel.
  std::span<const uint8_t> data() const;
  static constexpr size_t kReadPadding = ipc::kSlotPadding;

  // True while the frame views shared memory rather than owning its bytes.
  // SECURITY: the backend could still rewrite a shared frame's pixels; copy
  // what must not change under you.
  bool shared() const { return lease_.valid(); }
  // The arena slot a shared frame views (ipc/README.md: slots from the
  // arena's copy_slots() on are the frame pool's); nullopt once owned.
  std::optional<uint32_t> slot() const {
    return lease_.valid() ? std::optional<uint32_t>(ref_.slot) : std::nullopt;
  }
  // An owned copy (planes packed as in the backend's layout).
  Frame CopyOut() const;
  // Becomes an owned copy and gives its arena slot back now.
  void Detach();

 private:
  // owned_ = `bytes` and kReadPadding zeros.
  void Own(std::span<const uint8_t> bytes);

  ipc::FrameRef ref_;          // plane offsets relative to data()
  ipc::FrameLease lease_;      // set while shared
  std::vector<uint8_t> owned_;  // set once copied
};

}  // namespace codecvisor::internal

#endif  // CODECVISOR_CORE_FRAME_H_
