#include "core/kernel_features.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/cgroup.h"
#include "core/proc_mount_refusal.h"

namespace codecvisor {
namespace {

constexpr int kProbeTimeoutMs = 5000;
constexpr uint32_t kReportMagic = 0xC0DEC5A8;

// A descriptor closed when it goes out of scope (the probe keeps no
// dependency on ipc/ for this one helper).
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void reset(int fd = -1) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

// What the probe child found: 0 for success, else the errno.
struct ChildReport {
  uint32_t magic = 0;
  int user_ns = -1;
  int pid_ns = -1;
  int net_ns = -1;
  int ipc_ns = -1;
  int proc_mount = -1;  // -1: not tried (no pid or mount namespace)
  int no_new_privs_set = -1;
  int no_new_privs_get = -1;  // the value read back, or -errno
  int seccomp_install = -1;
  int seccomp_mode_after = -1;  // PR_GET_SECCOMP after the install, or -errno
};

int SyscallErrno(long rc) { return rc == 0 ? 0 : errno; }

// The probe child: raw system calls only (the parent may be multithreaded;
// nothing here takes a lock or allocates), one write, exit.
[[noreturn]] void ProbeChild(int report_fd) {
  ChildReport r;
  r.user_ns = SyscallErrno(syscall(SYS_unshare, CLONE_NEWUSER));
  r.pid_ns = SyscallErrno(syscall(SYS_unshare, CLONE_NEWPID));
  r.net_ns = SyscallErrno(syscall(SYS_unshare, CLONE_NEWNET));
  r.ipc_ns = SyscallErrno(syscall(SYS_unshare, CLONE_NEWIPC));
  // A fresh proc, as the runner mounts one: by the first process of the new
  // pid namespace, in a mount namespace of its own. The kernel refuses it
  // where the proc already mounted has parts masked (a container's).
  if (r.pid_ns == 0 && syscall(SYS_unshare, CLONE_NEWNS) == 0) {
    const long pid = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    if (pid == 0) {
      long rc = syscall(SYS_mount, nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr);
      if (rc == 0) rc = syscall(SYS_mount, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr);
      syscall(SYS_exit_group, rc == 0 ? 0 : errno);
    }
    int status = 0;
    if (pid < 0) {
      r.proc_mount = errno;
    } else {
      while (syscall(SYS_wait4, pid, &status, 0, nullptr) < 0 && errno == EINTR) {
      }
      r.proc_mount = WIFEXITED(status) ? WEXITSTATUS(status) : EFAULT;
    }
  }
  r.no_new_privs_set = SyscallErrno(syscall(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
  long nnp = syscall(SYS_prctl, PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
  r.no_new_privs_get = nnp < 0 ? -errno : static_cast<int>(nnp);
  // An allow-all filter, installed on every thread (TSYNC) as the runner's is.
  sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
  sock_fprog program{1, allow};
  r.seccomp_install =
      SyscallErrno(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &program));
  long mode = syscall(SYS_prctl, PR_GET_SECCOMP, 0, 0, 0, 0);
  r.seccomp_mode_after = mode < 0 ? -errno : static_cast<int>(mode);
  r.magic = kReportMagic;
  (void)syscall(SYS_write, report_fd, &r, sizeof(r));
  syscall(SYS_exit_group, 0);
  __builtin_unreachable();
}

struct ChildResult {
  bool ok = false;
  std::string failure;  // why there is no report
  ChildReport report;
  bool clone3 = false;
  std::string clone3_detail;
};

// Starts the probe child (clone3 with CLONE_PIDFD and no exit signal; fork
// if clone3 is refused), reads its report and reaps it.
ChildResult RunProbeChild() {
  ChildResult result;
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    result.failure = absl::StrCat("pipe2: ", ErrnoText(errno));
    result.clone3_detail = absl::StrCat("not tried: ", result.failure);
    return result;
  }
  Fd read_end(pipe_fds[0]), write_end(pipe_fds[1]);

  int pidfd_raw = -1;
  clone_args args{};
  args.flags = CLONE_PIDFD;
  args.pidfd = reinterpret_cast<uint64_t>(&pidfd_raw);
  args.exit_signal = 0;  // no SIGCHLD: invisible to the process's SIGCHLD handling and waitpid(-1)
  long pid = syscall(SYS_clone3, &args, sizeof(args));
  std::string clone3_refused;
#if defined(__x86_64__) || defined(__aarch64__)
  if (pid < 0 && errno == ENOSYS) {
    // As the launcher does (core/process.cc): the legacy clone with the
    // same flags, where a container's seccomp profile refuses clone3.
    clone3_refused = ErrnoText(errno);
    pid = syscall(SYS_clone, static_cast<unsigned long>(CLONE_PIDFD), nullptr, &pidfd_raw, nullptr, nullptr);
  }
#endif
  if (pid == 0) ProbeChild(write_end.get());
  bool clone_child = true;  // reaped with __WALL
  Fd pidfd;
  if (pid > 0) {
    pidfd.reset(pidfd_raw);
    // (A kernel older than CLONE_PIDFD ignores it in the legacy call.)
    result.clone3 = pidfd_raw >= 0;
    result.clone3_detail =
        clone3_refused.empty() ? "clone3(CLONE_PIDFD) created the probe child"
        : result.clone3
            ? absl::StrCat("clone(CLONE_PIDFD) created the probe child (clone3: ", clone3_refused, ")")
            : absl::StrCat("clone ignored CLONE_PIDFD (a kernel before 5.2; clone3: ", clone3_refused, ")");
  } else {
    result.clone3_detail = absl::StrCat(clone3_refused.empty() ? "clone3(CLONE_PIDFD): " : "clone(CLONE_PIDFD): ",
                                        ErrnoText(errno),
                                        clone3_refused.empty() ? "" : absl::StrCat(" (clone3: ", clone3_refused, ")"));
    pid = fork();
    if (pid == 0) ProbeChild(write_end.get());
    if (pid < 0) {
      result.failure = absl::StrCat("cannot start a probe child: fork: ", ErrnoText(errno));
      return result;
    }
    clone_child = false;
  }
  write_end.reset();

  pollfd p{read_end.get(), POLLIN, 0};
  int ready;
  do {
    ready = poll(&p, 1, kProbeTimeoutMs);
  } while (ready < 0 && errno == EINTR);
  if (ready == 1) {
    ssize_t got;
    do {
      got = read(read_end.get(), &result.report, sizeof(result.report));
    } while (got < 0 && errno == EINTR);
    result.ok = got == static_cast<ssize_t>(sizeof(result.report)) && result.report.magic == kReportMagic;
    if (!result.ok) result.failure = "the probe child died before it reported";
  } else {
    result.failure = absl::StrCat("the probe child did not report within ", kProbeTimeoutMs / 1000, " s");
  }
  if (!result.ok) {
    // Not yet reaped, so the pid cannot have been reused.
    if (pidfd.valid()) {
      syscall(SYS_pidfd_send_signal, pidfd.get(), SIGKILL, nullptr, 0);
    } else {
      kill(static_cast<pid_t>(pid), SIGKILL);
    }
  }
  int status;
  while (waitpid(static_cast<pid_t>(pid), &status, clone_child ? __WALL : 0) < 0 && errno == EINTR) {
  }
  return result;
}

std::string ReadSysctl(const char* path) {
  Fd fd(open(path, O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return "";
  char buf[64];
  ssize_t n = read(fd.get(), buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  return std::string(absl::StripAsciiWhitespace(absl::string_view(buf, static_cast<size_t>(n))));
}

// The usual reasons an unprivileged user namespace is refused.
std::string UserNamespaceHint(int err) {
  std::vector<std::string> hints;
  if (ReadSysctl("/proc/sys/kernel/unprivileged_userns_clone") == "0") {
    hints.push_back("kernel.unprivileged_userns_clone = 0");
  }
  if (ReadSysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1") {
    hints.push_back("kernel.apparmor_restrict_unprivileged_userns = 1");
  }
  if (ReadSysctl("/proc/sys/user/max_user_namespaces") == "0") hints.push_back("user.max_user_namespaces = 0");
  if (hints.empty()) {
    switch (err) {
      case EPERM:
        return "; refused by policy (a sysctl, an LSM, a container's seccomp profile, or a chroot)";
      case ENOSPC:
        return "; user.max_user_namespaces is exhausted";
      case EINVAL:
        return "; kernel built without CONFIG_USER_NS";
      default:
        return "";
    }
  }
  std::string out = "; ";
  for (size_t i = 0; i < hints.size(); ++i) absl::StrAppend(&out, i ? ", " : "", hints[i]);
  return out;
}

void ProbeNamespaces(const ChildResult& child, KernelFeatures* f) {
  if (!child.ok) {
    for (KernelFeature* ns :
         {&f->user_namespace, &f->pid_namespace, &f->net_namespace, &f->ipc_namespace, &f->proc_mount}) {
      ns->present = false;
      ns->detail = absl::StrCat("not probed: ", child.failure);
    }
    return;
  }
  const ChildReport& r = child.report;
  f->user_namespace.present = r.user_ns == 0;
  f->user_namespace.detail =
      r.user_ns == 0 ? "unshare(CLONE_NEWUSER) in a probe child"
                     : absl::StrCat("unshare(CLONE_NEWUSER): ", ErrnoText(r.user_ns), UserNamespaceHint(r.user_ns));
  const char* where = r.user_ns == 0 ? " inside the probe's new user namespace" : " without a user namespace";
  auto one = [&](KernelFeature* ns, int err, const char* flag, const char* config) {
    ns->present = err == 0;
    ns->detail = err == 0 ? absl::StrCat("unshare(", flag, ")", where)
                          : absl::StrCat("unshare(", flag, ")", where, ": ", ErrnoText(err),
                                         err == EINVAL ? absl::StrCat("; kernel built without ", config) : "");
  };
  one(&f->pid_namespace, r.pid_ns, "CLONE_NEWPID", "CONFIG_PID_NS");
  one(&f->net_namespace, r.net_ns, "CLONE_NEWNET", "CONFIG_NET_NS");
  one(&f->ipc_namespace, r.ipc_ns, "CLONE_NEWIPC", "CONFIG_IPC_NS");
  f->proc_mount.present = r.proc_mount == 0;
  if (r.proc_mount == 0) {
    f->proc_mount.detail = absl::StrCat("mount(proc) by the first process of a new pid namespace", where);
  } else if (r.proc_mount < 0) {
    f->proc_mount.detail = "not tried: no new pid or mount namespace";
  } else {
    f->proc_mount.detail = absl::StrCat("mount(proc) by the first process of a new pid namespace", where, ": ",
                                        ErrnoText(r.proc_mount), r.proc_mount == EPERM ? ProcMountRefusalHere() : "");
  }
}

void ProbeNoNewPrivs(const ChildResult& child, KernelFeatures* f) {
  const long current = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
  f->no_new_privs_set = current == 1;
  const char* self = current == 1 ? "; this process: already set" : "; this process: not set";
  if (!child.ok) {
    // PR_GET_NO_NEW_PRIVS exists exactly where PR_SET_NO_NEW_PRIVS does.
    f->no_new_privs.present = current >= 0;
    f->no_new_privs.detail = current >= 0 ? absl::StrCat("PR_GET_NO_NEW_PRIVS answers (no probe child: ",
                                                         child.failure, ")", self)
                                          : absl::StrCat("PR_GET_NO_NEW_PRIVS: ", ErrnoText(errno));
    return;
  }
  const ChildReport& r = child.report;
  f->no_new_privs.present = r.no_new_privs_set == 0 && r.no_new_privs_get == 1;
  if (f->no_new_privs.present) {
    f->no_new_privs.detail = absl::StrCat("PR_SET_NO_NEW_PRIVS in a probe child, read back", self);
  } else if (r.no_new_privs_set != 0) {
    f->no_new_privs.detail = absl::StrCat("PR_SET_NO_NEW_PRIVS: ", ErrnoText(r.no_new_privs_set));
  } else {
    f->no_new_privs.detail = r.no_new_privs_get < 0
                                 ? absl::StrCat("PR_GET_NO_NEW_PRIVS: ", ErrnoText(-r.no_new_privs_get))
                                 : absl::StrCat("PR_GET_NO_NEW_PRIVS reads ", r.no_new_privs_get, " after it was set");
  }
}

void ProbeSeccomp(const ChildResult& child, KernelFeatures* f) {
  const long mode = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
  f->seccomp_mode = mode < 0 ? -1 : static_cast<int>(mode);
  KernelFeature& s = f->seccomp;
  if (mode < 0) {
    const int err = errno;
    s.detail = absl::StrCat("PR_GET_SECCOMP: ", ErrnoText(err),
                            err == EINVAL ? "; kernel built without CONFIG_SECCOMP" : "");
    return;
  }
  // A NULL filter: the kernel knows filter mode and fails copying the
  // program (EFAULT) before it checks anything else; nothing is installed.
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, nullptr, 0, 0) == 0 || errno != EFAULT) {
    const int err = errno;
    s.detail = absl::StrCat("PR_SET_SECCOMP(SECCOMP_MODE_FILTER, NULL): ", ErrnoText(err), ", expected EFAULT",
                            err == EINVAL ? "; kernel built without CONFIG_SECCOMP_FILTER" : "");
    return;
  }
  for (auto [action, name] : {std::pair<uint32_t, const char*>{SECCOMP_RET_TRAP, "SECCOMP_RET_TRAP"},
                              std::pair<uint32_t, const char*>{SECCOMP_RET_ERRNO, "SECCOMP_RET_ERRNO"}}) {
    if (syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) != 0) {
      s.detail = absl::StrCat("seccomp(SECCOMP_GET_ACTION_AVAIL, ", name, "): ", ErrnoText(errno));
      return;
    }
  }
  const char* self = mode == 2 ? "; this process: already filtered" : "; this process: not filtered";
  if (!child.ok) {
    s.detail = absl::StrCat("filter mode known, TRAP and ERRNO actions available; not installed (", child.failure,
                            ")", self);
    s.present = true;
    return;
  }
  const ChildReport& r = child.report;
  if (r.seccomp_install != 0) {
    s.detail = absl::StrCat("seccomp(SECCOMP_SET_MODE_FILTER, TSYNC) in a probe child: ", ErrnoText(r.seccomp_install));
    return;
  }
  if (r.seccomp_mode_after != 2) {
    s.detail = absl::StrCat("PR_GET_SECCOMP reads ", r.seccomp_mode_after, " after a filter was installed");
    return;
  }
  s.present = true;
  s.detail = absl::StrCat("filter mode with TSYNC (installed in a probe child), TRAP and ERRNO actions", self);
}

void ProbeLandlock(KernelFeatures* f) {
  const long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi >= 1) {
    f->landlock.present = true;
    f->landlock_abi = static_cast<int>(abi);
    f->landlock.detail = absl::StrCat("ABI ", abi);
    return;
  }
  const int err = abi < 0 ? errno : 0;
  f->landlock_abi = 0;
  f->landlock.detail = absl::StrCat(
      "landlock_create_ruleset(LANDLOCK_CREATE_RULESET_VERSION): ",
      abi < 0 ? ErrnoText(err) : absl::StrCat("ABI ", abi),
      err == ENOSYS       ? "; kernel built without CONFIG_SECURITY_LANDLOCK (or a seccomp filter hides it)"
      : err == EOPNOTSUPP ? "; Landlock is built in but not enabled (add landlock to the lsm= boot parameter)"
                          : "");
}

void ProbePidfd(KernelFeatures* f) {
  Fd fd(static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0)));
  if (!fd.valid()) {
    const int err = errno;
    f->pidfd.detail = absl::StrCat("pidfd_open: ", ErrnoText(err), err == ENOSYS ? "; Linux 5.3 or newer is needed" : "");
    return;
  }
  if (syscall(SYS_pidfd_send_signal, fd.get(), 0, nullptr, 0) != 0) {
    f->pidfd.detail = absl::StrCat("pidfd_send_signal(signal 0): ", ErrnoText(errno));
    return;
  }
  // Our own process is not our child: ECHILD where P_PIDFD is known
  // (Linux 5.4), EINVAL where it is not (5.3: the launcher waits for its
  // children by pid, which stays theirs until they are reaped).
  siginfo_t info{};
  const int waited = waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(fd.get()), &info, WEXITED | WNOHANG);
  const int err = waited == 0 ? 0 : errno;
  if (err == EINVAL) {
    f->pidfd.present = true;
    f->pidfd.detail = "pidfd_open and pidfd_send_signal; waitid(P_PIDFD): EINVAL (before Linux 5.4): children are "
                      "reaped by pid";
    return;
  }
  if (err != ECHILD) {
    f->pidfd.detail = absl::StrCat("waitid(P_PIDFD): ", waited == 0 ? "succeeded" : ErrnoText(err), ", expected ECHILD");
    return;
  }
  f->pidfd.present = true;
  f->pidfd.detail = "pidfd_open, pidfd_send_signal and waitid(P_PIDFD)";
}

