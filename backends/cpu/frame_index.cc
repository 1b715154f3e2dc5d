// File: backends/cpu/frame_index.cc

#include "backends/cpu/frame_index.h"

#include <algorithm>
#include <cerrno>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/av_util.h"
#include "backends/cpu/decode_times.h"
#include "backends/cpu/packet_scan.h"
#include "backends/cpu/picture_order.h"

namespace codecvisor::cpu {

absl::StatusOr<FrameIndex> FrameIndex::Scan(Demuxer& demuxer, int64_t fallback_duration,
                                            const LeadingProbe& made_from_start) {
  absl::StatusOr<PacketScan> read = ReadPackets(demuxer, kMaxFrames);
  if (!read.ok()) return read.status();
  // Reading stopped for want of memory, not at the stream's end: a count
  // of the packets read so far would be short.
  if (demuxer.last_error() == AVERROR(ENOMEM)) {
    return absl::ResourceExhaustedError("out of memory reading the stream's packets to count its frames");
  }
  PacketScan& scan = *read;
  const int64_t packets = static_cast<int64_t>(scan.frames.size());
  FrameIndex index;
  // The first packets, where decoders may drop some (a recording cut in a
  // GOP, an open GOP's leading pictures): those that make no frame decoded
  // from the stream's start are not frames (at least one must be), and
  // the timelines below are made without them. Not for MPEG-4 Part 2,
  // whose packets may name other frames (ApplyShownOrderTimeline).
  // MPEG-TS and -PS time PES packets, not pictures: there a picture without
  // a pts is no sign of a leading one.
  const bool pictures_timed = (demuxer.format()->iformat->flags & AVFMT_TS_DISCONT) == 0;
  const int64_t probed = made_from_start && !scan.mpeg4
                             ? PacketsToProbe(scan.frames, scan.known_pts, scan.picture_orders, pictures_timed)
                             : 0;
  if (probed > 0) {
    // A probe that fails (the container cannot be opened again, the
    // decoder not opened) leaves every packet a frame.
    absl::StatusOr<std::vector<bool>> made = made_from_start(demuxer, probed);
    if (made.ok() && std::find(made->begin(), made->end(), true) != made->end()) {
      for (const FrameEntry& f : KeepFramesMade(scan, *made, probed)) {
        index.frameless_.push_back({f.decode_order, f.size, f.pts});
      }
    }
  }
  index.PlaceTimes(demuxer, scan, fallback_duration);
  if (scan.splices.active()) {
    if (index.names_untimed_) {
      for (const auto& [i, pos] : scan.untimed_keys) {
        if (i < scan.frames.size()) scan.splices.AddKey(scan.frames[i].pts, pos);
      }
    }
    scan.splices.Finish();
    demuxer.UseSplices(std::move(scan.splices));
  }
  if (scan.frames.empty()) {
    return absl::DataLossError(
        absl::StrCat("stream ", demuxer.stream_index(), " has no packets",
                     demuxer.last_error() != 0 ? absl::StrCat(": ", AvErrorText(demuxer.last_error())) : ""));
  }
  index.frames_ = std::move(scan.frames);
  index.Order(packets, fallback_duration);
  return index;
}

void FrameIndex::PlaceTimes(Demuxer& demuxer, PacketScan& scan, int64_t fallback_duration) {
  std::vector<FrameEntry>& frames = scan.frames;
  const bool decode_times = !scan.picture_ordered && !scan.mpeg4 && scan.every_pts_is_dts &&
                            demuxer.stream()->codecpar->video_delay > 0 &&
                            PlaceByPictureOrderOverDecodeTimes(demuxer, frames, fallback_duration);
  // The container may have been opened again (by the leading probe, or
  // just now): read its parameters afresh.
  const AVCodecParameters& par = *demuxer.stream()->codecpar;
  // B-VOPs are shown before the P-VOP decoded ahead of them: equal pts and
  // dts throughout are decode times. Either way the decoder must hold a
  // frame back (IsPackedMpeg4).
  // A marker without placeholders is a stream unpacked since
  // (mpeg4_unpack_bframes rewrites the marker in one place only).
  if (par.video_delay > 0 && ((scan.packed && scan.placeholders) || (scan.b_vops && scan.every_pts_is_dts)) &&
      ApplyShownOrderTimeline(frames, scan.vop_types, fallback_duration)) {
    for (const FrameEntry& f : frames) shown_order_dts_.push_back(f.dts);
    scan.missing_pts.clear();
  } else if (decode_times) {
    for (const FrameEntry& f : frames) by_dts_.emplace_back(f.dts, f.decode_order);
    std::sort(by_dts_.begin(), by_dts_.end());
    scan.missing_pts.clear();
  } else if (scan.picture_ordered && PlaceUntimedByPictureOrder(frames, scan.known_pts, scan.picture_orders,
                                                                fallback_duration, &misplaced_pts_)) {
    // Packets with a dts and no pts were placed too. A container pts that
    // was out of place names no packet (another may carry it too).
    names_untimed_ = true;
    scan.missing_pts.clear();
    std::sort(misplaced_pts_.begin(), misplaced_pts_.end());
  } else {
    PlaceLeadingUntimed(frames, fallback_duration);
  }
  // Left at their dts when the times do not fit the model.
  // MPEG-1/2 and MPEG-4 Part 2 video that holds pictures back: as its
  // decoder shows them (an AVI unpacked by mpeg4_unpack_bframes keeps the
  // empty chunks of its placeholders, so its dts skip slots after the first
  // picture, which one reorder delay cannot fit).
  const bool by_anchors =
      (par.codec_id == AV_CODEC_ID_MPEG1VIDEO || par.codec_id == AV_CODEC_ID_MPEG2VIDEO || scan.mpeg4) &&
      par.video_delay > 0;
  const std::vector<size_t>& missing = scan.missing_pts;
  if (!missing.empty() && ((by_anchors && PlaceMissingByAnchors(frames, missing, fallback_duration)) ||
                           InferMissingPts(frames, missing, ExpectedReorderDelay(frames, par.video_delay)))) {
    for (size_t m : missing) inferred_by_dts_.emplace_back(frames[m].dts, frames[m].decode_order);
    std::sort(inferred_by_dts_.begin(), inferred_by_dts_.end());
  }
}

void FrameIndex::Order(int64_t packets, int64_t fallback_duration) {
  std::vector<FrameEntry>& frames = frames_;
  for (const FrameEntry& f : frames) {
    if (f.key) key_orders_.push_back(f.decode_order);
  }
  std::stable_sort(frames.begin(), frames.end(),
                   [](const FrameEntry& a, const FrameEntry& b) { return a.pts < b.pts; });
  index_of_order_.assign(packets, -1);
  earliest_timestamp_ = frames.front().pts;
  int64_t first_order = packets;
  for (size_t i = 0; i < frames.size(); ++i) {
    FrameEntry& f = frames[i];
    index_of_order_[f.decode_order] = static_cast<int64_t>(i);
    if (f.decode_order < first_order) {
      first_order = f.decode_order;
      first_in_decode_order_ = static_cast<int64_t>(i);
    }
    if (f.dts != AV_NOPTS_VALUE) earliest_timestamp_ = std::min(earliest_timestamp_, f.dts);
    if (f.duration <= 0) {
      if (i + 1 < frames.size() && frames[i + 1].pts > f.pts) {
        f.duration = SaturatingSub(frames[i + 1].pts, f.pts);
      } else {
        f.duration = i > 0 && frames[i - 1].duration > 0 ? frames[i - 1].duration
                                                         : std::max<int64_t>(fallback_duration, 1);
      }
    }
  }
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
