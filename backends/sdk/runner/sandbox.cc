#include "backends/sdk/runner/sandbox.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/landlock.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/mman.h>
#if defined(__x86_64__)
#include <asm/prctl.h>
#endif
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "backends/sdk/runner/crash_hints.h"
#include "ipc/unique_fd.h"

// libseccomp's SCMP_A* macros leave a field to its default.
#pragma clang diagnostic ignored "-Wmissing-field-initializers"

namespace codecvisor::runner {
namespace {

// Landlock constants newer than Debian 12's kernel headers (ABI 3-6).
constexpr uint64_t kFsTruncate = 1ULL << 14;   // ABI 3
constexpr uint64_t kFsIoctlDev = 1ULL << 15;   // ABI 5
constexpr uint64_t kNetBindTcp = 1ULL << 0;    // ABI 4
constexpr uint64_t kNetConnectTcp = 1ULL << 1; // ABI 4
constexpr uint64_t kScopeAbstractUnix = 1ULL << 0;  // ABI 6
constexpr uint64_t kScopeSignal = 1ULL << 1;        // ABI 6

struct RulesetAttr {  // the ABI 6 layout of struct landlock_ruleset_attr
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};

struct PathBeneathAttr {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));

constexpr uint64_t kFsRead = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
constexpr uint64_t kFsFileOnly =
    LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE | kFsTruncate | kFsIoctlDev;

uint64_t HandledFs(int abi) {
  uint64_t all = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;  // ABI 1: bits 0-12
  if (abi >= 2) all |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) all |= kFsTruncate;
  if (abi >= 5) all |= kFsIoctlDev;
  return all;
}

absl::Status AddPath(int ruleset, const std::string& path, uint64_t access, uint64_t handled, int fd = -1) {
  ipc::UniqueFd owned;
  if (fd < 0) {
    owned.reset(open(path.c_str(), O_PATH | O_CLOEXEC));
    if (!owned.valid()) {
      if (errno == ENOENT) return absl::OkStatus();  // e.g. /lib64 on some systems
      return ipc::ErrnoStatus(absl::StrCat("open(", path, ") for a Landlock rule"));
    }
    fd = owned.get();
  }
  // A rule holds its inode, but procfs makes a new inode for /proc/PID/*
  // each time it looks a name up afresh: the descriptor is kept for the
  // process's life, so that the looked-up entry (and the rule's inode)
  // stays the one later opens find.
  const bool keep = absl::StartsWith(path, "/proc/self/");
  struct stat st;
  if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) access &= kFsFileOnly;
  PathBeneathAttr rule{access & handled, fd};
  if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) != 0) {
    return ipc::ErrnoStatus(absl::StrCat("landlock_add_rule(", path, ")"));
  }
  if (keep) (void)owned.release();  // never closed: a few descriptors for the process's life
  return absl::OkStatus();
}

// The calls a decoder needs with any argument: the runner's (shared-memory
// channel, futex doorbells, descriptor passing, crash hints), glibc's,
// FFmpeg's and libdav1d's, and the sanitizer runtimes' of the test builds,
// found by running the conformance suites, the hostile-video corpus and
// the integration tests under SeccompMode::kLog. Files are Landlock's and
// the mount namespace's to restrict; the calls that need their arguments
// checked (madvise and fallocate among them) are added in ApplySeccomp.
// clang-format off
constexpr const char* kAllowedSyscalls[] = {
    // memory
    "brk", "munmap", "mremap", "mincore", "msync", "membarrier", "memfd_create",
    "mlock", "munlock", "get_mempolicy", "set_mempolicy",
    // descriptors and files (Landlock decides which files)
    "read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev", "preadv2", "pwritev2",
    "lseek", "close", "close_range", "dup", "dup2", "dup3", "pipe", "pipe2", "ftruncate", "fsync",
    "fdatasync", "open", "openat", "stat", "fstat", "lstat", "newfstatat", "statx", "statfs", "fstatfs",
    "access", "faccessat", "faccessat2", "readlink", "readlinkat", "getdents64", "getcwd", "poll", "ppoll",
    "select", "pselect6", "epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait", "eventfd2",
    // the control socket the host handed over (no new sockets)
    "sendmsg", "recvmsg", "sendto", "recvfrom", "shutdown", "getsockopt",
    // threads and synchronisation
    "futex", "set_robust_list", "set_tid_address", "rseq", "sched_yield", "sched_getaffinity",
    "sched_getparam", "sched_getscheduler", "sched_get_priority_min", "sched_get_priority_max",
    "sched_getattr", "getpriority", "exit", "pause",
    // signals (rt_sigaction and kill are checked below)
    "rt_sigprocmask", "rt_sigreturn", "rt_sigtimedwait", "rt_sigpending", "sigaltstack", "restart_syscall",
    // time
    "clock_gettime", "clock_getres", "clock_nanosleep", "gettimeofday", "time", "nanosleep",
    // who and where we are
    "getpid", "gettid", "getppid", "getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid",
    "getgroups", "getrlimit", "getrusage", "times", "sysinfo", "uname", "getrandom", "getcpu",
};
// clang-format on

}  // namespace

