// File: backends/sdk/runner/wake_policy.h
//
// When a session thread wakes the host for a frame it sends. Pure, on the
// figures it is given; thread-compatible.
//
// Waking costs both processes a context switch: tens of microseconds of
// host CPU per wake-up, the frame's handling included, which is a few
// percent of a frame that decodes in well under a millisecond; so cheap
// frames share a wake-up. The host frees the batch's slots while the next
// frame decodes, so a batch ends while enough slots are still free that
// the backend never waits for one.
//
// But the frames of a batch must sit in different slots, and each frame is
// then written into a slot last written a batch earlier, out of the
// writing core's cache; a frame that wakes the host alone lets the next
// one reuse the same, warm slot. So only frames small enough that a batch
// of them stays in a core's cache (1 MiB of L2) share a wake-up: a 640x360
// RGB24 frame (691,200 bytes) wakes the host alone, which measured no
// slower than batching such frames 3 to a wake-up (`codecvisor-bench
// decode --compare-runner`; docs/bench-decode-history.md). Each frame also
// reaches the caller as soon as it is decoded.

#ifndef CODECVISOR_BACKENDS_SDK_RUNNER_WAKE_POLICY_H_
#define CODECVISOR_BACKENDS_SDK_RUNNER_WAKE_POLICY_H_

#include <chrono>
#include <cstdint>

namespace codecvisor::runner {

// A frame that took at least this long to decode wakes the host at once.
inline constexpr std::chrono::milliseconds kQuietFrameBelow{1};
// At most this many frames share one wake-up...
inline constexpr uint32_t kFramesPerWake = 4;
// ...and a batch ends (this frame wakes the host) once fewer slots than
// this are free. With the default 4 slots a wake-up carries 3 frames; with
// 2, every frame wakes the host.
inline constexpr uint32_t kFreeSlotsAtWake = 2;
// A frame larger than this wakes the host at once: a batch of up to
// kFramesPerWake such frames would not stay in a 1 MiB cache.
inline constexpr uint64_t kBatchedFrameBytesMax = 256 * 1024;

struct FrameSent {
  bool final = false;                       // the request's last frame
  std::chrono::nanoseconds decode_time{0};  // the vendor's decode_frame call
  uint32_t unwoken = 0;                     // frames sent since the host was last woken
  uint32_t free_slots = 0;                  // free arena slots, this frame's not counted
  uint64_t frame_bytes = 0;                 // the frame's size in its slot
};

inline bool ShouldWakeHost(const FrameSent& f) {
  return f.final || f.decode_time >= kQuietFrameBelow || f.frame_bytes > kBatchedFrameBytesMax ||
         f.unwoken + 1 >= kFramesPerWake || f.free_slots < kFreeSlotsAtWake;
}

}  // namespace codecvisor::runner

#endif  // CODECVISOR_BACKENDS_SDK_RUNNER_WAKE_POLICY_H_
