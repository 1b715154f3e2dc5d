// File: tools/bench/decode_paths.h
//
// The two ways `codecvisor-bench decode` runs the same decode work, each an
// open decoder that decodes one chunk of frames at a time:
//
//  - in process: the cpu backend's own code (//backends/cpu:cpu_backend)
//    linked into this binary and called through its C ABI table, frames
//    decoded into one private buffer: what the backend costs with no
//    process boundary, no sandbox and no channel;
//  - out of process: Host -> VideoDecoder -> ForEachFrame, one request per
//    chunk, frames streamed zero-copy from the sandboxed child's arena.
//
// Both do the same per-frame work on the host side (TouchFrame), so that
// the ratio of their throughputs is the cost of codecvisor's design.
//
// NOTE: the in-process path runs FFmpeg inside this process. Whoever
// measures the host's memory must do so before the first in-process
// decoder is opened (decode_bench.cc does).
//
// Thread-safety: a DecodePath is used from one thread at a time.

#ifndef CODECVISOR_TOOLS_BENCH_DECODE_PATHS_H_
#define CODECVISOR_TOOLS_BENCH_DECODE_PATHS_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "core/host.h"
#include "tools/bench/chunks.h"
#include "tools/bench/stats.h"

namespace codecvisor::bench {

using ::codecvisor::internal::Host;
using ::codecvisor::internal::StreamMetadata;

// A Host with only the built-in cpu backend (no third-party discovery, so
// the environment cannot change what is measured), its children sandboxed
// or not, started through `runner` if not empty, else the discovered one.
[[nodiscard]] absl::StatusOr<std::unique_ptr<Host>> CreateBenchHost(bool sandbox, const std::string& runner = "");

// The host-side work done on every decoded frame on both paths: reads a
// few bytes spread over the frame (so each frame's memory is touched, as a
// consumer would, without adding a full pass over it) and sums them.
uint64_t TouchFrame(std::span<const uint8_t> bytes);

// One chunk decoded on one path.
struct ChunkTiming {
  double decode_seconds = 0;  // wall clock, from the call to the last frame
  // CPU time of the calling thread over the chunk: in process, the decode
  // less the work of FFmpeg's own threads; out of process, the host's side
  // of the channel. (Whole-process figures are taken over many chunks, by
  // the caller: FFmpeg's frame threads go on working on the next frames
  // after a chunk's last one is out, into whatever runs next.)
  double thread_cpu_seconds = 0;
  // Times the calling thread was scheduled in over the chunk (each wake-up
  // from waiting on FFmpeg's threads in process, on the backend out of
  // process, and each preemption).
  int64_t thread_timeslices = 0;
  int64_t frames = 0;
  uint64_t checksum = 0;  // TouchFrame sums: keeps the work observable
  BufferUse buffers;      // which buffer (arena slot) each frame arrived in
};

// An open decoder of one video (exact seek mode, RGB24 output, a given
// number of decoder threads; 0 lets FFmpeg choose), kept open across
// chunks, so that each chunk continues from where the last one left the
// decoder, as a caller's successive requests would.
class DecodePath {
 public:
  virtual ~DecodePath() = default;

  // Decodes `chunk`'s frames in order. Fails with the backend's message.
  [[nodiscard]] virtual absl::StatusOr<ChunkTiming> Decode(const Chunk& chunk) = 0;

  // The backend child that decodes, or 0 in process.
  virtual pid_t backend_pid() const { return 0; }
};

// The cpu backend in this process: create, open_session, get_frame_layout;
// then decode_frame per index into private buffers of layout.size, taken
// in turn (`buffers` of them: 1, the plain baseline, keeps its one buffer
// warm in cache; more give the in-process side an arena's cache footprint).
[[nodiscard]] absl::StatusOr<std::unique_ptr<DecodePath>> OpenInProcess(const std::string& path, uint32_t threads,
                                                                        uint32_t buffers = 1);

// The same through `host`: OpenDecoder on "cpu" with `arena_slots` frame
// slots, then one ForEachFrame per chunk (an index range or an index list).
[[nodiscard]] absl::StatusOr<std::unique_ptr<DecodePath>> OpenOutOfProcess(Host& host, const std::string& path,
                                                                           uint32_t threads, uint32_t arena_slots);

// The stream as the cpu backend describes it in exact mode (through
// `host`, so that nothing is decoded in this process), for sizing the
// workloads before any measurement.
[[nodiscard]] absl::StatusOr<StreamMetadata> ProbeStream(Host& host, const std::string& path);

}  // namespace codecvisor::bench

#endif  // CODECVISOR_TOOLS_BENCH_DECODE_PATHS_H_
