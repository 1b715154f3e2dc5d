// File: core/process.h
//
// The operating-system effects the host depends on to run backends: start a
// child with a chosen set of descriptors, signal it, wait for it. Behind an
// interface so the supervisor's restart logic can run against a fake as well
// as for real (as leveldb's Env makes its fault tests possible).
// SystemProcessLauncher is thread-safe.

#ifndef CODECVISOR_CORE_PROCESS_H_
#define CODECVISOR_CORE_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/empty_root.h"
#include "ipc/unique_fd.h"

namespace codecvisor {

// What the host applies to a child between clone and exec: the first half
// of the sandbox (the runner applies Landlock and seccomp itself).
struct SandboxSpec {
  // New user, pid, net and ipc namespaces. In the user namespace the child
  // is root mapped to `outside_uid`/`outside_gid` (nobody), with its
  // supplementary groups dropped; if the kernel refuses that mapping (e.g.
  // inside another user namespace) it is mapped to the host's own ids.
  bool namespaces = false;
  uid_t outside_uid = 65534;
  gid_t outside_gid = 65534;
  // Without `namespaces` (a degraded sandbox), a host running as root makes
  // the child outside_uid/outside_gid itself, supplementary groups dropped,
  // so that no plugin runs as root; except where this process's user
  // namespace maps neither (its root is some user's, no more), when the
  // child keeps the host's ids.
  bool unprivileged_without_namespaces = false;
  // (resource, limit): soft and hard limit both set.
  std::vector<std::pair<int, uint64_t>> rlimits;
  bool no_new_privs = false;
  // Written to the child's /proc/self/oom_score_adj unless empty (raising
  // it needs no privilege): "1000" makes it the kernel's first choice when
  // memory runs out, before the host (a training job with a large
  // footprint).
  std::string oom_score_adj;
  // The cgroups the child runs in, by their cgroup.procs files, and their
  // version (1 or 2): it is born in them (core/cgroup_birth.h), or, where
  // the kernel refuses that, moved into them (its pid written there by the
  // host) before it runs anything of its own: it waits for that.
  std::vector<std::string> cgroup_procs;
  int cgroup_version = 0;
  // With `namespaces`: a mount namespace too, whose root is built from this
  // plan (core/empty_root.h) before exec. Empty: the host's filesystem.
  EmptyRootPlan empty_root;
};

struct LaunchSpec {
  std::string path;                       // executable (for messages; see exec_fd)
  std::vector<std::string> argv;          // argv[0] included
  std::vector<std::string> env;           // the child's whole environment ("K=V")
  // Parent descriptor -> the number it gets in the child. Every other
  // descriptor is closed in the child.
  std::vector<std::pair<int, int>> fds;
  // If set, the executable is run from this descriptor (execveat with
  // AT_EMPTY_PATH), so that an unprivileged child need not be able to reach
  // its path.
  int exec_fd = -1;
  SandboxSpec sandbox;
};

struct ChildProcess {
  pid_t pid = -1;
  ipc::UniqueFd pidfd;  // refers to exactly this child, immune to pid reuse
  bool unprivileged_ids = false;  // the user namespace maps it to nobody
};

// How a child ended, for diagnostics: "killed by signal 11 (SIGSEGV)".
struct ExitStatus {
  bool signaled = false;
  int code = 0;  // exit code, or signal number when signaled
  std::string ToString() const;
};

// Whether a Launch failure is a kernel without what every child needs
// (kFailedPrecondition, with a payload that says so).
bool IsKernelTooOld(const absl::Status& status);

class ProcessLauncher {
 public:
  virtual ~ProcessLauncher() = default;
  // Starts `spec`. Fails if the executable cannot be started at all (the
  // child's execve error is reported, not a bare exit code);
  // IsKernelTooOld() where the kernel lacks what every child needs (a
  // pidfd), so that no weaker sandbox is worth trying.
  [[nodiscard]] virtual absl::StatusOr<ChildProcess> Launch(const LaunchSpec& spec) = 0;
  // Sends `signal` through the pidfd (never to a reused pid).
  virtual void Signal(const ChildProcess& child, int signal) = 0;
  // Reaps the child if it has exited by `deadline`; kDeadlineExceeded if not.
  [[nodiscard]] virtual absl::StatusOr<ExitStatus> Wait(const ChildProcess& child, ipc::Deadline deadline) = 0;
};

// The real thing: a clone that shares the host's memory until the child's
// execve, as posix_spawn's does (core/process_clone.h), the child killed by
// the kernel if the host dies (PR_SET_PDEATHSIG).
//
// PR_SET_PDEATHSIG fires when the *thread* that created the child exits, not
// the process. Children are therefore created on one thread owned by the
// launcher, which lives until the launcher is destroyed; a caller thread
// that opens a decoder and then ends does not take the backend with it.
class SystemProcessLauncher final : public ProcessLauncher {
 public:
  SystemProcessLauncher();
  ~SystemProcessLauncher() override;

  absl::StatusOr<ChildProcess> Launch(const LaunchSpec& spec) override;
  void Signal(const ChildProcess& child, int signal) override;
  absl::StatusOr<ExitStatus> Wait(const ChildProcess& child, ipc::Deadline deadline) override;

 private:
  struct SpawnThread;
  std::unique_ptr<SpawnThread> spawner_;
};

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_PROCESS_H_
