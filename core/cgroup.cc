// File: core/cgroup.cc

#include "core/cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <string_view>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/cgroup_paths.h"
#include "base/small_file.h"

namespace codecvisor {
namespace {

constexpr char kPrefix[] = "codecvisor-";

bool Has(const std::vector<std::string>& v, absl::string_view s) {
  for (const std::string& x : v) {
    if (x == s) return true;
  }
  return false;
}

absl::Status WriteText(const std::string& path, const std::string& text) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    // Out of descriptors: this process's shortage, not a cgroup refused.
    const int err = errno;
    std::string message = absl::StrCat("open(", path, "): ", std::strerror(err));
    return OutOfDescriptors(err) ? absl::ResourceExhaustedError(std::move(message))
                                 : absl::PermissionDeniedError(std::move(message));
  }
  const ssize_t n = write(fd, text.data(), text.size());
  const int err = errno;
  close(fd);
  if (n != static_cast<ssize_t>(text.size())) {
    return absl::PermissionDeniedError(absl::StrCat("write(", path, ", \"", text, "\"): ", std::strerror(err)));
  }
  return absl::OkStatus();
}

// This host's pid namespace, as a number ("pid:[4026531836]" -> 4026531836):
// a pid means something only inside the namespace it was read in, and hosts
// in other pid namespaces (containers, Bazel's test sandboxes) share the
// cgroup hierarchy.
std::string PidNamespaceId() {
  char link[64] = {};
  const ssize_t n = readlink("/proc/self/ns/pid", link, sizeof(link) - 1);
  absl::string_view text(link, n > 0 ? static_cast<size_t>(n) : 0);
  if (!absl::ConsumePrefix(&text, "pid:[") || !absl::ConsumeSuffix(&text, "]")) return "0";
  return std::string(text);
}

// How long another pid namespace's backend cgroup must have stayed
// unchanged before an empty one is taken for a dead host's.
constexpr auto kForeignStaleAge = std::chrono::minutes(10);

// Whether `dir` has not changed for kForeignStaleAge.
bool UnchangedFor(const std::string& dir) {
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) return false;
  const auto changed = std::chrono::system_clock::from_time_t(st.st_mtime);
  return std::chrono::system_clock::now() - changed > kForeignStaleAge;
}

// Empty cgroups of hosts that are gone (a host killed before it removed its
// backends' cgroups): "codecvisor-NS-PID-..." of our own pid namespace NS
// whose PID no longer runs. Another namespace's (a container's host, whose
// namespace may never come back) cannot be judged by their pids from here:
// one is removed once it has stayed unchanged for kForeignStaleAge, and
// only if empty (rmdir refuses any other). A live host's holds its backend
// from its first instruction until it is removed with it; the one just
// made is empty for the moment before its child joins it.
// A stale one may hold cgroups of its own (a host that ran inside a
// backend's cgroup, as a test's child does), removed first.
void RemoveStale(const std::string& parent, const std::string& own_namespace, int depth = 0) {
  DIR* d = opendir(parent.c_str());
  if (d == nullptr) return;
  std::vector<std::string> stale;
  std::vector<std::string> foreign;
  while (dirent* e = readdir(d)) {
    absl::string_view name = e->d_name;
    if (!absl::ConsumePrefix(&name, kPrefix)) continue;
    if (!absl::ConsumePrefix(&name, own_namespace) || !absl::ConsumePrefix(&name, "-")) {
      foreign.push_back(absl::StrCat(parent, "/", e->d_name));
      continue;
    }
    int pid = 0;
    if (!absl::SimpleAtoi(name.substr(0, name.find('-')), &pid) || pid <= 0) continue;
    if (kill(pid, 0) == 0 || errno != ESRCH) continue;
    stale.push_back(absl::StrCat(parent, "/", e->d_name));
  }
  closedir(d);
  for (const std::string& dir : stale) {
    if (depth < 8) RemoveStale(dir, own_namespace, depth + 1);
    (void)rmdir(dir.c_str());
  }
  for (const std::string& dir : foreign) {
    if (UnchangedFor(dir)) (void)rmdir(dir.c_str());
  }
}

