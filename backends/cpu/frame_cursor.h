// File: backends/cpu/frame_cursor.h
//
// FrameCursor: turns "frame N" requests into demux/seek/decode steps while
// keeping the decoder's position between calls, so that a sequential read
// never seeks and costs what a plain decode does.
//
// When it moves forward: the target is after the last frame decoded and
// decoding can reach it without a key frame it has not read yet (exact
// mode), or it is the next index or the header index shows no key frame in
// between (approximate mode). Otherwise it seeks to the key frame at or
// before the target, flushes the decoder and decodes forward, discarding
// frames until the target's pts. Demuxers disagree on whether a seek
// timestamp is a pts or a dts, so where a seek landed is checked, and an
// earlier start point is tried if it landed late, down to the stream's start.
//
// End of stream: a NULL packet drains the decoder so the last frames (held
// back for B-frame reordering or frame threading) come out.
//
// Corrupt data: packets the decoder rejects are skipped, as the ffmpeg CLI
// does; a frame that never comes out is an error for that request only.
// Approximate mode labels frames by position, so when frames were lost
// (decode errors, or packets whose frames never came out) before a frame
// later than the one asked for, the
// request fails rather than return that frame under the wrong index; the
// lost stretch is remembered, so later requests inside it fail at once and
// the frame after it is returned for its own index. Once frames have been
// lost, sequential reads also check each frame against its nominal time.
//
// Not thread-safe: one session drives it.

#ifndef CODECVISOR_BACKENDS_CPU_FRAME_CURSOR_H_
#define CODECVISOR_BACKENDS_CPU_FRAME_CURSOR_H_

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "backends/cpu/av_util.h"
#include "backends/cpu/demuxer.h"
#include "backends/cpu/frame_index.h"
#include "backends/cpu/picture_order.h"
#include "backends/cpu/video_decoder.h"

namespace codecvisor::cpu {

// Whether `stream`'s index (the container's own, not a scan) has an entry
// after `timestamp` (its entries' time: dts in MP4, pts elsewhere).
bool IndexListsAfter(const AVStream* stream, int64_t timestamp);
// Whether the last entry of that index that is not discarded lies in the
// file past byte `pos`: packets the index lists that a read ending at `pos`
// never met (the file was cut short).
bool IndexListsPacketsPast(const AVStream* stream, int64_t pos);
// A decode that failed with FFmpeg's `error`, as `message`: kDataLoss (a
// damaged file), but kResourceExhausted for ENOMEM (the backend's memory,
// not the file).
absl::Status DecodeFailure(int error, std::string message);

class FrameCursor {
 public:
  // `index` is the exact-mode table, or nullptr in approximate mode. The
  // demuxer must be at the stream's start when `at_start`, else the first
  // request seeks. All three must outlive the cursor.
  FrameCursor(Demuxer* demuxer, VideoDecoder* decoder, const FrameIndex* index, bool at_start);

  // Exact mode: the decoded frame whose pts is that of (*index)[index]. The
  // frame stays valid until the next call. DataLoss if it cannot be decoded.
  absl::StatusOr<const AVFrame*> DecodeExact(int64_t index);

  // Approximate mode: frame `index`, nominally at `target_pts` and lasting
  // `frame_duration` (time base units, > 0): the next frame when `index`
  // follows the last one returned, else the first frame at or after
  // target_pts - frame_duration / 2. OutOfRange if the stream ends first,
  // but with `last_counted` (the header counts the stream's frames, and
  // this is the last of them: a variable-rate stream's last frame can be
  // more than half a frame before its nominal time), the last frame. An
  // index past the header's count (`!counted`: reached only by reading on
  // from a frame found by time) is OutOfRange where the stream ends before
  // it (unless the decoder dropped frames at the end, which are looked for
  // from further back), not a frame found again by its nominal time.
  absl::StatusOr<const AVFrame*> DecodeApproximate(int64_t index, int64_t target_pts, int64_t frame_duration,
                                                   bool last_counted = false, bool counted = true);

