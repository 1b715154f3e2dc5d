// File: api/frame_impl.h
//
// What a public codecvisor::Frame holds: the internal frame (a lease on an
// arena slot, or owned bytes). Shared by the definitions of Frame and
// VideoDecoder, which makes Frames.

#ifndef CODECVISOR_API_FRAME_IMPL_H_
#define CODECVISOR_API_FRAME_IMPL_H_

#include <unistd.h>

#include <memory>
#include <utility>

#include "codecvisor/frame.h"
#include "core/frame.h"

namespace codecvisor {

struct __attribute__((visibility("hidden"))) Frame::Impl {
  Impl() = default;
  explicit Impl(internal::Frame f) : frame(std::move(f)) {}
  internal::Frame frame;
  pid_t owner = getpid();  // a frame on an arena slot is the parent's in a forked child
};

namespace api {

// Makes public Frames from internal ones (Frame's constructor is private).
struct FrameAccess {
  static Frame Wrap(internal::Frame frame) { return Frame(std::make_unique<Frame::Impl>(std::move(frame))); }
};

}  // namespace api

}  // namespace codecvisor

#endif  // CODECVISOR_API_FRAME_IMPL_H_
