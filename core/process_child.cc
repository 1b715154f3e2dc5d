#include "core/process_child.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "core/empty_root.h"
#include "core/process_clone.h"

namespace codecvisor::process_internal {

CODECVISOR_CHILD_CODE void ChildAfterClone(const LaunchSpec& spec, char* const* argv, char* const* envp,
                                           const sigset_t* exec_mask, int error_pipe, int error_pipe_reader,
                                           int go_pipe, pid_t parent, bool become_outside_ids,
                                           const CgroupBirth& birth) {
  // The host's end of the error pipe, inherited: only the host may hold it,
  // so that its death shows as POLLERR on ours (below).
  close(error_pipe_reader);
  auto fail = [&](int err, int step = kNoStep) CODECVISOR_CHILD_CODE {
    const ChildError report{err, step};
    (void)!write(error_pipe, &report, sizeof(report));
    ExitChild(127);
  };
  // Into its own cgroups before anything else (core/cgroup_birth.h).
  if (const int err = birth.EnterInChild(); err != 0) fail(err, kCgroupStep);
  // A change of credentials clears the parent-death signal (prctl(2)): set
  // it again, or a child the host leaves behind (a host killed while its
  // backend is stopped) lives on. If the host died in between, the read end
  // of the error pipe, which it holds until we exec, is closed.
  auto rearm_parent_death = [&]() CODECVISOR_CHILD_CODE {
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail(errno);
    pollfd host_alive{error_pipe, POLLOUT, 0};
    if (poll(&host_alive, 1, 0) == 1 && (host_alive.revents & POLLERR) != 0) ExitChild(127);
  };
  // A session of its own: no controlling terminal, so no TIOCSTI into the
  // user's shell, and no signals from the terminal's keyboard.
  if (setsid() < 0) fail(errno);
  DiscardPendingSignals();
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail(errno);
  if (getppid() != parent && !spec.sandbox.namespaces) ExitChild(127);  // the host died before prctl took effect
  if (!spec.sandbox.oom_score_adj.empty()) {
    // Best effort (no /proc, say): a child that cannot raise it runs on.
    if (const int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC); fd >= 0) {
      (void)!write(fd, spec.sandbox.oom_score_adj.data(), spec.sandbox.oom_score_adj.size());
      close(fd);
    }
  }
  // Wait until the host has written our id maps and, unless we moved
  // ourselves, moved us into our cgroup; then become the mapped root, dropping the host's supplementary
  // groups.
  char go = 0;
  if (spec.sandbox.namespaces || !spec.sandbox.cgroup_procs.empty()) {
    ssize_t got;
    while ((got = read(go_pipe, &go, 1)) < 0 && errno == EINTR) {
    }
    if (got != 1) fail(got < 0 ? errno : EPIPE);  // the host gave up on us
  }
  // Raw syscalls: glibc's wrappers would try to change the credentials of
  // every thread it remembers from the parent, which do not exist here.
  if (become_outside_ids) {
    // No user namespace (a degraded sandbox) and a root host: the plugin
    // must not run as root with root's capabilities. Nobody's ids, no
    // supplementary groups; all capabilities go with uid 0.
    const gid_t gid = spec.sandbox.outside_gid;
    const uid_t uid = spec.sandbox.outside_uid;
    if (syscall(SYS_setgroups, 0, nullptr) != 0) fail(errno, kIdsStep);
    if (syscall(SYS_setresgid, gid, gid, gid) != 0) fail(errno, kIdsStep);
    if (syscall(SYS_setresuid, uid, uid, uid) != 0) fail(errno, kIdsStep);
    rearm_parent_death();
  }
  if (spec.sandbox.namespaces) {
    if (go == 'n' && syscall(SYS_setgroups, 0, nullptr) != 0) fail(errno);
    if (syscall(SYS_setresgid, 0, 0, 0) != 0) fail(errno);
    if (syscall(SYS_setresuid, 0, 0, 0) != 0) fail(errno);
    rearm_parent_death();  // for a root host, root to nobody is a change
    if (!spec.sandbox.empty_root.steps.empty()) {
      int step = kNoStep;
      if (const int err = ApplyEmptyRoot(spec.sandbox.empty_root, &step); err != 0) {
        fail(err, step < 0 ? kRootStep : step);
      }
    }
  }
  if (spec.sandbox.no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail(errno);
  // Move every source above every target first, so that a dup2 never
  // overwrites a source still to be moved. The copies take the lowest
  // numbers past the targets: a host under a small RLIMIT_NOFILE (ulimit
  // -n 64) has no higher ones to give.
  int moved[16];
  const size_t n = std::min<size_t>(spec.fds.size(), 16);
  int highest = 2;
  for (size_t i = 0; i < n; ++i) highest = std::max(highest, spec.fds[i].second);
  // The error pipe too (a host whose stdio is closed gets low numbers):
  // a dup2 onto it would close it, and the host would take a failed exec
  // for a started child.
  if (error_pipe <= highest) {
    const int above = fcntl(error_pipe, F_DUPFD_CLOEXEC, highest + 1);
    if (above < 0) fail(errno);
    error_pipe = above;
  }
  for (size_t i = 0; i < n; ++i) {
    moved[i] = fcntl(spec.fds[i].first, F_DUPFD_CLOEXEC, highest + 1);
    if (moved[i] < 0) fail(errno);
  }
  const int exec_fd = spec.exec_fd >= 0 ? fcntl(spec.exec_fd, F_DUPFD_CLOEXEC, highest + 1) : -1;
  if (spec.exec_fd >= 0 && exec_fd < 0) fail(errno);
  for (size_t i = 0; i < n; ++i) {
    if (dup2(moved[i], spec.fds[i].second) < 0) fail(errno);  // dup2 clears CLOEXEC
  }
  // Every descriptor above the mapped ones (the moved copies, the error pipe,
  // anything the host had open) is closed by execve.
  if (syscall(SYS_close_range, highest + 1, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    // Before Linux 5.11 (close_range: 5.9; its CLOEXEC flag: 5.11), one
    // descriptor at a time, up to the hard limit (a soft one may have been
    // lowered below descriptors already open), at most fs.nr_open's default.
    if (errno != ENOSYS && errno != EINVAL) fail(errno);
    rlimit files{};
    if (syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, nullptr, &files) != 0) fail(errno);
    const rlim_t end = std::min<rlim_t>(std::max(files.rlim_cur, files.rlim_max), rlim_t{1} << 20);
    for (rlim_t fd = static_cast<rlim_t>(highest) + 1; fd < end; ++fd) {
      (void)fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);  // EBADF where none is open
    }
  }
  for (const auto& [resource, limit] : spec.sandbox.rlimits) {
    // Set once the descriptors are in place: moving them takes numbers past
    // a small RLIMIT_NOFILE, which the moved copies may keep until execve
    // closes them. A lower limit the host runs under (a cluster's `ulimit -v`) is kept:
    // the child could not raise it (EPERM), and it bounds the backend
    // more tightly anyway.
    rlimit current{};
    rlim_t value = static_cast<rlim_t>(limit);
    if (syscall(SYS_prlimit64, 0, resource, nullptr, &current) == 0 && current.rlim_max < value) {
      value = current.rlim_max;
    }
    rlimit r{value, value};
    if (syscall(SYS_prlimit64, 0, resource, &r, nullptr) != 0) fail(errno);
  }
  // Blocked until now (core/process_clone.h): a Ctrl-C to the host's
  // process group before setsid() would have killed a child with default
  // handlers.
  syscall(SYS_rt_sigprocmask, SIG_SETMASK, exec_mask, nullptr, sizeof(uint64_t));
  if (exec_fd >= 0) {
    syscall(SYS_execveat, exec_fd, "", argv, envp, AT_EMPTY_PATH);
  } else {
    execve(spec.path.c_str(), argv, envp);
  }
  fail(errno);
  ExitChild(127);
}

}  // namespace codecvisor::process_internal
