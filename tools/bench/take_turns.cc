#include "tools/bench/take_turns.h"

#include <utility>

#include "backends/sdk/runner/runner_args.h"
#include "tools/bench/cpu_time.h"

namespace codecvisor::bench {
namespace {

// CPU seconds that `pid`'s threads ran from `before` to `after` (snapshots
// of ThreadsCpu), split into the runner's session threads and the rest. A
// thread that started in between counts from zero.
struct ChildCpu {
  double session = 0;
  double other = 0;
};
ChildCpu ChildCpuBetween(const std::vector<ThreadCpu>& before, const std::vector<ThreadCpu>& after) {
  ChildCpu cpu;
  for (const ThreadCpu& t : after) {
    double spent = t.seconds;
    for (const ThreadCpu& b : before) {
      if (b.tid == t.tid) spent -= b.seconds;
    }
    (t.name == runner::kSessionThreadName ? cpu.session : cpu.other) += spent;
  }
  return cpu;
}

}  // namespace

absl::Status TakeTurns(std::span<const std::unique_ptr<DecodePath>> paths, const std::vector<Chunk>& chunks, int round,
                       std::span<SideSum> sums) {
  // Each out-of-process side's child threads (none in process).
  auto child_threads = [&]() -> absl::StatusOr<std::vector<std::vector<ThreadCpu>>> {
    std::vector<std::vector<ThreadCpu>> threads(paths.size());
    for (size_t side = 0; side < paths.size(); ++side) {
      if (paths[side]->backend_pid() == 0) continue;
      absl::StatusOr<std::vector<ThreadCpu>> t = ThreadsCpu(paths[side]->backend_pid());
      if (!t.ok()) return t.status();
      threads[side] = *std::move(t);
    }
    return threads;
  };
  absl::StatusOr<std::vector<std::vector<ThreadCpu>>> child_before = child_threads();
  if (!child_before.ok()) return child_before.status();
  const double process_cpu_before = SelfCpuSeconds();
  const double thread_cpu_before = ThreadCpuSeconds();
  std::vector<double> thread_cpu(paths.size());
  for (size_t k = 0; k < chunks.size(); ++k) {
    for (size_t side : RotatedOrder(paths.size(), k + static_cast<size_t>(round))) {
      absl::StatusOr<ChunkTiming> t = paths[side]->Decode(chunks[k]);
      if (!t.ok()) return t.status();
      sums[side].seconds += t->decode_seconds;
      sums[side].chunk_seconds.push_back(t->decode_seconds);
      sums[side].frames += t->frames;
      sums[side].buffers.Merge(t->buffers);
      sums[side].caller_timeslices += t->thread_timeslices;
      thread_cpu[side] += t->thread_cpu_seconds;
    }
  }
  const double own_threads_cpu = SelfCpuSeconds() - process_cpu_before - (ThreadCpuSeconds() - thread_cpu_before);
  absl::StatusOr<std::vector<std::vector<ThreadCpu>>> child_after = child_threads();
  if (!child_after.ok()) return child_after.status();
  for (size_t side = 0; side < paths.size(); ++side) {
    sums[side].caller_cpu_seconds += thread_cpu[side];
    if (paths[side]->backend_pid() == 0) {
      sums[side].other_cpu_seconds += own_threads_cpu;
    } else {
      const ChildCpu child = ChildCpuBetween((*child_before)[side], (*child_after)[side]);
      sums[side].session_cpu_seconds += child.session;
      sums[side].other_cpu_seconds += child.other;
    }
  }
  return absl::OkStatus();
}

}  // namespace codecvisor::bench
