#include "core/death_record.h"

#include <seccomp.h>
#include <signal.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace codecvisor {

std::string DeathRecord::Describe() const {
  if (killed_by_supervisor) return absl::StrCat("killed by codecvisor: ", kill_reason);
  return DescribeExit(exit, recorded_signal, violation_syscall, oom_killed);
}

std::string DescribeExit(const ExitStatus& exit, uint32_t recorded_signal, int32_t violation_syscall,
                         bool oom_killed) {
  if (violation_syscall >= 0) {
    char* name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, violation_syscall);
    std::string text = absl::StrCat("sandbox violation: syscall ", name ? name : std::to_string(violation_syscall));
    std::free(name);
    return text;
  }
  if (recorded_signal != 0) return ExitStatus{true, static_cast<int>(recorded_signal)}.ToString();
  if (oom_killed && exit.signaled && exit.code == SIGKILL) {
    return absl::StrCat(exit.ToString(), ": out of memory (over the memory_mb of its manifest)");
  }
  return exit.ToString();
}

}  // namespace codecvisor
