#include "backends/sdk/runner/crash_hints.h"

#include <signal.h>

namespace codecvisor::runner {
namespace {

thread_local ipc::RegionHeader* tls_current = nullptr;

void OnFault(int sig) {
  // Async-signal-safe: one store into shared memory. SA_RESETHAND has put
  // the default action back, so the fault (re-executed on return) or
  // abort()'s second raise kills the process with the same signal.
  if (ipc::RegionHeader* h = tls_current) h->backend_fault_signal.store(static_cast<uint32_t>(sig));
}

}  // namespace

void InstallCrashHintHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnFault;
  sa.sa_flags = SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGSYS, SIGTRAP}) sigaction(sig, &sa, nullptr);
}

VendorCall::VendorCall(ipc::RegionHeader* header) : header_(header) {
  header_->backend_in_call.store(1);
  tls_current = header_;
}

VendorCall::~VendorCall() {
  tls_current = nullptr;
  header_->backend_in_call.store(0);
}

}  // namespace codecvisor::runner
