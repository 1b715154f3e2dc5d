// File: api/video_decoder_impl.h
//
// What a public codecvisor::VideoDecoder holds: the internal decoder and
// its metadata converted once. Made by Host::OpenDecoder.

#ifndef CODECVISOR_API_VIDEO_DECODER_IMPL_H_
#define CODECVISOR_API_VIDEO_DECODER_IMPL_H_

#include <unistd.h>

#include <atomic>
#include <memory>

#include "absl/status/statusor.h"
#include "codecvisor/status.h"
#include "codecvisor/types.h"
#include "codecvisor/video_decoder.h"
#include "core/video_decoder.h"

namespace codecvisor {

struct __attribute__((visibility("hidden"))) VideoDecoder::Impl {
  std::unique_ptr<internal::VideoDecoder> decoder;
  StreamMetadata metadata;
  pid_t owner = getpid();  // the process that opened it; a forked child leaks it
  // Whether a call is in progress: a second thread's (or a sink's own)
  // call meanwhile is refused instead of corrupting the decoder's channel.
  // A decoder destroyed during a call (from its ForEachFrame sink) leaves
  // its Impl to that call, which stops streaming and deletes it at its end.
  enum CallState : int { kIdle, kInCall, kInCallDestroyed };
  std::atomic<int> call{kIdle};
};

namespace api {

// Makes public VideoDecoders from internal ones (its constructor is private).
struct DecoderAccess {
  static Result<std::unique_ptr<VideoDecoder>> Wrap(absl::StatusOr<std::unique_ptr<internal::VideoDecoder>> decoder);
};

}  // namespace api

}  // namespace codecvisor

#endif  // CODECVISOR_API_VIDEO_DECODER_IMPL_H_
