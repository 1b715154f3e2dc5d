// File: core/empty_root.cc

#include "core/empty_root.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace codecvisor {
namespace {

// Whether `path` is `root` or lies inside it.
bool Inside(const std::string& path, const std::string& root) {
  return path == root || (absl::StartsWith(path, root) && path.size() > root.size() && path[root.size()] == '/');
}

}  // namespace

HostPath ProbeHostPath(const std::string& path) {
  HostPath h;
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return h;
  if (S_ISLNK(st.st_mode)) {
    char target[PATH_MAX];
    const ssize_t n = readlink(path.c_str(), target, sizeof(target) - 1);
    if (n <= 0) return h;
    h.kind = HostPath::kSymlink;
    h.link_target.assign(target, static_cast<size_t>(n));
    char resolved[PATH_MAX];
    if (realpath(path.c_str(), resolved) == nullptr) h.kind = HostPath::kMissing;  // a dangling link
    else h.canonical = resolved;
    return h;
  }
  h.kind = S_ISDIR(st.st_mode) ? HostPath::kDirectory : HostPath::kFile;
  char resolved[PATH_MAX];
  h.canonical = realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : path;
  struct statvfs vfs;
  if (statvfs(path.c_str(), &vfs) == 0) {
    // The flags the kernel locks on a mount seen from a user namespace:
    // a read-only remount of a bind must repeat them or fail with EPERM.
    if (vfs.f_flag & ST_NOSUID) h.mount_flags |= MS_NOSUID;
    if (vfs.f_flag & ST_NODEV) h.mount_flags |= MS_NODEV;
    if (vfs.f_flag & ST_NOEXEC) h.mount_flags |= MS_NOEXEC;
    if (vfs.f_flag & ST_NOATIME) h.mount_flags |= MS_NOATIME;
    if (vfs.f_flag & ST_NODIRATIME) h.mount_flags |= MS_NODIRATIME;
    if (vfs.f_flag & ST_RELATIME) h.mount_flags |= MS_RELATIME;
  }
  return h;
}

std::string MountStep::Describe() const {
  switch (kind) {
    case kDirectory:
      return absl::StrCat("make the folder ", target);
    case kFile:
      return absl::StrCat("make the mount point ", target);
    case kSymlink:
      return absl::StrCat("link ", target, " to ", source);
    case kBind:
      return absl::StrCat("bind ", source, " on ", target, writable ? " (read-write)" : " (read-only)");
    case kProc:
      return "mount a proc of its own pid namespace";
  }
  return "?";
}

const std::vector<std::string>& SystemReadOnlyPaths() {
  // The loader and the libraries everything links (/lib and /lib64 are
  // links into /usr on a merged-/usr system), its cache, and the CPU
  // topology that threading libraries read to size their pools.
  static const std::vector<std::string> paths = {"/usr", "/lib", "/lib64", "/lib32", "/etc/ld.so.cache",
                                                 "/sys/devices/system/cpu"};
  return paths;
}

EmptyRootPlan PlanEmptyRoot(const std::vector<std::string>& read_only, const std::vector<std::string>& devices,
                            const HostPathProbe& probe) {
  EmptyRootPlan plan;
  std::vector<std::string> bound;  // host paths visible inside, with all below them
  std::set<std::string> folders = {"/"};  // folders made in the new root
  std::set<std::string> links;            // links made in the new root
  auto staged = [](const std::string& path) { return absl::StrCat(kEmptyRootStage, path); };
  auto covered = [&](const std::string& path) {
    for (const std::string& b : bound) {
      if (Inside(path, b)) return true;
    }
    return false;
  };
  auto through_link = [&](const std::string& path) {
    for (const std::string& l : links) {
      if (Inside(path, l)) return true;
    }
    return false;
  };
  // Makes every folder above `path` (not `path` itself).
  auto parents = [&](const std::string& path) {
    for (size_t slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1)) {
      const std::string folder = path.substr(0, slash);
      if (folders.insert(folder).second) plan.steps.push_back({MountStep::kDirectory, "", staged(folder)});
    }
  };
  auto add = [&](std::string path, bool writable) {
    if (path.empty() || path[0] != '/' || covered(path)) return;
    HostPath h = probe(path);
    if (h.kind == HostPath::kMissing) return;
    if (h.kind == HostPath::kSymlink) {
      // The link itself, where its parents are folders of ours, then what
      // it points to in its real place.
      if (!through_link(path) && links.insert(path).second) {
        parents(path);
        plan.steps.push_back({MountStep::kSymlink, h.link_target, staged(path)});
      }
      path = h.canonical;
      if (covered(path)) return;
      h = probe(path);
      if (h.kind == HostPath::kMissing || h.kind == HostPath::kSymlink) return;
    } else if (through_link(path)) {
      // Reached through a link made above: bind it where the link leads.
      path = h.canonical;
      if (covered(path)) return;
    }
    parents(path);
    if (h.kind == HostPath::kDirectory) {
      if (folders.insert(path).second) plan.steps.push_back({MountStep::kDirectory, "", staged(path)});
    } else {
      plan.steps.push_back({MountStep::kFile, "", staged(path)});
    }
    MountStep bind{MountStep::kBind, path, staged(path)};
    bind.writable = writable;
    bind.mount_flags = h.mount_flags;
    plan.steps.push_back(std::move(bind));
    bound.push_back(path);
  };
  for (const std::string& p : SystemReadOnlyPaths()) add(p, false);
  for (const std::string& p : read_only) add(p, false);
  add("/dev/null", true);
  for (const std::string& d : devices) add(d, true);
  if (folders.insert("/proc").second) plan.steps.push_back({MountStep::kDirectory, "", staged("/proc")});
  plan.steps.push_back({MountStep::kProc, "", staged("/proc")});
  return plan;
}

