// File: backends/cpu/av_util.h
//
// Small helpers shared by the cpu backend's files: owning pointers for
// libav* objects, AVERROR codes as text, and the timestamp a decoded frame is
// identified by. Thread-compatible: no shared state.

#ifndef CODECVISOR_BACKENDS_CPU_AV_UTIL_H_
#define CODECVISOR_BACKENDS_CPU_AV_UTIL_H_

#include <cstdint>
#include <memory>
#include <string>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavutil/frame.h>
}

namespace codecvisor::cpu {

struct PacketDeleter {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
struct FrameDeleter {
  void operator()(AVFrame* f) const { av_frame_free(&f); }
};
using PacketPtr = std::unique_ptr<AVPacket, PacketDeleter>;
using FramePtr = std::unique_ptr<AVFrame, FrameDeleter>;

// av_packet_alloc / av_frame_alloc; throw std::bad_alloc on failure (caught
// at the C ABI edge, where it becomes CV_ERROR_RESOURCE_EXHAUSTED).
PacketPtr MakePacket();
FramePtr MakeFrame();

// Timestamp arithmetic that saturates instead of overflowing: timestamps
// come from the file and may be anything.
inline int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_add_overflow(a, b, &r)) return r;
  return b > 0 ? INT64_MAX : INT64_MIN + 1;  // INT64_MIN is AV_NOPTS_VALUE
}
inline int64_t SaturatingSub(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_sub_overflow(a, b, &r)) return r;
  return b < 0 ? INT64_MAX : INT64_MIN + 1;
}

// Adds `offset` to the packet's pts and dts, those it has (saturating).
inline void MovePacketTimes(AVPacket* packet, int64_t offset) {
  if (packet->pts != AV_NOPTS_VALUE) packet->pts = SaturatingAdd(packet->pts, offset);
  if (packet->dts != AV_NOPTS_VALUE) packet->dts = SaturatingAdd(packet->dts, offset);
}

// `ticks` of `time_base` in seconds, multiplied before divided (as
// torchcodec does): 17920 ticks of 1/12800 s are 1.4 s exactly, where
// ticks * av_q2d(time_base) gives 1.4000000000000001, and a stream that
// starts at its header's 1.4 s would refuse a request for 1.4 s.
inline double Seconds(int64_t ticks, AVRational time_base) {
  return static_cast<double>(ticks) * time_base.num / time_base.den;
}

// A double clamped into int64_t's range (NaN gives 0) before conversion.
int64_t ClampToInt64(double value);

// av_strerror's text for an AVERROR code, e.g. "Invalid data found when
// processing input".
std::string AvErrorText(int error);

// The timestamp a decoded frame is matched against the frame table by: its pts
// (the packet's, reordered by the decoder), else libavcodec's best-effort
// guess, else AV_NOPTS_VALUE.
int64_t FrameTimestamp(const AVFrame* frame);

}  // namespace codecvisor::cpu

#endif  // CODECVISOR_BACKENDS_CPU_AV_UTIL_H_
