// File: backends/cpu/frame_timeline.h
//
// The timeline rules the exact-mode scan (FrameIndex::Scan) applies to a
// stream's packets, each a pure function of the packets' table in decode
// order: times for packets that have none (InferMissingPts,
// PlaceMissingByAnchors, PlaceLeadingUntimed; picture_order.h places by
// picture order counts), MPEG-4 Part 2's shown order
// (ApplyShownOrderTimeline), and which first packets to check by decoding
// (PacketsToProbe). Tested on given tables in frame_index_test.cc.

#ifndef CODECVISOR_BACKENDS_CPU_FRAME_TIMELINE_H_
#define CODECVISOR_BACKENDS_CPU_FRAME_TIMELINE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace codecvisor::cpu {

struct FrameEntry {
  int64_t pts;           // the packet's pts, else inferred (InferMissingPts), else its dts
  int64_t dts;           // AV_NOPTS_VALUE if the container gives none
  int64_t duration;      // > 0: the packet's, else the gap to the next pts
  int64_t decode_order;  // position among the stream's packets, from 0
  bool key;
  bool untimed = false;  // the packet had neither pts nor dts
  // The picture's coding type (AV_PICTURE_TYPE_*), where the scan reads
  // picture headers (PictureOrderReader); else NONE (0).
  int8_t picture_type = 0;
  int32_t size = 0;  // the packet's bytes, where names_untimed() may need them (else 0)
};

// Presentation times for packets that have a dts but no pts (MPEG program
// streams carry a PTS on only some PES packets): the times the decoder
// then reports for their frames. Sorted, presentation times are the decode
// times shifted by the stream's reorder delay, pts[k] = dts[k] + delay; the
// slots no known pts takes go, in ascending order, to the packets at
// `missing` (positions in `frames`, which is in decode order, ascending).
// A delay fits when it puts every known pts on its own slot, leaves one
// slot for each missing one, and shows no frame before its dts. The delay
// taken is `expected_delay` (the codec's reorder delay, in time base units;
// < 0: unknown) if it fits, else the smallest that does: both fit when
// every reference picture lacks a pts (AVI), and only the codec says which.
// With no pts known at all, `expected_delay` is taken, slots in decode
// order. True when they were filled; false, changing nothing, if none fits
// (or the delay is unknown and no pts is) or a dts is unknown.
bool InferMissingPts(std::vector<FrameEntry>& frames, const std::vector<size_t>& missing,
                     int64_t expected_delay);

// MPEG-1 and MPEG-2 video that is not low-delay (the decoder holds a
// picture back: video_delay > 0): the decoder shows an I or P picture when
// it is given the next I or P picture, and a B picture at once, and a
// frame whose packet had no pts carries the dts of the packet it was
// shown at. So a packet with a dts and no pts (`missing`: positions in
// `frames`, which is in decode order) is shown at its own dts if it is a
// B picture, and at the dts of the next I or P packet if it is an I or P
// picture (the last one: after the B pictures that follow it, the last
// one's dts plus `fallback_duration`). Taken before InferMissingPts,
// whose single delay can give a picture a slot its decoder does not show
// it at (a program stream cut inside a GOP, whose first pictures lost
// their references and were left out). False, changing nothing, unless
// every packet's picture_type is known, and where a time given would be
// another frame's or another given one.
bool PlaceMissingByAnchors(std::vector<FrameEntry>& frames, const std::vector<size_t>& missing,
                           int64_t fallback_duration);

// The timeline of an MPEG-4 Part 2 stream whose container times are not
// display times: a packed bitstream (mpeg4_bitstream.h), or B-VOPs muxed
// with every pts equal to its dts (libxvid's output in MP4). Its decoder
// shows one frame for each packet after the first, in display order, and
// the last one when drained; the frame shown while packet k + 1 is sent
// carries that packet's dts (pkt_dts), with any number of decoder threads
// and after a seek to an I-VOP. Frame k is therefore named and timed by
// the dts of packet k + 1, and the last frame by its own packet's dts plus
// its duration (else `fallback_duration`), so that frames are numbered in
// the order the decoder (and the ffmpeg CLI) shows them. A frame is a key
// frame when its packet's first VOP is a coded I-VOP (`vop_types`: from
// FirstVop, -1 where it is not coded), not when the container says so:
// AVI indexes flag packed placeholders too (not-coded VOPs, some of type
// I), from which a decode would start on a P-VOP with no reference. `frames` is in decode order. False, changing
// nothing, unless every dts is known and increasing and `vop_types` has one entry per frame.
bool ApplyShownOrderTimeline(std::vector<FrameEntry>& frames, const std::vector<int8_t>& vop_types,
                             int64_t fallback_duration);

// How many of a stream's first packets (`frames`, in decode order, whose
// pts is the packet's own where `known_pts`, with their picture order
// `counts` where known, else empty) to decode before counting them as
// frames: those up to kLeadingWindow packets past the first key frame,
// when packets come before it (a recording cut in a GOP, whose pictures
// lack their references) or a packet in that window is shown before it,
// by its pts or its count (the leading pictures of an open GOP), or, in a
// container that times every picture (`pictures_timed`: not MPEG-TS or
// -PS, which time PES packets), the key frame having a pts, one that is
// not a key frame has none or the key frame's own (leading pictures whose
// times a cut dropped or clamped); else 0.
// Also 0 when no key frame is among the first kMaxProbedPackets.
inline constexpr size_t kLeadingWindow = 32;
inline constexpr size_t kMaxProbedPackets = 1024;
int64_t PacketsToProbe(const std::vector<FrameEntry>& frames, const std::vector<bool>& known_pts,
                       const std::vector<std::optional<int64_t>>& counts, bool pictures_timed = true);

// The stream's reorder delay in time base units: the frames the decoder
// holds back (`video_delay`, from the codec's headers) times the usual gap
// between decode times; -1 if either is unknown.
int64_t ExpectedReorderDelay(const std::vector<FrameEntry>& frames, int video_delay);

// Packets with no timestamp at all before the first with one (FFmpeg reads
// a Matroska block's negative time as none) were given the times 0, 1
// duration, ... on the scan's way, which may be the later frames' own:
// they come before every timed frame, so they end where the earliest timed
// frame starts, a packet's duration (else `fallback_duration`) apart, in
// decode order (as any run of untimed packets is placed). With B-frames
// the last of them may follow the first timed packets in decode order:
// untimed packets within 16 packets of the first timed one are leading
// too. `frames` is in decode order.
void PlaceLeadingUntimed(std::vector<FrameEntry>& frames, int64_t fallback_duration);

}  // namespace codecvisor::cpu

#endif  // CODECVISOR_BACKENDS_CPU_FRAME_TIMELINE_H_
