// File: backends/cpu/frame_cursor_approximate.cc
//
// FrameCursor's approximate mode (no frame table): frames by nominal index
// and by time, the seek-or-decode-on decision, and the stretches lost to
// damage. The exact mode is in frame_cursor_exact.cc, the decoding loop in
// frame_cursor.cc.

#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "backends/cpu/frame_cursor.h"
#include "backends/cpu/stream_metadata.h"

namespace codecvisor::cpu {
namespace {

// Approximate mode: how far before the target the second seek aims.
constexpr double kApproximateBackoffSeconds = 10.0;

}  // namespace

std::string FrameCursor::SecondsText(int64_t ticks) const {
  return absl::StrFormat("%.9g s", static_cast<double>(ticks) * av_q2d(demuxer_->stream()->time_base));
}

absl::Status FrameCursor::LostFrameError(int64_t index, int64_t target_pts) const {
  const std::string from = lost_from_ts_ == kUnknown ? std::string("the start") : SecondsText(lost_from_ts_);
  // Times that go back (two recordings spliced) lose no frame, but frames
  // are labelled by position there all the same.
  const std::string what =
      lost_from_ts_ != kUnknown && lost_to_ts_ < lost_from_ts_
          ? absl::StrCat("the stream's timestamps go back from ", from, " to ", SecondsText(lost_to_ts_),
                         " (a splice), so approximate mode, which names frames by their times on the header's "
                         "timeline, cannot tell which frame is which")
          : absl::StrCat("the decoder dropped damaged frames between ", from, " and ", SecondsText(lost_to_ts_),
                         " and lost the frames there, so approximate mode cannot tell which frame is which");
  return NotDecodedError(absl::StrCat("frame ", index, " (about ", SecondsText(target_pts), ") cannot be identified: ",
                                      what, "; exact mode identifies frames by their timestamps")
                             .c_str());
}

bool FrameCursor::InLostStretch(int64_t target_pts, int64_t tolerance) const {
  return lost_to_ts_ != kUnknown && SaturatingAdd(target_pts, tolerance) < lost_to_ts_ &&
         (lost_from_ts_ == kUnknown || SaturatingAdd(target_pts, tolerance) > lost_from_ts_);
}

int64_t FrameCursor::FrameEnd(int64_t frame_duration) const {
  // A packet without a duration (Matroska blocks, MPEG-TS) lasts a nominal
  // frame: one tick would put the next frame's index inside a loss.
  const int64_t duration = frame_->pkt_duration > 0 ? frame_->pkt_duration : std::max<int64_t>(frame_duration, 1);
  return SaturatingAdd(last_ts_, duration);
}

bool FrameCursor::LostAtEnd(int64_t from) const {
  if (!at_end_ || sent_pts_.empty()) return false;
  const int64_t latest = *sent_pts_.rbegin();
  return (last_ts_ == kUnknown || latest > last_ts_) && latest >= from;
}

bool FrameCursor::LostBefore(int64_t target_pts, int64_t tolerance, int64_t previous_end) {
  if (!frame_follows_loss_) return false;
  if (target_pts != kUnknown && last_ts_ <= SaturatingAdd(target_pts, tolerance)) return false;
  if (previous_end != kUnknown && last_ts_ <= SaturatingAdd(previous_end, tolerance)) return false;
  lost_from_ts_ = previous_end;
  lost_to_ts_ = last_ts_;
  damage_seen_ = true;
  return true;
}

bool FrameCursor::DecodingReaches(int64_t target_pts, int64_t tolerance) const {
  if (!positioned_ || at_end_ || !(last_ts_ == kUnknown || last_ts_ < SaturatingSub(target_pts, tolerance))) {
    return false;
  }
  const AVStream* stream = demuxer_->stream();
  const int64_t start = stream->start_time != AV_NOPTS_VALUE ? stream->start_time : 0;
  // Seek instead if the header's index has a key frame we have not read
  // (nothing read yet counts as read up to the start, so that a first
  // request for a late frame seeks like any other); without an index, a
  // first request beyond the first frame seeks too.
  const AVIndexEntry* key =
      avformat_index_get_entry_from_timestamp(const_cast<AVStream*>(stream), target_pts, AVSEEK_FLAG_BACKWARD);
  const int64_t read_up_to = last_read_ts_ != kUnknown ? last_read_ts_ : start;
  if (key != nullptr && key->timestamp > read_up_to) return false;
  if (key == nullptr && last_read_ts_ == kUnknown && SaturatingSub(target_pts, tolerance) > start) return false;
  // Before the first seek an index may hold only the key frames the open
  // happened to read (Matroska loads its cues on the first seek): one with
  // no entry past the target cannot say that no key frame lies between what
  // was read and the target, so a target past what was read seeks, and the
  // seek finds out.
  return !(seeks_ == 0 && SaturatingSub(target_pts, tolerance) > read_up_to && !IndexListsAfter(stream, target_pts));
}

std::array<int64_t, FrameCursor::kApproximateSeeks> FrameCursor::ApproximateSeeks(int64_t target_pts) const {
  const AVStream* stream = demuxer_->stream();
  const int64_t start = stream->start_time != AV_NOPTS_VALUE ? stream->start_time : 0;
  const int64_t backoff = static_cast<int64_t>(kApproximateBackoffSeconds / av_q2d(stream->time_base));
  // The target, further back, the stream's start, and before it: a
  // container that seeks by dts (MPEG program streams) can land past the
  // first key frame when asked for the first pts.
  return {target_pts, std::max(start, SaturatingSub(target_pts, backoff)), start, SaturatingSub(start, backoff)};
}

absl::StatusOr<bool> FrameCursor::StartAttempt(const std::array<int64_t, kApproximateSeeks>& seeks, int attempt) {
  if (attempt < 0) return true;
  if (attempt == kApproximateSeeks) {
    if (absl::Status s = Rewind(); !s.ok()) return s;
    return true;
  }
  if (attempt > 0 && seeks[attempt] == seeks[attempt - 1]) return false;
  if (absl::Status s = SeekTo(seeks[attempt]); !s.ok()) {
    // A demuxer may refuse a time before the start; the others failed.
    if (attempt == kApproximateSeeks - 1) return false;
    return s;
  }
  return true;
}

void FrameCursor::KeepFrameBefore() {
  av_frame_unref(previous_.get());
  av_frame_move_ref(previous_.get(), frame_.get());
  previous_position_ = position();
}

void FrameCursor::BackToFrameBefore() {
  std::swap(frame_, previous_);
  have_frame_ = true;
  set_position(previous_position_);
}

bool FrameCursor::PassUntimedBeforeTimes() {
  if (FrameTimestamp(frame_.get()) != AV_NOPTS_VALUE) return false;
  // Held back by the decoder until the end (set_display_delay): on the
  // timeline all the same, after the packets sent.
  if (HeldToTheEnd()) return false;
  // Not a frame of the timeline: the next timed frame starts it afresh.
  last_ts_ = kUnknown;
  same_ts_before_ = 0;
  return true;
}

absl::StatusOr<const AVFrame*> FrameCursor::DecodePlayedAt(int64_t target_pts, int64_t frame_duration,
                                                           absl::FunctionRef<int64_t(int64_t)> index_of) {
  last_error_ = 0;
  absl::StatusOr<bool> found = DecodeLastUpTo(target_pts, frame_duration);
  if (!found.ok()) {
    // frame_ may be another frame now, under no index: it is not kept.
    have_frame_ = false;
    last_index_ = kUnlabelled;
    return found.status();
  }
  // (Not found: the stream's first frame is after the target; it is the
  // one shown there.)
  last_index_ = index_of(last_ts_);
  return frame_.get();
}

absl::StatusOr<bool> FrameCursor::DecodeLastUpTo(int64_t target_pts, int64_t frame_duration) {
  // frame_ is the stream's last frame and at or before the target: it
  // plays there if its packet's duration (else the nominal one) reaches it,
  // or up to a nominal frame after that: the time is within the header's
  // end (the host checked), which an edit list or the header's rounding
  // may put a little past the last packet's (`ffmpeg -ss T -c copy` cuts
  // end 0.02 s later at 25 fps). (To the tick: a time a hair before the
  // end may round onto the end's tick.)
  auto plays_for_its_duration = [&] {
    const int64_t duration = frame_->pkt_duration > 0 ? frame_->pkt_duration : std::max<int64_t>(frame_duration, 1);
    return target_pts <= SaturatingAdd(SaturatingAdd(last_ts_, duration), std::max<int64_t>(frame_duration, 0));
  };
  auto last_frame_plays = [&]() -> absl::StatusOr<bool> {
    if (plays_for_its_duration()) return true;
    return absl::OutOfRangeError(absl::StrCat("no frame plays at ", SecondsText(target_pts),
                                              ": the stream's last frame, at ", SecondsText(last_ts_),
                                              ", ends before it"));
  };
  // A frame the decoder dropped at the end (after a seek into an open
  // GOP's last stretch), at or before the target, would be the one playing
  // then: decoding through from further back finds it (as for an index).
  auto dropped_plays = [&] { return LostAtEnd(kUnknown) && *sent_pts_.rbegin() <= target_pts; };
  const bool have_earlier = have_frame_ && last_ts_ <= target_pts;
  if (have_earlier && have_ahead_ && ahead_position_.ts > target_pts) return true;
  if (have_earlier && positioned_ && at_end_ && !dropped_plays()) return last_frame_plays();
  // Decoding on from a frame at the target still has to see the frame
  // after it (frames may share a pts): a tolerance of -1.
  const bool forward = DecodingReaches(target_pts, -1);
  const std::array<int64_t, kApproximateSeeks> seeks = ApproximateSeeks(target_pts);
  for (int attempt = forward ? -1 : 0; attempt <= kApproximateSeeks; ++attempt) {
    absl::StatusOr<bool> started = StartAttempt(seeks, attempt);
    if (!started.ok()) return started.status();
    if (!*started) continue;
    // A seek that lands after the target, or after the stream's last frame,
    // retries from further back, and at last from the first packet.
    const bool can_retry = attempt >= 0 && attempt < kApproximateSeeks;
    // After a seek, frames before the first with a time of its own are not
    // on the timeline (NextFrame would put them at the stream's start).
    bool skip_untimed = attempt >= 0;
    // Whether frame_ holds a frame at or before the target, from this attempt.
    bool earlier = attempt < 0 && have_earlier;
    for (;;) {
      if (earlier) KeepFrameBefore();
      absl::StatusOr<bool> got = NextFrame();
      // (Refused for memory, the frame is no damaged tail's: the next
      // request starts again, DecoderOutOfMemory; nor when cancelled.)
      if (!got.ok() && earlier && !absl::IsResourceExhausted(got.status()) && !absl::IsCancelled(got.status())) {
        // Nothing decodes after the frame before (a damaged tail): it is
        // the one played at the target if its duration reaches it.
        BackToFrameBefore();
        if (plays_for_its_duration()) return true;
        return got.status();
      }
      if (!got.ok()) return got.status();
      if (!*got) {
        if (!earlier) {
          if (can_retry) break;
          return absl::OutOfRangeError(
              absl::StrCat("no frame plays at ", SecondsText(target_pts), ": the stream ended before it"));
        }
        if (attempt < 1 && dropped_plays()) {
          attempt = 0;  // the next attempt is the seek further back
          break;
        }
        // The frame before is the stream's last.
        BackToFrameBefore();
        return last_frame_plays();
      }
      if (skip_untimed && PassUntimedBeforeTimes()) continue;
      skip_untimed = false;
      if (last_ts_ > target_pts) {
        if (earlier) {
          // The frame before is the one played at the target; this one is
          // kept for the next read.
          ahead_position_ = position();
          std::swap(frame_, ahead_);
          have_ahead_ = true;
          BackToFrameBefore();
          return true;
        }
        if (can_retry) break;
        return false;
      }
      earlier = true;
    }
  }
  return NotDecodedError(absl::StrCat("the frame at ", SecondsText(target_pts), " could not be decoded").c_str());
}

absl::StatusOr<const AVFrame*> FrameCursor::DecodeApproximate(int64_t index, int64_t target_pts, int64_t frame_duration,
                                                              bool last_counted, bool counted) {
  if (have_frame_ && index == last_index_) return frame_.get();
  last_error_ = 0;
  const int64_t tolerance = frame_duration / 2;
  // A stretch already known to be lost to damage fails at once; the frame
  // after it is kept and is the frame at its own time.
  if (InLostStretch(target_pts, tolerance)) return LostFrameError(index, target_pts);
  if (have_frame_ && last_ts_ >= SaturatingSub(target_pts, tolerance) &&
      last_ts_ <= SaturatingAdd(target_pts, tolerance) && lost_to_ts_ == last_ts_) {
    last_index_ = index;
    return frame_.get();
  }

  // The frame after the stream's last, which a time found (unless frames
  // were lost at the end: see below).
  if (have_frame_ && at_end_ && last_index_ >= 0 && index == last_index_ + 1 &&
      !LostAtEnd(SaturatingSub(target_pts, tolerance))) {
    return absl::OutOfRangeError(
        absl::StrCat("frame ", index, " is past the end: the stream ended with frame ", last_index_));
  }
  if (positioned_ && !at_end_ && index == last_index_ + 1) {
    // Sequential: the next frame, whatever its timestamp, unless frames
    // were lost to damage just before it.
    const int64_t previous_end = have_frame_ && last_ts_ != kUnknown ? FrameEnd(frame_duration) : kUnknown;
    const bool from_first_packet = last_index_ == -1 && !have_frame_;
    last_index_ = kUnlabelled;  // frame_ changes from here on
    absl::StatusOr<bool> got = NextFrame();
    // Read from the first packet, frames before the first with a time of
    // its own are not on the timeline, as after a seek or a rewind (a
    // Matroska file's blocks before its zero, which it cannot time), nor
    // are frames more than half a frame before the header's start, where a
    // jump to index 0 would not take them either (the start FFmpeg gives a
    // Matroska stream cut mid-GOP by its zero is its first timed block's,
    // a P-frame after two B-frames timed before it): frame 0 is the first
    // timed one from half a frame before the start, whatever was asked
    // before.
    while (from_first_packet && got.ok() && *got &&
           (PassUntimedBeforeTimes() || last_ts_ < SaturatingSub(target_pts, tolerance))) {
      got = NextFrame();
    }
    if (!got.ok()) return got.status();
    if (!*got && !LostAtEnd(SaturatingSub(target_pts, tolerance))) {
      // Past the header's count, nothing asks for the index alone: the
      // stream's end is the end (its nominal time would find the last
      // frame again).
      if (!counted) {
        return absl::OutOfRangeError(
            absl::StrCat("frame ", index, " is past the end: the stream ended with frame ", index - 1));
      }
      // The frames ran out before the count (a variable-rate stream, its
      // fast stretch read one frame an index): the index is the frame at
      // its nominal time, as a request for it alone finds it. (The call
      // reads no further in this branch: last_index_ is unlabelled.)
      absl::StatusOr<const AVFrame*> by_time = DecodeApproximate(index, target_pts, frame_duration, last_counted);
      if (by_time.ok() || !absl::IsOutOfRange(by_time.status())) return by_time;
      return absl::OutOfRangeError(
          absl::StrCat("frame ", index,
                       " is past the end: the stream ended before it (the header's frame "
                       "count or rate is inaccurate; exact mode counts the frames)"));
    }
    // The decoder dropped frames whose packets it was sent (after a seek
    // into an open GOP, a picture the leading ones held back): the end met
    // now is checked below as a fresh request for the index would be.
    if (*got) {
      // The previous frame was index - 1: any frame lost after it shifts
      // this one's position, whatever the nominal timeline says.
      if (LostBefore(kUnknown, tolerance, previous_end)) return LostFrameError(index, target_pts);
      // Once damage has been seen, positions are no longer trusted: the
      // frame must also be at its nominal time.
      if (damage_seen_ && (last_ts_ < SaturatingSub(target_pts, tolerance) ||
                           last_ts_ > SaturatingAdd(target_pts, tolerance))) {
        lost_from_ts_ = previous_end;
        lost_to_ts_ = last_ts_;
        return LostFrameError(index, target_pts);
      }
      last_index_ = index;
      return frame_.get();
    }
  }

  const bool forward = index > last_index_ && DecodingReaches(target_pts, tolerance);
  last_index_ = kUnlabelled;  // frame_ changes from here on
  const std::array<int64_t, kApproximateSeeks> seeks = ApproximateSeeks(target_pts);
  for (int attempt = forward ? -1 : 0; attempt <= kApproximateSeeks; ++attempt) {
    absl::StatusOr<bool> started = StartAttempt(seeks, attempt);
    if (!started.ok()) return started.status();
    if (!*started) continue;
    // A seek that lands after the target, or after the stream's last key
    // frame (no frame at all), retries from further back, and at last from
    // the first packet.
    const bool can_retry = attempt >= 0 && attempt < kApproximateSeeks;
    // After a seek, frames before the first with a time of its own are not
    // on the timeline: placed at the stream's start, they would pass for a
    // landing before the target, and the frame a GOP late would be taken.
    bool skip_untimed = attempt >= 0;
    bool first = true;
    bool timed = false;  // a frame with a timestamp of its own came out
    // Decoding on (no seek), the frame before the next one is frame_.
    int64_t previous_end =
        attempt < 0 && have_frame_ && last_ts_ != kUnknown ? FrameEnd(frame_duration) : kUnknown;
    bool kept = false;  // previous_ holds the frame before (last_counted)
    for (;;) {
      absl::StatusOr<bool> got = NextFrame();
      if (!got.ok()) return got.status();
      if (!*got) {
        // Untimed frames after a seek cannot be placed on the timeline.
        if ((first || !timed) && can_retry) break;
        // Frames the decoder dropped at the end (after a seek into an open
        // GOP's last stretch) may be the target: decoding through from
        // further back tells whether it is really past the end.
        if (attempt < 1 && LostAtEnd(SaturatingSub(target_pts, tolerance))) {
          attempt = 0;  // the next attempt is the seek further back
          break;
        }
        if (kept && timed) {
          // The header's last frame is the stream's last, however early
          // (a variable-rate stream's last frame may be held long), unless
          // the header counts frames the stream does not hold: packets its
          // index lists past the file's end (a file cut short, whose
          // missing frames a sequential read does not reach either),
          // frames an edit list discards, or more frames than its index
          // lists (an AVI whose header's length outruns its idx1; a file
          // with no index at all is not judged by it).
          BackToFrameBefore();
          const AVStream* stream = demuxer_->stream();
          const int indexed = avformat_index_get_entries_count(stream);
          if (!cut_short_ && FramesTheIndexHides(stream) == 0 && (indexed == 0 || indexed >= stream->nb_frames)) {
            last_index_ = index;
            return frame_.get();
          }
        }
        return absl::OutOfRangeError(absl::StrCat(
            "frame ", index, " (about ", SecondsText(target_pts),
            ") is past the end: the stream ended before it (the header's frame count or rate "
            "is inaccurate; exact mode counts the frames)"));
      }
      if (skip_untimed && PassUntimedBeforeTimes()) continue;
      skip_untimed = false;
      timed = timed || FrameTimestamp(frame_.get()) != AV_NOPTS_VALUE;
      if (last_ts_ < SaturatingSub(target_pts, tolerance)) {
        first = false;
        previous_end = FrameEnd(frame_duration);
        if (last_counted) {
          KeepFrameBefore();
          kept = true;
        }
        continue;
      }
      if (kept) av_frame_unref(previous_.get());  // not needed: frames go on
      if (first && can_retry && last_ts_ > SaturatingAdd(target_pts, tolerance)) break;
      if (LostBefore(target_pts, tolerance, previous_end)) {
        return LostFrameError(index, target_pts);
      }
      last_index_ = index;
      return frame_.get();
    }
  }
  return NotDecodedError(
      absl::StrCat("frame ", index, " (about ", SecondsText(target_pts), ") could not be decoded").c_str());
}

}  // namespace codecvisor::cpu
