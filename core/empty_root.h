// File: core/empty_root.h
//
// The backend's filesystem: a mount namespace whose root is an empty tmpfs,
// read-only once built, holding only what the runner and the backend need
// (the system library folders, the loader's cache, the CPU topology, the
// paths and devices the manifest declares, /dev/null) and a fresh /proc for
// the child's pid namespace, as bubblewrap and nsjail build theirs. Paths
// outside it do not exist for the child at all: it cannot stat
// /etc/shadow, list the host's pids or watch the video's folder. Landlock
// stays as a second line inside it.
//
// Two halves. The host plans (PlanEmptyRoot: pure, given how each path
// looks from the host, so it is unit-tested with a fake); the child
// applies the plan between clone and exec (ApplyEmptyRoot), where only
// async-signal-safe calls are allowed: every string it uses is built by
// the host before clone, and it allocates nothing.
//
// The runner itself is executed from a descriptor and the vendor library is
// opened through /proc/self/fd, so neither needs a path inside (unless the
// library's folder is one of the manifest's read paths: then the runner
// opens it by its path, so that $ORIGIN finds the libraries beside it).

#ifndef CODECVISOR_CORE_EMPTY_ROOT_H_
#define CODECVISOR_CORE_EMPTY_ROOT_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>


namespace codecvisor {

// How a path looks from the host (lstat, and statvfs for its mount).
struct HostPath {
  enum Kind { kMissing, kDirectory, kFile, kSymlink } kind = kMissing;
  std::string link_target;      // kSymlink: what it points to, as written
  std::string canonical;        // the path with every link resolved (realpath)
  unsigned long mount_flags = 0;  // MS_NOSUID, MS_NODEV, MS_NOEXEC, atime flags of its mount
};
using HostPathProbe = std::function<HostPath(const std::string& path)>;

// The real probe: lstat and statvfs.
HostPath ProbeHostPath(const std::string& path);

struct MountStep {
  enum Kind {
    kDirectory,  // mkdir target (an existing one is fine)
    kFile,       // create an empty file at target (a bind mount point)
    kSymlink,    // symlink target -> source
    kBind,       // bind source on target; read-only unless `writable`
    kProc,       // a fresh proc at target
  } kind;
  std::string source;             // the host's path (kBind), or the link's text (kSymlink)
  std::string target;             // under the staging folder (kStage)
  bool writable = false;          // kBind: a device
  unsigned long mount_flags = 0;  // kBind: flags of the source's mount, kept on the read-only remount
  std::string Describe() const;   // "bind /usr on /usr (read-only)"
};

struct EmptyRootPlan {
  std::vector<MountStep> steps;
};

// At most this many binds (system paths, read paths, devices): the child
// holds a descriptor on each source while it builds the root, on its stack.
inline constexpr size_t kMaxEmptyRootBinds = 128;

// Where the new root is built in the child's mount namespace before it
// becomes "/": every Linux system has this folder, and the tmpfs mounted
// on it is private to the child.
inline constexpr char kEmptyRootStage[] = "/tmp";

// The steps that give the child exactly `read_only` (files or folders,
// read-only) and `devices` (read-write), plus /dev/null and /proc. A path
// the host does not have is left out; a symbolic link is made again as a
// link (so /lib -> usr/lib on a merged-/usr system stays one), and what it
// points to is made visible in its place; a path inside one already bound is
// not bound again. Parents are created in order, once.
EmptyRootPlan PlanEmptyRoot(const std::vector<std::string>& read_only, const std::vector<std::string>& devices,
                            const HostPathProbe& probe);

// The system paths every backend gets read-only (what Landlock also allows).
const std::vector<std::string>& SystemReadOnlyPaths();

// In the child, between clone and exec, as root of its own user and mount
// namespaces: makes its mounts private, builds the plan on a tmpfs at
// kEmptyRootStage, pivots into it and makes it read-only. Async-signal-safe.
// Every bind's source is opened (O_PATH) before the tmpfs is mounted and
// bound through that descriptor, so a source below kEmptyRootStage (a
// video's folder in /tmp) is the host's, not the staging tmpfs; a read-only
// bind is made read-only with its submounts (mount_setattr, Linux 5.12;
// the top mount alone before that).
// Returns 0, or an errno with *failed_step set to the index of the step that
// failed (-1 for the pivot and the remounts around the steps).
int ApplyEmptyRoot(const EmptyRootPlan& plan, int* failed_step);

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_EMPTY_ROOT_H_
