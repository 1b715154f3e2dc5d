// File: tools/common/subprocess.h
//
// Runs a helper program (ffmpeg, ffprobe, a shell) and collects what it
// writes on standard output: the one way codecvisor's tools and tests run
// another program and wait for it (the conformance suite's references, the
// benchmarks' baselines, the test videos of test_video.h). Bounded in time
// and in bytes, so that a stuck or runaway tool becomes an error rather
// than a hang. Thread-safe (no shared state); blocks the calling thread.

#ifndef CODECVISOR_TOOLS_COMMON_SUBPROCESS_H_
#define CODECVISOR_TOOLS_COMMON_SUBPROCESS_H_

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace codecvisor::tools {

struct OutputLimits {
  size_t max_stdout_bytes = size_t{1} << 30;
  std::chrono::milliseconds timeout{300'000};
};

// Runs argv[0] (looked up in PATH) with stdin on /dev/null and returns its
// standard output once it exits with status 0. Otherwise an error naming the
// command, how it ended and the end of its stderr; kDeadlineExceeded (the
// program killed) past `limits.timeout`, kResourceExhausted (killed) past
// `limits.max_stdout_bytes`.
[[nodiscard]] absl::StatusOr<std::string> RunForOutput(const std::vector<std::string>& argv,
                                                       const OutputLimits& limits = {});

}  // namespace codecvisor::tools

#endif  // CODECVISOR_TOOLS_COMMON_SUBPROCESS_H_
