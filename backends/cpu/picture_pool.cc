// File: backends/cpu/picture_pool.cc

#include "backends/cpu/picture_pool.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "backends/cpu/ffmpeg_log.h"

extern "C" {
#include <libavutil/buffer.h>
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
}

namespace codecvisor::cpu {
namespace {

constexpr uint64_t RoundUp(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

// Rows of plane `p` of a `height`-row picture: planes 1 and 2 carry chroma
// (as av_image_fill_plane_sizes counts them).
uint64_t PlaneRows(const AVPixFmtDescriptor& desc, uint32_t p, uint64_t height) {
  if (p != 1 && p != 2) return height;
  return (height + (uint64_t{1} << desc.log2_chroma_h) - 1) >> desc.log2_chroma_h;
}

}  // namespace

absl::StatusOr<cv_frame_layout> PoolLayout(const AVCodecContext* ctx, AVPixelFormat format,
                                           const cv_frame_layout& tight) {
  const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(format);
  if (desc == nullptr || tight.format != CV_OUTPUT_NATIVE || tight.num_planes > CV_MAX_PLANES) {
    return absl::InvalidArgumentError("a pool layout is for a native layout of a known pixel format");
  }
  int width = std::max<int>(static_cast<int>(tight.width), ctx->coded_width);
  int height = std::max<int>(static_cast<int>(tight.height), ctx->coded_height);
  int align[AV_NUM_DATA_POINTERS] = {};
  avcodec_align_dimensions2(const_cast<AVCodecContext*>(ctx), &width, &height, align);
  int linesizes[4] = {};
  if (width <= 0 || height <= 0 || av_image_fill_linesizes(linesizes, format, width) < 0) {
    return absl::InvalidArgumentError(absl::StrCat("cannot lay out ", desc->name, " pictures of ", width, "x", height));
  }
  cv_frame_layout layout = tight;
  uint64_t offset = 0;
  for (uint32_t p = 0; p < layout.num_planes; ++p) {
    uint64_t stride = RoundUp(static_cast<uint64_t>(std::max(linesizes[p], 1)), kPictureAlign);
    if (align[p] > 0) stride = RoundUp(stride, static_cast<uint64_t>(align[p]));
    if (stride > UINT32_MAX) return absl::InvalidArgumentError("a picture row is too long");
    layout.plane_stride[p] = static_cast<uint32_t>(stride);
    layout.plane_offset[p] = offset;
    offset = RoundUp(offset + stride * PlaneRows(*desc, p, static_cast<uint64_t>(height)) + kPlaneTail,
                     kPictureAlign);
  }
  layout.size = offset;
  return layout;
}

bool LeavesDamageUnwritten(AVCodecID codec) { return codec == AV_CODEC_ID_HEVC || codec == AV_CODEC_ID_MJPEG; }

int ClearedDefaultBuffer(AVCodecContext* ctx, AVFrame* frame, int flags) {
  const int ret = avcodec_default_get_buffer2(ctx, frame, flags);
  if (ret < 0 || !LeavesDamageUnwritten(ctx->codec_id)) return ret;
  for (AVBufferRef* buf : frame->buf) {
    if (buf != nullptr) std::memset(buf->data, 0, buf->size);
  }
  return ret;
}

bool DecodesIntoFreshPictures(AVCodecID codec) {
  switch (codec) {
    case AV_CODEC_ID_H264:
    case AV_CODEC_ID_HEVC:
    case AV_CODEC_ID_VP8:
    case AV_CODEC_ID_VP9:
    case AV_CODEC_ID_AV1:
    case AV_CODEC_ID_MPEG1VIDEO:
    case AV_CODEC_ID_MPEG2VIDEO:
    case AV_CODEC_ID_MPEG4:
    case AV_CODEC_ID_MJPEG:
      return true;
    default:
      return false;
  }
}

PicturePool::PicturePool(cv_frame_pool* pool, const cv_frame_layout& layout, AVPixelFormat format)
    : pool_(pool), layout_(layout), format_(format) {
  // kPictureAlign spare bytes: the planes start at the first aligned byte.
  own_memory_ = av_buffer_pool_init(layout_.size + kPictureAlign, av_buffer_allocz);
  for (uint32_t p = 0; p < layout_.num_planes && p < CV_MAX_PLANES; ++p) {
    const uint64_t end = p + 1 < layout_.num_planes ? layout_.plane_offset[p + 1] : layout_.size;
    plane_room_[p] = end > layout_.plane_offset[p] ? end - layout_.plane_offset[p] : 0;
  }
}

// The own pictures still out are freed as they are released
// (av_buffer_pool_uninit frees the pool with the last of them).
PicturePool::~PicturePool() { av_buffer_pool_uninit(&own_memory_); }

void PicturePool::Install(AVCodecContext* ctx) {
  ctx->opaque = this;
  ctx->get_buffer2 = &PicturePool::GetBuffer;
}

bool PicturePool::Fits(int width, int height, const int* align) const {
  const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(format_);
  int linesizes[4] = {};
  if (desc == nullptr || width <= 0 || height <= 0 || av_image_fill_linesizes(linesizes, format_, width) < 0) {
    return false;
  }
  for (uint32_t p = 0; p < layout_.num_planes; ++p) {
    const uint64_t stride = layout_.plane_stride[p];
    if (linesizes[p] < 0 || static_cast<uint64_t>(linesizes[p]) > stride) return false;
    if (align[p] > 0 && stride % static_cast<uint64_t>(align[p]) != 0) return false;
    if (stride * PlaneRows(*desc, p, static_cast<uint64_t>(height)) + kPlaneTail > plane_room_[p]) return false;
  }
  return true;
}

int PicturePool::GetBuffer(AVCodecContext* ctx, AVFrame* frame, int flags) {
  auto* self = static_cast<PicturePool*>(ctx->opaque);
  if (self == nullptr || frame->format != self->format_ || ctx->hw_frames_ctx != nullptr ||
      (ctx->codec->capabilities & AV_CODEC_CAP_DR1) == 0) {
    return ClearedDefaultBuffer(ctx, frame, flags);
  }
  // libavcodec passes the coded size; the picture needs it aligned.
  int width = frame->width, height = frame->height;
  int align[AV_NUM_DATA_POINTERS] = {};
  avcodec_align_dimensions2(ctx, &width, &height, align);
  if (!self->Fits(width, height, align)) {
    self->own_.fetch_add(1, std::memory_order_relaxed);
    return ClearedDefaultBuffer(ctx, frame, flags);
  }
  uint8_t* base = nullptr;
  uint64_t capacity = 0;
  if (uint8_t* slot = self->pool_->borrow(self->pool_, &capacity); slot != nullptr) {
    frame->buf[0] = capacity >= self->layout_.size
                        ? av_buffer_create(slot, capacity, &PicturePool::Release, self, 0)
                        : nullptr;
    if (frame->buf[0] == nullptr) {
      self->pool_->give_back(self->pool_, slot);
    } else {
      base = slot;
      self->pooled_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (base == nullptr) {
    frame->buf[0] = self->own_memory_ != nullptr ? av_buffer_pool_get(self->own_memory_) : nullptr;
    if (frame->buf[0] == nullptr) {
      NoteAllocationFailure();  // the decoder may go on without this picture
      return AVERROR(ENOMEM);
    }
    const auto address = reinterpret_cast<uintptr_t>(frame->buf[0]->data);
    base = frame->buf[0]->data + (RoundUp(address, kPictureAlign) - address);
    self->own_.fetch_add(1, std::memory_order_relaxed);
  }
  // In a slot, an earlier frame's bytes, which one depending on when the
  // host let its frames go (LeavesDamageUnwritten).
  if (LeavesDamageUnwritten(ctx->codec_id)) std::memset(base, 0, self->layout_.size);
  for (uint32_t p = 0; p < self->layout_.num_planes; ++p) {
    frame->data[p] = base + self->layout_.plane_offset[p];
    frame->linesize[p] = static_cast<int>(self->layout_.plane_stride[p]);
  }
  frame->extended_data = frame->data;
  return 0;
}

void PicturePool::Release(void* opaque, uint8_t* data) {
  auto* self = static_cast<PicturePool*>(opaque);
  self->pool_->give_back(self->pool_, data);
}

uint8_t* PicturePool::SlotOf(const AVFrame& frame) const {
  if (frame.buf[0] == nullptr || frame.buf[1] != nullptr || av_buffer_get_opaque(frame.buf[0]) != this) {
    return nullptr;
  }
  if (frame.format != format_ || frame.width != static_cast<int>(layout_.width) ||
      frame.height != static_cast<int>(layout_.height)) {
    return nullptr;
  }
  uint8_t* slot = frame.buf[0]->data;
  for (uint32_t p = 0; p < layout_.num_planes; ++p) {
    if (frame.data[p] != slot + layout_.plane_offset[p] ||
        frame.linesize[p] != static_cast<int>(layout_.plane_stride[p])) {
      return nullptr;
    }
  }
  return slot;
}

}  // namespace codecvisor::cpu