// Removes cgroup `dir` and the cgroups below it, deepest first; true if
// `dir` is gone. rmdir fails on a cgroup that holds a process, so one in
// use stays, and so does every cgroup above it.
bool RemoveEmptyTree(const std::string& dir, int depth = 0) {
  if (depth < 8) {
    if (DIR* d = opendir(dir.c_str()); d != nullptr) {
      std::vector<std::string> children;
      while (dirent* e = readdir(d)) {
        if (e->d_type == DT_DIR && std::string_view(e->d_name) != "." && std::string_view(e->d_name) != "..") {
          children.push_back(absl::StrCat(dir, "/", e->d_name));
        }
      }
      closedir(d);
      for (const std::string& child : children) RemoveEmptyTree(child, depth + 1);
    }
  }
  return rmdir(dir.c_str()) == 0;
}

// RemoveStale for the cgroups beside the host's own (`dir`, under `mount`):
// those of hosts that lived in its parent, and those of hosts that lived in
// its siblings (other jobs' cgroups: a systemd scope, a pod, a batch
// system's job), which no later host of theirs will sweep once their job is
// gone. A listing of two folder levels, at each backend start.
void RemoveStaleBeside(const std::string& dir, const std::string& mount, const std::string& own_namespace) {
  const size_t slash = dir.rfind('/');
  if (mount.empty() || slash == std::string::npos || slash < mount.size() || dir.compare(0, mount.size(), mount) != 0) {
    return;  // the host's cgroup is the hierarchy's root: nothing beside it
  }
  const std::string parent = dir.substr(0, slash);
  RemoveStale(parent, own_namespace);
  DIR* d = opendir(parent.c_str());
  if (d == nullptr) return;
  std::vector<std::string> siblings;
  while (dirent* e = readdir(d)) {
    const absl::string_view name = e->d_name;
    if (e->d_type != DT_DIR || name == "." || name == ".." || absl::StartsWith(name, kPrefix)) continue;
    const std::string sibling = absl::StrCat(parent, "/", name);
    if (sibling != dir) siblings.push_back(sibling);
  }
  closedir(d);
  for (const std::string& sibling : siblings) RemoveStale(sibling, own_namespace);
}

uint64_t Field(const std::string& text, absl::string_view key) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::ConsumePrefix(&line, key) && absl::ConsumePrefix(&line, " ")) {
      uint64_t v = 0;
      if (absl::SimpleAtoi(line, &v)) return v;
    }
  }
  return 0;
}

}  // namespace

std::string CgroupLayout::Describe() const {
  if (version == 2) return absl::StrCat("cgroup v2 (memory, pids) under ", memory_dir);
  if (version == 1) return absl::StrCat("cgroup v1: memory under ", memory_dir, ", pids under ", pids_dir);
  return absl::StrCat("no cgroup: ", missing);
}

CgroupLayout FindCgroupLayout(absl::string_view proc_self_cgroup, absl::string_view mountinfo) {
  CgroupLayout layout;
  const std::vector<CgroupMount> mounts = CgroupMounts(mountinfo);
  const ProcessCgroups own = ParseProcessCgroups(proc_self_cgroup);
  // A controller lives in one hierarchy: bound to a v1 mount, it is not in
  // the v2 one (hybrid hosts), so v1 wins where it holds memory.
  const CgroupMount* memory = MountShowing(mounts, "cgroup", "memory", own.memory_path);
  const CgroupMount* pids = MountShowing(mounts, "cgroup", "pids", own.pids_path);
  const CgroupMount* unified = MountShowing(mounts, "cgroup2", "", own.v2_path);
  const auto unreachable = [&](absl::string_view path) {
    layout.missing = absl::StrCat("this process's cgroup ", path, " is outside what its cgroup mounts show");
    return layout;
  };
  if (memory != nullptr && !own.memory_path.empty()) {
    if (pids == nullptr || own.pids_path.empty()) {
      layout.missing = "the memory controller is a cgroup v1 hierarchy but no pids hierarchy is mounted";
      return layout;
    }
    const std::string memory_dir = CgroupDirUnder(*memory, own.memory_path);
    const std::string pids_dir = CgroupDirUnder(*pids, own.pids_path);
    if (memory_dir.empty()) return unreachable(own.memory_path);
    if (pids_dir.empty()) return unreachable(own.pids_path);
    layout.version = 1;
    layout.memory_dir = memory_dir;
    layout.pids_dir = pids_dir;
    layout.memory_mount = memory->point;
    layout.pids_mount = pids->point;
    return layout;
  }
  if (unified != nullptr && own.v2_listed) {
    const std::string dir = CgroupDirUnder(*unified, own.v2_path);
    if (dir.empty()) return unreachable(own.v2_path);
    layout.version = 2;
    layout.memory_dir = dir;
    layout.memory_mount = unified->point;
    return layout;
  }
  layout.missing = "no cgroup filesystem with the memory controller is mounted";
  return layout;
}

