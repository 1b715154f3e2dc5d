#include "core/install_layout.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace codecvisor {
namespace {

bool IsExecutable(const std::string& p) { return access(p.c_str(), X_OK) == 0; }
bool IsReadable(const std::string& p) { return access(p.c_str(), R_OK) == 0; }

std::string SelfExe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// The file holding this code: libcodecvisor.so when the host library is
// linked as a shared library, else the program.
std::string SelfObject() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&SelfExe), &info) == 0 || info.dli_fname == nullptr) return "";
  char resolved[PATH_MAX];
  if (realpath(info.dli_fname, resolved) == nullptr) return "";
  return resolved;
}

std::string Parent(const std::string& p) {
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

}  // namespace

absl::StatusOr<InstallLayout> InstallLayout::Discover() {
  std::vector<std::string> tried;
  auto accept = [&](InstallLayout l) -> bool {
    tried.push_back(l.runner);
    return IsExecutable(l.runner) && IsReadable(l.builtin_dir + "/cpu.toml");
  };
  const char* runner = std::getenv("CODECVISOR_RUNNER");
  const char* builtin = std::getenv("CODECVISOR_BUILTIN_BACKENDS");
  if (runner != nullptr && builtin != nullptr) {
    InstallLayout l{runner, builtin};
    if (accept(l)) return l;
  }
  const std::string exe = SelfExe();
  std::vector<std::string> runfiles;
  for (const char* var : {"RUNFILES_DIR", "TEST_SRCDIR"}) {
    if (const char* v = std::getenv(var); v != nullptr && *v) runfiles.push_back(v);
  }
  if (!exe.empty()) runfiles.push_back(exe + ".runfiles");
  for (const std::string& root : runfiles) {
    InstallLayout l{root + "/codecvisor/backends/sdk/runner/codecvisor-backend", root + "/codecvisor/backends/cpu"};
    if (accept(l)) return l;
  }
  // An installed prefix around the code: PREFIX/lib/libcodecvisor.so,
  // PREFIX/lib/python3/site-packages/codecvisor/_codecvisor.so, or the
  // program, PREFIX/bin/codecvisor.
  std::vector<std::pair<std::string, int>> objects;  // file, folders between it and the prefix
  if (const std::string self = SelfObject(); !self.empty() && self != exe) {
    objects.push_back({self, 1});
    objects.push_back({self, 4});
  }
  if (!exe.empty()) objects.push_back({exe, 1});
  for (const auto& [object, depth] : objects) {
    std::string prefix = Parent(object);
    for (int i = 0; i < depth; ++i) prefix = Parent(prefix);
    InstallLayout l{prefix + "/libexec/codecvisor/codecvisor-backend", prefix + "/lib/codecvisor/backends"};
    if (accept(l)) return l;
  }
  return absl::NotFoundError(absl::StrCat(
      "cannot find the codecvisor-backend runner and the built-in cpu backend; looked for ", absl::StrJoin(tried, ", "),
      ". The library, the CLI and the Python package find them from the prefix they are installed in "
      "(PREFIX/libexec/codecvisor/, PREFIX/lib/codecvisor/backends/): use them where //:install put them (Python: "
      "PYTHONPATH=PREFIX/lib/python3/site-packages, not a copy of the package elsewhere), or set CODECVISOR_RUNNER "
      "to the runner and CODECVISOR_BUILTIN_BACKENDS to the folder of cpu.toml"));
}

}  // namespace codecvisor
