// File: tools/bench/cpu_time.h
//
// CPU time consumed by this process, by the calling thread and by another
// process (a backend child), so that a benchmark can tell the work done
// from the waiting. Thread-safe (getrusage, clock_gettime and procfs only).

#ifndef CODECVISOR_TOOLS_BENCH_CPU_TIME_H_
#define CODECVISOR_TOOLS_BENCH_CPU_TIME_H_

#include <sys/types.h>

#include "absl/status/statusor.h"

namespace codecvisor::bench {

// User + system CPU seconds of this process, all threads, so far.
double SelfCpuSeconds();

// CPU seconds of the calling thread so far (CLOCK_THREAD_CPUTIME_ID).
double ThreadCpuSeconds();

// User + system CPU seconds of process `pid`, all threads, so far, from
// /proc/PID/stat (clock-tick resolution, 10 ms at the usual 100 Hz).
[[nodiscard]] absl::StatusOr<double> ProcessCpuSeconds(pid_t pid);

}  // namespace codecvisor::bench

#endif  // CODECVISOR_TOOLS_BENCH_CPU_TIME_H_
