// File: tools/bench/ipc_bench.h
//
// `codecvisor-bench ipc`: the channel's costs against their baselines,
// measured side by side in one run (forked peer processes, real memfd).

#ifndef CODECVISOR_TOOLS_BENCH_IPC_BENCH_H_
#define CODECVISOR_TOOLS_BENCH_IPC_BENCH_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/bench/targets.h"

namespace codecvisor::bench {

struct IpcBenchOptions {
  int round_trips = 20000;  // per measurement round
  int frames = 300;         // per measurement round
  int rounds = 3;           // the median round is reported
  int width = 1920;
  int height = 1080;
  // Arena slots of the frame channel. Two is double buffering: the backend
  // fills one while the host reads the other, and both stay in cache.
  int slots = 2;
};

struct IpcBenchResult {
  double futex_rtt_us = 0;
  double channel_rtt_us = 0;
  double rtt_ratio = 0;
  double frame_fps = 0;
  // The same writes and reads in one process, on private buffers: the same
  // producer/consumer hand-off between two threads through as many buffers
  // as the arena has slots. frame_ratio = frame_fps / local_fps isolates
  // what the arena and the second process add.
  double local_fps = 0;
  double frame_ratio = 0;
  // CPU per frame of each side of each path, waiting included (a spinning
  // wait costs CPU, a sleeping one does not): the host's thread and the
  // whole peer process; the local path's reading and writing threads.
  double host_cpu_us_per_frame = 0;
  double peer_cpu_us_per_frame = 0;
  double local_reader_cpu_us_per_frame = 0;
  double local_writer_cpu_us_per_frame = 0;
  // The strictest baseline: one thread writing then reading one buffer, so
  // no data ever crosses cores. Reported for transparency.
  double single_thread_fps = 0;
  double single_thread_ratio = 0;  // frame_fps / single_thread_fps
  int width = 0;
  int height = 0;
  int slots = 0;
  // rtt_ratio <= 1.5 and frame_ratio >= 0.9.
  std::vector<TargetCheck> targets;

  std::string ToJson() const;  // one line, no newline
  std::string ToText() const;
};

// Runs every measurement; fails only if a peer process or the channel fails.
[[nodiscard]] absl::StatusOr<IpcBenchResult> RunIpcBench(const IpcBenchOptions& options);

}  // namespace codecvisor::bench

#endif  // CODECVISOR_TOOLS_BENCH_IPC_BENCH_H_
