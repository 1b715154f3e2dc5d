#include "backends/sdk/runner/sandbox.h"

#include <fcntl.h>
#include <linux/landlock.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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
  struct stat st;
  if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) access &= kFsFileOnly;
  PathBeneathAttr rule{access & handled, fd};
  if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) != 0) {
    return ipc::ErrnoStatus(absl::StrCat("landlock_add_rule(", path, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

int LandlockAbi() {
  long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return abi < 0 ? 0 : static_cast<int>(abi);
}

absl::Status ApplyLandlock(const RunnerSandbox& sandbox) {
  const int abi = LandlockAbi();
  if (abi < 1) return absl::UnavailableError("the kernel has no Landlock");
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
  for (const char* p : {"/usr", "/lib", "/lib64", "/etc/ld.so.cache", "/sys/devices/system/cpu"}) {
    if (absl::Status s = AddPath(ruleset.get(), p, kFsRead, handled); !s.ok()) return s;
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

absl::Status ApplySeccomp() {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) return absl::InternalError("seccomp_init failed");
  struct Guard {
    scmp_filter_ctx ctx;
    ~Guard() { seccomp_release(ctx); }
  } guard{ctx};
  if (seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1) != 0) return absl::InternalError("seccomp TSYNC unsupported");
  int rc = 0;
  auto trap = [&](int nr) {
    if (nr >= 0 && rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, nr, 0);
  };
  // Networking, exec after start, other processes' memory, kernel state a
  // decoder has no business with, new processes (threads stay allowed).
  for (const char* name :
       {"socket", "socketpair", "connect", "bind", "listen", "accept", "accept4", "execve", "execveat", "ptrace",
        "process_vm_readv", "process_vm_writev", "mount", "umount2", "pivot_root", "chroot", "move_mount",
        "open_tree", "fsopen", "fsmount", "fsconfig", "bpf", "keyctl", "add_key", "request_key", "kexec_load",
        "kexec_file_load", "init_module", "finit_module", "delete_module", "perf_event_open", "userfaultfd",
        "fork", "vfork", "unshare", "setns", "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid",
        "setgroups", "setfsuid", "setfsgid", "setrlimit", "pidfd_open", "pidfd_send_signal", "pidfd_getfd",
        "name_to_handle_at", "open_by_handle_at", "reboot", "swapon", "swapoff", "syslog", "acct", "settimeofday",
        "clock_settime", "adjtimex", "clock_adjtime", "io_uring_setup", "io_uring_enter", "io_uring_register",
        "quotactl", "lookup_dcookie", "kcmp", "mbind", "migrate_pages", "move_pages", "ioperm", "iopl"}) {
    trap(seccomp_syscall_resolve_name(name));
  }
  // clone: threads only. clone3 passes its flags in memory a filter cannot
  // read, so it fails with ENOSYS and glibc falls back to clone.
  if (rc == 0) {
    rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(clone), 1, SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
  }
  if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
  // Signals only to ourselves (the pid namespace and Landlock scoping
  // already hide everyone else).
  const auto self = static_cast<scmp_datum_t>(getpid());
  if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(kill), 1, SCMP_A0(SCMP_CMP_NE, self));
  if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(tgkill), 1, SCMP_A0(SCMP_CMP_NE, self));
  // Raising or setting another process's limits.
  if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(prlimit64), 1, SCMP_A2(SCMP_CMP_NE, 0));
  // The SIGSYS handler that reports violations must stay ours.
  if (rc == 0) {
    rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(rt_sigaction), 2, SCMP_A0(SCMP_CMP_EQ, SIGSYS),
                          SCMP_A1(SCMP_CMP_NE, 0));
  }
  // exit()/_exit(): trapped, so that the SIGSYS handler can tell the host
  // which vendor call ended the process (crash_hints.h); the handler then
  // exits with the same code, marked, which passes.
  for (scmp_datum_t high : {scmp_datum_t{0}, scmp_datum_t{kExitMarkerMask}}) {
    if (rc == 0) {
      rc = seccomp_rule_add(ctx, SCMP_ACT_TRAP, SCMP_SYS(exit_group), 1,
                            SCMP_A0(SCMP_CMP_MASKED_EQ, kExitMarkerMask, high));
    }
  }
  if (rc != 0) return absl::InternalError(absl::StrCat("seccomp_rule_add: ", std::strerror(-rc)));
  if ((rc = seccomp_load(ctx)) != 0) return absl::InternalError(absl::StrCat("seccomp_load: ", std::strerror(-rc)));
  return absl::OkStatus();
}

}  // namespace codecvisor::runner
