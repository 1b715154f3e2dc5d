// File: tools/bench/run_program.h
//
// Runs an external program (the ffmpeg CLI) to completion: the benchmarks
// make their test videos with it and time it as a baseline. Thread-safe
// (no shared state); blocks the calling thread.

#ifndef CODECVISOR_TOOLS_BENCH_RUN_PROGRAM_H_
#define CODECVISOR_TOOLS_BENCH_RUN_PROGRAM_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace codecvisor::bench {

// Runs argv[0] (looked up in PATH) with `argv`, stdin and stdout on
// /dev/null, and waits for it. OK if it exits with status 0; otherwise an
// error naming the program, how it ended and the end of its stderr.
[[nodiscard]] absl::Status RunProgram(const std::vector<std::string>& argv);

}  // namespace codecvisor::bench

#endif  // CODECVISOR_TOOLS_BENCH_RUN_PROGRAM_H_
