// File: base/cgroup_paths.cc

#include "base/cgroup_paths.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/mountinfo.h"
#include "base/refreshed_value.h"
#include "base/small_file.h"

namespace codecvisor {
namespace {

bool HasOption(const CgroupMount& m, absl::string_view option) {
  return std::find(m.options.begin(), m.options.end(), option) != m.options.end();
}

// Whether `path` is `root` or below it, on a component boundary.
bool Below(absl::string_view path, absl::string_view root) {
  return root == "/" || path == root || (absl::StartsWith(path, root) && path[root.size()] == '/');
}

}  // namespace

std::string ReadFileText(const std::string& path) { return ReadSmallFile(path).value_or(""); }

std::vector<CgroupMount> CgroupMounts(absl::string_view mountinfo) {
  std::vector<CgroupMount> mounts;
  for (MountEntry& m : MountEntries(mountinfo)) {
    if (m.type != "cgroup" && m.type != "cgroup2") continue;
    mounts.push_back({std::move(m.root), std::move(m.point), std::move(m.type), std::move(m.super_options)});
  }
  return mounts;
}

const CgroupMount* MountShowing(const std::vector<CgroupMount>& mounts, absl::string_view type,
                                absl::string_view controller, absl::string_view path) {
  const CgroupMount* best = nullptr;
  for (const CgroupMount& m : mounts) {
    if (m.type != type || (!controller.empty() && !HasOption(m, controller))) continue;
    // A mount whose root holds the path beats one whose root does not (a
    // bind mount of another subtree); a deeper root, a shallower one.
    const bool shows = Below(path, m.root);
    const bool best_shows = best != nullptr && Below(path, best->root);
    if (best == nullptr || (shows && !best_shows) || (shows == best_shows && m.root.size() > best->root.size())) {
      best = &m;
    }
  }
  return best;
}

std::string CgroupDirUnder(const CgroupMount& m, absl::string_view path) {
  // A path out of this view's reach (a cgroup namespace's "/../x") names
  // no directory here.
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (part == "..") return "";
  }
  absl::string_view rel = path;
  if (m.root != "/" && Below(path, m.root)) {
    rel.remove_prefix(m.root.size());  // the mount shows only the part below its root
  }
  std::string dir = m.point;
  if (!rel.empty() && rel != "/") absl::StrAppend(&dir, rel.front() == '/' ? "" : "/", rel);
  return dir;
}

ProcessCgroups ParseProcessCgroups(absl::string_view proc_self_cgroup) {
  ProcessCgroups p;
  for (absl::string_view line : absl::StrSplit(proc_self_cgroup, '\n', absl::SkipEmpty())) {
    // hierarchy id, controllers, path
    std::vector<absl::string_view> f = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (f.size() != 3) continue;
    if (f[0] == "0" && f[1].empty()) {
      p.v2_listed = true;
      p.v2_path = std::string(f[2]);
      continue;
    }
    for (absl::string_view c : absl::StrSplit(f[1], ',')) {
      if (c == "memory") p.memory_path = std::string(f[2]);
      if (c == "pids") p.pids_path = std::string(f[2]);
    }
  }
  return p;
}

namespace {

// The directories of this process's cgroup of `controller` and of those
// above it: the v1 hierarchy of the controller (whose path in
// /proc/self/cgroup is `v1_path`) where one is mounted, else the v2 one.
std::vector<std::string> ControllerCgroupDirs(absl::string_view proc_self_cgroup, absl::string_view mountinfo,
                                              absl::string_view controller, bool pids) {
  const ProcessCgroups own = ParseProcessCgroups(proc_self_cgroup);
  const std::string& v1_path = pids ? own.pids_path : own.memory_path;
  const std::vector<CgroupMount> mounts = CgroupMounts(mountinfo);
  const CgroupMount* v1 = MountShowing(mounts, "cgroup", controller, v1_path);
  const CgroupMount* v2 = MountShowing(mounts, "cgroup2", "", own.v2_path);
  const CgroupMount* mount = v1 != nullptr && !v1_path.empty() ? v1 : own.v2_listed ? v2 : nullptr;
  if (mount == nullptr) return {};
  std::vector<std::string> dirs;
  std::string dir = CgroupDirUnder(*mount, mount == v1 ? v1_path : own.v2_path);
  if (dir.empty()) return {};
  // Up to the mount point.
  while (true) {
    dirs.push_back(dir);
    if (dir == mount->point || dir.size() <= mount->point.size()) break;
    const size_t slash = dir.rfind('/');
    if (slash == std::string::npos || slash < mount->point.size()) break;
    dir.resize(slash);
  }
  return dirs;
}

}  // namespace

std::vector<std::string> MemoryCgroupDirs(absl::string_view proc_self_cgroup, absl::string_view mountinfo) {
  return ControllerCgroupDirs(proc_self_cgroup, mountinfo, "memory", false);
}

std::vector<std::string> PidsCgroupDirs(absl::string_view proc_self_cgroup, absl::string_view mountinfo) {
  return ControllerCgroupDirs(proc_self_cgroup, mountinfo, "pids", true);
}

uint64_t LowestPidsLimit(const std::vector<std::string>& dirs,
                         const std::function<std::string(const std::string&)>& read) {
  uint64_t lowest = 0;
  for (const std::string& dir : dirs) {
    uint64_t limit = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(read(dir + "/pids.max")), &limit) || limit == 0) continue;
    lowest = lowest == 0 ? limit : std::min(lowest, limit);
  }
  return lowest;
}

uint64_t LowestMemoryLimit(const std::vector<std::string>& dirs,
                           const std::function<std::string(const std::string&)>& read) {
  uint64_t lowest = 0;
  for (const std::string& dir : dirs) {
    std::string text = read(dir + "/memory.max");
    if (text.empty()) text = read(dir + "/memory.limit_in_bytes");
    uint64_t limit = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &limit) || limit == 0) continue;  // "max", none
    lowest = lowest == 0 ? limit : std::min(lowest, limit);
  }
  return lowest;
}

namespace {

size_t ReadUsableMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  uint64_t usable = pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
  auto lower = [&usable](uint64_t limit) {
    if (limit != 0) usable = usable == 0 ? limit : std::min(usable, limit);
  };
  lower(LowestMemoryLimit(MemoryCgroupDirs(ReadFileText("/proc/self/cgroup"), ReadFileText("/proc/self/mountinfo")),
                          ReadFileText));
  // `ulimit -v`: no mapping past it, however much memory is free.
  if (rlimit as{}; getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) lower(as.rlim_cur);
  return usable;
}

}  // namespace

size_t UsableMemoryBytes() {
  // A request asks for it; a limit seldom changes.
  static RefreshedValue<size_t> usable;
  return usable.Get(ReadUsableMemoryBytes);
}

}  // namespace codecvisor
