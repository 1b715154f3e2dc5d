// File: tools/bench/restart_bench.h
//
// `codecvisor-bench restart`: what discovery, a cold start and a failover
// cost, with the synthetic test backend (backends/testing/) in real
// sandboxed child processes:
//
//   discovery_ms_100        Host creation with 100 manifests on the search
//                           path (manifests read, no child spawned); target <= 10
//   cold_spawn_ms           the first request on a fresh backend: OpenDecoder
//                           + GetFrameAt(0), host creation excluded; sandboxed,
//                           and cold_spawn_ms_unsandboxed with the sandbox off
//   failover_ms_cold/_warm  from SIGKILLing the backend while a ForEachFrame
//                           is in flight to the first frame of the re-issued
//                           request (p50, p95 over --crashes kills), without
//                           and with a warm spare; targets: warm p50 <= 5,
//                           cold p50 <= cold_spawn_ms + 10
//
// and, to read those by: discovery with the built-in manifest only, the
// killed child's own exit time, and OpenDecoder and GetFrameAt on a running
// backend (what a failover repeats).
//
// With --host-resident-mb N the benchmark first makes N MiB of its own
// memory resident, as a training process's is, and takes every figure with
// it; and reports, per round, how long writing one byte of every page of it
// takes right after a sandboxed cold start (resident_rewrite_ms) and at
// once again, with no start between (resident_rewrite_ms_quiet): a start
// forks this process, and each page it writes afterwards faults once.
//
// The synthetic backend's library is a test-only build product: it is
// looked for next to this binary (a Bazel runfiles tree, or bazel-bin's
// layout) unless given; the benchmark writes its own manifest for it in a
// scratch folder and registers it with Host::LoadBackend.
//
// Thread-safety: RunRestartBench runs on the calling thread (the Hosts and
// a short-lived exit watch per crash add their own); call it once at a time.

#ifndef CODECVISOR_TOOLS_BENCH_RESTART_BENCH_H_
#define CODECVISOR_TOOLS_BENCH_RESTART_BENCH_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/bench/targets.h"

namespace codecvisor::bench {

struct RestartBenchOptions {
  int crashes = 50;    // kills per failover figure
  int rounds = 11;     // host creations per discovery and cold-spawn median
  int manifests = 100;
  // Path of libcodecvisor_synthetic.so (//backends/testing). Empty: look
  // next to this binary (FindTestBackendLibrary, test_backend_library.h).
  std::string synthetic_library;
  uint64_t host_resident_mb = 0;  // this process's own resident memory, MiB
};

struct RestartBenchResult {
  int manifests = 0;
  int rounds = 0;
  int crashes = 0;
  double discovery_ms_100 = 0;      // with `manifests` manifests (100 by default)
  double discovery_ms_builtin = 0;  // the built-in cpu manifest only: the fixed cost
  double cold_spawn_ms = 0;
  double cold_spawn_ms_unsandboxed = 0;
  // On a running backend, for reading the failover figures: opening a
  // decoder (what a failover repeats), and one GetFrameAt.
  double warm_open_ms = 0;
  double warm_request_ms = 0;
  // SIGKILL -> the killed child's pidfd readable (p50 over every crash):
  // the part of a failover spent waiting for the old child to die.
  double backend_exit_ms_p50 = 0;
  double failover_ms_cold_p50 = 0;
  double failover_ms_cold_p95 = 0;
  double failover_ms_warm_p50 = 0;
  double failover_ms_warm_p95 = 0;
  // With host_resident_mb > 0 (medians over rounds).
  uint64_t host_resident_mb = 0;
  double resident_rewrite_ms = 0;
  double resident_rewrite_ms_quiet = 0;
  std::vector<TargetCheck> targets;

  std::string ToJson() const;  // one line, no newline
  std::string ToText() const;
};

[[nodiscard]] absl::StatusOr<RestartBenchResult> RunRestartBench(const RestartBenchOptions& options);

}  // namespace codecvisor::bench

#endif  // CODECVISOR_TOOLS_BENCH_RESTART_BENCH_H_
