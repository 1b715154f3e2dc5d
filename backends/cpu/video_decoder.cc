// File: backends/cpu/video_decoder.cc

#include "backends/cpu/video_decoder.h"

#include "absl/strings/str_cat.h"
#include "backends/cpu/av_enums.h"
#include "backends/cpu/av_util.h"
#include "backends/cpu/picture_pool.h"

namespace codecvisor::cpu {

namespace {

// A codec context for `par`, opened with `threads` (0: libavcodec's choice).
absl::StatusOr<AVCodecContext*> OpenContext(const AVCodecParameters* par, AVRational time_base, unsigned threads) {
  const int codec_id = EnumValue(par->codec_id);
  const std::optional<AVCodecID> known = KnownCodecId(codec_id);
  const AVCodec* codec = known ? avcodec_find_decoder(*known) : nullptr;
  if (codec == nullptr) {
    return absl::UnimplementedError(absl::StrCat("has no decoder for codec ", CodecName(codec_id),
                                                 " in this FFmpeg build"));
  }
  AVCodecContext* ctx = avcodec_alloc_context3(codec);
  if (ctx == nullptr) return absl::ResourceExhaustedError("out of memory for the decoder");
  int ret = avcodec_parameters_to_context(ctx, par);
  if (ret < 0) {
    avcodec_free_context(&ctx);
    return absl::UnimplementedError(
        absl::StrCat("cannot configure the ", codec->name, " decoder: ", AvErrorText(ret)));
  }
  ctx->pkt_timebase = time_base;
  ctx->thread_count = static_cast<int>(threads);
  // A PicturePool, where the session uses one, replaces it (and clears too).
  if ((codec->capabilities & AV_CODEC_CAP_DR1) != 0 && LeavesDamageUnwritten(codec->id)) {
    ctx->get_buffer2 = &ClearedDefaultBuffer;
  }
  ret = avcodec_open2(ctx, codec, nullptr);
  if (ret < 0) {
    avcodec_free_context(&ctx);
    std::string why = absl::StrCat("cannot open the ", codec->name, " decoder: ", AvErrorText(ret));
    // Its threads or memory refused (RLIMIT_NPROC, memory_mb): the process
    // is short, the stream may be fine.
    if (ret == AVERROR(EAGAIN) || ret == AVERROR(ENOMEM)) return absl::ResourceExhaustedError(std::move(why));
    return absl::UnimplementedError(std::move(why));
  }
  return ctx;
}

}  // namespace

absl::StatusOr<std::unique_ptr<VideoDecoder>> VideoDecoder::Open(const AVStream* stream,
                                                                 unsigned threads) {
  std::unique_ptr<VideoDecoder> decoder(new VideoDecoder());
  decoder->parameters_ = avcodec_parameters_alloc();
  if (decoder->parameters_ == nullptr || avcodec_parameters_copy(decoder->parameters_, stream->codecpar) < 0) {
    return absl::ResourceExhaustedError("out of memory for the decoder");
  }
  decoder->time_base_ = stream->time_base;
  decoder->threads_ = threads;
  absl::StatusOr<AVCodecContext*> context = OpenContext(decoder->parameters_, decoder->time_base_, threads);
  if (!context.ok()) return context.status();
  decoder->context_ = *context;
  return decoder;
}

absl::Status VideoDecoder::Reset() {
  absl::StatusOr<AVCodecContext*> context = OpenContext(parameters_, time_base_, threads_);
  if (!context.ok()) return context.status();
  avcodec_free_context(&context_);
  context_ = *context;
  if (pictures_ != nullptr) pictures_->Install(context_);
  return absl::OkStatus();
}

VideoDecoder::~VideoDecoder() {
  avcodec_free_context(&context_);
  avcodec_parameters_free(&parameters_);
}

int VideoDecoder::Send(const AVPacket* packet) { return avcodec_send_packet(context_, packet); }

int VideoDecoder::Receive(AVFrame* frame) { return avcodec_receive_frame(context_, frame); }

void VideoDecoder::Flush() { avcodec_flush_buffers(context_); }

}  // namespace codecvisor::cpu
