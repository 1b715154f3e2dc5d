// File: backends/cpu/frame_index.h
//
// FrameIndex: the exact-mode table of every frame of one stream, built once
// at open by demuxing the whole stream without decoding it. Frames are
// numbered in presentation order (sorted by pts, ties by decode order), which
// is the order a decoder outputs them and the order `ffmpeg -vf select=eq(n,N)`
// counts them in.
//
// Immutable after Scan(); safe to read from any thread.

#ifndef CODECVISOR_BACKENDS_CPU_FRAME_INDEX_H_
#define CODECVISOR_BACKENDS_CPU_FRAME_INDEX_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cpu/demuxer.h"

namespace codecvisor::cpu {

struct FrameEntry {
  int64_t pts;           // the packet's pts, else its dts (stream time base)
  int64_t dts;           // AV_NOPTS_VALUE if the container gives none
  int64_t duration;      // > 0: the packet's, else the gap to the next pts
  int64_t decode_order;  // position among the stream's packets, from 0
  bool key;
};

class FrameIndex {
 public:
  // A bound on the table (about 48 bytes a frame, so at most ~800 MB),
  // against a crafted file of millions of tiny packets: 2^24 frames is over
  // 3 days at 60 fps. ResourceExhausted beyond it.
  static constexpr int64_t kMaxFrames = int64_t{1} << 24;

  // Reads every packet of the demuxer's stream from its current position to
  // the end. Packets libavformat marks AV_PKT_FLAG_DISCARD (samples an edit
  // list cuts off; the decoder drops their frames) are not frames.
  // `fallback_duration` (time base units, > 0) is the last frame's duration
  // when its packet has none. DataLoss if the stream has no packet at all.
  static absl::StatusOr<FrameIndex> Scan(Demuxer& demuxer, int64_t fallback_duration);

  int64_t size() const { return static_cast<int64_t>(frames_.size()); }
  const FrameEntry& operator[](int64_t index) const { return frames_[index]; }

  // The index of the frame whose pts is `pts`, or -1.
  int64_t Find(int64_t pts) const;
  // The index of the last frame whose pts is <= `pts`, or -1.
  int64_t FindAtOrBefore(int64_t pts) const;
  // The first index whose pts is > `pts`, or size().
  int64_t FindAfter(int64_t pts) const;

  // Key frames that decoding frame `index` can start from, nearest first, at
  // most `max` of them. A usable key frame precedes the target in decode
  // order and does not follow it in presentation order (so open-GOP leading
  // pictures start from the previous key frame). If none is usable, the
  // stream's first packet. Each is a frame index.
  std::vector<int64_t> StartPoints(int64_t index, int max) const;

  // The smallest pts or dts in the table: seeking there reaches the start.
  int64_t earliest_timestamp() const { return earliest_timestamp_; }

 private:
  std::vector<FrameEntry> frames_;       // by pts
  std::vector<int64_t> index_of_order_;  // decode order -> frame index
  std::vector<int64_t> key_orders_;      // decode orders of key frames, ascending
  int64_t earliest_timestamp_ = 0;
};

}  // namespace codecvisor::cpu

#endif  // CODECVISOR_BACKENDS_CPU_FRAME_INDEX_H_