namespace {

// ReadFileText's, noting a file that could not be opened for want of
// descriptors: read as "", it would say there is no cgroup.
std::string ProbeText(const std::string& path, bool* short_of_descriptors) {
  std::optional<std::string> text = ReadSmallFile(path);
  if (!text.has_value() && OutOfDescriptors(errno)) *short_of_descriptors = true;
  return std::move(text).value_or("");
}

CgroupLayout ProbeLayout(bool* short_of) {
  CgroupLayout layout =
      FindCgroupLayout(ProbeText("/proc/self/cgroup", short_of), ProbeText("/proc/self/mountinfo", short_of));
  auto fail = [&](std::string why) {
    layout.version = 0;
    layout.missing = std::move(why);
    return layout;
  };
  if (layout.version == 1) {
    for (const std::string& dir : {layout.memory_dir, layout.pids_dir}) {
      if (access(dir.c_str(), W_OK) != 0) {
        return fail(absl::StrCat("cannot create cgroups in ", dir, ": ", std::strerror(errno),
                                 geteuid() != 0 ? " (not delegated to this user)" : ""));
      }
    }
  } else if (layout.version == 2) {
    const std::string& dir = layout.memory_dir;
    const std::string controllers = ProbeText(dir + "/cgroup.controllers", short_of);
    for (const char* c : {"memory", "pids"}) {
      if (!Has(absl::StrSplit(absl::StripAsciiWhitespace(controllers), ' '), c)) {
        return fail(absl::StrCat("the ", c, " controller is not available in ", dir));
      }
    }
    if (access(dir.c_str(), W_OK) != 0 || access((dir + "/cgroup.subtree_control").c_str(), W_OK) != 0) {
      return fail(absl::StrCat("cannot create cgroups in ", dir, ": ", std::strerror(errno),
                               geteuid() != 0 ? " (not delegated to this user; e.g. systemd-run --user -p Delegate=yes)"
                                              : ""));
    }
    const std::string subtree = ProbeText(dir + "/cgroup.subtree_control", short_of);
    const std::vector<std::string> enabled = absl::StrSplit(absl::StripAsciiWhitespace(subtree), ' ');
    const bool delegated = Has(enabled, "memory") && Has(enabled, "pids");
    const std::string procs = std::string(absl::StripAsciiWhitespace(ProbeText(dir + "/cgroup.procs", short_of)));
    // Only the real root cgroup (which has no memory.max) may hold
    // processes and enable controllers for its children; a cgroup
    // namespace's root, mounted at the same place in a container, may not.
    struct stat root_check;
    const bool real_root = stat((dir + "/memory.max").c_str(), &root_check) != 0;
    if (!delegated && !procs.empty() && !real_root) {
      return fail(absl::StrCat("the host's cgroup ", dir,
                               " holds processes, so its memory and pids controllers cannot be enabled for a "
                               "child cgroup (run the host in a cgroup of its own with them delegated)"));
    }
  }
  return layout;
}

}  // namespace

CgroupLayout ProbeCgroupLayout() {
  bool short_of = false;
  CgroupLayout layout = ProbeLayout(&short_of);
  if (!short_of) return layout;
  CgroupLayout unknown;
  unknown.short_of_descriptors = true;
  unknown.missing = absl::StrCat("a file it reads could not be opened: ", std::strerror(EMFILE));
  return unknown;
}

