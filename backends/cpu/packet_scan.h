// File: backends/cpu/packet_scan.h
//
// The exact-mode scan's first pass (FrameIndex::Scan): one read of a
// stream's packets, from the demuxer's position to the end, into a frame
// entry per packet in decode order, with what the timeline rules
// (frame_timeline.h, picture_order.h) then need: which packets had a pts,
// H.264/HEVC picture order counts where the container times PES packets,
// MPEG-4 Part 2 VOP types, and the splices of a container whose times
// restart part way. No timeline rule is applied here.

#ifndef CODECVISOR_BACKENDS_CPU_PACKET_SCAN_H_
#define CODECVISOR_BACKENDS_CPU_PACKET_SCAN_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cpu/demuxer.h"
#include "backends/cpu/frame_timeline.h"
#include "backends/cpu/stream_splices.h"

namespace codecvisor::cpu {

// Whether the stream's extradata marks it an MPEG-4 Part 2 packed bitstream
// (mpeg4_bitstream.h) whose decoder holds frames back (video_delay, from
// the header's low_delay: a low-delay stream has no B-VOPs to pack, and
// shows frame k as packet k is sent, whatever its marker says). The scan
// also finds the mark in key packets.
bool IsPackedMpeg4(const AVCodecParameters& par);

struct PacketScan {
  explicit PacketScan(int64_t min_splice) : splices(min_splice) {}

  // Decode order; every packet read but those flagged AV_PKT_FLAG_DISCARD.
  std::vector<FrameEntry> frames;
  std::vector<bool> known_pts;      // by decode position: the packet had a pts
  std::vector<size_t> missing_pts;  // decode positions of packets with a dts but no pts
  // By decode position, where picture_ordered (else empty).
  std::vector<std::optional<int64_t>> picture_orders;
  // The container (one that allows timestamp discontinuities) times PES
  // packets, not pictures: H.264 and HEVC counts were read to place the
  // pictures it left untimed.
  bool picture_ordered = false;
  // Key packets without a time or a position (decode positions), with the
  // last position read before each: where a seek to them goes once they
  // have a time.
  std::vector<std::pair<size_t, int64_t>> untimed_keys;
  StreamSplices splices;  // times already moved by them in `frames`

  // MPEG-4 Part 2 only: each packet's first VOP type (-1 for a
  // placeholder, which is not coded), whether the stream is packed (the
  // extradata's marker or a key frame's), has B-VOPs, and sends
  // placeholders.
  bool mpeg4 = false;
  std::vector<int8_t> vop_types;
  bool packed = false;
  bool b_vops = false;
  bool placeholders = false;

  // Every packet's pts is its dts (decode times, for MPEG-4's B-VOPs and
  // for PlaceByPictureOrderOverDecodeTimes).
  bool every_pts_is_dts = true;

  // Removes the last frame and what is kept about it.
  void DropLast();
};

// Reads every packet of the demuxer's stream (as FrameIndex::Scan says).
// ResourceExhausted beyond `max_frames`. A frame the file was cut inside
// (the last packet corrupt, raw video's short last packet) and H.264 or
// HEVC packets at the end with no picture header the parser can read are
// not kept: the decoder makes no frame of them. Such packets earlier in the
// file are kept: damaged data often still decodes (concealed).
absl::StatusOr<PacketScan> ReadPackets(Demuxer& demuxer, int64_t max_frames);

// Keeps of the first `probed` frames those that `made` says decoded into
// one (at least one did), moving every by-position list with them; returns
// the entries that made none, in decode order.
std::vector<FrameEntry> KeepFramesMade(PacketScan& scan, const std::vector<bool>& made, int64_t probed);

}  // namespace codecvisor::cpu

#endif  // CODECVISOR_BACKENDS_CPU_PACKET_SCAN_H_
