#include "core/process.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/small_file.h"
#include "core/cgroup_birth.h"
#include "core/kernel_features.h"
#include "core/proc_mount_refusal.h"
#include "core/process_child.h"
#include "core/process_clone.h"
#include "core/user_namespace_ids.h"

namespace codecvisor {
namespace {

using process_internal::ChildAfterClone;
using process_internal::ChildError;
using process_internal::CloneRequest;
using process_internal::CloneResult;
using process_internal::CloneUntilExec;
using process_internal::kCgroupStep;
using process_internal::kIdsStep;
using process_internal::kNoStep;
using process_internal::kRootStep;

constexpr char kKernelTooOldPayload[] = "codecvisor/launch/kernel-too-old";

// How long a child may take from clone to exec before it is killed.
constexpr std::chrono::milliseconds kExecDeadline{10'000};

absl::Status KernelTooOld(std::string message) {
  absl::Status status = absl::FailedPreconditionError(message);
  status.SetPayload(kKernelTooOldPayload, absl::Cord("1"));
  return status;
}

bool WriteFileText(const std::string& path, const std::string& text) {
  ipc::UniqueFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
  return fd.valid() && write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
}

bool WriteProcFile(pid_t pid, const char* file, const std::string& text) {
  return WriteFileText(absl::StrCat("/proc/", pid, "/", file), text);
}

// The child's id maps are written through /proc/PID, with PID as this
// process's pid namespace numbers it: a /proc of another namespace (one
// entered without mounting its own, as `unshare --pid --fork` without
// --mount-proc leaves it) would name some other process there.
absl::Status CheckProcIsThisNamespaces() {
  char target[32] = {};
  const ssize_t n = readlink("/proc/self", target, sizeof(target) - 1);
  if (n > 0 && absl::string_view(target, static_cast<size_t>(n)) == absl::StrCat(getpid())) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "this process (pid ", getpid(), ") is not in the pid namespace its /proc shows (/proc/self is ",
      n > 0 ? absl::StrCat("'", absl::string_view(target, static_cast<size_t>(n)), "'") : std::string("unreadable"),
      "): the backend's id maps cannot be written; mount a proc for this namespace "
      "(unshare --mount-proc, bwrap --proc /proc)"));
}

// Maps the child's root to nobody, or failing that to our own ids. Returns
// the byte that tells the child what it got ('n': nobody, 's': self), or 0.
// Each map can be written once, so the order matters: only a host with
// CAP_SETUID and CAP_SETGID over its namespace (root) may map ids other
// than its own, and an unprivileged one must deny setgroups before it may
// write its gid map. (A host that is itself nobody maps its own ids: the
// child is nobody outside either way.)
char WriteIdMaps(pid_t pid, const SandboxSpec& sandbox) {
  if (geteuid() == 0 && WriteProcFile(pid, "uid_map", absl::StrCat("0 ", sandbox.outside_uid, " 1\n"))) {
    return WriteProcFile(pid, "gid_map", absl::StrCat("0 ", sandbox.outside_gid, " 1\n")) ? 'n' : 0;
  }
  if (!WriteProcFile(pid, "setgroups", "deny")) return 0;
  if (WriteProcFile(pid, "uid_map", absl::StrCat("0 ", geteuid(), " 1\n")) &&
      WriteProcFile(pid, "gid_map", absl::StrCat("0 ", getegid(), " 1\n"))) {
    return 's';
  }
  return 0;
}

// What the child's code gets (on the launching thread's stack, which the
// child can read: it shares this process's memory until it execs).
struct ChildArgs {
  const LaunchSpec* spec;
  char* const* argv;
  char* const* envp;
  int error_pipe;
  int error_pipe_reader;
  int go_pipe;
  pid_t parent;
  bool become_outside_ids;
  const CgroupBirth* birth;
};

CODECVISOR_CHILD_CODE int RunChild(void* arg, const sigset_t* exec_mask) {
  const auto* a = static_cast<const ChildArgs*>(arg);
  ChildAfterClone(*a->spec, a->argv, a->envp, exec_mask, a->error_pipe, a->error_pipe_reader, a->go_pipe, a->parent,
                  a->become_outside_ids, *a->birth);
}

// A step refused for want of descriptors (the child starts with a copy of
// this process's table, so it runs short where this process is near its
// limit) is this process's shortage, which passes when it closes some (the
// caller reports it as such, backend_process.cc), not the sandbox's.
absl::Status Refused(int err, std::string message) {
  return OutOfDescriptors(err) ? absl::ResourceExhaustedError(std::move(message))
                               : absl::PermissionDeniedError(std::move(message));
}

// Why no child was made, for the caller: a kernel too old for any sandbox
// (no pidfd), a shortage, or a refused namespace.
absl::Status CloneFailure(const LaunchSpec& spec, const CloneResult& cloned) {
  const absl::string_view call = cloned.call;
  if (cloned.err == ENOSYS) {
    return KernelTooOld(absl::StrCat(call, ": ENOSYS: this kernel (", KernelName(), ") has ",
                                     call == "pidfd_open"
                                         ? "no pidfd_open (Linux 5.3), or a seccomp profile refuses it"
                                         : "no clone3 (Linux 5.3), or a seccomp profile refuses both clone3 and clone",
                                     "; the host needs a pidfd for each backend process (no sandbox setting helps)"));
  }
  if (cloned.err == EAGAIN) {
    return absl::ResourceExhaustedError(
        absl::StrCat(call, ": Resource temporarily unavailable (too many processes and threads)"));
  }
  // The flags only for the clone itself (not its stack's mmap or pipe2).
  std::vector<std::string> named;
  if (!cloned.copied) named = {"CLONE_VM", "CLONE_VFORK"};
  if (spec.sandbox.namespaces) {
    named.insert(named.end(), {"CLONE_NEWUSER", "CLONE_NEWPID", "CLONE_NEWNET", "CLONE_NEWIPC"});
  }
  const std::string flags =
      (call != "clone3" && call != "clone") || named.empty() ? "" : absl::StrCat("(", absl::StrJoin(named, " | "), ")");
  absl::Status failed = ipc::ErrnoStatus(absl::StrCat(call, flags), cloned.err);
  // ENOSPC here is a namespace limit (user.max_user_namespaces = 0 where
  // they are forbidden), not this process's shortage: a weaker sandbox may start.
  if (cloned.err == ENOSPC) return absl::FailedPreconditionError(failed.message());
  return failed;
}

}  // namespace

