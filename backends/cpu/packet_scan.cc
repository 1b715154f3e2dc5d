// File: backends/cpu/packet_scan.cc

#include "backends/cpu/packet_scan.h"

#include <algorithm>
#include <memory>
#include <span>

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

// MPEG-4 Part 2: reads each packet's first VOP into the scan. Reading
// vop_coded takes the width of vop_time_increment, from the video object
// layer header (the extradata's, else a key packet's).
class VopReader {
 public:
  explicit VopReader(const AVCodecParameters& par)
      : time_increment_bits_(
            par.extradata != nullptr
                ? VopTimeIncrementBits({par.extradata, static_cast<size_t>(std::max(par.extradata_size, 0))})
                : 0) {}

  void Read(const AVPacket& packet, PacketScan& scan) {
    FrameEntry& entry = scan.frames.back();
    const std::span<const uint8_t> data(packet.data, packet.data != nullptr ? packet.size : 0);
    if ((!scan.packed || time_increment_bits_ == 0) && entry.key && header_checks_ < kHeaderChecks) {
      ++header_checks_;
      scan.packed = scan.packed || HasPackedBitstreamMarker(data);
      if (time_increment_bits_ == 0) time_increment_bits_ = VopTimeIncrementBits(data);
    }
    const VopStart vop = FirstVop(data, time_increment_bits_);
    if (vop.coded && vop.coding_type >= 0 && vop.coding_type != kIVop) entry.key = false;
    // For PlaceMissingByAnchors: an S-VOP (global motion) is predicted and
    // shown as a P-VOP is; a placeholder's type stays unknown.
    if (vop.coded && vop.coding_type >= 0) {
      entry.picture_type = static_cast<int8_t>(vop.coding_type == kIVop   ? AV_PICTURE_TYPE_I
                                               : vop.coding_type == kBVop ? AV_PICTURE_TYPE_B
                                                                          : AV_PICTURE_TYPE_P);
    }
    scan.vop_types.push_back(static_cast<int8_t>(vop.coded ? vop.coding_type : -1));
    scan.b_vops = scan.b_vops || vop.coding_type == kBVop;
    scan.placeholders = scan.placeholders || (vop.coding_type >= 0 && !vop.coded);
  }

 private:
  int time_increment_bits_;
  int header_checks_ = 0;
};

// The scan's entry for `packet`, the `order`th of the stream, after the
// frames already in `scan`.
FrameEntry EntryOf(const AVPacket& packet, int64_t order, const PacketScan& scan) {
  FrameEntry entry;
  entry.pts = packet.pts != AV_NOPTS_VALUE ? packet.pts : packet.dts;
  if (entry.pts == AV_NOPTS_VALUE) {
    entry.untimed = true;
    // No timestamp at all: continue the previous frame's timeline.
    entry.pts = scan.frames.empty()
                    ? 0
                    : SaturatingAdd(scan.frames.back().pts, std::max<int64_t>(scan.frames.back().duration, 1));
  }
  entry.dts = packet.dts;
  entry.duration = packet.duration;
  entry.decode_order = order;
  entry.key = (packet.flags & AV_PKT_FLAG_KEY) != 0;
  return entry;
}

}  // namespace

void PacketScan::DropLast() {
  frames.pop_back();
  known_pts.pop_back();
  if (!vop_types.empty()) vop_types.pop_back();
  if (!picture_orders.empty()) picture_orders.pop_back();
  if (!missing_pts.empty() && missing_pts.back() == frames.size()) missing_pts.pop_back();
}

