// File: backends/cpu/decode_times.cc

#include "backends/cpu/decode_times.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>

#include "backends/cpu/av_util.h"
#include "backends/cpu/picture_order.h"

namespace codecvisor::cpu {

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

}  // namespace codecvisor::cpu