void ProbeMemfd(KernelFeatures* f) {
  Fd fd(memfd_create("codecvisor-probe", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.valid()) {
    f->memfd_sealing.detail = absl::StrCat("memfd_create(MFD_ALLOW_SEALING): ", ErrnoText(errno));
    return;
  }
  constexpr int kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
  if (fcntl(fd.get(), F_ADD_SEALS, kSeals) != 0) {
    f->memfd_sealing.detail = absl::StrCat("fcntl(F_ADD_SEALS): ", ErrnoText(errno));
    return;
  }
  const int seals = fcntl(fd.get(), F_GET_SEALS);
  if (seals < 0 || (seals & kSeals) != kSeals) {
    f->memfd_sealing.detail =
        seals < 0 ? absl::StrCat("fcntl(F_GET_SEALS): ", ErrnoText(errno)) : absl::StrCat("F_GET_SEALS reads ", seals);
    return;
  }
  f->memfd_sealing.present = true;
  f->memfd_sealing.detail = "memfd_create(MFD_ALLOW_SEALING) with F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_SEAL";
}

}  // namespace

std::string KernelName() {
  utsname u{};
  return uname(&u) == 0 ? absl::StrCat(u.sysname, " ", u.release, " ", u.machine)
                        : absl::StrCat("unknown (uname: ", ErrnoText(errno), ")");
}

