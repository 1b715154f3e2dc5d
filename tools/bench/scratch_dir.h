// File: tools/bench/scratch_dir.h
//
// ScratchDir: a private temporary folder for a benchmark's generated files
// (test videos, manifests), removed with everything in it when the object
// dies. Not thread-safe; one owner.

#ifndef CODECVISOR_TOOLS_BENCH_SCRATCH_DIR_H_
#define CODECVISOR_TOOLS_BENCH_SCRATCH_DIR_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace codecvisor::bench {

class ScratchDir {
 public:
  // Creates "<$TMPDIR or /tmp>/codecvisor-<purpose>-XXXXXX", mode 0700.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ScratchDir>> Create(absl::string_view purpose);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  // path()/name.
  std::string File(absl::string_view name) const;
  // Writes `text` to path()/name (replacing it) and returns that path.
  [[nodiscard]] absl::StatusOr<std::string> WriteFile(absl::string_view name, absl::string_view text) const;

 private:
  explicit ScratchDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace codecvisor::bench

#endif  // CODECVISOR_TOOLS_BENCH_SCRATCH_DIR_H_
