#include "tools/bench/scratch_dir.h"

#include <errno.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"

namespace codecvisor::bench {

absl::StatusOr<std::unique_ptr<ScratchDir>> ScratchDir::Create(absl::string_view purpose) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = absl::StrCat(tmp != nullptr && *tmp ? tmp : "/tmp", "/codecvisor-", purpose, "-XXXXXX");
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) {
    const int err = errno;
    return absl::Status(absl::ErrnoToStatusCode(err),
                        absl::StrCat("mkdtemp(", pattern, "): ", std::strerror(err), "; set TMPDIR to a writable folder"));
  }
  return std::unique_ptr<ScratchDir>(new ScratchDir(buffer.data()));
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string ScratchDir::File(absl::string_view name) const { return absl::StrCat(path_, "/", name); }

absl::StatusOr<std::string> ScratchDir::WriteFile(absl::string_view name, absl::string_view text) const {
  std::string path = File(name);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return path;
}

}  // namespace codecvisor::bench
