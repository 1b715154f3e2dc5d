// File: backends/cpu/stream_splices.h
//
// StreamSplices: a stream whose times jump back part way, as in MPEG-TS or
// MPEG-PS files concatenated byte for byte (`cat a.ts b.ts`), read as one
// timeline in file order. Sorted by their own times, the second recording's
// frames would come before or among the first's, and a seek by time could
// land in either recording; the ffmpeg CLI shows them after the first's.
// So, in the scan, each backward jump of the decode time starts a segment
// whose times are moved on to follow the frames before it, and every packet
// read afterwards gets its segment's offset, found by its byte position. A
// seek goes to a key frame's byte position, recorded by the scan, never by
// time (a time may be in several segments).
//
// Only for containers that allow timestamp discontinuities
// (AVFMT_TS_DISCONT) and give byte positions; a forward jump is a gap in
// time, not a splice, and changes nothing.
//
// Not thread-safe; built by one scan, then read by one session.

#ifndef CODECVISOR_BACKENDS_CPU_STREAM_SPLICES_H_
#define CODECVISOR_BACKENDS_CPU_STREAM_SPLICES_H_

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace codecvisor::cpu {

class StreamSplices {
 public:
  // A decode time going back by more than `min_jump` (time base units) is a
  // splice; less is left to the table's order by pts (a muxer's jitter, or
  // recordings overlapping by a frame or two). The ffmpeg CLI takes 0.1 s.
  explicit StreamSplices(int64_t min_jump) : min_jump_(min_jump) {}

  // The scan's side, for each packet of the stream in file order, with its
  // container times (AV_NOPTS_VALUE where absent): the offset to add to
  // them. A packet whose decode time is more than min_jump before the
  // previous packet's starts a segment, whose first decode time is placed
  // at the latest frame end seen so far.
  int64_t Place(int64_t pos, int64_t pts, int64_t dts, int64_t duration);
  // A key frame at moved time `pts`, at byte `pos` (one of unknown
  // position, < 0, is left out: a seek to it goes to an earlier key frame).
  void AddKey(int64_t pts, int64_t pos) {
    if (pos >= 0) keys_.emplace_back(pts, pos);
  }
  // After the last packet: readies the lookups below.
  void Finish() { std::stable_sort(keys_.begin(), keys_.end()); }

  // True once a splice was placed: the reader must then move times and seek
  // by byte.
  bool active() const { return segments_.size() > 1; }
  int64_t segments() const { return static_cast<int64_t>(segments_.size()); }

  // The offset of the segment holding byte `pos`, for a packet read after
  // one with offset `previous`: a packet of unknown position (the last one
  // a demuxer drains at the end may have none) is in the previous one's
  // segment, as the scan placed it.
  int64_t OffsetAt(int64_t pos, int64_t previous) const;
  // The byte position of the last key frame at or before moved time `pts`;
  // -1 when there is none (the stream's start is before it).
  int64_t KeyPositionAtOrBefore(int64_t pts) const;

 private:
  struct Segment {
    int64_t pos;     // first byte of the segment's first packet
    int64_t offset;  // added to the times of its packets
  };
  int64_t min_jump_;
  std::vector<Segment> segments_;
  std::vector<std::pair<int64_t, int64_t>> keys_;  // (moved pts, byte position), sorted
  int64_t last_dts_ = 0;   // moved; valid once have_dts_
  bool have_dts_ = false;
  int64_t end_ = 0;        // the latest moved pts + duration; valid once have_end_
  bool have_end_ = false;
};

}  // namespace codecvisor::cpu

#endif  // CODECVISOR_BACKENDS_CPU_STREAM_SPLICES_H_
