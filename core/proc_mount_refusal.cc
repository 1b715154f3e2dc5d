#include "core/proc_mount_refusal.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace codecvisor {

std::string ProcMountRefusal(absl::string_view mountinfo) {
  // mountinfo: "ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS ... - TYPE SOURCE SUPER_OPTIONS".
  std::vector<std::string> over;  // mount points inside /proc
  bool read_only = false;
  for (absl::string_view line : absl::StrSplit(mountinfo, '\n', absl::SkipEmpty())) {
    const std::vector<absl::string_view> fields = absl::StrSplit(line, ' ');
    if (fields.size() < 6) continue;
    const absl::string_view point = fields[4];
    const auto dash = std::find(fields.begin() + 6, fields.end(), "-");
    const absl::string_view type = dash != fields.end() && dash + 1 != fields.end() ? *(dash + 1) : "";
    if (absl::StartsWith(point, "/proc/")) {
      // The kernel does not count mounts on its permanently empty folders,
      // such as systemd's binfmt_misc (and the automount before it) on
      // /proc/sys/fs/binfmt_misc: they hide nothing.
      if (type == "binfmt_misc" || type == "autofs") continue;
      if (std::find(over.begin(), over.end(), point) == over.end()) over.emplace_back(point);
    } else if (point == "/proc") {
      read_only = read_only || absl::StartsWith(fields[5], "ro,") || fields[5] == "ro";
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

std::string ProcMountRefusalHere() {
  std::ifstream in("/proc/self/mountinfo");
  std::stringstream text;
  text << in.rdbuf();
  return ProcMountRefusal(text.str());
}

}  // namespace codecvisor