  // Approximate mode: the frame played at `target_pts`: the last one whose
  // pts is at or before it (of frames sharing a pts, the last, as exact
  // mode counts them), found by decoding one frame past it, which is kept
  // for the next sequential read; packet durations are not trusted. Where
  // the stream's last frame is before it, that frame if its duration (else
  // `frame_duration`) reaches past the target, else OutOfRange; where the
  // first frame is after it, that frame. Decodes forward from the position
  // when no key frame lies between, else seeks. The frame is labelled
  // index_of(its pts), which a request for the next index follows on from.
  absl::StatusOr<const AVFrame*> DecodePlayedAt(int64_t target_pts, int64_t frame_duration,
                                                absl::FunctionRef<int64_t(int64_t)> index_of);

  // The index the last frame returned was labelled with (approximate mode).
  int64_t last_index() const { return last_index_; }

  // Demuxer seeks made so far (tests check that sequential reads make none).
  int64_t seeks() const { return seeks_; }

  // Reads the next packet and keeps it for decoding (a packet already kept
  // is returned again); null at the end of the stream or on a read error.
  const AVPacket* PeekPacket();

  // Approximate mode, a container with decode times only (AVI) whose
  // decoder holds `ticks` of frames back: a frame is shown that long after
  // its packet's dts, and the timeline starts that late. A frame that comes
  // out with no time before any with one (a stream no longer than what the
  // decoder holds drains them all untimed) is placed that long after the
  // first packet sent since the start point, not at 0.
  void set_display_delay(int64_t ticks) { display_delay_ = ticks; }

  // Asked before each packet is read: true stops the call in progress with
  // kCancelled (the request it serves was cancelled), and the next call
  // starts from a seek.
  void set_stop_check(std::function<bool()> stop) { stop_ = std::move(stop); }

 private:
  // Drained with no time, with a display delay set and packets sent since
  // the start point: a frame the decoder held to the end (set_display_delay).
  bool HeldToTheEnd() const { return draining_ && display_delay_ > 0 && first_sent_dts_ != kUnknown; }

  // A timestamp not known (yet).
  static constexpr int64_t kUnknown = std::numeric_limits<int64_t>::min();
  // kTooFew: the frames with the timestamp asked for ended before the
  // occurrence asked for (the index holds more packets with that pts than
  // the decoder outputs frames, as with fields muxed as packets of one pts).
  enum class Outcome { kFound, kOvershot, kTooFew, kEnded };

