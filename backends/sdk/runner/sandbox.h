// File: backends/sdk/runner/sandbox.h
//
// The half of the sandbox the runner applies to itself, after the host's
// half (namespaces, rlimits, no_new_privs, a clean environment, only the
// channel descriptors) and before any vendor code runs, even the vendor
// library's static initialisers:
//  - Landlock: read-only access to the system library folders and the paths
//    the manifest declares, read-write to the declared devices, nothing
//    else; no TCP bind or connect; no signals or abstract sockets outside
//    the sandbox (ABI 6 scoping), where the kernel supports each.
//  - seccomp-bpf (libseccomp, TSYNC): a deny list of what a decoder never
//    needs, each violation trapped so that the crash hints record the
//    syscall before the process dies of SIGSYS.
// SECURITY: both are irreversible for the process and all its threads.

#ifndef CODECVISOR_BACKENDS_SDK_RUNNER_SANDBOX_H_
#define CODECVISOR_BACKENDS_SDK_RUNNER_SANDBOX_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace codecvisor::runner {

struct RunnerSandbox {
  std::vector<std::string> read_paths;  // read-only (files or folders)
  std::vector<std::string> devices;     // read-write device nodes
  int library_fd = -1;                  // the vendor library, opened by the host
  bool landlock = true;
  bool seccomp = true;
};

// The Landlock ABI the kernel offers, 0 if none.
int LandlockAbi();

// Applies Landlock as described above. kUnavailable if the kernel has no
// Landlock (the caller decides whether a degraded sandbox is allowed).
[[nodiscard]] absl::Status ApplyLandlock(const RunnerSandbox& sandbox);

// Installs the seccomp filter on every thread (TSYNC).
[[nodiscard]] absl::Status ApplySeccomp();

}  // namespace codecvisor::runner

#endif  // CODECVISOR_BACKENDS_SDK_RUNNER_SANDBOX_H_
