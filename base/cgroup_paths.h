// File: base/cgroup_paths.h
//
// Where this process's cgroups are, read from the texts of
// /proc/self/mountinfo and /proc/self/cgroup, and the memory limit they put
// on it. A container started with a memory limit (docker --memory, a
// systemd unit's MemoryMax=) still shows the whole machine's memory to
// sysconf, so a process that sizes its memory by sysconf alone is killed by
// the kernel where it could have refused: UsableMemoryBytes() takes the
// lowest limit of its memory cgroup and of every cgroup above it, v2
// (memory.max) or v1 (memory.limit_in_bytes), and of its address space
// (RLIMIT_AS, `ulimit -v`), past which no mapping is made.
//
// The parsing is pure, for tests; core/cgroup builds backends' cgroups on
// it.

#ifndef CODECVISOR_BASE_CGROUP_PATHS_H_
#define CODECVISOR_BASE_CGROUP_PATHS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace codecvisor {

struct CgroupMount {
  std::string root;                  // the part of the hierarchy mounted there
  std::string point;                 // where it is mounted
  std::string type;                  // "cgroup" (v1) or "cgroup2"
  std::vector<std::string> options;  // super options: a v1 mount's controllers among them
};

// The cgroup file systems mounted, from /proc/self/mountinfo's text.
std::vector<CgroupMount> CgroupMounts(absl::string_view mountinfo);

// The mount of `type` ("cgroup", "cgroup2"; for v1, with `controller`
// among its options) that best shows cgroup `path`: one whose root holds
// the path (the deepest such), else any; nullptr if none is mounted.
const CgroupMount* MountShowing(const std::vector<CgroupMount>& mounts, absl::string_view type,
                                absl::string_view controller, absl::string_view path);

// The directory of cgroup `path` (as /proc/self/cgroup names it) under
// mount `m`; in a cgroup namespace the mount shows only what is below its
// root. "" for a path with a ".." component (out of this view's reach).
std::string CgroupDirUnder(const CgroupMount& m, absl::string_view path);

// This process's cgroups, from /proc/self/cgroup's text.
struct ProcessCgroups {
  bool v2_listed = false;  // a "0::PATH" line
  std::string v2_path;
  std::string memory_path;  // in the v1 hierarchy holding the memory controller, if any
  std::string pids_path;    // in the v1 hierarchy holding the pids controller, if any
};
ProcessCgroups ParseProcessCgroups(absl::string_view proc_self_cgroup);

// The directories of this process's memory cgroup and of each one above
// it up to its hierarchy's root, nearest first: the v1 memory hierarchy
// where one is mounted (hybrid hosts), else the v2 one. Empty where none is.
std::vector<std::string> MemoryCgroupDirs(absl::string_view proc_self_cgroup, absl::string_view mountinfo);
// The same for the pids controller.
std::vector<std::string> PidsCgroupDirs(absl::string_view proc_self_cgroup, absl::string_view mountinfo);

// The lowest memory limit set in `dirs` (memory.max, else
// memory.limit_in_bytes; "max" and unreadable files set none), 0 where none
// is. `read` returns a file's text, "" if it cannot be read.
uint64_t LowestMemoryLimit(const std::vector<std::string>& dirs,
                           const std::function<std::string(const std::string&)>& read);

// The lowest task limit set in `dirs` (pids.max; "max" and unreadable files
// set none), 0 where none is.
uint64_t LowestPidsLimit(const std::vector<std::string>& dirs,
                         const std::function<std::string(const std::string&)>& read);

// A file's whole text, "" if it cannot be read (a cgroup or /proc file).
std::string ReadFileText(const std::string& path);

// The machine's physical memory, or this process's cgroup memory limit or
// address-space limit where lower; 0 if the system says none of them. Read at most once a second
// (and at once after a fork).
size_t UsableMemoryBytes();

}  // namespace codecvisor

#endif  // CODECVISOR_BASE_CGROUP_PATHS_H_
