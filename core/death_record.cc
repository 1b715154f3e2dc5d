#include "core/death_record.h"

#include <seccomp.h>
#include <signal.h>
#include <sys/syscall.h>

#include <cstdlib>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/sdk/runner/runner_args.h"

namespace codecvisor {

bool DeathRecord::KilledForNoAnswer() const {
  return killed_by_supervisor && kill_reason.starts_with(kNoAnswerWithin);
}

std::string DeathRecord::Describe() const {
  if (forgotten) return "ended before the last deaths the host keeps (how is no longer known)";
  if (killed_by_supervisor) return absl::StrCat("killed by codecvisor: ", kill_reason);
  std::string text = DescribeExit(exit, recorded_signal, violation_syscall, oom_killed);
  // The runner's own exit when a close_session ran past its limit, as its
  // watchdog recorded (a plugin's own exit(6) records nothing of the kind).
  if (close_hung && !exit.signaled && exit.code == runner::ExitCode(runner::RunnerExit::kCloseHung)) {
    absl::StrAppend(&text,
                    ": the plugin's close_session of a closed decoder did not return within the manifest's "
                    "[restart] close_timeout_seconds");
  }
  if (address_space_full && violation_syscall < 0) {
    absl::StrAppend(&text,
                    " with its address space full (the memory_mb of its manifest): likely an allocation "
                    "that failed and was used unchecked");
  }
  return text;
}

namespace {

// Whether a death by fault signal `signal`, as the runner's handler records
// it, can have ended as `exit` did. Its handlers are for SIGSEGV, SIGBUS,
// SIGFPE, SIGILL, SIGABRT and SIGTRAP, whose death may come as another
// signal (as the init of its pid namespace, the runner's abort() ends in
// SIGSEGV); and for SIGSYS, a trapped call, after which the runner exits
// with 128 + SIGSYS (or dies of SIGSYS).
bool BearsOut(const ExitStatus& exit, uint32_t signal) {
  if (IsCrashSignal(static_cast<int>(signal))) return exit.signaled;
  if (signal == SIGSYS) {
    return exit.signaled ? exit.code == SIGSYS : exit.code == runner::ExitCode(runner::RunnerExit::kSandboxViolation);
  }
  return false;
}

}  // namespace

ipc::CrashHints Corroborated(ipc::CrashHints hints, const ExitStatus& exit) {
  const bool in_a_call = hints.fault_signal != 0;  // else a thread in no vendor call, or nothing written
  for (uint32_t* signal : {&hints.fault_signal, &hints.stray_fault_signal}) {
    if (!BearsOut(exit, *signal)) *signal = 0;
  }
  if (!BearsOut(exit, SIGSYS)) hints.violation_syscall = -1;
  // A trap on a thread whose fault was recorded first (a plugin's own
  // handler that makes a refused call): the trap ended the process, on
  // that thread, in a vendor call or in none.
  if (hints.violation_syscall >= 0 && hints.fault_signal == 0 && hints.stray_fault_signal == 0) {
    (in_a_call ? hints.fault_signal : hints.stray_fault_signal) = SIGSYS;
  }
  if (exit.signaled || exit.code != hints.exit_code) hints.exit_code = -1;
  return hints;
}

void AddCrashHints(std::span<const ipc::CrashHints> written, DeathRecord* record) {
  std::vector<ipc::CrashHints> channels;
  for (const ipc::CrashHints& hints : written) channels.push_back(Corroborated(hints, record->exit));
  bool signal_is_stray = false;
  for (const ipc::CrashHints& hints : channels) {
    if (hints.in_call != 0) ++record->suspects;
    if (hints.exit_code >= 0) record->exit_recorded |= hints.in_call != 0;
    const bool culprit = hints.fault_signal != 0 && hints.in_call != 0;
    const uint32_t signal = hints.any_fault_signal();
    if (signal == 0) continue;
    record->culprit_recorded |= culprit;
    if (record->recorded_signal == 0 || (signal_is_stray && culprit)) {
      record->recorded_signal = signal;
      signal_is_stray = hints.fault_signal == 0;
    }
    if (record->violation_syscall < 0) record->violation_syscall = hints.violation_syscall;
  }
  for (const ipc::CrashHints& hints : channels) {
    record->address_space_full |= hints.address_space_full;
    record->close_hung |= hints.close_hung;
  }
}

std::string DescribeExit(const ExitStatus& exit, uint32_t recorded_signal, int32_t violation_syscall,
                         bool oom_killed) {
  if (violation_syscall >= 0) {
    char* name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, violation_syscall);
    std::string text = absl::StrCat("sandbox violation: syscall ", name ? name : std::to_string(violation_syscall));
    std::free(name);
    // The filter lets these through but for a mapping both writable and
    // executable (a JIT's): say so, or a vendor looks for a missing path.
    if (violation_syscall == SYS_mmap || violation_syscall == SYS_mprotect) {
      absl::StrAppend(&text, " (a mapping both writable and executable, which the sandbox refuses: map it writable, "
                             "write it, then make it executable)");
    }
    return text;
  }
  if (recorded_signal != 0) return ExitStatus{true, static_cast<int>(recorded_signal)}.ToString();
  if (oom_killed && exit.signaled && exit.code == SIGKILL) {
    return absl::StrCat(exit.ToString(), ": out of memory (over the memory_mb of its manifest)");
  }
  return exit.ToString();
}

bool IsCrashSignal(int signal) {
  switch (signal) {
    case SIGSEGV:
    case SIGBUS:
    case SIGFPE:
    case SIGILL:
    case SIGABRT:
    case SIGTRAP:
      return true;
    default:
      return false;
  }
}

std::string CrashAdvice(const ExitStatus& exit, uint32_t recorded_signal, int32_t violation_syscall,
                        bool backtrace_enabled) {
  if (violation_syscall >= 0) return "";
  const int signal = recorded_signal != 0 ? static_cast<int>(recorded_signal) : exit.signaled ? exit.code : 0;
  if (!IsCrashSignal(signal)) return "";
  if (backtrace_enabled) {
    return "; the crashing thread's backtrace is among the backend's lines on this process's stderr (\"codecvisor: "
           "backend 'NAME': ...\")";
  }
  return absl::StrCat("; for the crashing thread's backtrace, run with ", runner::kBacktraceEnv, "=1");
}

std::string PluginExitWhileStarting(const ExitStatus& exit, const ipc::CrashHints& hints) {
  using runner::ExitCode;
  using runner::RunnerExit;
  if (exit.signaled) return "";
  if (hints.exit_code >= 0 && hints.exit_code == exit.code) {
    return absl::StrCat(" (the plugin's create() called exit(", exit.code,
                        "): a backend that cannot start returns an error from create, which the host shows)");
  }
  for (RunnerExit own : {RunnerExit::kBadInvocation, RunnerExit::kLoadFailed, RunnerExit::kChannelBroken,
                         RunnerExit::kPluginClosedChannel, RunnerExit::kSandboxViolation}) {
    if (exit.code == ExitCode(own)) return "";
  }
  return absl::StrCat(" (not an exit the runner makes while it starts: the plugin's library probably called exit(",
                      exit.code, ") as it loaded, in a constructor)");
}

std::string CrashAdvice(const DeathRecord& death, bool backtrace_enabled) {
  if (death.killed_by_supervisor) return "";
  return CrashAdvice(death.exit, death.recorded_signal, death.violation_syscall, backtrace_enabled);
}

bool BacktraceEnabled() {
  const char* value = std::getenv(runner::kBacktraceEnv);
  return value != nullptr && std::string_view(value) == "1";
}

}  // namespace codecvisor
