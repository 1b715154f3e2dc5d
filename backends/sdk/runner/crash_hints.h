// File: backends/sdk/runner/crash_hints.h
//
// Leaves the host a note about which request killed the runner. While a
// vendor call runs for a channel, VendorCall marks that channel's region
// (`backend_in_call`); if the call dies of a fault signal, a handler records
// the signal there (`backend_fault_signal`) before the process dies. The
// host reads both only after the process is gone, to decide whose request
// was poison and whose was an innocent bystander.

#ifndef CODECVISOR_BACKENDS_SDK_RUNNER_CRASH_HINTS_H_
#define CODECVISOR_BACKENDS_SDK_RUNNER_CRASH_HINTS_H_

#include "ipc/region.h"

namespace codecvisor::runner {

// Installs the fault-signal handlers (SIGSEGV, SIGBUS, SIGFPE, SIGILL,
// SIGABRT, SIGSYS, SIGTRAP). Each records the signal (and for a seccomp
// trap, the syscall) for the calling thread's current channel, or for
// `control` outside any vendor call, then lets the default action kill the
// process.
void InstallCrashHintHandlers(ipc::RegionHeader* control);

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
