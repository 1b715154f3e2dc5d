// File: backends/cpu/av_util.cc

#include "backends/cpu/av_util.h"

#include <new>

extern "C" {
#include <libavutil/error.h>
}

namespace codecvisor::cpu {

PacketPtr MakePacket() {
  PacketPtr packet(av_packet_alloc());
  if (packet == nullptr) throw std::bad_alloc();
  return packet;
}

FramePtr MakeFrame() {
  FramePtr frame(av_frame_alloc());
  if (frame == nullptr) throw std::bad_alloc();
  return frame;
}

int64_t ClampToInt64(double value) {
  if (!(value == value)) return 0;
  if (value >= 9.2e18) return INT64_MAX;
  if (value <= -9.2e18) return INT64_MIN + 1;
  return static_cast<int64_t>(value);
}

std::string AvErrorText(int error) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  if (av_strerror(error, text, sizeof(text)) != 0) {
    return "error " + std::to_string(error);
  }
  return text;
}

int64_t FrameTimestamp(const AVFrame* frame) {
  if (frame->pts != AV_NOPTS_VALUE) return frame->pts;
  return frame->best_effort_timestamp;
}

}  // namespace codecvisor::cpu
