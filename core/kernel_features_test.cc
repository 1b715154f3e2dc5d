// The kernel feature probe, checked against the kernel by other means: each
// answer must agree with a direct test made here (a different call, or the
// mechanism actually used in a child and its effect observed). Presence is
// asserted only for what every kernel this project runs on must have (its
// launcher and channel cannot work without it); the sandbox mechanisms that
// a kernel or a container may lack are checked for agreement only.

#include "core/kernel_features.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace codecvisor {
namespace {

// Runs `fn` in a child process and returns its exit code (-1 if it did not
// exit normally). `fn` must only make system calls. The child is made with
// a raw clone(SIGCHLD), not fork(): under TSan, fork() restarts the
// sanitizer's background thread in the child, and a multithreaded process
// cannot unshare(CLONE_NEWUSER). (With every other argument zero, the
// clone argument order, which differs between architectures, is moot.)
template <typename Fn>
int InChild(Fn fn) {
  const pid_t pid = static_cast<pid_t>(syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0));
  if (pid == 0) syscall(SYS_exit_group, fn());
  if (pid < 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

ino_t NsInode(const char* path) {
  struct stat st;
  return stat(path, &st) == 0 ? st.st_ino : 0;
}

int OpenDescriptors() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int n = 0;
  while (readdir(dir) != nullptr) ++n;
  closedir(dir);
  return n;
}

std::atomic<int> sigchld_count{0};

TEST(KernelFeaturesTest, EveryFeatureHasAOneLineDetail) {
  const KernelFeatures f = ProbeKernelFeatures();
  EXPECT_FALSE(f.kernel.empty());
  std::set<std::string> keys;
  for (const NamedFeature& n : AllFeatures(f)) {
    EXPECT_TRUE(keys.insert(n.key).second) << n.key;
    EXPECT_FALSE(n.feature->detail.empty()) << n.key;
    EXPECT_EQ(n.feature->detail.find('\n'), std::string::npos) << n.key << ": " << n.feature->detail;
    EXPECT_NE(std::string(n.label), "");
  }
  EXPECT_EQ(keys.size(), 12u);
  for (const char* key : {"user_namespace", "pid_namespace", "net_namespace", "ipc_namespace", "proc_mount", "seccomp",
                          "landlock", "no_new_privs", "pidfd", "memfd_sealing", "clone3", "cgroups"}) {
    EXPECT_TRUE(keys.count(key)) << key;
  }
}

TEST(KernelFeaturesTest, LandlockAbiIsTheKernelsAnswer) {
  const KernelFeatures f = ProbeKernelFeatures();
  const long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  EXPECT_EQ(f.landlock_abi, abi < 0 ? 0 : abi);
  EXPECT_EQ(f.landlock.present, abi >= 1) << f.landlock.detail;
  if (abi >= 1) EXPECT_EQ(f.landlock.detail, "ABI " + std::to_string(abi));
}

TEST(KernelFeaturesTest, SeccompAnswerMatchesInstallingAFilter) {
  const KernelFeatures f = ProbeKernelFeatures();
  EXPECT_EQ(f.seccomp_mode, static_cast<int>(prctl(PR_GET_SECCOMP, 0, 0, 0, 0)));
  // Through the other interface (prctl rather than seccomp(2)), without
  // TSYNC: install an allow-all filter and see the mode change.
  const int installed = InChild([] {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return 2;
    sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    sock_fprog program{1, allow};
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0) != 0) return 3;
    return prctl(PR_GET_SECCOMP, 0, 0, 0, 0) == 2 ? 0 : 4;
  });
  EXPECT_EQ(f.seccomp.present, installed == 0) << f.seccomp.detail << "; child exit " << installed;
}

TEST(KernelFeaturesTest, NamespaceAnswersMatchTheNamespacesSeen) {
  const KernelFeatures f = ProbeKernelFeatures();
  // Each bit of the exit code: that namespace is new (its inode changed).
  const ino_t user = NsInode("/proc/self/ns/user");
  const ino_t pid = NsInode("/proc/self/ns/pid_for_children");
  const ino_t net = NsInode("/proc/self/ns/net");
  const ino_t ipc = NsInode("/proc/self/ns/ipc");
  ASSERT_NE(user, 0u);
  const int seen = InChild([&] {
    int bits = 0;
    if (syscall(SYS_unshare, CLONE_NEWUSER) == 0 && NsInode("/proc/self/ns/user") != user) bits |= 1;
    if (syscall(SYS_unshare, CLONE_NEWPID) == 0 && NsInode("/proc/self/ns/pid_for_children") != pid) bits |= 2;
    if (syscall(SYS_unshare, CLONE_NEWNET) == 0 && NsInode("/proc/self/ns/net") != net) bits |= 4;
    if (syscall(SYS_unshare, CLONE_NEWIPC) == 0 && NsInode("/proc/self/ns/ipc") != ipc) bits |= 8;
    return bits;
  });
  ASSERT_GE(seen, 0);
  EXPECT_EQ(f.user_namespace.present, (seen & 1) != 0) << f.user_namespace.detail;
  EXPECT_EQ(f.pid_namespace.present, (seen & 2) != 0) << f.pid_namespace.detail;
  EXPECT_EQ(f.net_namespace.present, (seen & 4) != 0) << f.net_namespace.detail;
  EXPECT_EQ(f.ipc_namespace.present, (seen & 8) != 0) << f.ipc_namespace.detail;
}

