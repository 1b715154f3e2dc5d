// File: examples/vendor_backend/frame_table.h
//
// Exact mode's table of every frame of the stream, built by reading each
// packet once at open (no decoding): the frames in presentation order with
// their timestamps, durations, decode order and key-frame flags. Immutable
// once built; safe to read from any thread.

#ifndef CODECVISOR_EXAMPLES_VENDOR_BACKEND_FRAME_TABLE_H_
#define CODECVISOR_EXAMPLES_VENDOR_BACKEND_FRAME_TABLE_H_

#include <cstdint>
#include <vector>

#include "container.h"
#include "status.h"

namespace dav1d_plugin {

struct FrameRow {
  int64_t pts = 0;       // stream time base; the dts, or the previous frame's end, if absent
  int64_t duration = 0;  // > 0: the packet's, else the gap to the next frame
  int64_t decode_order = 0;
  bool key = false;
};

class FrameTable {
 public:
  // A table bigger than this is refused (RESOURCE_EXHAUSTED): a crafted
  // file must not make a session allocate without bound. 2^24 rows is over
  // six days at 30 fps, in 400 MB.
  static constexpr int64_t kMaxFrames = int64_t{1} << 24;

  // Reads every packet of `container`'s stream from where it stands (the
  // start, just after Container::Open). `default_duration` fills in the
  // last frame's duration when the container gives none. CORRUPT_DATA when
  // the stream has no packets at all; a read error after some packets (a
  // truncated file) keeps those read and is reported by truncated().
  static Status Build(Container& container, int64_t default_duration, FrameTable* out);

  int64_t size() const { return static_cast<int64_t>(rows_.size()); }
  const FrameRow& operator[](int64_t i) const { return rows_[static_cast<size_t>(i)]; }
  // The read error that ended the scan early, or 0.
  int truncated() const { return truncated_; }

  // The index of the frame with this pts, or -1.
  int64_t Find(int64_t pts) const;
  // The index of the last frame whose pts is <= `pts`, or -1.
  int64_t LastAtOrBefore(int64_t pts) const;
  // The index of the key frame decoding of frame `index` starts from: the
  // last key frame in decode order before or at it (the first frame if
  // there is none).
  int64_t KeyFor(int64_t index) const;
  // The index of the frame of the given decode order.
  int64_t IndexOfOrder(int64_t order) const { return by_order_[static_cast<size_t>(order)]; }

 private:
  std::vector<FrameRow> rows_;       // by pts
  std::vector<int64_t> by_order_;    // decode order -> index in rows_
  std::vector<int64_t> key_orders_;  // decode orders of key frames, ascending
  int truncated_ = 0;
};

}  // namespace dav1d_plugin

#endif  // CODECVISOR_EXAMPLES_VENDOR_BACKEND_FRAME_TABLE_H_