absl::StatusOr<std::unique_ptr<BackendCgroup>> BackendCgroup::Create(const CgroupLayout& layout,
                                                                     const std::string& backend,
                                                                     uint64_t memory_bytes, uint64_t max_tasks) {
  if (layout.version == 0) return absl::FailedPreconditionError(absl::StrCat("no cgroup: ", layout.missing));
  static std::atomic<uint64_t> next{0};
  static const std::string pid_namespace = PidNamespaceId();
  const std::string name = absl::StrCat(kPrefix, pid_namespace, "-", getpid(), "-", next.fetch_add(1), "-", backend);
  std::unique_ptr<BackendCgroup> cg(new BackendCgroup());
  cg->version_ = layout.version;
  auto make = [&](const std::string& parent, const std::string& mount) -> absl::StatusOr<std::string> {
    RemoveStale(parent, pid_namespace);
    RemoveStaleBeside(parent, mount, pid_namespace);
    const std::string dir = absl::StrCat(parent, "/", name);
    // A name this process never used can only exist if a killed process
    // left it behind with the same pid in a namespace whose id the kernel
    // has since reused (a test sandbox's): RemoveStale takes that pid for
    // ours. Without processes in it, it goes, with the cgroups the killed
    // process's own children left inside it (rmdir refuses any that still
    // holds a process).
    if (mkdir(dir.c_str(), 0755) != 0 && !(errno == EEXIST && RemoveEmptyTree(dir) && mkdir(dir.c_str(), 0755) == 0)) {
      return absl::PermissionDeniedError(absl::StrCat("mkdir(", dir, "): ", std::strerror(errno)));
    }
    cg->dirs_.push_back(dir);  // removed by the destructor from here on
    cg->procs_files_.push_back(dir + "/cgroup.procs");
    return dir;
  };
  if (layout.version == 2) {
    const std::string subtree = layout.memory_dir + "/cgroup.subtree_control";
    const std::vector<std::string> enabled =
        absl::StrSplit(absl::StripAsciiWhitespace(ReadFileText(subtree)), ' ');
    if (!Has(enabled, "memory") || !Has(enabled, "pids")) {
      if (absl::Status s = WriteText(subtree, "+memory +pids"); !s.ok()) return s;
    }
    absl::StatusOr<std::string> dir = make(layout.memory_dir, layout.memory_mount);
    if (!dir.ok()) return dir.status();
    if (absl::Status s = WriteText(*dir + "/memory.max", absl::StrCat(memory_bytes)); !s.ok()) return s;
    // Absent without swap accounting; but not skipped for want of a
    // descriptor, which would leave swap unbounded.
    if (absl::Status s = WriteText(*dir + "/memory.swap.max", "0"); absl::IsResourceExhausted(s)) return s;
    if (absl::Status s = WriteText(*dir + "/pids.max", absl::StrCat(max_tasks)); !s.ok()) return s;
    return cg;
  }
  absl::StatusOr<std::string> memory = make(layout.memory_dir, layout.memory_mount);
  if (!memory.ok()) return memory.status();
  if (absl::Status s = WriteText(*memory + "/memory.limit_in_bytes", absl::StrCat(memory_bytes)); !s.ok()) return s;
  // Memory and swap together, where swap is accounted: pages swapped out
  // would otherwise leave the limit. (Absent without swap accounting; but
  // not skipped for want of a descriptor.)
  if (absl::Status s = WriteText(*memory + "/memory.memsw.limit_in_bytes", absl::StrCat(memory_bytes));
      absl::IsResourceExhausted(s)) {
    return s;
  }
  absl::StatusOr<std::string> pids = make(layout.pids_dir, layout.pids_mount);
  if (!pids.ok()) return pids.status();
  if (absl::Status s = WriteText(*pids + "/pids.max", absl::StrCat(max_tasks)); !s.ok()) return s;
  return cg;
}

void BackendCgroup::Remove() {
  for (const std::string& dir : dirs_) {
    RemoveStale(dir, PidNamespaceId());  // what a host that ran inside it left
    // A cgroup stays busy for a moment after its last task is reaped.
    for (int i = 0; i < 200 && rmdir(dir.c_str()) != 0 && errno == EBUSY; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
}

uint64_t BackendCgroup::OomKills() const {
  return Field(ReadFileText(memory_dir() + (version_ == 2 ? "/memory.events" : "/memory.oom_control")), "oom_kill");
}

}  // namespace codecvisor
