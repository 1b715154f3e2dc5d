// File: backends/cpu/picture_pool.h
//
// PicturePool: libavcodec's picture buffers taken from the runner's frame
// pool (cv_frame_pool, SDK header), so that a frame the host converts
// itself (native output) is decoded straight into a shared-memory slot and
// lent to the host as it is, with no copy.
//
// The layout. A decoder writes past a frame's visible size: it needs whole
// aligned rows and strides (avcodec_align_dimensions2), plus a few bytes
// after each plane. PoolLayout lays out native frames so that each plane
// has that room, and a picture the decoder asks for fits in a slot exactly
// at the session's plane offsets and strides; the host reads the visible
// rows through the strides. Decoders assume every picture of a stream has
// the same strides (H.264 motion compensation reads its references with the
// current picture's), so when the frame pool has no free slot the picture
// comes from this pool's own memory at the same layout, and its frame is
// copied into a slot as before. A picture that does not fit the layout (a
// mid-stream size change) or a codec without direct rendering gets
// libavcodec's own buffers.
//
// Ownership. A slot is borrowed when the decoder asks for a picture and
// given back when libavcodec drops its last reference to it (the AVBuffer's
// free callback), on whichever thread that happens. Lending the decoded
// frame to the host does not end the borrow: the decoder may still use the
// picture as a reference, and only reads it. The pool must outlive the
// codec context (its callbacks run until avcodec_free_context returns).
//
// Thread-safety: the callbacks run on libavcodec's frame threads; the pool
// itself is immutable after construction.

#ifndef CODECVISOR_BACKENDS_CPU_PICTURE_POOL_H_
#define CODECVISOR_BACKENDS_CPU_PICTURE_POOL_H_

#include <atomic>
#include <cstdint>

#include "absl/status/statusor.h"
#include "backends/sdk/codecvisor_backend.h"

extern "C" {
#include <libavcodec/avcodec.h>
}

namespace codecvisor::cpu {

// Bytes libavcodec's own pool adds after each plane (16 + STRIDE_ALIGN - 1,
// with STRIDE_ALIGN at most 64), and the alignment of strides and planes.
inline constexpr uint32_t kPlaneTail = 16 + 64;
inline constexpr uint32_t kPictureAlign = 64;

// `tight` (ComputeLayout's native layout of the visible frame) with every
// plane's stride and room widened for the pictures `ctx` decodes: visible
// rows and strides as the host reads them, offsets and size for the
// decoder's aligned picture.
absl::StatusOr<cv_frame_layout> PoolLayout(const AVCodecContext* ctx, AVPixelFormat format,
                                           const cv_frame_layout& tight);

// Whether `codec`'s decoder takes a new picture for every frame and never
// writes into one it has output, so that a picture lent to the host stays
// as it was while the caller holds it. Not every libavcodec decoder does:
// conditional-replenishment ones (cpia, mobiclip, ...) rewrite their last
// picture in place once they hold its only reference (ff_reget_buffer).
// The codecs listed allocate through ff_get_buffer/ff_thread_get_buffer
// per frame; others get no pool, and their frames are copied.
bool DecodesIntoFreshPictures(AVCodecID codec);

// Whether `codec`'s decoder may output a picture parts of which a damaged
// packet left unwritten, holding whatever its memory held: FFmpeg's HEVC
// decoder conceals nothing, and MJPEG's outputs a picture whose scan
// failed (rows past the damage never written). Buffers are reused in an
// order that depends on the host (pool slots) or on frame threads, so such
// pictures are cleared as they are taken, for the same frames every run.
bool LeavesDamageUnwritten(AVCodecID codec);

// avcodec_default_get_buffer2, with the picture's buffers zeroed where
// LeavesDamageUnwritten(ctx's codec).
int ClearedDefaultBuffer(AVCodecContext* ctx, AVFrame* frame, int flags);

class PicturePool {
 public:
  // Pictures of `format` laid out at `layout` (from PoolLayout), in slots
  // of `pool`.
  PicturePool(cv_frame_pool* pool, const cv_frame_layout& layout, AVPixelFormat format);
  PicturePool(const PicturePool&) = delete;
  PicturePool& operator=(const PicturePool&) = delete;

  // Makes `ctx` take its pictures from the pool where they fit (before it
  // decodes; its frame threads pick the callback up with their next packet).
  void Install(AVCodecContext* ctx);

  // The slot `frame` was decoded into, if it lies in one at the layout
  // exactly (its planes at the layout's offsets and strides, its size the
  // layout's); else nullptr.
  uint8_t* SlotOf(const AVFrame& frame) const;

  ~PicturePool();

  cv_frame_pool* pool() const { return pool_; }
  // Pictures taken from the frame pool, and from memory of its own or
  // libavcodec's, so far.
  uint64_t pooled_pictures() const { return pooled_.load(std::memory_order_relaxed); }
  uint64_t own_pictures() const { return own_.load(std::memory_order_relaxed); }

 private:
  static int GetBuffer(AVCodecContext* ctx, AVFrame* frame, int flags);
  static void Release(void* opaque, uint8_t* data);
  // Whether a picture `width` x `height` (aligned as the codec asked) with
  // stride alignments `align` fits the layout.
  bool Fits(int width, int height, const int* align) const;

  cv_frame_pool* pool_;
  // Pictures at the layout when the frame pool has none free.
  AVBufferPool* own_memory_ = nullptr;
  cv_frame_layout layout_;
  AVPixelFormat format_;
  uint64_t plane_room_[CV_MAX_PLANES] = {};  // bytes from each plane's offset to the next's
  std::atomic<uint64_t> pooled_{0};
  std::atomic<uint64_t> own_{0};
};

}  // namespace codecvisor::cpu

#endif  // CODECVISOR_BACKENDS_CPU_PICTURE_POOL_H_
