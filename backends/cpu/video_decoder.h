// File: backends/cpu/video_decoder.h
//
// VideoDecoder: the libavcodec decoder for one stream, opened with the same
// decoder `ffmpeg` picks (avcodec_find_decoder: libdav1d for AV1 where it is
// built in) and the same threading, so its frames are the ones the ffmpeg CLI
// sees. A thin wrapper: the seek and frame-matching logic is FrameCursor's.
//
// Not thread-safe: one session drives it (libavcodec runs its own decoding
// threads inside).

#ifndef CODECVISOR_BACKENDS_CPU_VIDEO_DECODER_H_
#define CODECVISOR_BACKENDS_CPU_VIDEO_DECODER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "backends/cpu/picture_pool.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

namespace codecvisor::cpu {

class VideoDecoder {
 public:
  // Opens a decoder for `stream`. `threads` 0 lets libavcodec choose (as
  // `ffmpeg -threads auto` does), else that many. Unimplemented if this
  // FFmpeg build has no decoder for the codec or cannot open it.
  static absl::StatusOr<std::unique_ptr<VideoDecoder>> Open(const AVStream* stream,
                                                            unsigned threads);

  VideoDecoder(const VideoDecoder&) = delete;
  VideoDecoder& operator=(const VideoDecoder&) = delete;
  ~VideoDecoder();

  // avcodec_send_packet; nullptr starts draining (the last frames come out,
  // then Receive returns AVERROR_EOF). Returns its AVERROR code.
  int Send(const AVPacket* packet);
  // avcodec_receive_frame: 0 with a frame, AVERROR(EAGAIN) when it needs a
  // packet, AVERROR_EOF once drained, another AVERROR on a decoding error.
  int Receive(AVFrame* frame);
  // Drops buffered frames and leaves draining mode; call after a seek.
  void Flush();
  // Replaces the codec context with one opened afresh, as Open opened it
  // (same parameters, threads and picture pool): what a codec keeps across
  // a Flush is gone too. Frames already taken out stay valid. On an error
  // the decoder is left as it was.
  absl::Status Reset();

  const char* name() const { return context_->codec->name; }
  // The opened codec context, for laying out its pictures (PoolLayout).
  const AVCodecContext* context() const { return context_; }
  // Takes pictures from `pictures` from the next packet on; it must outlive
  // this decoder.
  void UsePictures(PicturePool* pictures) {
    pictures_ = pictures;
    pictures->Install(context_);
  }

 private:
  VideoDecoder() = default;

  AVCodecContext* context_ = nullptr;
  AVCodecParameters* parameters_ = nullptr;  // the stream's, copied at Open
  AVRational time_base_{0, 1};
  unsigned threads_ = 0;
  PicturePool* pictures_ = nullptr;
};

}  // namespace codecvisor::cpu

#endif  // CODECVISOR_BACKENDS_CPU_VIDEO_DECODER_H_
