// File: core/process_cpu.h
//
// The CPU time a process has used, all its threads together, from
// /proc/PID/stat (utime + stime, in clock ticks), for ProgressWatch.
// Readable for any process of ours; nullopt where procfs is hidden.

#ifndef CODECVISOR_CORE_PROCESS_CPU_H_
#define CODECVISOR_CORE_PROCESS_CPU_H_

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string_view>

namespace codecvisor {

// utime + stime of a /proc/PID/stat text, with `ticks_per_second`
// (sysconf(_SC_CLK_TCK)); nullopt if the text is not one.
std::optional<std::chrono::nanoseconds> ParseStatCpuTime(std::string_view stat, long ticks_per_second);

// Process `pid`'s CPU time so far; nullopt if it cannot be read.
std::optional<std::chrono::nanoseconds> ProcessCpuTime(pid_t pid);

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_PROCESS_CPU_H_
