// File: backends/cpu/video_decoder.cc

#include "backends/cpu/video_decoder.h"

#include "absl/strings/str_cat.h"
#include "backends/cpu/av_enums.h"
#include "backends/cpu/av_util.h"

namespace codecvisor::cpu {

absl::StatusOr<std::unique_ptr<VideoDecoder>> VideoDecoder::Open(const AVStream* stream,
                                                                 unsigned threads) {
  const AVCodecParameters* par = stream->codecpar;
  const int codec_id = EnumValue(par->codec_id);
  const std::optional<AVCodecID> known = KnownCodecId(codec_id);
  const AVCodec* codec = known ? avcodec_find_decoder(*known) : nullptr;
  if (codec == nullptr) {
    return absl::UnimplementedError(absl::StrCat("has no decoder for codec ", CodecName(codec_id),
                                                 " in this FFmpeg build"));
  }
  std::unique_ptr<VideoDecoder> decoder(new VideoDecoder());
  decoder->context_ = avcodec_alloc_context3(codec);
  if (decoder->context_ == nullptr) {
    return absl::ResourceExhaustedError("out of memory for the decoder");
  }
  AVCodecContext* ctx = decoder->context_;
  int ret = avcodec_parameters_to_context(ctx, par);
  if (ret < 0) {
    return absl::UnimplementedError(
        absl::StrCat("cannot configure the ", codec->name, " decoder: ", AvErrorText(ret)));
  }
  ctx->pkt_timebase = stream->time_base;
  ctx->thread_count = static_cast<int>(threads);
  ret = avcodec_open2(ctx, codec, nullptr);
  if (ret < 0) {
    return absl::UnimplementedError(
        absl::StrCat("cannot open the ", codec->name, " decoder: ", AvErrorText(ret)));
  }
  return decoder;
}

VideoDecoder::~VideoDecoder() { avcodec_free_context(&context_); }

int VideoDecoder::Send(const AVPacket* packet) { return avcodec_send_packet(context_, packet); }

int VideoDecoder::Receive(AVFrame* frame) { return avcodec_receive_frame(context_, frame); }

void VideoDecoder::Flush() { avcodec_flush_buffers(context_); }

}  // namespace codecvisor::cpu
