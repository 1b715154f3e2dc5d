// File: backends/cpu/frame_index.h
//
// FrameIndex: the exact-mode table of every frame of one stream, built once
// at open by demuxing the whole stream without decoding it. Frames are
// numbered in presentation order (sorted by pts, ties by decode order), which
// is the order a decoder outputs them and the order `ffmpeg -vf select=eq(n,N)`
// counts them in; MPEG-4 streams whose container times are not display
// times are numbered in the order the decoder shows them
// (ApplyShownOrderTimeline).
//
// Immutable after Scan(); safe to read from any thread.

#ifndef CODECVISOR_BACKENDS_CPU_FRAME_INDEX_H_
#define CODECVISOR_BACKENDS_CPU_FRAME_INDEX_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cpu/demuxer.h"
#include "backends/cpu/frame_timeline.h"

namespace codecvisor::cpu {

struct PacketScan;

// Decodes a stream's first `count` packets from its start and says, for
// each, whether it made a frame (leading_frames.h); the demuxer may be
// opened again.
using LeadingProbe = std::function<absl::StatusOr<std::vector<bool>>(Demuxer& demuxer, int64_t count)>;

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
  // A container that allows timestamp discontinuities whose times jump back
  // part way is read as one timeline in file order (StreamSplices): the
  // table holds the moved times, and the demuxer is left moving them.
  // With `made_from_start`, the first packets PacketsToProbe names are
  // decoded, and those that make no frame are not frames (the table skips
  // their decode positions); the demuxer is then left wherever that
  // decode left it.
  static absl::StatusOr<FrameIndex> Scan(Demuxer& demuxer, int64_t fallback_duration,
                                         const LeadingProbe& made_from_start = nullptr);

  int64_t size() const { return static_cast<int64_t>(frames_.size()); }
  const FrameEntry& operator[](int64_t index) const { return frames_[index]; }

  // The index of the frame whose pts is `pts`, or -1.
  int64_t Find(int64_t pts) const;
  // The index of the frame of a packet read with `pts` and `dts`: by its
  // pts; a packet without one by its dts (its pts in the table was inferred
  // from it, or is it). Timed by ApplyShownOrderTimeline, by its dts: the
  // frame the decoder shows after the one this packet makes it show. -1 if
  // none.
  int64_t FindPacket(int64_t pts, int64_t dts) const;
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

  // Timed by ApplyShownOrderTimeline: a decoded frame is named by its
  // pkt_dts, not its pts.
  bool shown_order() const { return !shown_order_dts_.empty(); }

  // Packets without a pts were given one by their picture order
  // (PlaceUntimedByPictureOrder): the frames they make carry no time of
  // their own, so a reader names such a packet by its place in decode
  // order, after the packet before it, and gives it its pts from here.
  // Entries then hold their packet's size, which the naming checks.
  bool names_untimed() const { return names_untimed_ || names_by_dts(); }
  // The container's pts were decode times (PlaceByPictureOrderOverDecodeTimes,
  // decode_times.h): the times here come from picture order, and a
  // reader names each packet by its dts instead (FindByDts), giving it its
  // pts from here. names_untimed() too.
  bool names_by_dts() const { return !by_dts_.empty(); }
  // The frame index of the packet read with `dts`, -1 if none (a packet
  // that makes no frame).
  int64_t FindByDts(int64_t dts) const;
  // The stream's packets, frames or not (decode positions run from 0 to
  // packets() - 1).
  int64_t packets() const { return static_cast<int64_t>(index_of_order_.size()); }
  // The frame index of the packet at decode position `order` (0 <= order <
  // packets()); -1 for a packet that makes no frame.
  int64_t IndexOfOrder(int64_t order) const { return index_of_order_[order]; }
  // The size of the packet at decode position `order` that makes no frame
  // (kept where names_untimed()); -1 for a frame's packet.
  int32_t SizeOfFrameless(int64_t order) const;
  // The decode position of a packet that makes no frame, read with pts
  // `pts`; -1 if none has it.
  int64_t FramelessOrderOf(int64_t pts) const;
  // The frame index of the first frame in decode order.
  int64_t first_in_decode_order() const { return first_in_decode_order_; }
  // Whether frame `index` comes before the stream's first key frame in
  // decode order (a recording cut in a GOP whose decoder makes frames of
  // pictures with missing references; every frame of a stream that flags
  // no key frame): what such a frame holds depends on the decoder's state.
  bool BeforeFirstKey(int64_t index) const {
    return key_orders_.empty() || frames_[index].decode_order < key_orders_.front();
  }
  // The container's time (dts, else pts) of the second packet before
  // decode position `order` that had one (else the first), looking back at
  // most kTimedSearch packets; AV_NOPTS_VALUE if none. A seek there lands
  // before an untimed key frame, with a packet named by its time between
  // (the first packet read after a seek may be the tail of another
  // picture, and is not named).
  static constexpr int64_t kTimedSearch = 256;
  int64_t TimedBefore(int64_t order) const;
  // Whether a packet read with pts `pts` (not AV_NOPTS_VALUE) in a table
  // that names_untimed() can be named by it: the table moved some packet
  // that had it, which another may have too.
  bool NamesByPts(int64_t pts) const {
    return !std::binary_search(misplaced_pts_.begin(), misplaced_pts_.end(), pts);
  }

 private:
  // Gives `scan`'s frames their display times (the timeline rules, in the
  // order they are tried) and keeps the lookups those rules need.
  void PlaceTimes(Demuxer& demuxer, PacketScan& scan, int64_t fallback_duration);
  // With frames_ holding the frames in decode order: sorts them by pts,
  // maps the `packets` decode positions, and gives every frame a duration.
  void Order(int64_t packets, int64_t fallback_duration);

  std::vector<FrameEntry> frames_;       // by pts
  std::vector<int64_t> index_of_order_;  // decode order -> frame index (-1: no frame)
  // The packets that make no frame, by decode order.
  struct Frameless {
    int64_t order;
    int32_t size;
    int64_t pts;
  };
  std::vector<Frameless> frameless_;
  int64_t first_in_decode_order_ = 0;  // the frame index of the first frame decoded
  std::vector<int64_t> key_orders_;      // decode orders of key frames, ascending
  // (dts, decode order) of the frames whose pts InferMissingPts filled in,
  // by dts; empty when it filled none.
  std::vector<std::pair<int64_t, int64_t>> inferred_by_dts_;
  // (dts, decode order) of every frame, sorted, where names_by_dts().
  std::vector<std::pair<int64_t, int64_t>> by_dts_;
  // Timed by ApplyShownOrderTimeline: every dts, by decode order
  // (ascending); else empty.
  std::vector<int64_t> shown_order_dts_;
  int64_t earliest_timestamp_ = 0;
  bool names_untimed_ = false;
  std::vector<int64_t> misplaced_pts_;  // sorted: container times PlaceUntimedByPictureOrder moved
};

}  // namespace codecvisor::cpu

#endif  // CODECVISOR_BACKENDS_CPU_FRAME_INDEX_H_
