// File: backends/cpu/frame_cursor_exact.cc
//
// FrameCursor's exact mode: a frame of the frame table found by decoding on
// from where the cursor is, or from a start point it seeks to; frames that
// share a pts (ties) told apart by the order the decoder outputs them. The
// decoding loop is in frame_cursor.cc, the packets in frame_cursor_packets.cc.

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/frame_cursor.h"

namespace codecvisor::cpu {

int64_t FrameCursor::MaxHeld() const {
  const AVCodecContext& context = *decoder_->context();
  const int64_t threads = (context.active_thread_type & FF_THREAD_FRAME) != 0 ? context.thread_count : 0;
  return kMaxShownAhead + context.has_b_frames + threads + 1;
}

absl::StatusOr<FrameCursor::Outcome> FrameCursor::DecodeUntil(int64_t pts, int64_t occurrence, bool scattered,
                                                              int64_t order) {
  bool seen = false;  // a frame with `pts` came
  // With `scattered`, frames past the target that may still be followed by
  // it: in a splice whose times overlap, the second frame of a timestamp
  // comes after the first recording's later ones.
  size_t past = 0;
  int64_t later = 0;  // frames with a later timestamp before any with `pts`
  for (;;) {
    absl::StatusOr<bool> got = NextFrame();
    if (!got.ok()) return got.status();
    if (!*got) return past > 0 ? Outcome::kTooFew : Outcome::kEnded;
    if (last_ts_ == pts) seen = true;
    if (Before(pts, occurrence)) continue;
    if (last_ts_ == pts && same_ts_before_ == occurrence) return Outcome::kFound;
    if (scattered && seen && last_ts_ != pts && ++past < kRecentFrames / 4) continue;
    // Bounded twice: the packets read since the target's (not moved by
    // packets the index does not name), and the frames out since.
    if (!seen && last_read_order_ <= order + MaxHeld() && ++later <= MaxHeld()) continue;
    return seen ? Outcome::kTooFew : Outcome::kOvershot;
  }
}

absl::StatusOr<const AVFrame*> FrameCursor::DecodeExact(int64_t index) {
  const FrameEntry& target = (*index_)[index];
  // Which of the frames with its pts the target is (almost always the only).
  const int64_t first_of_tie = index_->Find(target.pts);
  const int64_t occurrence = index - first_of_tie;
  if (have_frame_ && last_ts_ == target.pts && same_ts_before_ == occurrence && !names_damaged_) {
    return frame_.get();
  }
  // A tie whose frames may come out apart (two recordings spliced, their
  // times overlapping), not side by side (a muxer's rounding, fields): its
  // packets are apart in decode order, or side by side across a key frame.
  const int64_t tie_end = index_->FindAfter(target.pts);
  int64_t first_order = (*index_)[first_of_tie].decode_order, last_order = first_order;
  for (int64_t i = first_of_tie; i < tie_end; ++i) {
    first_order = std::min(first_order, (*index_)[i].decode_order);
    last_order = std::max(last_order, (*index_)[i].decode_order);
  }
  // Side by side in decode order but across a key frame (the second
  // recording's first packet, right after the first's last, a B-frame):
  // the frames between them in display order come out between them too.
  // (Not where the first is a key frame too: an all-intra stream's tie.)
  bool first_is_key = false, key_after_first = false;
  for (int64_t i = first_of_tie; i < tie_end; ++i) {
    const FrameEntry& member = (*index_)[i];
    first_is_key = first_is_key || (member.key && member.decode_order == first_order);
    key_after_first = key_after_first || (member.key && member.decode_order > first_order);
  }
  key_after_first = key_after_first && !first_is_key;
  const bool scattered = last_order - first_order >= tie_end - first_of_tie || key_after_first;
  const std::vector<int64_t> starts = index_->StartPoints(index, 1);
  const int64_t key_order = (*index_)[starts.front()].decode_order;
  last_error_ = 0;

  if (index_->BeforeFirstKey(index)) {
    // Made from what the decoder holds (its references are missing): only
    // a fresh decoder reading from the container's first packet makes it
    // as the CLI does.
    const bool reads_on =
        positioned_ && !at_end_ && fresh_start_ && (last_ts_ == kUnknown || Before(target.pts, occurrence));
    if (!reads_on) {
      if (absl::Status s = Rewind(); !s.ok()) return s;
    }
    absl::StatusOr<Outcome> outcome = DecodeUntil(target.pts, occurrence, scattered, last_order);
    if (!outcome.ok()) return outcome.status();
    if (*outcome == Outcome::kFound && !names_damaged_) return frame_.get();
    if (*outcome == Outcome::kTooFew && occurrence > 0) return DecodeExact(first_of_tie);
    return NotDecodedError(
        absl::StrCat("frame ", index, " (at ", SecondsText(target.pts), ") could not be decoded").c_str());
  }

  if (positioned_ && !at_end_ && (last_ts_ == kUnknown || Before(target.pts, occurrence)) &&
      key_order <= last_read_order_ + 1) {
    absl::StatusOr<Outcome> outcome = DecodeUntil(target.pts, occurrence, scattered, last_order);
    if (!outcome.ok()) return outcome.status();
    // A frame whose name may be off is looked for again from a start point.
    if (*outcome == Outcome::kFound && !names_damaged_) return frame_.get();
    // Fewer frames than packets with this pts: the first stands for them all.
    if (*outcome == Outcome::kTooFew && occurrence > 0) return DecodeExact(first_of_tie);
  }
  // A frame of a tie is counted from before the tie's first packet: a seek
  // to the tie's time may land on any of its packets (an index keeps one
  // entry per timestamp), and a landing on any of them is refused (they all
  // map to the tie's first). And from a key frame the first packet can be
  // decoded from: a container that seeks by decode time (MPEG-TS) lands
  // past the key frame asked for, where the decoder would drop every frame
  // until the next key frame, the tie's first frames with them.
  const bool in_tie = tie_end - first_of_tie > 1;
  const std::vector<int64_t> seeks = SeekTimestamps(first_of_tie, in_tie);
  int64_t landing_limit = key_order;
  if (in_tie) {
    const int64_t tie_key = (*index_)[index_->StartPoints(index_->IndexOfOrder(first_order), 1).front()].decode_order;
    landing_limit = std::min(first_order - 1, tie_key);
  }
  for (size_t i = 0; i < seeks.size(); ++i) {
    if (absl::Status s = SeekTo(seeks[i]); !s.ok()) return s;
    if (!LandedAtOrBefore(landing_limit)) {
      if (i + 1 < seeks.size()) continue;
      // A seek to the stream's start landed after it (Matroska whose first
      // times are negative, which FFmpeg reads as none): read from the
      // container's first packet.
      if (absl::Status s = Rewind(); !s.ok()) return s;
    }
    absl::StatusOr<Outcome> outcome = DecodeUntil(target.pts, occurrence, scattered, last_order);
    if (!outcome.ok()) return outcome.status();
    if (*outcome == Outcome::kFound) {
      if (!names_damaged_) return frame_.get();
      // Earlier start points read the same damaged packet.
      return NotDecodedError(absl::StrCat("frame ", index, " (at ", SecondsText(target.pts),
                                          ") follows a packet the decoder rejected, in a stream whose "
                                          "frames are named by the packets that show them (MPEG-4 with "
                                          "B-frames and decode times): which frame it is cannot be told")
                                 .c_str());
    }
    if (*outcome == Outcome::kTooFew && occurrence > 0) return DecodeExact(first_of_tie);
  }
  return NotDecodedError(
      absl::StrCat("frame ", index, " (at ", SecondsText(target.pts), ") could not be decoded").c_str());
}

}  // namespace codecvisor::cpu