// Clones and execs `spec` from the calling thread (see the class comment for
// why that must be a long-lived one).
absl::StatusOr<ChildProcess> LaunchOnThisThread(const LaunchSpec& spec);

std::string ExitStatus::ToString() const {
  if (!signaled) return absl::StrCat("exited with code ", code);
  const char* name = sigabbrev_np(code);
  return absl::StrCat("killed by signal ", code, name ? absl::StrCat(" (SIG", name, ")") : "");
}

// Runs spawn jobs one at a time on a thread that outlives every caller.
struct SystemProcessLauncher::SpawnThread {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> jobs;
  bool stop = false;
  std::thread thread{[this] {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      cv.wait(lock, [&] { return stop || !jobs.empty(); });
      if (jobs.empty()) return;
      auto job = std::move(jobs.front());
      jobs.pop_front();
      lock.unlock();
      job();
      lock.lock();
    }
  }};

  // Runs `fn` on the spawn thread and returns its result.
  template <typename Fn>
  auto Run(Fn fn) -> decltype(fn()) {
    std::promise<decltype(fn())> done;
    auto result = done.get_future();
    {
      std::lock_guard<std::mutex> lock(mu);
      jobs.push_back([&] { done.set_value(fn()); });
    }
    cv.notify_one();
    return result.get();
  }

  ~SpawnThread() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    cv.notify_one();
    thread.join();
  }
};

SystemProcessLauncher::SystemProcessLauncher() : spawner_(std::make_unique<SpawnThread>()) {}
SystemProcessLauncher::~SystemProcessLauncher() = default;

absl::StatusOr<ChildProcess> SystemProcessLauncher::Launch(const LaunchSpec& spec) {
  return spawner_->Run([&] { return LaunchOnThisThread(spec); });
}

