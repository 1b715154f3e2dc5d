// File: backends/cpu/leading_frames.cc

#include "backends/cpu/leading_frames.h"

#include <algorithm>
#include <memory>

#include "backends/cpu/av_util.h"
#include "backends/cpu/video_decoder.h"

namespace codecvisor::cpu {

absl::StatusOr<std::vector<bool>> FramesMadeFromStart(Demuxer& demuxer, int64_t count, unsigned threads) {
  std::vector<bool> made(static_cast<size_t>(std::max<int64_t>(count, 0)), false);
  if (count <= 0) return made;
  if (absl::Status s = demuxer.Reopen(); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<VideoDecoder>> decoder = VideoDecoder::Open(demuxer.stream(), threads);
  if (!decoder.ok()) return decoder.status();
  PacketPtr packet = MakePacket();
  FramePtr frame = MakeFrame();
  // Each packet's frame is told by its pts: the packet's position here.
  // Takes the frames ready; true once the decoder is drained. An error
  // ends the taking as a frame not ready does.
  const auto take_frames = [&] {
    for (;;) {
      const int ret = (*decoder)->Receive(frame.get());
      if (ret != 0) return ret == AVERROR_EOF;
      if (frame->pts >= 0 && frame->pts < count) made[frame->pts] = true;
      av_frame_unref(frame.get());
    }
  };
  // Bounds on the rounds of a decoder that never takes a packet or never
  // ends draining (far more than any decoder's delay).
  constexpr int kMaxRounds = 1024;
  int64_t position = 0;
  while (position < count && demuxer.ReadPacket(packet.get())) {
    const bool discarded = (packet->flags & AV_PKT_FLAG_DISCARD) != 0;
    packet->pts = discarded ? -1 : position++;
    packet->dts = AV_NOPTS_VALUE;
    // A full decoder takes the packet once its frames are taken out.
    for (int round = 0; round < kMaxRounds && (*decoder)->Send(packet.get()) == AVERROR(EAGAIN); ++round) {
      take_frames();
    }
    take_frames();
  }
  (*decoder)->Send(nullptr);
  for (int round = 0; round < kMaxRounds && !take_frames(); ++round) {
  }
  return made;
}

}  // namespace codecvisor::cpu
