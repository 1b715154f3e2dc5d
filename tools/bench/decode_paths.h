// File: tools/bench/decode_paths.h
//
// The two ways `codecvisor bench decode` runs the same decode work:
//
//  - in process: the cpu backend's own code (//backends/cpu:cpu_backend)
//    linked into this binary and called through its C ABI table, frames
//    decoded into one private buffer: what the backend costs with no
//    process boundary, no sandbox and no channel;
//  - out of process: Host -> VideoDecoder -> ForEachFrame, frames streamed
//    zero-copy from the sandboxed child's arena.
//
// Both do the same per-frame work on the host side (TouchFrame), so that
// the ratio of their throughputs is the cost of codecvisor's design.
//
// NOTE: the in-process path runs FFmpeg inside this process. Whoever
// measures the host's memory must do so before the first in-process pass
// (decode_bench.cc does).
//
// Thread-safety: each function uses only its own objects; call from one
// thread at a time per Host.

#ifndef CODECVISOR_TOOLS_BENCH_DECODE_PATHS_H_
#define CODECVISOR_TOOLS_BENCH_DECODE_PATHS_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/host.h"

namespace codecvisor::bench {

// Frames to decode, in order: either 0..count-1 (sequential, sent as one
// index range) or an explicit list (random access with exact seeks).
struct Workload {
  bool sequential = true;
  int64_t count = 0;             // sequential: frames 0..count-1,
  int repeats = 1;               // that many times over, in one session
  std::vector<int64_t> indices;  // otherwise: these, in this order

  int64_t frames() const { return sequential ? count * repeats : static_cast<int64_t>(indices.size()); }
};

// The host-side work done on every decoded frame on both paths: reads a
// few bytes spread over the frame (so each frame's memory is touched, as a
// consumer would, without adding a full pass over it) and sums them.
uint64_t TouchFrame(std::span<const uint8_t> bytes);

struct PassTiming {
  double open_seconds = 0;    // create/open (exact mode scans the file)
  double decode_seconds = 0;  // the frames of the workload, open excluded
  // CPU time over decode_seconds: this process's, plus the backend child's
  // out of process (all threads of both).
  double cpu_seconds = 0;
  double host_cpu_seconds = 0;  // this process's part of it
  int64_t frames = 0;
  uint64_t checksum = 0;      // TouchFrame sums: keeps the work observable
};

// Decodes `workload` from `path` with the cpu backend in this process:
// create, open_session (exact, RGB24, `threads` decoder threads; 0 lets
// FFmpeg choose), get_frame_layout, decode_frame per index into one
// private buffer of layout.size. Fails with the backend's message.
[[nodiscard]] absl::StatusOr<PassTiming> InProcessPass(const std::string& path, uint32_t threads,
                                                       const Workload& workload);

// The same through `host`: OpenDecoder on "cpu" (exact, RGB24, `threads`,
// `arena_slots` frame slots), then one ForEachFrame over the workload.
[[nodiscard]] absl::StatusOr<PassTiming> OutOfProcessPass(Host& host, const std::string& path, uint32_t threads,
                                                          uint32_t arena_slots, const Workload& workload);

// The stream as the cpu backend describes it in exact mode (through
// `host`, so that nothing is decoded in this process), for sizing the
// workloads before any measurement.
[[nodiscard]] absl::StatusOr<StreamMetadata> ProbeStream(Host& host, const std::string& path);

}  // namespace codecvisor::bench

#endif  // CODECVISOR_TOOLS_BENCH_DECODE_PATHS_H_