// The probe's answer is what mounting a proc the runner's way does here.
TEST(KernelFeaturesTest, ProcMountAnswerMatchesMountingOne) {
  const KernelFeatures f = ProbeKernelFeatures();
  const int mounted = InChild([] {
    syscall(SYS_unshare, CLONE_NEWUSER);  // where it fails, the rest runs as this user
    if (syscall(SYS_unshare, CLONE_NEWPID) != 0 || syscall(SYS_unshare, CLONE_NEWNS) != 0) return 1;
    const long pid = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    if (pid == 0) {
      const bool ok = mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
                      mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0;
      syscall(SYS_exit_group, ok ? 0 : 2);
    }
    int status = 0;
    if (pid < 0 || waitpid(static_cast<pid_t>(pid), &status, 0) < 0) return 3;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 4;
  });
  ASSERT_GE(mounted, 0);
  EXPECT_EQ(f.proc_mount.present, mounted == 0) << f.proc_mount.detail << "; child exit " << mounted;
  if (!f.proc_mount.present && f.pid_namespace.present) {
    EXPECT_NE(f.proc_mount.detail.find("mount(proc)"), std::string::npos) << f.proc_mount.detail;
  }
}

// Every backend this project starts needs these (core/process.cc,
// ipc/region.cc, ipc/socket.cc), so they hold wherever its tests can pass.
TEST(KernelFeaturesTest, WhatTheLauncherAlwaysNeedsIsPresent) {
  const KernelFeatures f = ProbeKernelFeatures();
  EXPECT_TRUE(f.clone3.present) << f.clone3.detail;
  EXPECT_TRUE(f.pidfd.present) << f.pidfd.detail;
  EXPECT_TRUE(f.memfd_sealing.present) << f.memfd_sealing.detail;
  EXPECT_TRUE(f.no_new_privs.present) << f.no_new_privs.detail;
  // And they agree with direct checks: clone3 with a too-small size is
  // EINVAL where clone3 exists (where it answers ENOSYS, the legacy clone
  // stands in, which the detail names); a pidfd of ourselves opens.
  errno = 0;
  EXPECT_EQ(syscall(SYS_clone3, nullptr, 0), -1);
  if (errno == ENOSYS) {
    EXPECT_NE(f.clone3.detail.find("clone(CLONE_PIDFD)"), std::string::npos) << f.clone3.detail;
  } else {
    EXPECT_EQ(f.clone3.present, errno == EINVAL) << errno;
  }
  const int fd = static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0));
  EXPECT_EQ(f.pidfd.present, fd >= 0);
  if (fd >= 0) close(fd);
}

TEST(KernelFeaturesTest, LeavesTheCallingProcessAsItWas) {
  const int fds = OpenDescriptors();
  const long nnp = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
  const long mode = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
  struct sigaction counting {}, old {};
  counting.sa_handler = [](int) { sigchld_count.fetch_add(1); };
  sigemptyset(&counting.sa_mask);
  ASSERT_EQ(sigaction(SIGCHLD, &counting, &old), 0);
  sigchld_count = 0;

  const KernelFeatures f = ProbeKernelFeatures();

  EXPECT_EQ(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0), nnp);
  EXPECT_EQ(f.no_new_privs_set, nnp == 1);
  EXPECT_EQ(prctl(PR_GET_SECCOMP, 0, 0, 0, 0), mode);
  EXPECT_EQ(OpenDescriptors(), fds);
  // The probe child is reaped, and (made by clone3 with no exit signal) it
  // never raised SIGCHLD.
  errno = 0;
  EXPECT_EQ(waitpid(-1, nullptr, WNOHANG | __WALL), -1);
  EXPECT_EQ(errno, ECHILD);
  if (f.clone3.present) EXPECT_EQ(sigchld_count.load(), 0);
  ASSERT_EQ(sigaction(SIGCHLD, &old, nullptr), 0);
}

TEST(KernelFeaturesTest, ConcurrentProbesAgree) {
  const KernelFeatures reference = ProbeKernelFeatures();
  std::vector<KernelFeatures> results(4);
  std::vector<std::thread> threads;
  for (KernelFeatures& r : results) {
    threads.emplace_back([&r] { r = ProbeKernelFeatures(); });
  }
  for (std::thread& t : threads) t.join();
  for (const KernelFeatures& r : results) {
    const std::vector<NamedFeature> got = AllFeatures(r), want = AllFeatures(reference);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].feature->present, want[i].feature->present) << got[i].key << ": " << got[i].feature->detail;
    }
    EXPECT_EQ(r.landlock_abi, reference.landlock_abi);
  }
}

TEST(KernelFeaturesTest, ErrnoText) {
  EXPECT_EQ(ErrnoText(EPERM), "EPERM (Operation not permitted)");
  EXPECT_EQ(ErrnoText(ENOSYS), "ENOSYS (Function not implemented)");
  EXPECT_EQ(ErrnoText(99999), "errno 99999");
}

}  // namespace
}  // namespace codecvisor