int LandlockAbi() {
  long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return abi < 0 ? 0 : static_cast<int>(abi);
}

absl::Status ApplyLandlock(const RunnerSandbox& sandbox) {
  const long version = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (version < 1) {
    const int err = version < 0 ? errno : 0;
    // EOPNOTSUPP: built in, but not among the boot's security modules.
    if (err == EOPNOTSUPP) {
      return absl::UnavailableError(
          "the kernel's Landlock is built in but not enabled (add landlock to the lsm= boot parameter)");
    }
    if (err == ENOSYS || err == 0) return absl::UnavailableError("the kernel has no Landlock");
    return absl::UnavailableError(
        absl::StrCat("Landlock is refused here: landlock_create_ruleset: ", std::strerror(err)));
  }
  const int abi = static_cast<int>(version);
  RulesetAttr attr{};
  attr.handled_access_fs = HandledFs(abi);
  if (abi >= 4) attr.handled_access_net = kNetBindTcp | kNetConnectTcp;
  if (abi >= 6) attr.scoped = kScopeAbstractUnix | kScopeSignal;
  const size_t attr_size = abi >= 6 ? sizeof(RulesetAttr) : abi >= 4 ? 16 : 8;
  ipc::UniqueFd ruleset(static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0)));
  if (!ruleset.valid()) return ipc::ErrnoStatus("landlock_create_ruleset");
  const uint64_t handled = attr.handled_access_fs;
  // System libraries, the loader's cache, and the CPU topology that
  // threading libraries read to size their pools.
  // The process's own /proc files that glibc and runtimes read (the main
  // thread's stack from maps, its affinity from status, its thread count
  // from stat), the machine's CPUs and memory as libraries size themselves
  // by them, and /dev/null, which the mount namespace already holds.
  for (const char* p : {"/usr", "/lib", "/lib64", "/etc/ld.so.cache", "/sys/devices/system/cpu", "/proc/cpuinfo",
                        "/proc/meminfo", "/proc/self/stat", "/proc/self/status", "/proc/self/maps"}) {
    if (absl::Status s = AddPath(ruleset.get(), p, kFsRead, handled); !s.ok()) return s;
  }
  if (absl::Status s =
          AddPath(ruleset.get(), "/dev/null", LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE, handled);
      !s.ok()) {
    return s;
  }
  for (const std::string& p : sandbox.read_paths) {
    if (absl::Status s = AddPath(ruleset.get(), p, kFsRead, handled); !s.ok()) return s;
  }
  for (const std::string& p : sandbox.devices) {
    const uint64_t rw = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE | kFsIoctlDev;
    if (absl::Status s = AddPath(ruleset.get(), p, rw, handled); !s.ok()) return s;
  }
  if (sandbox.library_fd >= 0) {
    if (absl::Status s = AddPath(ruleset.get(), "vendor library", kFsRead, handled, sandbox.library_fd); !s.ok()) {
      return s;
    }
  }
  if (syscall(SYS_landlock_restrict_self, ruleset.get(), 0) != 0) return ipc::ErrnoStatus("landlock_restrict_self");
  return absl::OkStatus();
}

std::vector<std::pair<uint32_t, uint32_t>> AllowedValueBlocks(unsigned bits, std::span<const uint32_t> denied) {
  std::vector<std::pair<uint32_t, uint32_t>> blocks;
  const uint64_t end = uint64_t{1} << bits;
  auto has_denied = [&](uint64_t start, uint64_t size) {
    const auto first = std::lower_bound(denied.begin(), denied.end(), start);
    return first != denied.end() && *first < start + size;
  };
  for (uint64_t start = 0; start < end;) {
    if (has_denied(start, 1)) {
      ++start;
      continue;
    }
    // The largest aligned block from here with no denied value in it.
    uint64_t size = 1;
    while (size < end && start % (size * 2) == 0 && start + size * 2 <= end && !has_denied(start, size * 2)) size *= 2;
    blocks.emplace_back(static_cast<uint32_t>(~(size - 1) & (end - 1)), static_cast<uint32_t>(start));
    start += size;
  }
  return blocks;
}

