#include "tools/bench/test_backend_library.h"

#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"

namespace codecvisor::bench {

absl::StatusOr<std::string> FindTestBackendLibrary(const std::string& library, const std::string& given,
                                                   const std::string& flag) {
  if (!given.empty()) {
    if (access(given.c_str(), R_OK) != 0) return absl::NotFoundError(absl::StrCat(given, ": cannot be read"));
    return std::filesystem::absolute(given).string();
  }
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::filesystem::path runfiles = exe.string() + ".runfiles/codecvisor/backends/testing/" + library;
    if (access(runfiles.c_str(), R_OK) == 0) return runfiles.string();
    // bazel-bin's layout: backends/testing/ beside the package folders.
    for (std::filesystem::path dir = exe.parent_path(); dir != dir.parent_path(); dir = dir.parent_path()) {
      const std::filesystem::path candidate = dir / "backends/testing" / library;
      if (access(candidate.c_str(), R_OK) == 0) return candidate.string();
    }
  }
  return absl::NotFoundError(absl::StrCat("the test backend ", library,
                                          " was not found next to this binary; build it with the same -c as "
                                          "codecvisor (bazel build -c opt //backends/testing:",
                                          library, ") or pass ", flag, " PATH"));
}

}  // namespace codecvisor::bench
