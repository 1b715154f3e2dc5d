#include "core/proc_mount_refusal.h"

#include <algorithm>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/mountinfo.h"
#include "base/small_file.h"

namespace codecvisor {

std::string ProcMountRefusal(absl::string_view mountinfo) {
  std::vector<std::string> over;  // mount points inside /proc
  bool read_only = false;
  for (const MountEntry& m : MountEntries(mountinfo)) {
    if (absl::StartsWith(m.point, "/proc/")) {
      // The kernel does not count mounts on its permanently empty folders,
      // such as systemd's binfmt_misc (and the automount before it) on
      // /proc/sys/fs/binfmt_misc: they hide nothing.
      if (m.type == "binfmt_misc" || m.type == "autofs") continue;
      if (std::find(over.begin(), over.end(), m.point) == over.end()) over.push_back(m.point);
    } else if (m.point == "/proc") {
      read_only = read_only || std::find(m.mount_options.begin(), m.mount_options.end(), "ro") != m.mount_options.end();
    }
  }
  constexpr absl::string_view kContainer =
      "as container runtimes mount it: run the container with --security-opt systempaths=unconfined (Docker) or "
      "procMount: Unmasked (Kubernetes)";
  if (!over.empty()) {
    const size_t shown = std::min<size_t>(over.size(), 3);
    return absl::StrCat("; the kernel refuses a new proc where this /proc has parts masked (mounts over ",
                        absl::StrJoin(over.begin(), over.begin() + static_cast<std::ptrdiff_t>(shown), ", "),
                        over.size() > shown ? ", ..." : "", "), ", kContainer);
  }
  if (read_only) return absl::StrCat("; the kernel refuses a new proc where this /proc is read-only, ", kContainer);
  return "; this /proc has nothing mounted over it and is not read-only, so a policy refuses mount(2): a seccomp "
         "filter or security module (a systemd unit's SystemCallFilter=~@mount, an AppArmor or SELinux rule); run "
         "codecvisor where it may mount";
}

std::string ProcMountRefusalHere() { return ProcMountRefusal(ReadSmallFile("/proc/self/mountinfo").value_or("")); }

}  // namespace codecvisor