std::vector<std::pair<uint8_t, uint8_t>> AllowedIoctlTypeBlocks(std::span<const uint8_t> denied) {
  const std::vector<uint32_t> wide(denied.begin(), denied.end());
  std::vector<std::pair<uint8_t, uint8_t>> blocks;
  for (auto [mask, value] : AllowedValueBlocks(8, wide)) {
    blocks.emplace_back(static_cast<uint8_t>(mask), static_cast<uint8_t>(value));
  }
  return blocks;
}

absl::Status ApplySeccomp(SeccompMode mode, bool memfd) {
  // Anything not allowed below traps: the SIGSYS handler (crash_hints.h)
  // records the syscall for the host's crash message and ends the whole
  // process, so a refusal is as final as SECCOMP_RET_KILL_PROCESS and says
  // which call it was. In the logging mode the same calls are only logged
  // by the kernel (`dmesg`, audit type 1326): how the list is made.
  const uint32_t refuse = mode == SeccompMode::kLog ? SCMP_ACT_LOG : SCMP_ACT_TRAP;
  scmp_filter_ctx ctx = seccomp_init(refuse);
  if (ctx == nullptr) return absl::InternalError("seccomp_init failed");
  struct Guard {
    scmp_filter_ctx ctx;
    ~Guard() { seccomp_release(ctx); }
  } guard{ctx};
  if (seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1) != 0) return absl::InternalError("seccomp TSYNC unsupported");
  // A call through another ABI (i386 `int $0x80` or x32 on x86_64) kills
  // the process outright: none of the rules below would apply to it.
  if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) != 0) {
    return absl::InternalError("seccomp: cannot set the action for other architectures");
  }
  int rc = 0;
  auto add = [&](uint32_t action, int nr, std::initializer_list<scmp_arg_cmp> args = {}) {
    if (nr < 0 || rc != 0) return;  // a name this architecture lacks (e.g. `open` on arm64)
    rc = seccomp_rule_add_array(ctx, action, nr, static_cast<unsigned>(args.size()), args.begin());
  };
  for (const char* name : kAllowedSyscalls) {
    if (memfd || std::string_view(name) != "memfd_create") add(SCMP_ACT_ALLOW, seccomp_syscall_resolve_name(name));
  }
  // An error a plugin can handle, not a trap: a library may try a memfd
  // and fall back to memory of its own. In the logging mode the default
  // action logs it and lets it through, like every other refusal, so that
  // a vendor finds it.
  if (!memfd && mode != SeccompMode::kLog) add(SCMP_ACT_ERRNO(EPERM), SCMP_SYS(memfd_create));

  // Memory: no mapping is writable and executable at once. (This does not
  // stop code written into a writable mapping that is later made, or mapped
  // again, executable: a plugin is native code already; it makes an
  // exploited decoder's job harder, no more.)
  constexpr scmp_datum_t kWX = PROT_WRITE | PROT_EXEC;
  for (int nr : {SCMP_SYS(mmap), SCMP_SYS(mprotect)}) {
    for (scmp_datum_t prot : {scmp_datum_t{0}, scmp_datum_t{PROT_WRITE}, scmp_datum_t{PROT_EXEC}}) {
      add(SCMP_ACT_ALLOW, nr, {SCMP_A2(SCMP_CMP_MASKED_EQ, kWX, prot)});
    }
  }
  // clone: threads only, in the namespaces they are in. clone3 passes its
  // flags in memory a filter cannot read, so it fails with ENOSYS and
  // glibc falls back to clone.
  constexpr scmp_datum_t kNewNamespaces = CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC |
                                          CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWTIME;
  add(SCMP_ACT_ALLOW, SCMP_SYS(clone),
      {SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD | CLONE_VM | kNewNamespaces, CLONE_THREAD | CLONE_VM)});
  add(SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3));
  // ioctl: none of the terminal or file-system types (kDeniedIoctlTypes),
  // which answer ENOTTY so that isatty() still works; any other type, for
  // the devices a manifest declares (Landlock decides which files those
  // are), as disjoint masked blocks of type bytes.
  for (uint8_t type : kDeniedIoctlTypes) {
    add(SCMP_ACT_ERRNO(ENOTTY), SCMP_SYS(ioctl), {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xff00, scmp_datum_t{type} << 8)});
  }
  for (auto [mask, value] : AllowedIoctlTypeBlocks(kDeniedIoctlTypes)) {
    add(SCMP_ACT_ALLOW, SCMP_SYS(ioctl),
        {SCMP_A1(SCMP_CMP_MASKED_EQ, scmp_datum_t{mask} << 8, scmp_datum_t{value} << 8)});
  }
  // fcntl: descriptor flags, status flags, duplication and memfd seals; no
  // locks (a lock on the video would be visible to the host's other users)
  // and no leases or owner changes.
  for (int cmd : {F_DUPFD, F_DUPFD_CLOEXEC, F_GETFD, F_SETFD, F_GETFL, F_SETFL, F_ADD_SEALS, F_GET_SEALS,
                  F_GETPIPE_SZ}) {
    add(SCMP_ACT_ALLOW, SCMP_SYS(fcntl), {SCMP_A1(SCMP_CMP_EQ, static_cast<scmp_datum_t>(cmd))});
  }
  // prctl: thread names, the dumpable flag, anonymous mapping names.
  for (int option : {PR_SET_NAME, PR_GET_NAME, PR_GET_DUMPABLE, PR_SET_VMA, PR_GET_TIMERSLACK,
                     PR_GET_NO_NEW_PRIVS, PR_GET_SECCOMP}) {
    add(SCMP_ACT_ALLOW, SCMP_SYS(prctl), {SCMP_A0(SCMP_CMP_EQ, static_cast<scmp_datum_t>(option))});
  }