  // Whether frame_ comes before the `occurrence`-th frame (from 0) with
  // timestamp `pts`: an earlier timestamp, or an earlier frame of that one.
  bool Before(int64_t pts, int64_t occurrence) const {
    return last_ts_ < pts || (last_ts_ == pts && same_ts_before_ < occurrence);
  }
  // Approximate mode: the seek timestamps to try for `target_pts`, best
  // first.
  static constexpr int kApproximateSeeks = 4;
  std::array<int64_t, kApproximateSeeks> ApproximateSeeks(int64_t target_pts) const;
  // Approximate mode: positions the decoder for attempt `attempt` of a
  // search: -1 decodes on from where it is, i < kApproximateSeeks seeks to
  // seeks[i], kApproximateSeeks reads from the container's first packet
  // (Rewind: every seek landed after the target). False when the attempt is
  // skipped: a seek to where the one before went, or a failed last one.
  absl::StatusOr<bool> StartAttempt(const std::array<int64_t, kApproximateSeeks>& seeks, int attempt);
  // Approximate mode, reading from the first packet: true (and the frame
  // left off the timeline) for a frame in frame_ with no time of its own
  // before the first with one. Such frames come before the stream's start
  // (FFmpeg reads a Matroska block's negative time as none), and the times
  // the cursor would give them, counted from 0, are later frames' own.
  bool PassUntimedBeforeTimes();
  // Exact mode, a FrameIndex::shown_order stream: checks that the frame
  // named `ts` (its pkt_dts) follows the last one in decode order.
  void NoteShownOrderName(int64_t ts);
  // Approximate mode: whether decoding on from the position reaches
  // `target_pts` - `tolerance` without passing a key frame not yet read
  // (else a seek is faster).
  bool DecodingReaches(int64_t target_pts, int64_t tolerance) const;
  // DecodePlayedAt's search: decodes until frame_ is the last frame at or
  // before `target_pts` (true), or the first frame from the stream's start
  // is after it (false).
  absl::StatusOr<bool> DecodeLastUpTo(int64_t target_pts, int64_t frame_duration);
  // What NextFrame records about frame_, saved while another frame is
  // decoded past it.
  struct Position {
    int64_t ts;
    int64_t same_ts_before;
    bool follows_loss;
  };
  Position position() const { return {last_ts_, same_ts_before_, frame_follows_loss_}; }
  void set_position(const Position& p) {
    last_ts_ = p.ts;
    same_ts_before_ = p.same_ts_before;
    frame_follows_loss_ = p.follows_loss;
  }
  // Moves frame_ (and its position) to previous_ before the next frame is
  // decoded; BackToFrameBefore makes it frame_ again (frame_'s own frame
  // goes to previous_).
  void KeepFrameBefore();
  void BackToFrameBefore();
  // Decodes the next frame into frame_ (the frame decoded ahead, if one
  // is kept). False at the end of the stream.
  absl::StatusOr<bool> NextFrame();
  // Decodes forward until the `occurrence`-th frame (from 0) with timestamp
  // `pts` (kFound), or a frame past it: a later timestamp (kOvershot, or
  // kTooFew after fewer frames with `pts` than asked for). With
  // `scattered` (the tie's frames may come out apart: DecodeExact), up to
  // kRecentFrames / 4 frames past it are decoded before kTooFew. A later
  // timestamp before any with `pts` is decoded past while the decoder may
  // still hold the frame of the packet with decode order `order`
  // (its packet not read yet, or read at most MaxHeld packets ago, and at
  // most MaxHeld frames out since): it outputs frames in picture order,
  // which a file's timestamps need not follow (a frame timed before one
  // already out).
  absl::StatusOr<Outcome> DecodeUntil(int64_t pts, int64_t occurrence, bool scattered, int64_t order);
  // How many packets the decoder may read before it outputs a packet's
  // frame: the frames decoded after it but shown before it (at most a
  // decoded picture buffer's kMaxShownAhead), its reorder delay and its
  // frame threads.
  int64_t MaxHeld() const;
  static constexpr int64_t kMaxShownAhead = 16;  // H.264's and HEVC's largest picture buffer
  // Seeks the demuxer to `timestamp` and resets the decoder and position.
  absl::Status SeekTo(int64_t timestamp);
  // Opens the container again, which reads from its first packet, and
  // resets the decoder and position.
  absl::Status Rewind();
  // After the demuxer moved: the decoder flushed (or, with
  // `fresh_decoder`, opened afresh) and the position reset.
  void Restart(bool from_start, bool fresh_decoder = false);
  // Approximate mode: notes a packet whose frame has not come out yet
  // (sent_pts_; untimed packets are not tracked).
  void TrackSent(int64_t pts);
  // Reads the next packet into packet_ (false at the end or on a read
  // error) and, in exact mode, names it: packet_index_ is its frame index
  // (-1: not in the table). In a table that names_untimed(), a packet
  // whose pts does not name it is the one after the last packet named,
  // and every packet named is given its frame's pts from the table, which
  // its frame then carries.
  bool ReadPacket();
  // Reads the demuxer's next packet into `packet` and names it as above
  // (`*index`, -1: not named).
  bool ReadAndName(AVPacket* packet, int64_t* index);
  // Exact mode: reads the first packet after a seek and says whether it is
  // at or before decode order `limit` (the packet is kept for decoding); in
  // a table that names_untimed(), the first packet named, within
  // kLandingLookahead packets (they are all kept, in lookahead_).
  bool LandedAtOrBefore(int64_t limit);
  // Exact mode: the seek timestamps to try for frame `index`, best first.
  // With `before_tie`, only start points before the frame's timestamp: a
  // seek to a timestamp that several key frames share may land on any of
  // them, and the count of frames with one pts must start before them all.
  std::vector<int64_t> SeekTimestamps(int64_t index, bool before_tie = false) const;
  // The error for a frame that could not be produced.
  absl::Status NotDecodedError(const char* what) const;
  // An allocation failed since the decoder last started (ffmpeg_log.h):
  // the frame it made is dropped, and the next request starts the decoder
  // again from a key frame. kResourceExhausted.
  absl::Status DecoderOutOfMemory();
  // Approximate mode, after decoding the frame in frame_: true (and the
  // lost stretch recorded) when frames were lost just before it (decode
  // errors, or packets sent earlier in presentation order whose frames
  // never came out) and it lies beyond both the target (`target_pts` +
  // `tolerance`; kUnknown: any) and the end of the frame before it
  // (`previous_end`, kUnknown if none): this one is not the frame asked for.
  bool LostBefore(int64_t target_pts, int64_t tolerance, int64_t previous_end);
  // Whether `target_pts` lies inside the recorded lost stretch: from the
  // end of the last frame before it (where the first lost frame would
  // start) to the first frame after it.
  bool InLostStretch(int64_t target_pts, int64_t tolerance) const;
  // Approximate mode, at the stream's end: packets were sent whose frames,
  // later than the last one out and at or after `from`, never came out
  // (the decoder dropped them).
  bool LostAtEnd(int64_t from) const;
  // The error for frame `index`, lost in the recorded stretch; frame_ and
  // its label are left as they are (callers that changed frame_ have
  // unlabelled it).
  absl::Status LostFrameError(int64_t index, int64_t target_pts) const;
  // A time in the stream's time base, in seconds for a message ("1.48 s").
  std::string SecondsText(int64_t ticks) const;
  // Where frame_ (at last_ts_) ends: its packet's duration, else a nominal
  // frame's (`frame_duration`).
  int64_t FrameEnd(int64_t frame_duration) const;

