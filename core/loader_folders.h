// File: core/loader_folders.h
//
// The folders the dynamic loader searches beyond the system's own, as
// /etc/ld.so.conf (and the files its `include` lines name) lists them:
// where an administrator registers a vendor's libraries with ldconfig
// (ROCm's /opt/rocm/lib, a driver's /opt/VENDOR/lib). The loader's cache
// points into them, so a plugin linked against such a library needs them
// in its sandbox as much as /usr: the host binds them read-only into the
// backend's root and grants them to Landlock, as it does the system
// folders. Folders under /usr, /lib, /lib64 and /lib32 are there already;
// one a manifest could not grant (core/read_path_policy.h: /, /dev, /proc,
// /tmp, home folders) or that not every user may reach is never taken.
//
// Thread-safe: pure functions and reads of files.

#ifndef CODECVISOR_CORE_LOADER_FOLDERS_H_
#define CODECVISOR_CORE_LOADER_FOLDERS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace codecvisor {

// At most this many folders are taken (each is a mount in the backend's
// root).
inline constexpr size_t kMaxLoaderFolders = 16;

// Pure: the folders `text` (an ld.so.conf) names, in order, without
// repeats, following `include PATTERN` lines through `included`, which
// returns the texts of the files a glob pattern matches (at most 4 levels
// deep). Comments (#) and blank lines are skipped; `hwcap` lines too.
std::vector<std::string> ParseLoaderConfig(
    absl::string_view text, const std::function<std::vector<std::string>(const std::string& pattern)>& included);

// The folders of this machine's /etc/ld.so.conf that exist and are not
// already among the system folders, at most kMaxLoaderFolders; read once
// per process.
const std::vector<std::string>& LoaderFolders();

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_LOADER_FOLDERS_H_
