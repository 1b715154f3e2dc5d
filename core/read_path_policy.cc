// File: core/read_path_policy.cc

#include "core/read_path_policy.h"

#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/small_file.h"
#include "core/file_trust.h"

namespace codecvisor {

bool Inside(const std::string& path, const std::string& root) {
  if (root == "/") return true;
  return path == root || (absl::StartsWith(path, root) && path.size() > root.size() && path[root.size()] == '/');
}

namespace {

// Whether `path` lies strictly inside a folder named site-packages or
// dist-packages (a Python package's files, another wheel's libraries).
bool InPythonPackages(const std::string& path) {
  const std::vector<std::string> parts = absl::StrSplit(path, '/', absl::SkipEmpty());
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    if (parts[i] == "site-packages" || parts[i] == "dist-packages") return true;
  }
  return false;
}

// The library folder of the Python environment (a virtualenv, a conda
// environment, ~/.local) whose packages hold `folder`: PREFIX/lib for a
// folder inside PREFIX/lib/pythonX.Y/site-packages (or lib64, or
// dist-packages); "" for one in no environment's packages. A conda
// environment keeps its packages' shared libraries there (CUDA's, say).
std::string EnvironmentLibraries(const std::string& folder) {
  const std::vector<std::string> parts = absl::StrSplit(folder, '/', absl::SkipEmpty());
  for (size_t i = 0; i + 2 < parts.size(); ++i) {
    if ((parts[i] == "lib" || parts[i] == "lib64") && absl::StartsWith(parts[i + 1], "python") &&
        (parts[i + 2] == "site-packages" || parts[i + 2] == "dist-packages")) {
      return absl::StrCat("/", absl::StrJoin(parts.begin(), parts.begin() + static_cast<long>(i) + 1, "/"));
    }
  }
  return "";
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

const std::vector<GuardedFolder>& FixedGuardedFolders() {
  static const std::vector<GuardedFolder> folders = {
      {"/tmp", "a folder every program shares", true},
      {"/var/tmp", "a folder every program shares", true},
      {"/run", "a folder every program shares", true},
      {"/home", "the users' home folders", false},
      {"/root", "root's home folder", false},
      {"/media", "the users' removable media", false},
      {"/mnt", "mounted file systems", false},
      {"/var/mail", "the users' mail", false},
      {"/var/spool", "the users' queued mail and jobs", false},
      {"/var/crash", "crashed programs' memory", false},
      {"/var/lib/systemd/coredump", "crashed programs' memory", false},
      {"/var/lib/apport", "crashed programs' memory", false},
  };
  return folders;
}

// Where the system's files are: libraries, drivers' files and settings,
// vendors' toolkits (/opt/rocm), the kernel's views of the hardware. Any
// other folder (/srv, /data, /workspace, /var/www, a mount of the user's)
// may hold the users' data.
const std::vector<std::string>& SystemFolders() {
  static const std::vector<std::string> folders = {"/usr",  "/lib",     "/lib32",     "/lib64",    "/libx32",
                                                   "/bin",  "/sbin",    "/opt",       "/etc",      "/sys",
                                                   "/proc", "/var/lib", "/nix/store", "/gnu/store"};
  return folders;
}

std::optional<std::string> RealPath(const std::string& path) {
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) == nullptr) return std::nullopt;
  return std::string(resolved);
}

}  // namespace

std::string WhyReadPathIsRefused(const std::string& path, const std::string& manifest_folder,
                                 const std::vector<GuardedFolder>& also_guarded) {
  if (path == "/") return "the whole filesystem";
  if (Inside(path, "/dev")) {
    return "under /dev, which holds the user's terminals and /dev/shm: device nodes go in [sandbox] devices";
  }
  if (ProcessesInProc(path)) return "the host's processes (/proc)";
  // The given ones first (the user's home: the most particular).
  std::vector<GuardedFolder> guarded = also_guarded;
  for (const GuardedFolder& g : FixedGuardedFolders()) guarded.push_back(g);
  // The plugin's own folder, unless that is a guarded folder or holds one.
  bool own_folder_exempt = manifest_folder != "/";
  for (const GuardedFolder& g : guarded) {
    own_folder_exempt = own_folder_exempt && !Inside(g.folder, manifest_folder);
  }
  // The libraries of the Python environment the plugin is installed in,
  // unless that folder is a guarded one or holds one.
  std::string environment = EnvironmentLibraries(manifest_folder);
  for (const GuardedFolder& g : guarded) {
    if (!environment.empty() && Inside(g.folder, environment)) environment.clear();
  }
  for (const GuardedFolder& g : guarded) {
    if (!Inside(path, g.folder)) continue;
    if (path == g.folder) return absl::StrCat(g.folder, " (", g.what, ")");
    if (own_folder_exempt && Inside(path, manifest_folder)) continue;
    if (!g.shared && !environment.empty() && Inside(path, environment)) continue;
    // Another wheel's files in a home's virtualenv; not in a folder every
    // user may write, where another user could swap what is checked.
    if (!g.shared && InPythonPackages(path)) continue;
    return absl::StrCat("inside ", g.folder, " (", g.what, "), and ", g.shared ? "not" : "neither",
                        " in the plugin's own folder (", manifest_folder, ")",
                        g.shared ? "" : " nor in a Python package (site-packages) or its environment's lib");
  }
  for (const GuardedFolder& g : guarded) {
    if (Inside(g.folder, path)) return absl::StrCat("a folder that holds ", g.folder, " (", g.what, ")");
  }
  if (own_folder_exempt && Inside(path, manifest_folder)) return "";
  if (InPythonPackages(path) || (!environment.empty() && Inside(path, environment))) return "";
  for (const std::string& system : SystemFolders()) {
    if (Inside(path, system)) return "";
  }
  return absl::StrCat("neither in the plugin's own folder (", manifest_folder,
                      "), nor in a Python package (site-packages) or its environment's lib, nor in a system folder (",
                      absl::StrJoin(SystemFolders(), ", "), "): other folders may hold the users' data");
}

