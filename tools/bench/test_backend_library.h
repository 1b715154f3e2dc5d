// File: tools/bench/test_backend_library.h
//
// Finds a test backend's library (//backends/testing: the synthetic or the
// faulty one) for the benchmarks that drive one. Those are test-only build
// products, so they are not in the codecvisor binary's runfiles: they are
// looked for next to it. Thread-safe (pure).

#ifndef CODECVISOR_TOOLS_BENCH_TEST_BACKEND_LIBRARY_H_
#define CODECVISOR_TOOLS_BENCH_TEST_BACKEND_LIBRARY_H_

#include <string>

#include "absl/status/statusor.h"

namespace codecvisor::bench {

// `given` if set (it must be readable); else `library` (e.g.
// "libcodecvisor_faulty.so") in <this binary>.runfiles/codecvisor/
// backends/testing/, then in backends/testing/ under the nearest folder
// above this binary that has one (bazel-bin's layout). kNotFound says how to build it; `flag` names the
// command-line flag that gives it.
[[nodiscard]] absl::StatusOr<std::string> FindTestBackendLibrary(const std::string& library, const std::string& given,
                                                                 const std::string& flag);

}  // namespace codecvisor::bench

#endif  // CODECVISOR_TOOLS_BENCH_TEST_BACKEND_LIBRARY_H_
