// File: tools/bench/take_turns.h
//
// How `bench decode` runs its sides (decoders of the same video: in
// process, out of process, another runner...) side by side: every side
// decodes every chunk of a workload (chunks.h), the sides taking turns
// chunk by chunk, and each side's time, frames, CPU time (split by thread)
// and wake-ups are summed. Runs on the calling thread.

#ifndef CODECVISOR_TOOLS_BENCH_TAKE_TURNS_H_
#define CODECVISOR_TOOLS_BENCH_TAKE_TURNS_H_

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "tools/bench/chunks.h"
#include "tools/bench/decode_paths.h"
#include "tools/bench/stats.h"

namespace codecvisor::bench {

// One side's chunks within one round, summed: every per-round figure is
// taken over all of a side's chunks in that round.
struct SideSum {
  double seconds = 0;
  int64_t frames = 0;
  // The side's CPU time (see TakeTurns), in three parts that add up to it:
  // this thread in the side's chunks (in process the decode's caller, out
  // of process the host's side of the channel); out of process, the
  // runner's session threads (the vendor's decode_frame calls run on
  // them); and every other thread of the side (in process this process's
  // others, mostly FFmpeg's; out of process the child's others: FFmpeg's,
  // and the runner's control thread).
  double caller_cpu_seconds = 0;
  double session_cpu_seconds = 0;
  double other_cpu_seconds = 0;
  int64_t caller_timeslices = 0;  // this thread, in the side's chunks
  BufferUse buffers;
  // Each chunk's wall-clock time, in chunk order: chunk k of every side in
  // the round is the same work, done within moments of each other.
  std::vector<double> chunk_seconds;

  double Fps() const { return static_cast<double>(frames) / seconds; }
  double PerFrame(int64_t count) const { return static_cast<double>(count) / static_cast<double>(frames); }
  double MsPerFrame(double cpu_seconds) const { return cpu_seconds * 1e3 / static_cast<double>(frames); }
  double CpuMsPerFrame() const { return MsPerFrame(caller_cpu_seconds + session_cpu_seconds + other_cpu_seconds); }
};

// Every side in `paths` (at most one of them in process) decodes every
// chunk, the sides taking turns chunk by chunk in rotated order
// (RotatedOrder(paths.size(), chunk + round)), each side's figures summed
// into sums[side]. CPU time is taken over the whole phase, because
// FFmpeg's frame threads go on decoding the next frames after a chunk's
// last one is out, into the next side's turn: out of process, the CPU time
// of the child's threads plus what this thread spent in the side's chunks;
// in process, what this thread spent in its chunks plus this process's
// other threads' CPU time (so the Host's own few background wake-ups fall
// on the in-process side).
[[nodiscard]] absl::Status TakeTurns(std::span<const std::unique_ptr<DecodePath>> paths,
                                     const std::vector<Chunk>& chunks, int round, std::span<SideSum> sums);

}  // namespace codecvisor::bench

#endif  // CODECVISOR_TOOLS_BENCH_TAKE_TURNS_H_
