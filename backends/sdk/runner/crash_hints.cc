#include "backends/sdk/runner/crash_hints.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>

#include "backends/sdk/runner/crash_backtrace.h"
#include "backends/sdk/runner/runner_args.h"

namespace codecvisor::runner {
namespace {

thread_local ipc::RegionHeader* tls_current = nullptr;
std::atomic<ipc::RegionHeader*> fallback{nullptr};  // the control channel's
constexpr int kSysSeccomp = 1;                       // si_code of a seccomp trap
// The process's address-space limit (RLIMIT_AS), read as the handlers are
// installed; 0 when there is none.
size_t address_limit = 0;
constexpr size_t kPage = 4096;

// Whether less than an eighth of the address-space limit is left: a fault
// then most likely follows an allocation that failed (a plugin that does
// not check malloc). The room left is the largest reservation the kernel
// grants, found by halving (about 20 tries); the limit counts every
// mapping, so on a 64-bit address space that is the limit less what is
// mapped. Async-signal-safe: mmap and munmap are system calls, and a
// PROT_NONE reservation touches no memory.
bool AddressSpaceFull() {
  if (address_limit == 0) return false;
  const int saved = errno;
  size_t fits = 0, fails = address_limit + kPage;
  while (fails - fits > kPage) {
    const size_t try_bytes = (fits + (fails - fits) / 2) & ~(kPage - 1);
    if (try_bytes <= fits) break;
    void* p = mmap(nullptr, try_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      fails = try_bytes;
    } else {
      munmap(p, try_bytes);
      fits = try_bytes;
    }
  }
  errno = saved;
  return fits < address_limit / 8;
}

// The first argument of the trapped syscall, from the registers saved in
// the signal frame.
int64_t FirstSyscallArgument(const void* ucontext) {
  const auto* uc = static_cast<const ucontext_t*>(ucontext);
#if defined(__x86_64__)
  return uc->uc_mcontext.gregs[REG_RDI];
#elif defined(__aarch64__)
  return static_cast<int64_t>(uc->uc_mcontext.regs[0]);
#else
#error "crash_hints.cc: add this architecture's first syscall argument register"
#endif
}

// exit()/_exit() under the sandbox (see the header). Records the code for
// the calling thread's vendor call, if it is in one, and exits with it.
[[noreturn]] void OnTrappedExit(const void* ucontext) {
  const uint32_t code = static_cast<uint32_t>(FirstSyscallArgument(ucontext)) & ~kExitMarkerMask;
  if (ipc::RegionHeader* h = tls_current; h != nullptr) {
    uint32_t none = 0;
    h->backend_exit_code.compare_exchange_strong(none, code + 1);
  }
  ExitProcess(static_cast<int>(code));
}

// The handlers of the fault signals, as installed (SA_RESETHAND).
struct sigaction fault_action {};

void OnFault(int sig, siginfo_t* info, void* ucontext) {
  // Sent with kill() from outside the process (a user, a soak's killer;
  // from another pid namespace its pid reads 0), not raised by a fault or
  // by this process's own abort(): no crash. The runner goes on (as the
  // init of its pid namespace a signal it handles cannot end it), so the
  // handler is put back for a real fault, and nothing is recorded, which
  // its next death would have been reported with.
  // (A seccomp trap's SIGSYS has a positive si_code.)
  if (info != nullptr && info->si_code <= 0 && info->si_pid != getpid()) {
    if (sig != SIGSYS) sigaction(sig, &fault_action, nullptr);
    return;
  }
  if (sig == SIGSYS && info != nullptr && info->si_code == kSysSeccomp && info->si_syscall == SYS_exit_group &&
      ucontext != nullptr) {
    OnTrappedExit(ucontext);
  }
  // Async-signal-safe: stores into shared memory. For every signal but
  // SIGSYS, SA_RESETHAND has put the default action back, so the fault
  // (re-executed on return) or abort()'s second raise kills the process; a
  // seccomp trap ends in ExitProcess below.
  // A thread in no vendor call (a plugin's worker, the runner's own code)
  // records on the control region as a stray fault, which blames no
  // request: it must not land on an open that happens to be in vendor code
  // on the control channel at that moment.
  ipc::RegionHeader* h = tls_current != nullptr ? tls_current : fallback.load();
  // The first fault is the cause: abort() in a pid-namespace init, for one,
  // ends in a second fault (SIGSEGV) that must not overwrite SIGABRT.
  uint32_t none = 0;
  if (h != nullptr) {
    (tls_current != nullptr ? h->backend_fault_signal : h->backend_stray_fault_signal)
        .compare_exchange_strong(none, static_cast<uint32_t>(sig));
  }
  if (ipc::RegionHeader* control = fallback.load(); control != nullptr && sig != SIGSYS && AddressSpaceFull()) {
    control->backend_address_space_full.store(1);
  }
  // The hint is recorded first: the backtrace walks a broken stack and may
  // itself fault (which then kills the process with the default action).
  // Opt-in (crash_backtrace.h); a no-op unless the host asked for it.
  WriteCrashBacktrace(sig, ucontext);
  if (sig == SIGSYS && info != nullptr && info->si_code == kSysSeccomp) {
    if (h != nullptr) h->backend_violation_syscall.store(info->si_syscall + 1);
    // A trapped syscall is skipped, not retried: stop now. (As the init of
    // its pid namespace the runner cannot kill itself with a signal, so it
    // exits; the host reads the hint to say why.)
    ExitProcess(ExitCode(RunnerExit::kSandboxViolation));
  }
}

}  // namespace

void ExitProcess(int code) {
  for (;;) syscall(SYS_exit_group, kExitMarker | (static_cast<uint32_t>(code) & ~kExitMarkerMask));
}

void InstallCrashHintHandlers(ipc::RegionHeader* control) {
  fallback.store(control);
  rlimit address{};
  // A limit past half of a 47-bit address space is none in practice: an
  // eighth of it could never be reserved, full or not.
  if (getrlimit(RLIMIT_AS, &address) == 0 && address.rlim_cur != RLIM_INFINITY && address.rlim_cur <= (1ull << 46)) {
    address_limit = static_cast<size_t>(address.rlim_cur);
  }
  struct sigaction sa {};
  sa.sa_sigaction = OnFault;
  sa.sa_flags = SA_RESETHAND | SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  fault_action = sa;
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP}) sigaction(sig, &sa, nullptr);
  // A seccomp trap always ends in ExitProcess, so SIGSYS keeps its handler:
  // with SA_RESETHAND, a second thread's exit() trapped while the first is
  // still exiting would get the default action and die of SIGSYS instead.
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGSYS, &sa, nullptr);
}

VendorCall::VendorCall(ipc::RegionHeader* header, uint64_t token) : header_(header) {
  header_->backend_call_token.store(token);
  header_->backend_in_call.store(1);
  tls_current = header_;
}

VendorCall::~VendorCall() {
  tls_current = nullptr;
  header_->backend_in_call.store(0);
}

}  // namespace codecvisor::runner