std::string ErrnoText(int err) {
  const char* name = strerrorname_np(err);
  const char* text = strerrordesc_np(err);
  if (name == nullptr) return absl::StrCat("errno ", err);
  return text == nullptr ? std::string(name) : absl::StrCat(name, " (", text, ")");
}

std::vector<NamedFeature> AllFeatures(const KernelFeatures& f) {
  using N = FeatureNeed;
  return {
      {"user_namespace", "user namespace", N::kUnlessDegraded, &f.user_namespace},
      {"pid_namespace", "pid namespace", N::kUnlessDegraded, &f.pid_namespace},
      {"net_namespace", "net namespace", N::kUnlessDegraded, &f.net_namespace},
      {"ipc_namespace", "ipc namespace", N::kUnlessDegraded, &f.ipc_namespace},
      {"proc_mount", "new proc mount", N::kUnlessDegraded, &f.proc_mount},
      {"seccomp", "seccomp-bpf", N::kAlways, &f.seccomp},
      {"landlock", "landlock", N::kUnlessDegraded, &f.landlock},
      {"no_new_privs", "no_new_privs", N::kAlways, &f.no_new_privs},
      {"pidfd", "pidfd", N::kAlways, &f.pidfd},
      {"memfd_sealing", "memfd sealing", N::kAlways, &f.memfd_sealing},
      {"clone3", "clone3 (or clone) with a pidfd", N::kAlways, &f.clone3},
      {"cgroups", "cgroup (memory, pids)", N::kWhereAvailable, &f.cgroups},
  };
}

KernelFeatures ProbeKernelFeatures() {
  KernelFeatures f;
  f.kernel = KernelName();
  const ChildResult child = RunProbeChild();
  f.clone3.present = child.clone3;
  f.clone3.detail = child.clone3_detail;
  ProbeNamespaces(child, &f);
  ProbeNoNewPrivs(child, &f);
  ProbeSeccomp(child, &f);
  const CgroupLayout cgroups = ProbeCgroupLayout();
  f.cgroups.present = cgroups.version != 0;
  f.cgroups.detail = cgroups.Describe();
  ProbeLandlock(&f);
  ProbePidfd(&f);
  ProbeMemfd(&f);
  return f;
}

}  // namespace codecvisor
