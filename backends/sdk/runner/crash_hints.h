// File: backends/sdk/runner/crash_hints.h
//
// Leaves the host a note about which request killed the runner. While a
// vendor call runs for a channel, VendorCall marks that channel's region
// (`backend_in_call`); if the call dies of a fault signal, a handler records
// the signal there (`backend_fault_signal`) before the process dies. The
// host reads both only after the process is gone, to decide whose request
// was poison and whose was an innocent bystander.
//
// exit() and _exit() raise no signal, so under the sandbox exit_group is
// trapped too (sandbox.cc): the SIGSYS handler, running on the thread that
// called it, records the code for that thread's channel
// (`backend_exit_code`) and then ends the process with the same code
// through the one exit_group the filter lets pass (kExitMarker).

#ifndef CODECVISOR_BACKENDS_SDK_RUNNER_CRASH_HINTS_H_
#define CODECVISOR_BACKENDS_SDK_RUNNER_CRASH_HINTS_H_

#include "ipc/region.h"

namespace codecvisor::runner {

// exit_group arguments whose bits above the low byte equal this pass the
// seccomp filter; the kernel keeps only the low byte as the exit code. The
// filter traps the ordinary codes (-256..255, as libc passes them).
inline constexpr uint32_t kExitMarker = 0x5ec0de00;
inline constexpr uint32_t kExitMarkerMask = 0xffffff00;

// Installs the fault-signal handlers (SIGSEGV, SIGBUS, SIGFPE, SIGILL,
// SIGABRT, SIGSYS, SIGTRAP). Each records the signal (and for a seccomp
// trap, the syscall) for the calling thread's current channel, or, on a
// thread in no vendor call, as `control`'s stray fault (which blames no
// request), then lets the default action kill the process. A trapped exit_group is not a fault: inside a vendor call its
// code is recorded for that call's channel, and the process exits with it.
void InstallCrashHintHandlers(ipc::RegionHeader* control);

// Ends the process with `code` (its low byte) through the exit_group the
// sandbox lets pass, without running atexit handlers or static destructors.
// Async-signal-safe. The runner's own exits go through here.
[[noreturn]] void ExitProcess(int code);

// Marks `header`'s channel as inside a vendor call for its lifetime, on
// this thread. Not nestable.
class VendorCall {
 public:
  // `token`: on the control channel, the file token of the open being
  // served, so that the host blames that open and not the others queued.
  explicit VendorCall(ipc::RegionHeader* header, uint64_t token = 0);
  ~VendorCall();
  VendorCall(const VendorCall&) = delete;
  VendorCall& operator=(const VendorCall&) = delete;

 private:
  ipc::RegionHeader* header_;
};

}  // namespace codecvisor::runner

#endif  // CODECVISOR_BACKENDS_SDK_RUNNER_CRASH_HINTS_H_
