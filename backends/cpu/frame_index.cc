// File: backends/cpu/frame_index.cc

#include "backends/cpu/frame_index.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "backends/cpu/av_util.h"

namespace codecvisor::cpu {

absl::StatusOr<FrameIndex> FrameIndex::Scan(Demuxer& demuxer, int64_t fallback_duration) {
  FrameIndex index;
  PacketPtr packet = MakePacket();
  int64_t order = 0;
  bool last_corrupt = false;
  while (demuxer.ReadPacket(packet.get())) {
    if ((packet->flags & AV_PKT_FLAG_DISCARD) != 0) continue;
    last_corrupt = (packet->flags & AV_PKT_FLAG_CORRUPT) != 0;
    if (order >= kMaxFrames) {
      return absl::ResourceExhaustedError(absl::StrCat("has more than ", kMaxFrames,
                                                       " frames in stream ", demuxer.stream_index(),
                                                       "; the frame table would be too large"));
    }
    FrameEntry entry;
    entry.pts = packet->pts != AV_NOPTS_VALUE ? packet->pts : packet->dts;
    if (entry.pts == AV_NOPTS_VALUE) {
      // No timestamp at all: continue the previous frame's timeline.
      entry.pts = index.frames_.empty() ? 0
                                        : index.frames_.back().pts +
                                              std::max<int64_t>(index.frames_.back().duration, 1);
    }
    entry.dts = packet->dts;
    entry.duration = packet->duration;
    entry.decode_order = order++;
    entry.key = (packet->flags & AV_PKT_FLAG_KEY) != 0;
    index.frames_.push_back(entry);
  }
  // A file cut short ends in a packet the demuxer could read only part of
  // (AV_PKT_FLAG_CORRUPT): its frame does not decode, so it is not counted.
  // Such packets earlier in the file are kept: damaged data often still
  // decodes (concealed), as the CLI shows.
  if (last_corrupt && !index.frames_.empty()) index.frames_.pop_back();
  if (index.frames_.empty()) {
    return absl::DataLossError(absl::StrCat(
        "stream ", demuxer.stream_index(), " has no packets",
        demuxer.last_error() != 0 ? absl::StrCat(": ", AvErrorText(demuxer.last_error())) : ""));
  }

  std::vector<FrameEntry>& frames = index.frames_;
  for (const FrameEntry& f : frames) {
    if (f.key) index.key_orders_.push_back(f.decode_order);
  }
  std::stable_sort(frames.begin(), frames.end(),
                   [](const FrameEntry& a, const FrameEntry& b) { return a.pts < b.pts; });
  index.index_of_order_.resize(frames.size());
  index.earliest_timestamp_ = frames.front().pts;
  for (size_t i = 0; i < frames.size(); ++i) {
    FrameEntry& f = frames[i];
    index.index_of_order_[f.decode_order] = static_cast<int64_t>(i);
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

int64_t FrameIndex::FindAtOrBefore(int64_t pts) const { return FindAfter(pts) - 1; }

int64_t FrameIndex::FindAfter(int64_t pts) const {
  auto it = std::upper_bound(frames_.begin(), frames_.end(), pts,
                             [](int64_t value, const FrameEntry& f) { return value < f.pts; });
  return it - frames_.begin();
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
  if (points.empty()) points.push_back(index_of_order_[0]);
  return points;
}

}  // namespace codecvisor::cpu