absl::StatusOr<ChildProcess> LaunchOnThisThread(const LaunchSpec& spec) {
  if (spec.fds.size() > 16) return absl::InvalidArgumentError("at most 16 descriptors can be passed");
  if (spec.sandbox.namespaces) {
    if (absl::Status s = CheckProcIsThisNamespaces(); !s.ok()) return s;
  }
  // Everything the child needs is built before clone: it must not allocate.
  std::vector<char*> argv, envp;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return ipc::ErrnoStatus("pipe2");
  ipc::UniqueFd read_end(pipe_fds[0]), write_end(pipe_fds[1]);
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return ipc::ErrnoStatus("pipe2");
  ipc::UniqueFd go_read(pipe_fds[0]), go_write(pipe_fds[1]);

  uint64_t flags = 0;
  if (spec.sandbox.namespaces) flags |= CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC;
  if (spec.sandbox.namespaces && !spec.sandbox.empty_root.steps.empty()) flags |= CLONE_NEWNS;
  const pid_t parent = getpid();
  // Read before clone: the child may not allocate.
  const bool become_outside_ids = spec.sandbox.unprivileged_without_namespaces && !spec.sandbox.namespaces &&
                                  geteuid() == 0 && UserNamespaceMapsId("uid_map", spec.sandbox.outside_uid) &&
                                  UserNamespaceMapsId("gid_map", spec.sandbox.outside_gid);
  CgroupBirth birth(spec.sandbox.cgroup_procs, spec.sandbox.cgroup_version);
  ChildArgs child_args{&spec,         argv.data(), envp.data(),        write_end.get(), read_end.get(),
                       go_read.get(), parent,      become_outside_ids, &birth};

  // What the host does while the child waits for its go byte (on
  // CloneUntilExec's helper thread): write its id maps, move it into its
  // cgroups unless it is in them by itself, let it go on. On failure the
  // child is killed (false) and `refused` says why.
  absl::Status refused;
  bool unprivileged_ids = become_outside_ids;
  const bool needs_go = spec.sandbox.namespaces || !spec.sandbox.cgroup_procs.empty();
  auto start_child = [&](pid_t pid, bool born_in_cgroup) {
    char go = 's';
    if (spec.sandbox.namespaces) {
      go = WriteIdMaps(pid, spec.sandbox);
      if (go == 0) {
        const int err = errno;
        refused = Refused(err, absl::StrCat("cannot write the user namespace id maps of the backend process (uid ",
                                            geteuid(), ", gid ", getegid(), "): ", std::strerror(err)));
        return false;
      }
      unprivileged_ids = go == 'n' || (geteuid() == spec.sandbox.outside_uid && getegid() == spec.sandbox.outside_gid);
    }
    const bool in_cgroups_by_itself = born_in_cgroup || birth.child_moves_itself();
    for (const std::string& procs : in_cgroups_by_itself ? std::vector<std::string>{} : spec.sandbox.cgroup_procs) {
      if (!WriteFileText(procs, absl::StrCat(pid))) {
        const int err = errno;
        refused = Refused(
            err, absl::StrCat("cannot move the backend process into its cgroup (", procs, "): ", std::strerror(err)));
        return false;
      }
    }
    if (needs_go) (void)!write(go_write.get(), &go, 1);
    return true;
  };
  CloneRequest request;
  request.flags = flags;
  request.cgroup_dir = birth.clone_into();
  request.child = &RunChild;
  request.child_arg = &child_args;
  request.started = start_child;
  request.exec_deadline = kExecDeadline;
  CloneResult cloned = CloneUntilExec(request);
  const int clone_err = cloned.err;
  if (cloned.pid < 0 && birth.in_use() &&
      (clone_err == E2BIG || clone_err == EINVAL || clone_err == EBADF || clone_err == EBUSY ||
       clone_err == EOPNOTSUPP || clone_err == EACCES || clone_err == EMFILE || clone_err == ENFILE)) {
    // A kernel before 5.7 (E2BIG), a cgroup it will not start a process in,
    // or the birth's descriptors at this process's limit: the child is
    // moved in by pid instead.
    birth.Abandon();
    request.cgroup_dir = -1;
    cloned = CloneUntilExec(request);
  }
  go_read.reset();
  go_write.reset();
  write_end.reset();
  birth.Abandon();  // the child's copies were its own
  if (cloned.pid < 0) return CloneFailure(spec, cloned);
  ChildProcess child{cloned.pid, std::move(cloned.pidfd), unprivileged_ids};
  auto give_up = [&](absl::Status why) {
    syscall(SYS_pidfd_send_signal, child.pidfd.get(), SIGKILL, nullptr, 0);
    waitpid(child.pid, nullptr, 0);
    return why;
  };
  const absl::Status too_slow = absl::DeadlineExceededError(
      absl::StrCat("starting ", spec.path, ": the child did not exec within ", kExecDeadline.count() / 1000, " s"));
  if (!refused.ok()) return give_up(refused);
  if (cloned.deadline_passed) return give_up(too_slow);
  // The child has exec'd or exited. After an exec it closes the error pipe
  // moments later (execve closes descriptors after the point where the
  // clone returns); after a failure the report is there.
  // A process another thread forked meanwhile holds the pipe's end too
  // until it execs or ends: a child that has exec'd is started.
  pollfd p{read_end.get(), POLLIN, 0};
  const auto until = std::chrono::steady_clock::now() + kExecDeadline;
  for (;;) {
    if (ipc::RetryEintr([&] { return poll(&p, 1, 100); }) == 1) break;
    if (process_internal::ChildExeced(child.pid)) return child;
    if (std::chrono::steady_clock::now() >= until) return give_up(too_slow);
  }
  ChildError report{0, kNoStep};
  ssize_t got = ipc::RetryEintr([&] { return read(read_end.get(), &report, sizeof(report)); });
  if (got == sizeof(report)) {
    // execve (or the set-up before it) failed; reap the child now.
    waitpid(child.pid, nullptr, 0);
    const auto& steps = spec.sandbox.empty_root.steps;
    if (report.step == kRootStep || (report.step >= 0 && static_cast<size_t>(report.step) < steps.size())) {
      // A mount that fails is the sandbox's failure (ENOSPC: the mount
      // limit), but for a descriptor the child lacked (Refused).
      absl::Status failed = ipc::ErrnoStatus(
          absl::StrCat("starting ", spec.path, ": building its empty root filesystem (",
                       report.step == kRootStep ? "private mounts, tmpfs and pivot_root"
                                                : steps[static_cast<size_t>(report.step)].Describe(),
                       ")"),
          report.err);
      if (report.step >= 0 && steps[static_cast<size_t>(report.step)].kind == MountStep::kProc && report.err == EPERM) {
        return absl::FailedPreconditionError(absl::StrCat(failed.message(), ProcMountRefusalHere()));
      }
      if (OutOfDescriptors(report.err)) return failed;
      return absl::IsResourceExhausted(failed) ? absl::FailedPreconditionError(failed.message()) : failed;
    }
    if (report.step == kCgroupStep) {
      return Refused(report.err,
                     absl::StrCat("starting ", spec.path,
                                  ": cannot move the backend process into its cgroup: ", std::strerror(report.err)));
    }
    if (report.step == kIdsStep) {
      return absl::PermissionDeniedError(absl::StrCat(
          "starting ", spec.path, ": a root host's backend without a user namespace becomes uid ",
          spec.sandbox.outside_uid, " and gid ", spec.sandbox.outside_gid,
          " (nobody), and the kernel refused that (the host needs CAP_SETUID and CAP_SETGID): ",
          std::strerror(report.err)));
    }
    absl::Status failed = ipc::ErrnoStatus(absl::StrCat("starting ", spec.path), report.err);
    if (report.err == ENOSPC) return absl::FailedPreconditionError(failed.message());  // a namespace limit
    return failed;
  }
  return child;
}

