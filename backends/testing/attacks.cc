#include "backends/testing/attacks.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

namespace codecvisor::testing {
namespace {

std::string Verdict(const std::string& what, bool ok, int err) {
  if (ok) return what + ": SUCCEEDED";
  return what + ": denied (" + std::strerror(err) + ")";
}

std::string OpenAttack(const std::string& what, const std::string& path, int flags) {
  int fd = open(path.c_str(), flags, 0644);
  int err = errno;
  char byte;
  bool ok = fd >= 0 && ((flags & O_ACCMODE) != O_RDONLY || read(fd, &byte, 1) >= 0);
  if (fd >= 0) close(fd);
  return Verdict(what, ok, err);
}

std::string SocketAttack(const std::string& what, int domain, int type, int port) {
  int fd = socket(domain, type, 0);  // seccomp traps this: the process dies here
  if (fd < 0) return Verdict(what, false, errno);
  bool ok = true;
  if (port > 0) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  int err = errno;
  close(fd);
  return Verdict(what, ok, err);
}


// A thread (not a process) cloned into new UTS and net namespaces, which
// then renames its host: the way around a block on unshare and setns.
std::string CloneIntoNamespaces() {
  static std::atomic<int> renamed{0};
  static char stack[64 << 10];
  auto thread = [](void*) -> int {
    renamed.store(sethostname("escaped", 7) == 0 ? 1 : 2);
    return 0;
  };
  const int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
                    CLONE_NEWUTS | CLONE_NEWNET;
  if (clone(thread, stack + sizeof(stack), flags, nullptr) < 0) {
    return Verdict("clone a thread into new namespaces", false, errno);
  }
  for (int i = 0; i < 2000 && renamed.load() == 0; ++i) usleep(1000);
  return Verdict("clone a thread into new namespaces and sethostname", renamed.load() == 1, EPERM);
}

// A memfd mapped writable and executable: code the filter never saw.
std::string WritableExecutableMemfd() {
  const int fd = memfd_create("code", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, 4096) != 0) return Verdict("make a memfd", false, errno);
  void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_SHARED, fd, 0);
  const int err = errno;
  close(fd);
  return Verdict("map a memfd writable and executable", p != MAP_FAILED, err);
}

// A second seccomp filter with a user-notification listener: a way to
// answer the plugin's own syscalls from another thread.
std::string SeccompListener() {
  sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  sock_fprog prog{1, &allow};
  const long fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
  return Verdict("install a seccomp listener", fd >= 0, errno);
}

// The inode flags of a file lent to the backend (the video, the plugin's
// library: the first file on a disk among its descriptors), set as they
// are: as the owner of the file this would succeed, and with other flags
// would mark the user's file (FS_IOC_SETFLAGS needs ownership, not write
// access).
std::string SetInodeFlags() {
  // <linux/fs.h>'s, which clashes with <sys/mount.h>.
  constexpr unsigned long kGetFlags = _IOR('f', 1, long), kSetFlags = _IOW('f', 2, long);
  for (int fd = 0; fd < 1024; ++fd) {
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) continue;
    // Not a memfd (the channel's, a sealed video's): a file on a disk, whose
    // owner is a user outside (memfds may lack the flags ioctls anyway).
    if (fcntl(fd, F_GET_SEALS) >= 0) continue;
    long flags = 0;
    if (ioctl(fd, kGetFlags, &flags) != 0) return Verdict("read a lent file's inode flags", false, errno);
    return Verdict("set a lent file's inode flags", ioctl(fd, kSetFlags, &flags) == 0, errno);
  }
  return Verdict("find a lent regular file", false, EBADF);
}

// struct sched_attr of <linux/sched/types.h>, which glibc 2.36 does not
// declare.
struct SchedAttr {
  uint32_t size = sizeof(SchedAttr);
  uint32_t sched_policy = 0;
  uint64_t sched_flags = 0;
  int32_t sched_nice = 0;
  uint32_t sched_priority = 0;
  uint64_t sched_runtime = 0, sched_deadline = 0, sched_period = 0;
};

// The host made SCHED_IDLE: it would run only when nothing else wants the CPU.
std::string DescheduleHost(int host_pid) {
  SchedAttr attr{};
  attr.sched_policy = SCHED_IDLE;
  return Verdict("make the host SCHED_IDLE", syscall(SYS_sched_setattr, host_pid, &attr, 0) == 0, errno);
}

}  // namespace

