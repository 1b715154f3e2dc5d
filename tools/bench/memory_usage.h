// File: tools/bench/memory_usage.h
//
// This process's memory figures from /proc/self, for the benchmarks that
// check that the host's memory does not grow with the frames it decodes.
// Thread-safe (reads and writes only procfs).

#ifndef CODECVISOR_TOOLS_BENCH_MEMORY_USAGE_H_
#define CODECVISOR_TOOLS_BENCH_MEMORY_USAGE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace codecvisor::bench {

// The value in kB of `field` ("VmHWM", "VmRSS", ...) of /proc/self/status.
[[nodiscard]] absl::StatusOr<int64_t> ProcStatusKb(absl::string_view field);

// Resets this process's peak resident set size (VmHWM) to its current
// resident set size (writes "5" to /proc/self/clear_refs, Linux >= 4.0),
// so that a later VmHWM is the peak of what ran in between.
[[nodiscard]] absl::Status ResetPeakRss();

// Anonymous memory this process holds resident, every page written, as a
// training process's tensors and model are (`codecvisor-bench restart
// --host-resident-mb`): a backend start that copied this process (a
// fork-style clone) would cost more the more it holds, and leave every page
// to fault once when written again. Not thread-safe.
class ResidentMemory {
 public:
  explicit ResidentMemory(uint64_t mib);  // 0: none
  ~ResidentMemory();
  ResidentMemory(const ResidentMemory&) = delete;
  ResidentMemory& operator=(const ResidentMemory&) = delete;

  uint64_t bytes() const { return bytes_; }
  // Writes one byte of every page and returns how long that took, in ms.
  double RewriteMs();

 private:
  char* data_ = nullptr;
  uint64_t bytes_ = 0;
};

}  // namespace codecvisor::bench

#endif  // CODECVISOR_TOOLS_BENCH_MEMORY_USAGE_H_
