// File: tools/bench/soak_bench.h
//
// `codecvisor-bench soak`: reliability under load. Decoders run at once on
// two backends, the cpu one (real H.264) and the faulty test backend (which
// also crashes at random on its own), while a chaos thread SIGKILLs one of
// the two children at random, on average every `crash_interval_ms`. One
// decoder keeps asking for a poison request (a frame that always crashes
// the faulty backend). Every frame is checked against a crash-free run.
//
//   requests_served/retried/failed   failed = failed_poison +
//                                    failed_flaky_twice + failed_other; only
//                                    poison requests (2 crashes) may fail
//   wrong_frames                     by checksum against the crash-free run: 0
//   rss_kb_start/end, fds_start/end  host memory and descriptors
//   children_left                    after the Host is destroyed: 0
//
// The faulty backend's library is a test-only build product, looked for as
// bench restart looks for the synthetic one (next to this binary, or given).
// The benchmark writes manifests with a restart budget large enough for the
// crash rate into a scratch folder, for both backends.
//
// Thread-safety: RunSoakBench runs its own threads; call it once at a time.

#ifndef CODECVISOR_TOOLS_BENCH_SOAK_BENCH_H_
#define CODECVISOR_TOOLS_BENCH_SOAK_BENCH_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/install_layout.h"

namespace codecvisor::bench {

struct SoakBenchOptions {
  double seconds = 60;
  int decoders = 16;  // half on each backend
  double crash_interval_ms = 200;
  // libcodecvisor_faulty.so; empty: next to this binary.
  std::string faulty_library;
  // Where the runner and the cpu backend are; discovered when empty.
  std::optional<InstallLayout> layout;
  uint64_t seed = 0;  // 0: from the clock
};

struct SoakBenchResult {
  double seconds = 0;
  int decoders = 0;
  double crash_interval_ms = 0;
  uint64_t requests_served = 0;
  uint64_t requests_retried = 0;  // served after at least one re-issue
  uint64_t requests_failed = 0;
  uint64_t failed_poison = 0;       // the poison clip's requests
  // A flaky clip's request that crashed the backend on both tries: poison
  // by the host's definition, and a correct verdict.
  uint64_t failed_flaky_twice = 0;
  uint64_t failed_other = 0;
  uint64_t frames_checked = 0;
  uint64_t wrong_frames = 0;
  uint64_t crashes_injected = 0;  // SIGKILLs by the chaos thread
  uint64_t restarts_cpu = 0;
  uint64_t restarts_faulty = 0;   // injected kills, random faults, poison
  int64_t rss_kb_start = 0;       // after the crash-free run
  int64_t rss_kb_end = 0;
  int fds_start = 0;              // before the Host is created
  int fds_end = 0;                // after it is destroyed
  int children_left = 0;
  std::vector<std::string> unexpected;  // the first few failures that were not poison

  // No wrong frame, no failure but poison, no child or descriptor left.
  bool ok() const;
  std::string ToJson() const;
  std::string ToText() const;
};

[[nodiscard]] absl::StatusOr<SoakBenchResult> RunSoakBench(const SoakBenchOptions& options);

}  // namespace codecvisor::bench

#endif  // CODECVISOR_TOOLS_BENCH_SOAK_BENCH_H_