std::string Attack(const std::string& name, int host_pid, int port) {
  const std::string proc = "/proc/" + std::to_string(host_pid);
  // Not an attack: what the sandbox lets a decoder open (glibc reads the
  // main thread's stack from maps, libraries size their pools by cpuinfo
  // and meminfo). "allowed" when every one opens and reads.
  if (name == "open_allowed") {
    const std::pair<const char*, int> allowed[] = {{"/dev/null", O_RDWR},         {"/proc/cpuinfo", O_RDONLY},
                                                   {"/proc/meminfo", O_RDONLY},    {"/proc/self/stat", O_RDONLY},
                                                   {"/proc/self/status", O_RDONLY}, {"/proc/self/maps", O_RDONLY}};
    for (const auto& [path, flags] : allowed) {
      const std::string verdict = OpenAttack(std::string("open ") + path, path, flags);
      if (verdict.find("SUCCEEDED") == std::string::npos) return verdict;
    }
    // Its own threads' priority and policy, as a vendor's pool may set them.
    if (setpriority(PRIO_PROCESS, 0, getpriority(PRIO_PROCESS, 0)) != 0) {
      return Verdict("set the thread's own priority", false, errno);
    }
    if (setpriority(PRIO_PROCESS, static_cast<id_t>(getpid()), getpriority(PRIO_PROCESS, 0)) != 0) {
      return Verdict("set the process's own priority", false, errno);
    }
    // By its thread id, as a pool sets its workers' (this is no main thread).
    const auto tid = static_cast<id_t>(syscall(SYS_gettid));
    if (setpriority(PRIO_PROCESS, tid, getpriority(PRIO_PROCESS, tid)) != 0) {
      return Verdict("set a thread's priority by its id", false, errno);
    }
    SchedAttr attr{};
    if (syscall(SYS_sched_getattr, 0, &attr, sizeof(attr), 0) != 0 || syscall(SYS_sched_setattr, 0, &attr, 0) != 0) {
      return Verdict("set the thread's own scheduling", false, errno);
    }
    return "open what a decoder may: allowed";
  }
  if (name == "read_shadow") return OpenAttack("read /etc/shadow", "/etc/shadow", O_RDONLY);
  if (name == "read_host_mem") return OpenAttack("read the host's memory", proc + "/mem", O_RDONLY);
  if (name == "read_host_environ") return OpenAttack("read the host's environment", proc + "/environ", O_RDONLY);
  // Inside the empty root, /proc is there but Landlock (the second line)
  // grants nothing in it.
  if (name == "read_own_environ") return OpenAttack("read /proc/self/environ", "/proc/self/environ", O_RDONLY);
  if (name == "write_file") return OpenAttack("write a file", "/tmp/codecvisor-escape", O_WRONLY | O_CREAT | O_TRUNC);
  if (name == "env_secret") {
    const char* secret = std::getenv("CODECVISOR_TEST_SECRET");
    return secret != nullptr ? "read an environment secret: SUCCEEDED" : "read an environment secret: denied (absent)";
  }
  if (name == "inet") return SocketAttack("open an AF_INET socket", AF_INET, SOCK_STREAM, 0);
  if (name == "inet6") return SocketAttack("open an AF_INET6 socket", AF_INET6, SOCK_STREAM, 0);
  if (name == "netlink") return SocketAttack("open an AF_NETLINK socket", AF_NETLINK, SOCK_RAW, 0);
  if (name == "connect") return SocketAttack("connect to 127.0.0.1", AF_INET, SOCK_STREAM, port);
  if (name == "exec") {
    char* const argv[] = {const_cast<char*>("/bin/sh"), const_cast<char*>("-c"), const_cast<char*>("true"), nullptr};
    execv("/bin/sh", argv);
    return Verdict("execve /bin/sh", false, errno);
  }
  if (name == "fork_bomb") {
    for (int i = 0; i < 64; ++i) {
      pid_t pid = fork();
      if (pid == 0) _exit(0);
      if (pid < 0) return Verdict("fork bomb", false, errno);
    }
    return "fork bomb: SUCCEEDED";
  }
  if (name == "ptrace_host") {
    long r = ptrace(PTRACE_ATTACH, host_pid, nullptr, nullptr);
    return Verdict("ptrace the host", r == 0, errno);
  }
  if (name == "kill_host") return Verdict("kill the host", kill(host_pid, SIGKILL) == 0, errno);
  // Another process's CPU share: without a pid namespace, the host's.
  if (name == "renice_host") {
    return Verdict("renice the host", setpriority(PRIO_PROCESS, static_cast<id_t>(host_pid), 19) == 0, errno);
  }
  if (name == "renice_user") return Verdict("renice the user's processes", setpriority(PRIO_USER, 0, 19) == 0, errno);
  if (name == "deschedule_host") return DescheduleHost(host_pid);
  // Not an attack: a thread's own priority by its id, as a pool sets its
  // workers'. Where the sandbox cannot tell it from another process's (no
  // pid namespace), refused with an error a library gets over.
  if (name == "renice_own_thread") {
    const auto tid = static_cast<id_t>(syscall(SYS_gettid));
    return Verdict("renice its own thread by its id",
                   setpriority(PRIO_PROCESS, tid, getpriority(PRIO_PROCESS, tid)) == 0, errno);
  }
  if (name == "signal_all") return Verdict("signal every process", kill(-1, SIGCONT) == 0, errno);
  if (name == "raise_rlimit") {
    rlimit r{RLIM_INFINITY, RLIM_INFINITY};
    return Verdict("raise RLIMIT_NOFILE", setrlimit(RLIMIT_NOFILE, &r) == 0, errno);
  }
  if (name == "setuid") return Verdict("setuid(0)", setuid(0) == 0, errno);
  if (name == "mount") return Verdict("mount a tmpfs", mount("none", "/tmp", "tmpfs", 0, nullptr) == 0, errno);
  // The host's terminal and log, reached through the child's stdio.
  if (name == "tiocsti") {
    char c = '#';
    return Verdict("push a key into the terminal (TIOCSTI on fd 2)", ioctl(2, TIOCSTI, &c) == 0, errno);
  }
  if (name == "truncate_log") return Verdict("truncate the host's log (fd 2)", ftruncate(2, 0) == 0, errno);
  if (name == "rewrite_log") return Verdict("rewrite the host's log (fd 1)", pwrite(1, "forged\n", 7, 0) == 7, errno);
  // The host's filesystem, beyond opening: names and sizes.
  if (name == "stat_shadow") {
    struct stat st;
    return Verdict("stat /etc/shadow", stat("/etc/shadow", &st) == 0, errno);
  }
  if (name == "stat_host_pid") {
    // stat needs no Landlock right: only a /proc of our own pid namespace
    // keeps the host's processes out of sight.
    struct stat st;
    return Verdict("stat the host's /proc entry", stat(proc.c_str(), &st) == 0, errno);
  }
  // Calls outside the seccomp allow list: each must end the process.
  if (name == "clone_namespaces") return CloneIntoNamespaces();
  if (name == "seccomp_listener") return SeccompListener();
  if (name == "landlock_ruleset") {
    return Verdict("create a Landlock ruleset", syscall(SYS_landlock_create_ruleset, nullptr, 0, 1) >= 0, errno);
  }
  if (name == "listmount") {
    // listmount(2) (Linux 6.8, number 458 on x86_64 and arm64): the host's
    // mounts. The arguments are never read: the filter decides first.
    return Verdict("list the mounts", syscall(458, nullptr, nullptr, 0, 0) >= 0, errno);
  }
  if (name == "wx_memfd") return WritableExecutableMemfd();
  if (name == "sigsys_handler") {
    // Replace the runner's SIGSYS handler, passing SIGSYS with high bits
    // set (the kernel reads an int; a filter that compares 64 bits and
    // refuses only "== SIGSYS" lets it through). With its own handler a
    // plugin would survive every refused call.
    struct kernel_sigaction {
      void (*handler)(int);
      unsigned long flags;
      void (*restorer)();
      unsigned long mask;
    } act{SIG_IGN, 0, nullptr, 0};
    const long r = syscall(SYS_rt_sigaction, 0x100000000UL | SIGSYS, &act, nullptr, sizeof(act.mask));
    return Verdict("replace the SIGSYS handler", r == 0, errno);
  }
  if (name == "personality") return Verdict("change the personality", personality(0xffffffff) >= 0, errno);
  if (name == "inotify") return Verdict("watch files with inotify", inotify_init1(IN_CLOEXEC) >= 0, errno);
  if (name == "flock") return Verdict("lock a file", flock(0, LOCK_EX | LOCK_NB) == 0, errno);
#if defined(__x86_64__)
  if (name == "x32") {
    // getpid through the x32 ABI (the syscall number with bit 30 set),
    // which no rule of an x86_64 filter covers. (i386's int $0x80 is the
    // other foreign ABI; some hypervisors fault it before any filter runs.)
    const long ret = syscall(0x40000000 | SYS_getpid);
    return Verdict("call getpid through the x32 ABI", ret > 0, errno);
  }
#endif
  if (name == "open_tty") return OpenAttack("open the controlling terminal", "/dev/tty", O_RDWR);
  if (name == "inode_flags") return SetInodeFlags();
  return "unknown attack " + name;
}

}  // namespace codecvisor::testing
