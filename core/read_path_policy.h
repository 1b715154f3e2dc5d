// File: core/read_path_policy.h
//
// Which host paths a backend's manifest may grant it for reading
// ([sandbox] read_paths). The manifest is the plugin vendor's, so a
// hostile plugin writes its own grants: without a rule it could read the
// user's terminal (typed passwords), ~/.ssh, or the shared memory other
// programs keep in /dev/shm. A read path may be the plugin's own folder
// and what is inside it, Python packages' files (a folder inside a
// site-packages or dist-packages folder: another wheel's libraries), the
// library folder of the Python environment the plugin is installed in
// (PREFIX/lib: a conda environment's CUDA libraries), and
// system folders (/usr, /lib*, /opt, /etc, /sys, /proc, /var/lib, /nix/store,
// ...); any other folder (/srv, /data, /workspace) may hold the users' data
// and is refused. Refused with their own reasons: the whole filesystem;
// /dev (device nodes are [sandbox] devices, with their own checks); /proc's
// processes; the folders every program shares (/tmp, /var/tmp, /run); and
// home folders (/home, /root, the user's HOME), each with anything inside
// it or any folder that holds it. The plugin's own folder is exempt only
// when it is not one of those folders itself (a manifest dropped straight
// into HOME or /tmp grants no more than any other).
//
// Judged on real paths (symbolic links resolved), at load and again at
// each start. Thread-safe: pure functions and system calls only.

#ifndef CODECVISOR_CORE_READ_PATH_POLICY_H_
#define CODECVISOR_CORE_READ_PATH_POLICY_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace codecvisor {

// Whether `path` is `root` or lies inside it (both absolute and normal).
bool Inside(const std::string& path, const std::string& root);

// A folder no read path may be in (but the plugin's own folder), or hold.
struct GuardedFolder {
  std::string folder;
  std::string what;  // "the user's home folder"
  // Every user may write it (/tmp): a Python package there is no exception.
  bool shared = false;
};

// Pure: why `path` (absolute, real) may not be read by a backend whose
// manifest's folder is `manifest_folder` (real); "" when it may. Guarded:
// `also_guarded` (the user's home folders, and where the fixed ones really
// are) and the fixed folders (/tmp, /var/tmp, /run, /home, /root, /media,
// /mnt, /var/mail, /var/spool, /var/crash, the core dump folders in
// /var/lib).
std::string WhyReadPathIsRefused(const std::string& path, const std::string& manifest_folder,
                                 const std::vector<GuardedFolder>& also_guarded);
// The same for a user whose home folder is `home` (real; "" if unknown).
std::string WhyReadPathIsRefused(const std::string& path, const std::string& manifest_folder, const std::string& home);

// Each of `read_paths` (absolute), judged for the manifest at
// `manifest_path` and this process's HOME (and its user's home in the
// password database): FAILED_PRECONDITION naming the first that is
// refused. Under /dev or /proc's processes as written, whether it exists
// or not; else a missing path is left out, as the sandbox leaves it out.
// One that exists must resolve (realpath) to the very file the kernel
// opens for it (a /proc/PID/root link does not), pass the rule above, and
// be changeable by no other user (core/file_trust.h).
absl::Status CheckReadPaths(const std::vector<std::string>& read_paths, const std::string& manifest_path);

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_READ_PATH_POLICY_H_