bool IsKernelTooOld(const absl::Status& status) { return status.GetPayload(kKernelTooOldPayload).has_value(); }

void SystemProcessLauncher::Signal(const ChildProcess& child, int signal) {
  syscall(SYS_pidfd_send_signal, child.pidfd.get(), signal, nullptr, 0);
}

absl::StatusOr<ExitStatus> SystemProcessLauncher::Wait(const ChildProcess& child, ipc::Deadline deadline) {
  for (;;) {
    siginfo_t info{};
    int r = ipc::RetryEintr([&] {
      return waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(child.pidfd.get()), &info, WEXITED | WNOHANG);
    });
    if (r != 0 && errno == EINVAL) {
      // Linux 5.3 has pidfds but not waitid(P_PIDFD) (5.4). The pid is
      // safe to wait for by number: an unreaped child's pid is never reused.
      r = ipc::RetryEintr([&] { return waitid(P_PID, static_cast<id_t>(child.pid), &info, WEXITED | WNOHANG); });
    }
    if (r != 0) return ipc::ErrnoStatus(absl::StrCat("waitid(pid ", child.pid, ")"));
    if (info.si_pid != 0) {
      ExitStatus status;
      status.signaled = info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED;
      status.code = info.si_status;
      return status;
    }
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - ipc::Clock::now()).count();
    if (left <= 0) {
      return absl::DeadlineExceededError(absl::StrCat("backend process ", child.pid, " has not exited"));
    }
    pollfd p{child.pidfd.get(), POLLIN, 0};
    ipc::RetryEintr([&] { return poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000))); });
  }
}

}  // namespace codecvisor
