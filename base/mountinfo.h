// File: base/mountinfo.h
//
// The lines of /proc/self/mountinfo (proc(5)), parsed. Pure.

#ifndef CODECVISOR_BASE_MOUNTINFO_H_
#define CODECVISOR_BASE_MOUNTINFO_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace codecvisor {

// One mount, its paths unescaped (the kernel writes a space, tab, newline
// or backslash in one as \NNN).
struct MountEntry {
  std::string root;                        // the part of its filesystem mounted there
  std::string point;                       // where it is mounted
  std::vector<std::string> mount_options;  // per mount: "ro", "nosuid", ...
  std::string type;                        // "proc", "cgroup2", ...
  std::vector<std::string> super_options;  // per filesystem: a v1 cgroup's controllers among them
};

// Every well-formed line of `mountinfo`, in order; others are skipped.
std::vector<MountEntry> MountEntries(absl::string_view mountinfo);

}  // namespace codecvisor

#endif  // CODECVISOR_BASE_MOUNTINFO_H_