namespace {

// mount_setattr(2) (Linux 5.12), not in Debian 12's glibc: makes a whole
// bound tree read-only, submounts included, touching no other flag (so
// none of those the kernel locks in a user namespace).
struct MountAttr {
  uint64_t attr_set, attr_clr, propagation, userns_fd;
};
constexpr uint64_t kMountAttrReadOnly = 0x1;
constexpr uint64_t kMountAttrNoSuid = 0x2;
constexpr uint64_t kMountAttrNoDev = 0x4;

// Read-only, and no device node or set-uid bit in it works: a folder
// granted for reading never opens a terminal (the devices are bound
// read-write, one by one, and checked).
int MakeReadOnly(const MountStep& step) {
  MountAttr attr{kMountAttrReadOnly | kMountAttrNoSuid | kMountAttrNoDev, 0, 0, 0};
  if (syscall(SYS_mount_setattr, AT_FDCWD, step.target.c_str(), AT_RECURSIVE, &attr, sizeof(attr)) == 0) return 0;
  if (errno != ENOSYS) return errno;
  // An older kernel: the top mount only, repeating its locked flags.
  if (mount(nullptr, step.target.c_str(), nullptr,
            MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | step.mount_flags, nullptr) != 0) {
    return errno;
  }
  return 0;
}

// "/proc/self/fd/N" into `out` (32 bytes), without allocating.
void FdPath(int fd, char* out) {
  static constexpr char kPrefix[] = "/proc/self/fd/";
  size_t n = 0;
  for (const char* p = kPrefix; *p != '\0'; ++p) out[n++] = *p;
  char digits[12];
  size_t d = 0;
  do {
    digits[d++] = static_cast<char>('0' + fd % 10);
    fd /= 10;
  } while (fd > 0 && d < sizeof(digits));
  while (d > 0) out[n++] = digits[--d];
  out[n] = '\0';
}

}  // namespace

int ApplyEmptyRoot(const EmptyRootPlan& plan, int* failed_step) {
  *failed_step = -1;
  // Nothing mounted from here on reaches the host's namespace.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return errno;
  // Each source, opened while the host's tree is still what it sees.
  int sources[kMaxEmptyRootBinds];
  size_t binds = 0;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    if (plan.steps[i].kind != MountStep::kBind) continue;
    *failed_step = static_cast<int>(i);
    if (binds == kMaxEmptyRootBinds) return E2BIG;
    sources[binds] = open(plan.steps[i].source.c_str(), O_PATH | O_CLOEXEC);
    if (sources[binds] < 0) return errno;
    ++binds;
  }
  binds = 0;
  *failed_step = -1;
  if (mount("codecvisor-root", kEmptyRootStage, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m") != 0) {
    return errno;
  }
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const MountStep& step = plan.steps[i];
    *failed_step = static_cast<int>(i);
    const char* target = step.target.c_str();
    switch (step.kind) {
      case MountStep::kDirectory:
        if (mkdir(target, 0755) != 0 && errno != EEXIST) return errno;
        break;
      case MountStep::kFile: {
        const int fd = open(target, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0444);
        if (fd < 0) return errno;
        close(fd);
        break;
      }
      case MountStep::kSymlink:
        if (symlink(step.source.c_str(), target) != 0) return errno;
        break;
      case MountStep::kBind:
        // Recursive: a bind of a locked mount must not uncover what is
        // mounted below it.
        char source[32];
        FdPath(sources[binds++], source);
        if (mount(source, target, nullptr, MS_BIND | MS_REC, nullptr) != 0) return errno;
        if (!step.writable) {
          if (const int err = MakeReadOnly(step); err != 0) return err;
        }
        break;
      case MountStep::kProc:
        // Of the child's own pid namespace: it sees itself and nothing else.
        if (mount("proc", target, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) return errno;
        break;
    }
  }
  *failed_step = -1;
  // pivot_root(".", "."): the old root ends up on top of the new one and is
  // detached at once, so no folder of the host's stays reachable.
  if (chdir(kEmptyRootStage) != 0) return errno;
  if (syscall(SYS_pivot_root, ".", ".") != 0) return errno;
  if (umount2(".", MNT_DETACH) != 0) return errno;
  if (chdir("/") != 0) return errno;
  if (mount(nullptr, "/", nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, nullptr) != 0) {
    return errno;
  }
  return 0;
}

}  // namespace codecvisor
