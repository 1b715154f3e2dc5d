// File: tools/bench/cpu_time.h
//
// CPU time consumed by this process, by the calling thread and by each
// thread of another process (a backend child), so that a benchmark can
// tell the work done from the waiting, and whose work it was. Thread-safe
// (getrusage, clock_gettime and procfs only).

#ifndef CODECVISOR_TOOLS_BENCH_CPU_TIME_H_
#define CODECVISOR_TOOLS_BENCH_CPU_TIME_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace codecvisor::bench {

// User + system CPU seconds of this process, all threads, so far.
double SelfCpuSeconds();

// CPU seconds of the calling thread so far (CLOCK_THREAD_CPUTIME_ID).
double ThreadCpuSeconds();

// How many times the calling thread has been scheduled in so far (the
// third field of /proc/thread-self/schedstat): one more each time it woke
// from a sleep or was preempted and ran again. -1 if it cannot be read.
int64_t ThreadTimeslices();

// One thread of a process and the CPU time it has run so far.
struct ThreadCpu {
  pid_t tid = 0;
  std::string name;     // /proc/PID/task/TID/comm
  double seconds = 0;   // /proc/PID/task/TID/schedstat: nanosecond resolution
};

// Every live thread of process `pid`. A thread that exits while the
// folder is read is left out.
[[nodiscard]] absl::StatusOr<std::vector<ThreadCpu>> ThreadsCpu(pid_t pid);

}  // namespace codecvisor::bench

#endif  // CODECVISOR_TOOLS_BENCH_CPU_TIME_H_
