// File: backends/cpu/frame_index.cc

#include "backends/cpu/frame_index.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/av_util.h"
#include "backends/cpu/mpeg4_bitstream.h"
#include "backends/cpu/picture_order.h"

namespace codecvisor::cpu {

bool IsPackedMpeg4(const AVCodecParameters& par) {
  return par.codec_id == AV_CODEC_ID_MPEG4 && par.video_delay > 0 && par.extradata != nullptr &&
         par.extradata_size > 0 && HasPackedBitstreamMarker({par.extradata, static_cast<size_t>(par.extradata_size)});
}

namespace {

// How many key packets of an MPEG-4 stream are searched for the packed
// bitstream marker and the video object layer header (in the first one's
// headers when they are anywhere).
constexpr int kHeaderChecks = 4;

// An H.264 or HEVC stream that reorders pictures, whose container gave
// every packet its dts for a pts (a raw stream muxed without presentation
// times: `ffmpeg -i raw.h264 -c copy out.mp4`): those are decode times,
// and the decoder shows the pictures in picture order count order, not in
// that one (where the counts say they differ). The counts are read in a second pass over the packets (the
// container opened again); the key frames keep their times (an IDR picture
// is shown in its decode place) and every other frame takes its place in
// display order between them (PlaceUntimedByPictureOrder). False,
// changing nothing, where the counts cannot be read or do not place every
// frame.
bool PlaceByPictureOrderOverDecodeTimes(Demuxer& demuxer, std::vector<FrameEntry>& frames, int64_t fallback_duration) {
  std::unique_ptr<PictureOrderReader> reader = PictureOrderReader::ForStream(*demuxer.stream()->codecpar);
  if (reader == nullptr || frames.size() < 2 || !demuxer.Reopen().ok()) return false;
  // Each frame's count, by its dts (frames may have lost packets that
  // make none; every packet is read, as a count depends on those before).
  std::vector<std::pair<int64_t, std::optional<int64_t>>> counts;
  PacketPtr packet = MakePacket();
  while (demuxer.ReadPacket(packet.get())) {
    const std::optional<int64_t> count = reader->Read(*packet);
    if ((packet->flags & AV_PKT_FLAG_DISCARD) == 0) counts.emplace_back(packet->dts, count);
  }
  std::sort(counts.begin(), counts.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::optional<int64_t>> poc(frames.size());
  std::vector<bool> known(frames.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    auto it = std::lower_bound(counts.begin(), counts.end(), frames[i].dts,
                               [](const auto& c, int64_t dts) { return c.first < dts; });
    if (it == counts.end() || it->first != frames[i].dts || !it->second.has_value()) return false;
    poc[i] = it->second;
    known[i] = frames[i].key;
  }
  // Pictures decoded in the order they are shown (a count that only rises
  // between key frames): the decode times are display times after all.
  bool reordered = false;
  for (size_t i = 1; i < frames.size() && !reordered; ++i) reordered = !frames[i].key && *poc[i] < *poc[i - 1];
  if (!reordered) return false;
  // A clip of one group of pictures whose key frame the container drops
  // (its muxer starts the dts early, and the packets before the first
  // shown time are discarded): no key frame keeps a time. The first frame
  // shown (the lowest count: one run) takes the earliest decode time, and
  // the others follow it a frame duration apart.
  if (std::find(known.begin(), known.end(), true) == known.end()) {
    size_t first = 0;
    int64_t earliest = frames[0].dts;
    for (size_t i = 1; i < frames.size(); ++i) {
      if (*poc[i] < *poc[first]) first = i;
      earliest = std::min(earliest, frames[i].dts);
    }
    const int64_t own = frames[first].pts;
    frames[first].pts = earliest;
    known[first] = true;
    if (PlaceUntimedByPictureOrder(frames, known, poc, fallback_duration)) return true;
    frames[first].pts = own;  // changing nothing
    return false;
  }
  return PlaceUntimedByPictureOrder(frames, known, poc, fallback_duration);
}

}  // namespace

absl::StatusOr<FrameIndex> FrameIndex::Scan(Demuxer& demuxer, int64_t fallback_duration,
                                            const LeadingProbe& made_from_start) {
  FrameIndex index;
  PacketPtr packet = MakePacket();
  int64_t order = 0;
  bool last_corrupt = false;
  std::vector<size_t> missing_pts;  // decode positions of packets with a dts but no pts
  // MPEG-4 Part 2: each packet's first VOP type (-1 for a placeholder VOP,
  // which is not coded); whether the stream is a packed bitstream (its
  // marker is in the extradata or in a key frame's headers; the first few
  // key packets are looked at). Any codec: whether every pts is its
  // packet's dts (decode times, for MPEG-4's B-VOPs and for
  // PlaceByPictureOrderOverDecodeTimes). Reading vop_coded takes the width of vop_time_increment, from the
  // video object layer header (the extradata's, else a key packet's).
  const AVCodecParameters* codecpar = demuxer.stream()->codecpar;
  const bool mpeg4 = codecpar->codec_id == AV_CODEC_ID_MPEG4;
  bool packed = IsPackedMpeg4(*codecpar);
  int time_increment_bits =
      mpeg4 && codecpar->extradata != nullptr
          ? VopTimeIncrementBits({codecpar->extradata, static_cast<size_t>(std::max(codecpar->extradata_size, 0))})
          : 0;
  int header_checks = 0;
  std::vector<int8_t> vop_types;
  bool b_vops = false;
  bool placeholders = false;  // not-coded VOPs, which a packed bitstream sends
  bool every_pts_is_dts = true;
  // Containers whose times may restart part way (StreamSplices).
  const bool may_splice = (demuxer.format()->iformat->flags & AVFMT_TS_DISCONT) != 0;
  StreamSplices splices(std::max<int64_t>(av_rescale_q(1, AVRational{1, 10}, demuxer.stream()->time_base), 1));
  // Key packets without a time or a position (decode positions), with the
  // last position read before each: where a seek to them goes once they
  // have a time.
  std::vector<std::pair<size_t, int64_t>> untimed_keys;
  int64_t last_pos = -1;
  // The same containers time PES packets, not pictures: H.264 and HEVC
  // pictures smaller than one are left untimed, and placed by their
  // picture order counts.
  std::unique_ptr<PictureOrderReader> order_reader = may_splice ? PictureOrderReader::ForStream(*codecpar) : nullptr;
  // A container may flag pictures a decoder cannot start at as key frames
  // (an MP4 without a sync-sample table flags every sample; remuxed
  // Matroska too). H.264's decoder shows nothing until a real one, which
  // the seek's landing check sees; HEVC's and MPEG-4's decoders show
  // grey pictures made from missing references, so their flags are
  // checked against the bitstream (the parser's IRAP, the VOP type).
  std::unique_ptr<PictureOrderReader> hevc_keys =
      order_reader == nullptr && codecpar->codec_id == AV_CODEC_ID_HEVC ? PictureOrderReader::ForStream(*codecpar)
                                                                         : nullptr;
  std::vector<std::optional<int64_t>> picture_orders;
  std::vector<bool> known_pts;  // by decode position: the packet had a pts
  // Raw video: every frame's packet has one size, so a last packet smaller
  // than the one before is a frame the file was cut inside (NUT does not
  // flag it corrupt); the decoder refuses it.
  const bool raw = codecpar->codec_id == AV_CODEC_ID_RAWVIDEO;
  int last_size = -1, previous_size = -1;
  while (demuxer.ReadPacket(packet.get())) {
    if ((packet->flags & AV_PKT_FLAG_DISCARD) != 0) continue;
    last_corrupt = (packet->flags & AV_PKT_FLAG_CORRUPT) != 0;
    previous_size = last_size;
    last_size = packet->size;
    if (may_splice) {
      MovePacketTimes(packet.get(), splices.Place(packet->pos, packet->pts, packet->dts, packet->duration));
      if ((packet->flags & AV_PKT_FLAG_KEY) != 0 && packet->pts != AV_NOPTS_VALUE) {
        splices.AddKey(packet->pts, packet->pos);
      } else if ((packet->flags & AV_PKT_FLAG_KEY) != 0 && packet->pos < 0 && last_pos >= 0) {
        untimed_keys.emplace_back(index.frames_.size(), last_pos);
      }
      if (packet->pos >= 0) last_pos = packet->pos;
    }
    if (order >= kMaxFrames) {
      return absl::ResourceExhaustedError(absl::StrCat("has more than ", kMaxFrames,
                                                       " frames in stream ", demuxer.stream_index(),
                                                       "; the frame table would be too large"));
    }
    FrameEntry entry;
    entry.pts = packet->pts != AV_NOPTS_VALUE ? packet->pts : packet->dts;
    if (packet->pts == AV_NOPTS_VALUE && packet->dts != AV_NOPTS_VALUE) {
      missing_pts.push_back(index.frames_.size());
    }
    if (entry.pts == AV_NOPTS_VALUE) {
      entry.untimed = true;
      // No timestamp at all: continue the previous frame's timeline.
      entry.pts = index.frames_.empty()
                      ? 0
                      : SaturatingAdd(index.frames_.back().pts,
                                      std::max<int64_t>(index.frames_.back().duration, 1));
    }
    entry.dts = packet->dts;
    entry.duration = packet->duration;
    entry.decode_order = order++;
    entry.key = (packet->flags & AV_PKT_FLAG_KEY) != 0;
    if (order_reader != nullptr) {
      picture_orders.push_back(order_reader->Read(*packet));
      entry.size = packet->size;
      entry.picture_type = static_cast<int8_t>(order_reader->last_type());
    }
    if (hevc_keys != nullptr) (void)hevc_keys->Read(*packet);
    if (codecpar->codec_id == AV_CODEC_ID_HEVC) {
      const PictureOrderReader* keys = order_reader != nullptr ? order_reader.get() : hevc_keys.get();
      if (keys != nullptr && keys->last_key() == 0) entry.key = false;
    }
    index.frames_.push_back(entry);
    known_pts.push_back(packet->pts != AV_NOPTS_VALUE);
    if (mpeg4) {
      const std::span<const uint8_t> data(packet->data, packet->data != nullptr ? packet->size : 0);
      if ((!packed || time_increment_bits == 0) && entry.key && header_checks < kHeaderChecks) {
        ++header_checks;
        packed = packed || HasPackedBitstreamMarker(data);
        if (time_increment_bits == 0) time_increment_bits = VopTimeIncrementBits(data);
      }
      const VopStart vop = FirstVop(data, time_increment_bits);
      if (vop.coded && vop.coding_type >= 0 && vop.coding_type != kIVop) index.frames_.back().key = false;
      // For PlaceMissingByAnchors: an S-VOP (global motion) is predicted
      // and shown as a P-VOP is; a placeholder's type stays unknown.
      if (vop.coded && vop.coding_type >= 0) {
        index.frames_.back().picture_type = static_cast<int8_t>(
            vop.coding_type == kIVop ? AV_PICTURE_TYPE_I : vop.coding_type == kBVop ? AV_PICTURE_TYPE_B : AV_PICTURE_TYPE_P);
      }
      vop_types.push_back(static_cast<int8_t>(vop.coded ? vop.coding_type : -1));
      b_vops = b_vops || vop.coding_type == kBVop;
      placeholders = placeholders || (vop.coding_type >= 0 && !vop.coded);
    }
    every_pts_is_dts = every_pts_is_dts && packet->pts != AV_NOPTS_VALUE && packet->pts == packet->dts;
  }
  // A file cut short ends in a packet the demuxer could read only part of
  // (AV_PKT_FLAG_CORRUPT, or raw video's short last packet): its frame does
  // not decode, so it is not counted.
  // Such packets earlier in the file are kept: damaged data often still
  // decodes (concealed), as the CLI shows.
  const auto drop_last = [&] {
    index.frames_.pop_back();
    known_pts.pop_back();
    if (!vop_types.empty()) vop_types.pop_back();
    if (!picture_orders.empty()) picture_orders.pop_back();
    if (!missing_pts.empty() && missing_pts.back() == index.frames_.size()) missing_pts.pop_back();
  };
  if ((last_corrupt || (raw && previous_size > last_size)) && !index.frames_.empty()) drop_last();
  // Nor are H.264 or HEVC packets at the end with no picture header the
  // parser can read (a file cut inside a picture's parameter sets): the
  // decoder makes no frame of them either.
  if (std::any_of(picture_orders.begin(), picture_orders.end(), [](const auto& c) { return c.has_value(); })) {
    while (!picture_orders.back().has_value()) drop_last();
  }
  const int64_t packets_read = static_cast<int64_t>(index.frames_.size());
  // The first packets, where decoders may drop some (a recording cut in a
  // GOP, an open GOP's leading pictures): those that make no frame decoded
  // from the stream's start are not frames (at least one must be), and
  // the timelines below are made without them. Not for MPEG-4 Part 2,
  // whose packets may name other frames (ApplyShownOrderTimeline).
  const int64_t probed = made_from_start && !mpeg4 ? PacketsToProbe(index.frames_, known_pts, picture_orders) : 0;
  if (probed > 0) {
    // A probe that fails (the container cannot be opened again, the
    // decoder not opened) leaves every packet a frame.
    absl::StatusOr<std::vector<bool>> made = made_from_start(demuxer, probed);
    codecpar = demuxer.stream()->codecpar;  // the container was opened again
    if (made.ok() && std::find(made->begin(), made->end(), true) != made->end()) {
      std::vector<int64_t> position(index.frames_.size(), -1);  // old position -> new
      size_t next = 0;
      for (size_t k = 0; k < index.frames_.size(); ++k) {
        if (static_cast<int64_t>(k) < probed && !(*made)[k]) {
          index.frameless_.push_back({index.frames_[k].decode_order, index.frames_[k].size, index.frames_[k].pts});
          continue;
        }
        position[k] = static_cast<int64_t>(next);
        index.frames_[next] = index.frames_[k];
        known_pts[next] = known_pts[k];
        if (!picture_orders.empty()) picture_orders[next] = picture_orders[k];
        ++next;
      }
      index.frames_.resize(next);
      known_pts.resize(next);
      if (!picture_orders.empty()) picture_orders.resize(next);
      std::vector<size_t> kept_missing;
      for (size_t m : missing_pts) {
        if (position[m] >= 0) kept_missing.push_back(static_cast<size_t>(position[m]));
      }
      missing_pts = std::move(kept_missing);
      std::erase_if(untimed_keys, [&](auto& key) {
        if (key.first >= position.size() || position[key.first] < 0) return true;
        key.first = static_cast<size_t>(position[key.first]);
        return false;
      });
    }
  }
  const bool decode_times = order_reader == nullptr && !mpeg4 && every_pts_is_dts && codecpar->video_delay > 0 &&
                            PlaceByPictureOrderOverDecodeTimes(demuxer, index.frames_, fallback_duration);
  codecpar = demuxer.stream()->codecpar;  // the container may have been opened again
  // B-VOPs are shown before the P-VOP decoded ahead of them: equal pts and
  // dts throughout are decode times. Either way the decoder must hold a
  // frame back (IsPackedMpeg4).
  // A marker without placeholders is a stream unpacked since
  // (mpeg4_unpack_bframes rewrites the marker in one place only).
  if (codecpar->video_delay > 0 && ((packed && placeholders) || (b_vops && every_pts_is_dts)) &&
      ApplyShownOrderTimeline(index.frames_, vop_types, fallback_duration)) {
    for (const FrameEntry& f : index.frames_) index.shown_order_dts_.push_back(f.dts);
    missing_pts.clear();
  } else if (decode_times) {
    for (const FrameEntry& f : index.frames_) index.by_dts_.emplace_back(f.dts, f.decode_order);
    std::sort(index.by_dts_.begin(), index.by_dts_.end());
    missing_pts.clear();
  } else if (order_reader != nullptr && PlaceUntimedByPictureOrder(index.frames_, known_pts, picture_orders,
                                                                   fallback_duration, &index.misplaced_pts_)) {
    // Packets with a dts and no pts were placed too. A container pts that
    // was out of place names no packet (another may carry it too).
    index.names_untimed_ = true;
    missing_pts.clear();
    std::sort(index.misplaced_pts_.begin(), index.misplaced_pts_.end());
  } else {
    PlaceLeadingUntimed(index.frames_, fallback_duration);
  }
  // Left at their dts when the times do not fit the model.
  // MPEG-1/2 and MPEG-4 Part 2 video that holds pictures back: as its
  // decoder shows them (an AVI unpacked by mpeg4_unpack_bframes keeps the
  // empty chunks of its placeholders, so its dts skip slots after the first
  // picture, which one reorder delay cannot fit).
  const bool by_anchors =
      (codecpar->codec_id == AV_CODEC_ID_MPEG1VIDEO || codecpar->codec_id == AV_CODEC_ID_MPEG2VIDEO || mpeg4) &&
      codecpar->video_delay > 0;
  if (!missing_pts.empty() &&
      ((by_anchors && PlaceMissingByAnchors(index.frames_, missing_pts, fallback_duration)) ||
       InferMissingPts(index.frames_, missing_pts,
                       ExpectedReorderDelay(index.frames_, demuxer.stream()->codecpar->video_delay)))) {
    for (size_t m : missing_pts) {
      index.inferred_by_dts_.emplace_back(index.frames_[m].dts, index.frames_[m].decode_order);
    }
    std::sort(index.inferred_by_dts_.begin(), index.inferred_by_dts_.end());
  }
  if (splices.active()) {
    if (index.names_untimed_) {
      for (const auto& [i, pos] : untimed_keys) {
        if (i < index.frames_.size()) splices.AddKey(index.frames_[i].pts, pos);
      }
    }
    splices.Finish();
    demuxer.UseSplices(std::move(splices));
  }
  if (index.frames_.empty()) {
    return absl::DataLossError(absl::StrCat(
        "stream ", demuxer.stream_index(), " has no packets",
        demuxer.last_error() != 0 ? absl::StrCat(": ", AvErrorText(demuxer.last_error())) : ""));
  }
  const int64_t packets = packets_read;

  std::vector<FrameEntry>& frames = index.frames_;
  for (const FrameEntry& f : frames) {
    if (f.key) index.key_orders_.push_back(f.decode_order);
  }
  std::stable_sort(frames.begin(), frames.end(),
                   [](const FrameEntry& a, const FrameEntry& b) { return a.pts < b.pts; });
  index.index_of_order_.assign(packets, -1);
  index.earliest_timestamp_ = frames.front().pts;
  int64_t first_order = packets;
  for (size_t i = 0; i < frames.size(); ++i) {
    FrameEntry& f = frames[i];
    index.index_of_order_[f.decode_order] = static_cast<int64_t>(i);
    if (f.decode_order < first_order) {
      first_order = f.decode_order;
      index.first_in_decode_order_ = static_cast<int64_t>(i);
    }
    if (f.dts != AV_NOPTS_VALUE)
      index.earliest_timestamp_ = std::min(index.earliest_timestamp_, f.dts);
    if (f.duration <= 0) {
      if (i + 1 < frames.size() && frames[i + 1].pts > f.pts) {
        f.duration = SaturatingSub(frames[i + 1].pts, f.pts);
      } else {
        f.duration = i > 0 && frames[i - 1].duration > 0 ? frames[i - 1].duration
                                                         : std::max<int64_t>(fallback_duration, 1);
      }
    }
  }
  return index;
}

int64_t FrameIndex::Find(int64_t pts) const {
  auto it = std::lower_bound(frames_.begin(), frames_.end(), pts,
                             [](const FrameEntry& f, int64_t value) { return f.pts < value; });
  return it != frames_.end() && it->pts == pts ? it - frames_.begin() : -1;
}

int64_t FrameIndex::FindPacket(int64_t pts, int64_t dts) const {
  if (shown_order()) {
    auto it = std::lower_bound(shown_order_dts_.begin(), shown_order_dts_.end(), dts);
    return dts != AV_NOPTS_VALUE && it != shown_order_dts_.end() && *it == dts
               ? index_of_order_[it - shown_order_dts_.begin()]
               : -1;
  }
  if (pts != AV_NOPTS_VALUE) return Find(pts);
  if (dts == AV_NOPTS_VALUE) return -1;
  if (inferred_by_dts_.empty()) return Find(dts);
  auto it = std::lower_bound(inferred_by_dts_.begin(), inferred_by_dts_.end(), std::make_pair(dts, int64_t{-1}));
  return it != inferred_by_dts_.end() && it->first == dts ? index_of_order_[it->second] : -1;
}

absl::StatusOr<bool> FirstPtsIsADecodeTime(Demuxer& demuxer) {
  const AVCodecParameters* par = demuxer.stream()->codecpar;
  if ((par->codec_id != AV_CODEC_ID_H264 && par->codec_id != AV_CODEC_ID_HEVC) || par->video_delay <= 0 ||
      std::string_view(demuxer.format()->iformat->name) != "mov,mp4,m4a,3gp,3g2,mj2") {
    return false;
  }
  constexpr int kMaxDiscarded = 16;
  PacketPtr packet = MakePacket();
  int64_t first_dts = AV_NOPTS_VALUE;
  bool decode_time = false;
  for (int read = 0; read <= kMaxDiscarded && demuxer.ReadPacket(packet.get()); ++read) {
    if (first_dts == AV_NOPTS_VALUE) first_dts = packet->dts;
    if ((packet->flags & AV_PKT_FLAG_DISCARD) != 0) continue;
    decode_time = packet->pts != AV_NOPTS_VALUE && packet->pts == packet->dts;
    break;
  }
  if (first_dts == AV_NOPTS_VALUE) return false;
  if (absl::Status s = demuxer.Seek(first_dts); !s.ok()) return s;
  return decode_time;
}

int64_t FrameIndex::FindByDts(int64_t dts) const {
  auto it = std::lower_bound(by_dts_.begin(), by_dts_.end(), std::make_pair(dts, int64_t{-1}));
  return dts != AV_NOPTS_VALUE && it != by_dts_.end() && it->first == dts ? index_of_order_[it->second] : -1;
}

int64_t FrameIndex::FindAtOrBefore(int64_t pts) const { return FindAfter(pts) - 1; }

int64_t FrameIndex::FindAfter(int64_t pts) const {
  auto it = std::upper_bound(frames_.begin(), frames_.end(), pts,
                             [](int64_t value, const FrameEntry& f) { return value < f.pts; });
  return it - frames_.begin();
}

int32_t FrameIndex::SizeOfFrameless(int64_t order) const {
  auto it = std::lower_bound(frameless_.begin(), frameless_.end(), order,
                             [](const Frameless& f, int64_t o) { return f.order < o; });
  return it != frameless_.end() && it->order == order ? it->size : -1;
}

int64_t FrameIndex::FramelessOrderOf(int64_t pts) const {
  if (pts == AV_NOPTS_VALUE) return -1;
  for (const Frameless& f : frameless_) {
    if (f.pts == pts) return f.order;
  }
  return -1;
}

int64_t FrameIndex::TimedBefore(int64_t order) const {
  int64_t found = AV_NOPTS_VALUE;
  int timed = 0;
  for (int64_t o = std::min(order, packets()) - 1, steps = 0; o >= 0 && steps < kTimedSearch && timed < 2; --o, ++steps) {
    if (index_of_order_[o] < 0) continue;
    const FrameEntry& f = frames_[index_of_order_[o]];
    if (f.untimed) continue;
    found = f.dts != AV_NOPTS_VALUE ? f.dts : f.pts;
    ++timed;
  }
  return found;
}

std::vector<int64_t> FrameIndex::StartPoints(int64_t index, int max) const {
  std::vector<int64_t> points;
  const FrameEntry& target = frames_[index];
  auto it = std::upper_bound(key_orders_.begin(), key_orders_.end(), target.decode_order);
  // Only leading pictures of open GOPs are skipped, so a few steps suffice.
  int budget = 4 * max + 8;
  while (it != key_orders_.begin() && static_cast<int>(points.size()) < max && budget-- > 0) {
    --it;
    int64_t key_index = index_of_order_[*it];
    if (frames_[key_index].pts <= target.pts) points.push_back(key_index);
  }
  if (points.empty()) points.push_back(first_in_decode_order_);
  return points;
}

}  // namespace codecvisor::cpu