absl::StatusOr<PacketScan> ReadPackets(Demuxer& demuxer, int64_t max_frames) {
  const AVCodecParameters& par = *demuxer.stream()->codecpar;
  PacketScan scan(std::max<int64_t>(av_rescale_q(1, AVRational{1, 10}, demuxer.stream()->time_base), 1));
  scan.mpeg4 = par.codec_id == AV_CODEC_ID_MPEG4;
  scan.packed = IsPackedMpeg4(par);
  std::optional<VopReader> vops;
  if (scan.mpeg4) vops.emplace(par);
  // Containers whose times may restart part way (StreamSplices).
  const bool may_splice = (demuxer.format()->iformat->flags & AVFMT_TS_DISCONT) != 0;
  // The same containers time PES packets, not pictures: H.264 and HEVC
  // pictures smaller than one are left untimed, and placed by their
  // picture order counts.
  std::unique_ptr<PictureOrderReader> order_reader = may_splice ? PictureOrderReader::ForStream(par) : nullptr;
  scan.picture_ordered = order_reader != nullptr;
  // A container may flag pictures a decoder cannot start at as key frames
  // (an MP4 without a sync-sample table flags every sample; remuxed
  // Matroska too). H.264's decoder shows nothing until a real one, which
  // the seek's landing check sees; HEVC's and MPEG-4's decoders show
  // grey pictures made from missing references, so their flags are
  // checked against the bitstream (the parser's IRAP, the VOP type).
  std::unique_ptr<PictureOrderReader> hevc_keys =
      order_reader == nullptr && par.codec_id == AV_CODEC_ID_HEVC ? PictureOrderReader::ForStream(par) : nullptr;
  const PictureOrderReader* keys = order_reader != nullptr ? order_reader.get() : hevc_keys.get();
  const bool hevc = par.codec_id == AV_CODEC_ID_HEVC;
  // Raw video: every frame's packet has one size, so a last packet smaller
  // than the one before is a frame the file was cut inside (NUT does not
  // flag it corrupt); the decoder refuses it.
  const bool raw = par.codec_id == AV_CODEC_ID_RAWVIDEO;
  int last_size = -1, previous_size = -1;
  bool last_corrupt = false;
  int64_t last_pos = -1;
  int64_t order = 0;
  PacketPtr packet = MakePacket();
  while (demuxer.ReadPacket(packet.get())) {
    if ((packet->flags & AV_PKT_FLAG_DISCARD) != 0) continue;
    last_corrupt = (packet->flags & AV_PKT_FLAG_CORRUPT) != 0;
    previous_size = last_size;
    last_size = packet->size;
    const bool key = (packet->flags & AV_PKT_FLAG_KEY) != 0;
    if (may_splice) {
      MovePacketTimes(packet.get(), scan.splices.Place(packet->pos, packet->pts, packet->dts, packet->duration));
      if (key && packet->pts != AV_NOPTS_VALUE) {
        scan.splices.AddKey(packet->pts, packet->pos);
      } else if (key && packet->pos < 0 && last_pos >= 0) {
        scan.untimed_keys.emplace_back(scan.frames.size(), last_pos);
      }
      if (packet->pos >= 0) last_pos = packet->pos;
    }
    if (order >= max_frames) {
      return absl::ResourceExhaustedError(absl::StrCat("has more than ", max_frames, " frames in stream ",
                                                       demuxer.stream_index(), "; the frame table would be too large"));
    }
    if (packet->pts == AV_NOPTS_VALUE && packet->dts != AV_NOPTS_VALUE) scan.missing_pts.push_back(scan.frames.size());
    FrameEntry entry = EntryOf(*packet, order++, scan);
    if (order_reader != nullptr) {
      scan.picture_orders.push_back(order_reader->Read(*packet));
      entry.size = packet->size;
      entry.picture_type = static_cast<int8_t>(order_reader->last_type());
    }
    if (hevc_keys != nullptr) (void)hevc_keys->Read(*packet);
    if (hevc && keys != nullptr && keys->last_key() == 0) entry.key = false;
    scan.frames.push_back(entry);
    scan.known_pts.push_back(packet->pts != AV_NOPTS_VALUE);
    if (vops.has_value()) vops->Read(*packet, scan);
    scan.every_pts_is_dts = scan.every_pts_is_dts && packet->pts != AV_NOPTS_VALUE && packet->pts == packet->dts;
  }
  if ((last_corrupt || (raw && previous_size > last_size)) && !scan.frames.empty()) scan.DropLast();
  if (std::any_of(scan.picture_orders.begin(), scan.picture_orders.end(),
                  [](const auto& c) { return c.has_value(); })) {
    while (!scan.picture_orders.back().has_value()) scan.DropLast();
  }
  return scan;
}

std::vector<FrameEntry> KeepFramesMade(PacketScan& scan, const std::vector<bool>& made, int64_t probed) {
  std::vector<FrameEntry> frameless;
  std::vector<int64_t> position(scan.frames.size(), -1);  // old position -> new
  size_t next = 0;
  for (size_t k = 0; k < scan.frames.size(); ++k) {
    if (static_cast<int64_t>(k) < probed && !made[k]) {
      frameless.push_back(scan.frames[k]);
      continue;
    }
    position[k] = static_cast<int64_t>(next);
    scan.frames[next] = scan.frames[k];
    scan.known_pts[next] = scan.known_pts[k];
    if (!scan.picture_orders.empty()) scan.picture_orders[next] = scan.picture_orders[k];
    ++next;
  }
  scan.frames.resize(next);
  scan.known_pts.resize(next);
  if (!scan.picture_orders.empty()) scan.picture_orders.resize(next);
  std::vector<size_t> kept_missing;
  for (size_t m : scan.missing_pts) {
    if (position[m] >= 0) kept_missing.push_back(static_cast<size_t>(position[m]));
  }
  scan.missing_pts = std::move(kept_missing);
  std::erase_if(scan.untimed_keys, [&](auto& key) {
    if (key.first >= position.size() || position[key.first] < 0) return true;
    key.first = static_cast<size_t>(position[key.first]);
    return false;
  });
  return frameless;
}

}  // namespace codecvisor::cpu
