// File: backends/cpu/frame_cursor.cc

#include "backends/cpu/frame_cursor.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/ffmpeg_log.h"

namespace codecvisor::cpu {
namespace {

// Consecutive packets or frames the decoder may reject before a request
// gives up: a damaged stretch is skipped, a stream of garbage is not decoded
// to the end.
constexpr int kMaxErrorsWithoutFrame = 256;
// Packets whose frames the cursor waits for; far more than any decoder's
// delay (beyond it, tracking starts over).
constexpr size_t kMaxTrackedPackets = 1024;

// Whether `frame` shows a property FFmpeg's decoder would keep through a
// flush, the stream's (`par`, what the decoder opens with) being another:
// MPEG-1/2 keep their chroma format, and H.264 and MPEG-2 keep the colour
// description of the last header that had one, so a part of a spliced
// capture without one, read after a part with one, came out in the
// other's colours (a seek from frame 40 back to 0: a mean difference of
// 16 of 255 from the CLI's frame 0).
bool KeptThroughAFlush(const AVFrame& frame, const AVCodecParameters& par, bool mpeg12) {
  if (mpeg12 && frame.format != par.format) return true;
  // Only those decoders keep it (a container's colour tags that differ from
  // an HEVC or VP9 bitstream's would otherwise reopen the decoder at every
  // seek for nothing).
  const bool keeps_colours = mpeg12 || par.codec_id == AV_CODEC_ID_H264;
  return keeps_colours && (frame.colorspace != par.color_space || frame.color_range != par.color_range ||
                           frame.color_primaries != par.color_primaries || frame.color_trc != par.color_trc);
}

}  // namespace

FrameCursor::FrameCursor(Demuxer* demuxer, VideoDecoder* decoder, const FrameIndex* index,
                         bool at_start)
    : demuxer_(demuxer),
      decoder_(decoder),
      index_(index),
      positioned_(at_start),
      last_ts_(kUnknown),
      last_read_ts_(kUnknown),
      first_sent_dts_(kUnknown),
      lost_from_ts_(kUnknown),
      lost_to_ts_(kUnknown) {
  if (!at_start) next_order_ = -1;
  allocation_failures_at_start_ = AllocationFailures();
  const AVCodecID codec = demuxer_->stream()->codecpar->codec_id;
  mpeg12_ = codec == AV_CODEC_ID_MPEG1VIDEO || codec == AV_CODEC_ID_MPEG2VIDEO;
  if (index_ == nullptr && codec == AV_CODEC_ID_HEVC) {
    key_check_ = PictureOrderReader::ForStream(*demuxer_->stream()->codecpar);
  }
}

namespace {

// Entry `i` of `stream`'s own index (the container's, not a scan), and how
// many there are: FFmpeg's getters take a non-const stream.
int IndexEntryCount(const AVStream* stream) {
  return avformat_index_get_entries_count(const_cast<AVStream*>(stream));
}
const AVIndexEntry* IndexEntry(const AVStream* stream, int i) {
  return avformat_index_get_entry(const_cast<AVStream*>(stream), i);
}

}  // namespace

bool IndexListsAfter(const AVStream* stream, int64_t timestamp) {
  const int entries = IndexEntryCount(stream);
  const AVIndexEntry* last = entries > 0 ? IndexEntry(stream, entries - 1) : nullptr;
  return last != nullptr && last->timestamp > timestamp;
}

bool IndexListsPacketsPast(const AVStream* stream, int64_t pos) {
  for (int i = IndexEntryCount(stream) - 1; i >= 0; --i) {
    const AVIndexEntry* entry = IndexEntry(stream, i);
    if ((entry->flags & AVINDEX_DISCARD_FRAME) != 0) continue;  // past an edit list's end
    return entry->pos > pos;
  }
  return false;
}

absl::StatusOr<bool> FrameCursor::NextFrame() {
  if (have_ahead_) {
    std::swap(frame_, ahead_);
    av_frame_unref(ahead_.get());
    have_ahead_ = false;
    have_frame_ = true;
    set_position(ahead_position_);
    return true;
  }
  for (;;) {
    have_frame_ = false;
    int ret = decoder_->Receive(frame_.get());
    // FFmpeg reports most allocations it could not make as damaged data
    // (H.264: INVALIDDATA, or a frame whose missing parts were concealed):
    // with too little address space left now for one more frame's worth,
    // the memory is the cause, not the file.
    const bool damaged = ret == 0 ? frame_->decode_error_flags != 0 || (frame_->flags & AV_FRAME_FLAG_CORRUPT) != 0
                                  : ret != AVERROR(EAGAIN) && ret != AVERROR_EOF;
    if (ret == AVERROR(ENOMEM) || (damaged && !RoomForAllocations())) NoteAllocationFailure();
    if (ret == 0 && AllocationFailures() != allocation_failures_at_start_) return DecoderOutOfMemory();
    if (ret == 0) {
      have_frame_ = true;
      errors_without_frame_ = 0;
      frame_follows_loss_ = errors_pending_;
      // Frames named by the packets that show them: a packet the decoder
      // rejected shows no frame, and the names of the frames after it can
      // be off until the decoder starts afresh.
      names_damaged_ =
          names_damaged_ || (errors_pending_ && sent_indexed_ && index_ != nullptr && index_->shown_order());
      errors_pending_ = false;
      if (index_ == nullptr && frame_->pts != AV_NOPTS_VALUE) {
        // (Approximate mode only: exact mode finds frames by the index.)
        // Packets sent before this frame's in presentation order whose
        // frames never came out: the decoder dropped them (damaged data).
        // The first frame after a seek is exempt: decoders drop the leading
        // pictures of an open GOP (HEVC RASL) whose references precede it.
        // Read from the first packet, packets before the stream's start do
        // not count until a frame at or after it comes: an open GOP's
        // leading pictures at the very start (a clip cut with -c copy) come
        // before it, and are no index's frame.
        auto later = sent_pts_.lower_bound(frame_->pts);
        const int64_t start = demuxer_->stream()->start_time;
        const bool before_start_exempt = reading_from_start_ && start != AV_NOPTS_VALUE;
        auto counted = before_start_exempt ? sent_pts_.lower_bound(start) : sent_pts_.begin();
        if (counted != sent_pts_.end() && *counted < frame_->pts && !first_after_seek_) frame_follows_loss_ = true;
        if (!before_start_exempt || frame_->pts >= start) reading_from_start_ = false;
        first_after_seek_ = false;
        damage_seen_ = damage_seen_ || frame_follows_loss_;
        // Draining a file cut short: the frames of the packets it lacks
        // never come out, so any frame the decoder still held may follow a
        // gap (damage only once LostBefore finds one).
        frame_follows_loss_ = frame_follows_loss_ || (draining_ && cut_short_);
        sent_pts_.erase(sent_pts_.begin(), later);
        sent_pts_.erase(frame_->pts);
      }
      // Frames named by the packet that made the decoder show them
      // (FrameIndex::shown_order); the last, drained, has none.
      // Where packets without a time were named in decode order, the pts
      // their frames carry was stamped on them (ReadPacket); a frame
      // without one came from a packet that could not be named, and is
      // left unnamed (kUnknown: before any frame asked for).
      const bool stamped = index_ != nullptr && index_->names_untimed();
      int64_t ts = index_ != nullptr && index_->shown_order() ? frame_->pkt_dts
                   : stamped                                  ? frame_->pts
                                                              : FrameTimestamp(frame_.get());
      if (ts == AV_NOPTS_VALUE) {
        // No timestamp: take the next slot of the timeline.
        if (stamped) {
          ts = kUnknown;
        } else if (index_ != nullptr) {
          int64_t next = last_ts_ == kUnknown ? 0 : index_->FindAfter(last_ts_);
          ts = next < index_->size() ? (*index_)[next].pts : SaturatingAdd(last_ts_, 1);
        } else if (last_ts_ != kUnknown) {
          ts = SaturatingAdd(last_ts_, std::max<int64_t>(frame_->pkt_duration, 1));
        } else if (HeldToTheEnd()) {
          ts = SaturatingAdd(first_sent_dts_, display_delay_);
        } else {
          ts = 0;
        }
      }
      if (index_ != nullptr && index_->shown_order()) NoteShownOrderName(ts);
      if (!fresh_on_seek_ && KeptThroughAFlush(*frame_, *demuxer_->stream()->codecpar, mpeg12_)) {
        fresh_on_seek_ = true;
      }
      if (last_ts_ != kUnknown && ts == last_ts_) {
        ++same_ts_before_;  // a run of frames with one pts, however long
      } else if (index_ != nullptr) {
        // The pts seen again after others (a splice): its earlier frames
        // among the recent ones.
        const size_t n = std::min(recent_count_, kRecentFrames);
        same_ts_before_ = std::count(recent_ts_.begin(), recent_ts_.begin() + n, ts);
      } else {
        same_ts_before_ = 0;
      }
      if (index_ != nullptr) recent_ts_[recent_count_++ % kRecentFrames] = ts;
      last_ts_ = ts;
      return true;
    }
    if (ret == AVERROR_EOF || (ret == AVERROR(EAGAIN) && draining_)) {
      at_end_ = true;
      return false;
    }
    if (ret != AVERROR(EAGAIN)) {
      last_error_ = ret;
      errors_pending_ = true;
      if (++errors_without_frame_ > kMaxErrorsWithoutFrame) {
        positioned_ = false;
        return DecodeFailure(ret, absl::StrCat("the ", decoder_->name(), " decoder failed ", kMaxErrorsWithoutFrame,
                                               " times in a row: ", AvErrorText(ret)));
      }
      continue;
    }
    if (!pending_packet_ && stop_ && stop_()) {
      positioned_ = false;  // the decoder holds part of a run: the next call seeks
      return absl::CancelledError("the request was cancelled");
    }
    if (!pending_packet_ && !ReadPacket()) {
      if (demuxer_->last_error() != 0) last_error_ = demuxer_->last_error();
      // Only a read from the stream's start that met no key frame shows
      // that the stream flags none (one that landed past its last key
      // frame meets none either).
      if (await_key_ && !key_seen_ && from_start_) keys_unflagged_ = true;
      // Approximate mode (exact mode names frames by its scan): the
      // header's index lists packets further into the file than the last
      // one read.
      cut_short_ = index_ == nullptr && last_read_pos_ >= 0 && IndexListsPacketsPast(demuxer_->stream(), last_read_pos_);
      decoder_->Send(nullptr);
      draining_ = true;
      continue;
    }
    pending_packet_ = false;
    last_read_ts_ = std::max(packet_->pts, packet_->dts);
    last_read_pos_ = packet_->pos;
    bool key = (packet_->flags & AV_PKT_FLAG_KEY) != 0;
    if (key && await_key_ && key_check_ != nullptr) {
      (void)key_check_->Read(*packet_);
      key = key_check_->last_key() != 0;
    }
    if (key) {
      key_seen_ = true;
      await_key_ = false;
    } else if (await_key_) {
      continue;  // not decodable on its own: wait for a key frame
    }
    if (index_ != nullptr) {
      const int64_t i = packet_index_;
      if (i >= 0) last_read_order_ = (*index_)[i].decode_order;
      // A packet the scan left out (a file's partial last one) is rejected
      // without taking a frame's name.
      sent_indexed_ = i >= 0;
    }
    if (index_ == nullptr && first_sent_dts_ == kUnknown) first_sent_dts_ = packet_->dts;
    ret = decoder_->Send(packet_.get());
    if (ret == AVERROR(ENOMEM)) NoteAllocationFailure();
    // A packet the decoder rejected is tracked too: its frame never comes
    // out, and the error alone would mark whichever frame comes out next
    // (with B-frames, often one before it in presentation order).
    if (index_ == nullptr && ret != AVERROR(EAGAIN) && !(packet_->flags & AV_PKT_FLAG_DISCARD)) {
      TrackSent(packet_->pts);
    }
    if (ret < 0) {
      // EAGAIN: the decoder wants frames taken out first; send it again then.
      if (ret == AVERROR(EAGAIN)) {
        pending_packet_ = true;
      } else {
        last_error_ = ret;
        errors_pending_ = true;
      }
      if (++errors_without_frame_ > kMaxErrorsWithoutFrame) {
        positioned_ = false;
        return DecodeFailure(ret, absl::StrCat("the ", decoder_->name(), " decoder rejected ", kMaxErrorsWithoutFrame,
                                               " packets in a row: ", AvErrorText(ret)));
      }
    }
  }
}

void FrameCursor::TrackSent(int64_t pts) {
  if (pts == AV_NOPTS_VALUE) return;
  if (sent_pts_.size() >= kMaxTrackedPackets) sent_pts_.clear();
  sent_pts_.insert(pts);
}

void FrameCursor::NoteShownOrderName(int64_t ts) {
  // The first frame after a start may skip names (the pictures before a
  // key frame in display order, which need the frames before it, are
  // dropped); after it each packet shows one frame, so the names follow one
  // another in decode order. A gap is a packet that showed none (damaged,
  // or skipped by the decoder without an error): the frames after it come
  // out under later packets' names.
  const int64_t order = index_->FindPacket(AV_NOPTS_VALUE, ts);
  if (order < 0) return;  // the last frame, drained, has no name of its own
  if (last_name_order_ >= 0 && order != last_name_order_ + 1) names_damaged_ = true;
  last_name_order_ = order;
}

absl::Status FrameCursor::SeekTo(int64_t timestamp) {
  positioned_ = false;
  ++seeks_;
  absl::Status status = demuxer_->Seek(timestamp);
  if (!status.ok()) return status;
  const AVStream* stream = demuxer_->stream();
  // What FFmpeg's decoders keep through a flush (KeptThroughAFlush) makes
  // the frames read after a seek differ from the CLI's: once a frame has
  // shown such a change, each seek opens the decoder afresh (a flush is
  // cheaper, and enough for every other stream).
  if (fresh_on_seek_) (void)decoder_->Reset();
  Restart(timestamp <= (stream->start_time != AV_NOPTS_VALUE ? stream->start_time : 0));
  return absl::OkStatus();
}

absl::Status FrameCursor::Rewind() {
  positioned_ = false;
  ++seeks_;
  absl::Status status = demuxer_->Reopen();
  if (!status.ok()) return status;
  // Frames before the first key frame are made from what the decoder
  // holds: a decoder opened afresh makes them as the CLI does.
  const bool fresh = index_ != nullptr && index_->size() > 0 && index_->BeforeFirstKey(index_->first_in_decode_order());
  Restart(/*from_start=*/true, fresh);
  // As the session's first read: every packet from the first is sent, so
  // that the decoder drops (H.264: a recording that starts mid-GOP, whose
  // frames before the first key frame are then lost, and no index of
  // theirs names the frame after them) or makes (HEVC) the frames before
  // the first key frame as it did then, and as exact mode and the CLI do.
  await_key_ = false;
  first_after_seek_ = false;
  reading_from_start_ = true;
  return absl::OkStatus();
}

void FrameCursor::Restart(bool from_start, bool fresh_decoder) {
  fresh_start_ = fresh_decoder && decoder_->Reset().ok();
  if (!fresh_start_) decoder_->Flush();
  positioned_ = true;
  pending_packet_ = draining_ = at_end_ = have_frame_ = have_ahead_ = false;
  av_frame_unref(ahead_.get());
  last_ts_ = last_read_ts_ = first_sent_dts_ = kUnknown;
  last_read_pos_ = -1;
  cut_short_ = false;
  recent_count_ = 0;
  last_read_order_ = -1;
  next_order_ = from_start ? 0 : -1;
  packet_index_ = -1;
  lookahead_.clear();
  // The next frame is frame 0 only after a start from the first packet.
  last_index_ = from_start ? -1 : kUnlabelled;
  errors_without_frame_ = 0;
  allocation_failures_at_start_ = AllocationFailures();
  errors_pending_ = frame_follows_loss_ = names_damaged_ = false;
  last_name_order_ = -1;
  sent_indexed_ = true;
  sent_pts_.clear();
  first_after_seek_ = true;
  reading_from_start_ = false;
  await_key_ = index_ == nullptr && !keys_unflagged_;
  from_start_ = from_start;
}

absl::Status DecodeFailure(int error, std::string message) {
  // The decoder out of memory is not the file's damage, which a batch job
  // skips as a corrupt video.
  if (error == AVERROR(ENOMEM)) return absl::ResourceExhaustedError(message);
  return absl::DataLossError(message);
}

absl::Status FrameCursor::DecoderOutOfMemory() {
  av_frame_unref(frame_.get());
  have_frame_ = have_ahead_ = false;
  positioned_ = false;
  return absl::ResourceExhaustedError(
      "the decoder ran out of memory (the backend's, [sandbox] memory_mb in its manifest, or the machine's): "
      "the frames it made since are not trusted");
}

absl::Status FrameCursor::NotDecodedError(const char* what) const {
  return DecodeFailure(
      last_error_,
      absl::StrCat(what, last_error_ != 0 ? absl::StrCat(" (last error: ", AvErrorText(last_error_), ")") : ""));
}

}  // namespace codecvisor::cpu