  Demuxer* demuxer_;
  VideoDecoder* decoder_;
  const FrameIndex* index_;
  PacketPtr packet_ = MakePacket();
  FramePtr frame_ = MakeFrame();
  // DecodePlayedAt decodes one frame past the one it returns: the frame
  // before is kept in previous_ meanwhile, and the one past in ahead_,
  // which the next NextFrame returns without decoding.
  FramePtr previous_ = MakeFrame();
  FramePtr ahead_ = MakeFrame();
  bool have_ahead_ = false;
  Position ahead_position_{};
  Position previous_position_{};

  bool positioned_;               // decoder state follows on from a start point
  bool pending_packet_ = false;   // packet_ was read but not sent yet
  bool draining_ = false;         // NULL packet sent
  bool at_end_ = false;           // decoder fully drained
  bool have_frame_ = false;       // frame_ holds a decoded frame
  int64_t last_ts_;               // timestamp of the last frame decoded
  // Frames decoded just before frame_ with its timestamp: a stream may give
  // several frames one pts (a muxer that rounded them together), which the
  // index numbers in turn, and the n-th of them is frame first + n.
  int64_t same_ts_before_ = 0;
  // Exact mode: the timestamps of the last kRecentFrames frames since the
  // decoder was reset, oldest overwritten. A frame whose pts differs from
  // the last one's counts its earlier frames among them: where two
  // recordings were spliced with overlapping times, a timestamp's second
  // frame comes after a later one (2.40, 2.44, 2.40, 2.44).
  static constexpr size_t kRecentFrames = 32;
  std::array<int64_t, kRecentFrames> recent_ts_{};
  size_t recent_count_ = 0;
  int64_t last_read_order_ = -1;  // exact: decode order of the last packet read
  // Exact mode: the decode order the next packet read has, when the last
  // one read was named (else -1); and packet_'s frame index (-1: unnamed).
  int64_t next_order_ = 0;
  int64_t packet_index_ = -1;
  // Packets read and named ahead of packet_ (LandedAtOrBefore), which
  // ReadPacket returns first.
  static constexpr size_t kLandingLookahead = 64;
  struct Lookahead {
    PacketPtr packet;
    int64_t index;
  };
  std::deque<Lookahead> lookahead_;
  int64_t last_read_ts_;          // max(pts, dts) of the last packet read
  int64_t first_sent_dts_;        // approximate: dts of the first packet sent since the start point
  int64_t display_delay_ = 0;     // set_display_delay
  std::function<bool()> stop_;    // set_stop_check
  int64_t last_read_pos_ = -1;    // its place in the file (-1: unknown)
  bool cut_short_ = false;        // approximate: the file ended before its header's index did
  // Approximate mode: the index frame_ was returned as; -1 before the
  // stream's first frame (the next frame read is frame 0), kUnlabelled
  // when frame_ is under no index and the next frame's is unknown.
  static constexpr int64_t kUnlabelled = -2;
  int64_t last_index_ = -1;
  int errors_without_frame_ = 0;
  // AllocationFailures() when the decoder last started from a start point.
  uint64_t allocation_failures_at_start_ = 0;
  bool errors_pending_ = false;      // decode errors since the last frame
  bool frame_follows_loss_ = false;  // frames were dropped just before frame_
  // Exact mode, a FrameIndex::shown_order stream: since the decoder last
  // started afresh, a packet was rejected or showed no frame
  // (NoteShownOrderName), so frames may come out under other names.
  bool names_damaged_ = false;
  bool sent_indexed_ = true;         // the last packet sent is in the index
  int64_t last_name_order_ = -1;     // the decode order naming the last frame since the start
  std::set<int64_t> sent_pts_;       // pts of packets sent, frames not out yet
  bool damage_seen_ = false;         // frames were lost at least once
  bool first_after_seek_ = false;    // no frame decoded since the last seek
  // Approximate mode: read from the first packet (the session's first read,
  // a Rewind), and no frame at or after the stream's start has come yet.
  bool reading_from_start_ = true;
  // Approximate mode: packets before the first key frame after a seek are
  // not decoded. A demuxer without an index (MPEG-TS) lands on any packet,
  // and decoding from one that is not a key frame gives frames whose
  // references are missing (HEVC outputs them, grey where the references
  // were). Given up for the session if a stream flags no key frame at all.
  bool await_key_ = false;
  // HEVC: the awaited key frame must also be an IRAP picture in the
  // bitstream (containers may flag every packet; see FrameIndex::Scan).
  std::unique_ptr<PictureOrderReader> key_check_;
  bool key_seen_ = false;         // a packet flagged key was read
  bool keys_unflagged_ = false;   // a read from the start ended awaiting its first key
  bool from_start_ = false;       // the last seek aimed at or before the stream's start
  bool fresh_start_ = false;      // the decoder was opened afresh at the container's first packet
  bool mpeg12_ = false;           // MPEG-1 or MPEG-2 video
  bool fresh_on_seek_ = false;    // MPEG-1/2 that changed pixel format: each seek reopens the decoder
  // Approximate mode: the last stretch of frames lost to damage, as the
  // end of the frame before it (kUnknown: the start) and the pts of the
  // frame after it.
  int64_t lost_from_ts_;
  int64_t lost_to_ts_;
  int64_t seeks_ = 0;
  int last_error_ = 0;  // the last AVERROR from the decoder or demuxer
};

}  // namespace codecvisor::cpu

#endif  // CODECVISOR_BACKENDS_CPU_FRAME_CURSOR_H_
