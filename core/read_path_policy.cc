// File: core/read_path_policy.cc

#include "core/read_path_policy.h"

#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace codecvisor {
namespace {

// Whether `path` is `root` or lies inside it.
bool Inside(const std::string& path, const std::string& root) {
  if (root == "/") return true;
  return path == root || (absl::StartsWith(path, root) && path.size() > root.size() && path[root.size()] == '/');
}

// Whether `path` lies strictly inside a folder named site-packages or
// dist-packages (a Python package's files, another wheel's libraries).
bool InPythonPackages(const std::string& path) {
  const std::vector<std::string> parts = absl::StrSplit(path, '/', absl::SkipEmpty());
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    if (parts[i] == "site-packages" || parts[i] == "dist-packages") return true;
  }
  return false;
}

// /proc/N..., /proc/self, /proc/thread-self: processes (their command
// lines, environments, memory).
bool ProcessesInProc(const std::string& path) {
  if (path == "/proc") return true;
  if (!absl::StartsWith(path, "/proc/")) return false;
  const size_t end = path.find('/', 6);
  const std::string first = path.substr(6, end == std::string::npos ? std::string::npos : end - 6);
  if (first == "self" || first == "thread-self") return true;
  return !first.empty() && std::isdigit(static_cast<unsigned char>(first[0]));
}

std::optional<std::string> RealPath(const std::string& path) {
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) == nullptr) return std::nullopt;
  return std::string(resolved);
}

}  // namespace

std::string WhyReadPathIsRefused(const std::string& path, const std::string& manifest_folder, const std::string& home) {
  if (path == "/") return "the whole filesystem";
  if (Inside(path, "/dev")) {
    return "under /dev, which holds the user's terminals and /dev/shm: device nodes go in [sandbox] devices";
  }
  if (ProcessesInProc(path)) return "the host's processes (/proc)";
  struct Guarded {
    std::string folder;
    const char* what;
  };
  // The user's home first: the most particular of them.
  std::vector<Guarded> guarded;
  if (!home.empty() && home != "/") guarded.push_back({home, "the user's home folder"});
  for (const Guarded& g : std::initializer_list<Guarded>{{"/tmp", "a folder every program shares"},
                                                         {"/var/tmp", "a folder every program shares"},
                                                         {"/run", "a folder every program shares"},
                                                         {"/home", "the users' home folders"},
                                                         {"/root", "root's home folder"}}) {
    guarded.push_back(g);
  }
  // The plugin's own folder, unless that is a guarded folder or holds one.
  bool own_folder_exempt = manifest_folder != "/";
  for (const Guarded& g : guarded)
    own_folder_exempt = own_folder_exempt && !Inside(g.folder, manifest_folder) && manifest_folder != g.folder;
  for (const Guarded& g : guarded) {
    if (!Inside(path, g.folder)) continue;
    if (path == g.folder) return absl::StrCat(g.folder, " (", g.what, ")");
    if (own_folder_exempt && Inside(path, manifest_folder)) continue;
    if (InPythonPackages(path)) continue;
    return absl::StrCat("inside ", g.folder, " (", g.what, "), and neither in the plugin's own folder (",
                        manifest_folder, ") nor in a Python package (site-packages)");
  }
  for (const Guarded& g : guarded) {
    if (Inside(g.folder, path)) return absl::StrCat("a folder that holds ", g.folder, " (", g.what, ")");
  }
  return "";
}

absl::Status CheckReadPaths(const std::vector<std::string>& read_paths, const std::string& manifest_path) {
  if (read_paths.empty()) return absl::OkStatus();
  const std::string folder = manifest_path.substr(0, manifest_path.rfind('/'));
  const std::string manifest_folder = RealPath(folder.empty() ? "/" : folder).value_or(folder);
  std::vector<std::string> homes;
  if (const char* home = std::getenv("HOME"); home != nullptr && home[0] == '/') {
    if (std::optional<std::string> real = RealPath(home)) homes.push_back(*real);
  }
  passwd entry{};
  passwd* found = nullptr;
  char buffer[4096];
  if (getpwuid_r(geteuid(), &entry, buffer, sizeof(buffer), &found) == 0 && found != nullptr &&
      found->pw_dir != nullptr && found->pw_dir[0] == '/') {
    if (std::optional<std::string> real = RealPath(found->pw_dir)) homes.push_back(*real);
  }
  if (homes.empty()) homes.push_back("");
  for (const std::string& p : read_paths) {
    const std::optional<std::string> real = RealPath(p);
    if (!real.has_value()) continue;
    for (const std::string& home : homes) {
      const std::string why = WhyReadPathIsRefused(*real, manifest_folder, home);
      if (why.empty()) continue;
      return absl::FailedPreconditionError(absl::StrCat(
          "[sandbox] read_paths: ", p, *real != p ? absl::StrCat(" (", *real, ")") : "", " is ", why,
          "; a plugin may read its own folder (read_paths = [\".\"], with the manifest in a folder of the plugin's "
          "own), Python packages' files and system folders, never the user's files"));
    }
  }
  return absl::OkStatus();
}

}  // namespace codecvisor