std::string WhyReadPathIsRefused(const std::string& path, const std::string& manifest_folder, const std::string& home) {
  std::vector<GuardedFolder> homes;
  if (!home.empty() && home != "/") homes.push_back({home, "the user's home folder", false});
  return WhyReadPathIsRefused(path, manifest_folder, homes);
}

absl::Status CheckReadPaths(const std::vector<std::string>& read_paths, const std::string& manifest_path) {
  if (read_paths.empty()) return absl::OkStatus();
  const std::string folder = manifest_path.substr(0, manifest_path.rfind('/'));
  const std::string manifest_folder = RealPath(folder.empty() ? "/" : folder).value_or(folder);
  // The user's home folders, and where the fixed folders really are (a
  // /home that is /var/home).
  std::vector<GuardedFolder> guarded;
  if (const char* home = std::getenv("HOME"); home != nullptr && home[0] == '/') {
    if (std::optional<std::string> real = RealPath(home); real.has_value() && *real != "/") {
      guarded.push_back({*real, "the user's home folder", false});
    }
  }
  passwd entry{};
  passwd* found = nullptr;
  char buffer[4096];
  if (getpwuid_r(geteuid(), &entry, buffer, sizeof(buffer), &found) == 0 && found != nullptr &&
      found->pw_dir != nullptr && found->pw_dir[0] == '/') {
    if (std::optional<std::string> real = RealPath(found->pw_dir); real.has_value() && *real != "/") {
      guarded.push_back({*real, "the user's home folder", false});
    }
  }
  for (const GuardedFolder& g : FixedGuardedFolders()) {
    if (std::optional<std::string> real = RealPath(g.folder); real.has_value() && *real != g.folder && *real != "/") {
      guarded.push_back({*real, g.what, g.shared});
    }
  }
  for (const std::string& p : read_paths) {
    auto refused = [&](absl::string_view why, absl::string_view real = "") {
      return absl::FailedPreconditionError(absl::StrCat(
          "[sandbox] read_paths: ", p, !real.empty() && real != p ? absl::StrCat(" (", real, ")") : "", " is ", why,
          "; a plugin may read its own folder (read_paths = [\".\"], with the manifest in a folder of the plugin's "
          "own), Python packages' files and system folders, never the user's files"));
    };
    // As written, whether or not it exists here: /dev and /proc's
    // processes are never a read path.
    const std::string written = std::filesystem::path(p).lexically_normal().string();
    if (Inside(written, "/dev") || ProcessesInProc(written)) {
      return refused(WhyReadPathIsRefused(written, manifest_folder, guarded));
    }
    const int fd = open(p.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) continue;  // left out, as the sandbox leaves it out
    if (fd < 0 && OutOfDescriptors(errno)) {
      // This process at its descriptor limit: checked at the next start.
      return absl::ResourceExhaustedError(
          absl::StrCat("[sandbox] read_paths: ", p, " could not be checked: ", std::strerror(errno)));
    }
    if (fd < 0) return refused(absl::StrCat("not checkable (", std::strerror(errno), ")"));
    struct stat opened {
    }, resolved{};
    const bool opened_ok = fstat(fd, &opened) == 0;
    close(fd);
    const std::optional<std::string> real = RealPath(p);
    // What the kernel reaches and the path realpath names must be one
    // file: a /proc/PID/root or /proc/PID/fd link leads elsewhere.
    if (!opened_ok || !real.has_value() || stat(real->c_str(), &resolved) != 0 || resolved.st_dev != opened.st_dev ||
        resolved.st_ino != opened.st_ino) {
      return refused("reached through a link that leads outside the paths it names (a /proc link)");
    }
    if (const std::string why = WhyReadPathIsRefused(*real, manifest_folder, guarded); !why.empty()) {
      return refused(why, *real);
    }
    // Nobody else may change what it is (a folder of another user's in
    // /tmp, swapped for a link between this check and the bind).
    if (absl::Status s = CheckOnlyOwnerCanChange(*real, "read path"); !s.ok() && !absl::IsNotFound(s)) {
      return refused(absl::StrCat("changeable by another user: ", s.message()), *real);
    }
  }
  return absl::OkStatus();
}

}  // namespace codecvisor
