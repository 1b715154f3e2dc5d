// File: backends/cpu/mpeg4_bitstream.h
//
// What the exact-mode scan reads from MPEG-4 Part 2 packets without
// decoding them: whether the stream is a "packed bitstream", and whether a
// packet starts with an I-VOP.
//
// A packed bitstream (DivX and Xvid in AVI, made for Video for Windows'
// one-packet-in, one-frame-out rule) puts a B-VOP in the packet of the P-VOP
// it precedes in display order and sends a placeholder packet (a few bytes,
// a not-coded VOP) where the B-VOP's own would be. The encoder marks such a
// stream in its user data, e.g. "DivX503b1393p" (the last letter 'p'), which
// FFmpeg's mpeg4 decoder reads to unpack it. Container times then do not
// follow the order the decoder shows frames in, and AVI indexes flag some
// placeholders as key frames (frame_index.h, ApplyShownOrderTimeline).

#ifndef CODECVISOR_BACKENDS_CPU_MPEG4_BITSTREAM_H_
#define CODECVISOR_BACKENDS_CPU_MPEG4_BITSTREAM_H_

#include <cstdint>
#include <span>

namespace codecvisor::cpu {

// VOP coding types (ISO/IEC 14496-2, vop_coding_type).
inline constexpr int kIVop = 0;
inline constexpr int kBVop = 2;

// How far into a packet a VOP start code is looked for: the headers before
// it (visual object sequence, object, object layer, user data) take a few
// dozen bytes.
inline constexpr size_t kVopSearchBytes = 1024;

// Whether `bytes` (extradata or a packet) hold user data (start code
// 00 00 01 B2) of the form "DivX<version>Build<build>p" or
// "DivX<version>b<build>p": a packed bitstream.
bool HasPackedBitstreamMarker(std::span<const uint8_t> bytes);

// The width in bits of vop_time_increment, from the first video object
// layer header (start code 00 00 01 20..2F) in `bytes`: enough bits for
// vop_time_increment_resolution - 1, at least 1. 0 if there is no such
// header or it ends before the resolution, or the resolution is 0.
int VopTimeIncrementBits(std::span<const uint8_t> bytes);

// The first VOP (start code 00 00 01 B6) in the first kVopSearchBytes of a
// packet.
struct VopStart {
  int coding_type = -1;  // 0 I, 1 P, 2 B, 3 S; -1 if no VOP starts there
  // vop_coded: false for a placeholder (a VOP header and nothing else, as a
  // packed bitstream sends where a B-VOP was). Read only with the width of
  // vop_time_increment (`time_increment_bits` > 0), else true.
  bool coded = true;
};
VopStart FirstVop(std::span<const uint8_t> packet, int time_increment_bits);

}  // namespace codecvisor::cpu

#endif  // CODECVISOR_BACKENDS_CPU_MPEG4_BITSTREAM_H_