#if defined(__x86_64__)
  // The TLS base and CPU feature queries glibc and libraries make.
  for (int code : {ARCH_SET_FS, ARCH_GET_FS, ARCH_GET_GS, ARCH_GET_CPUID}) {
    add(SCMP_ACT_ALLOW, SCMP_SYS(arch_prctl), {SCMP_A0(SCMP_CMP_EQ, static_cast<scmp_datum_t>(code))});
  }
#endif
  // libseccomp compares all 64 bits of an argument while the kernel reads
  // an int, so every test of an int argument is an equality on its low 32
  // bits: `!= SIGSYS` would pass 0x100000000 | SIGSYS, which the kernel
  // takes as SIGSYS.
  constexpr scmp_datum_t kLow32 = 0xffffffff;
  // Memory the channel's memfd holds stays there. The pages past what the
  // host populates are the backend's, charged to its cgroup; a hole made
  // in them (MADV_REMOVE, a punched hole) would be filled, and charged to
  // the host, by the host's next read of the frame there (kDeniedAdvice).
  // Each advice is tested on its int, for the reason above.
  for (uint32_t advice : kDeniedAdvice) {
    add(SCMP_ACT_ERRNO(EPERM), SCMP_SYS(madvise), {SCMP_A2(SCMP_CMP_MASKED_EQ, kLow32, scmp_datum_t{advice})});
  }
  for (auto [mask, value] : AllowedValueBlocks(32, kDeniedAdvice)) {
    add(SCMP_ACT_ALLOW, SCMP_SYS(madvise), {SCMP_A2(SCMP_CMP_MASKED_EQ, scmp_datum_t{mask}, scmp_datum_t{value})});
  }
  add(SCMP_ACT_ALLOW, SCMP_SYS(fallocate), {SCMP_A1(SCMP_CMP_MASKED_EQ, FALLOC_FL_PUNCH_HOLE, 0)});
  add(SCMP_ACT_ERRNO(EPERM), SCMP_SYS(fallocate),
      {SCMP_A1(SCMP_CMP_MASKED_EQ, FALLOC_FL_PUNCH_HOLE, FALLOC_FL_PUNCH_HOLE)});

  // Signals only to ourselves (the pid namespace and Landlock scoping
  // already hide everyone else).
  const auto self = static_cast<scmp_datum_t>(getpid());
  add(SCMP_ACT_ALLOW, SCMP_SYS(kill), {SCMP_A0(SCMP_CMP_EQ, self)});
  add(SCMP_ACT_ALLOW, SCMP_SYS(tgkill), {SCMP_A0(SCMP_CMP_EQ, self)});
  // Scheduling and priority of single threads (PRIO_PROCESS names a
  // thread). In its own pid namespace the runner (its init) sees only its
  // own threads, so any thread id is its own. Without one (the degraded
  // sandbox) any other id is a real process of the same user, the host
  // among them: there only the calling thread (0) and the main thread;
  // an id above the runner's (its own threads', as a pool sets its
  // workers', or a later process's) answers EPERM, which a library gets
  // over, and any other is trapped. get_robust_list of another thread
  // tells where its memory is.
  if (getpid() == 1) {
    add(SCMP_ACT_ALLOW, SCMP_SYS(sched_setattr));
    add(SCMP_ACT_ALLOW, SCMP_SYS(get_robust_list));
    add(SCMP_ACT_ALLOW, SCMP_SYS(setpriority), {SCMP_A0(SCMP_CMP_MASKED_EQ, kLow32, PRIO_PROCESS)});
  } else {
    for (scmp_datum_t target : {scmp_datum_t{0}, self}) {
      add(SCMP_ACT_ALLOW, SCMP_SYS(sched_setattr), {SCMP_A0(SCMP_CMP_MASKED_EQ, kLow32, target)});
      add(SCMP_ACT_ALLOW, SCMP_SYS(get_robust_list), {SCMP_A0(SCMP_CMP_MASKED_EQ, kLow32, target)});
      add(SCMP_ACT_ALLOW, SCMP_SYS(setpriority),
          {SCMP_A0(SCMP_CMP_MASKED_EQ, kLow32, PRIO_PROCESS), SCMP_A1(SCMP_CMP_MASKED_EQ, kLow32, target)});
    }
    add(SCMP_ACT_ERRNO(EPERM), SCMP_SYS(sched_setattr), {SCMP_A0(SCMP_CMP_GT, self)});
    add(SCMP_ACT_ERRNO(EPERM), SCMP_SYS(get_robust_list), {SCMP_A0(SCMP_CMP_GT, self)});
    add(SCMP_ACT_ERRNO(EPERM), SCMP_SYS(setpriority),
        {SCMP_A0(SCMP_CMP_MASKED_EQ, kLow32, PRIO_PROCESS), SCMP_A1(SCMP_CMP_GT, self)});
  }
  // Reading our own limits; never setting them.
  add(SCMP_ACT_ALLOW, SCMP_SYS(prlimit64), {SCMP_A0(SCMP_CMP_EQ, 0), SCMP_A2(SCMP_CMP_EQ, 0)});
  // The SIGSYS handler that reports refusals must stay ours: every other
  // signal's action may change, and SIGSYS's may be read.
  for (int sig = 1; sig <= SIGRTMAX; ++sig) {
    if (sig == SIGSYS) continue;
    add(SCMP_ACT_ALLOW, SCMP_SYS(rt_sigaction), {SCMP_A0(SCMP_CMP_MASKED_EQ, kLow32, static_cast<scmp_datum_t>(sig))});
  }
  add(SCMP_ACT_ALLOW, SCMP_SYS(rt_sigaction),
      {SCMP_A0(SCMP_CMP_MASKED_EQ, kLow32, SIGSYS), SCMP_A1(SCMP_CMP_EQ, 0)});
  // exit()/_exit() of the process: trapped unless marked, so that the
  // SIGSYS handler can tell the host which vendor call ended the process
  // (crash_hints.h); the handler then exits with the same code, marked.
  add(SCMP_ACT_ALLOW, SCMP_SYS(exit_group), {SCMP_A0(SCMP_CMP_MASKED_EQ, kExitMarkerMask, kExitMarker)});
  // (In kEnforce mode the default action traps the rest already; libseccomp
  // refuses a rule that repeats the default.)
  if (refuse != SCMP_ACT_TRAP) {
    for (scmp_datum_t high : {scmp_datum_t{0}, scmp_datum_t{kExitMarkerMask}}) {
      add(SCMP_ACT_TRAP, SCMP_SYS(exit_group), {SCMP_A0(SCMP_CMP_MASKED_EQ, kExitMarkerMask, high)});
    }
  }
  if (rc != 0) return absl::InternalError(absl::StrCat("seccomp_rule_add: ", std::strerror(-rc)));
  if ((rc = seccomp_load(ctx)) != 0) return absl::InternalError(absl::StrCat("seccomp_load: ", std::strerror(-rc)));
  return absl::OkStatus();
}

}  // namespace codecvisor::runner
