// File: core/backend_sandbox.h
//
// The host's part of a backend child's sandbox: what it asks the launcher
// for (namespaces, an empty root, rlimits, no_new_privs: HostSandbox), the
// cgroup that bounds the child's memory and tasks (MakeCgroup), and what
// was engaged, in words (EngagedSandbox). The runner adds Landlock and
// seccomp inside the child (backends/sdk/runner/sandbox.h).

#ifndef CODECVISOR_CORE_BACKEND_SANDBOX_H_
#define CODECVISOR_CORE_BACKEND_SANDBOX_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/cgroup.h"
#include "core/manifest.h"
#include "core/process.h"

namespace codecvisor {

// Ends the error of a backend that cannot start in its whole sandbox where
// the degraded one is not allowed.
inline constexpr char kDegradedSandboxAdvice[] =
    "; the sandbox cannot be set up here (see `codecvisor doctor`); set [sandbox] allow_degraded = true in its "
    "manifest, or CODECVISOR_ALLOW_DEGRADED_SANDBOX=1 in the environment, to run with less of it";

// What was engaged for one child, for `codecvisor doctor` and the tests.
struct EngagedSandbox {
  bool namespaces = false;        // user, pid, net, ipc
  bool empty_root = false;        // and mount: a read-only root of its own (core/empty_root.h)
  bool unprivileged_ids = false;  // root in its namespace, nobody outside
  bool rlimits = false;
  bool no_new_privs = false;
  uint32_t landlock_abi = 0;      // 0: not applied
  bool seccomp = false;
  bool seccomp_log_only = false;  // CODECVISOR_SECCOMP=log: refusals logged, not enforced
  std::string cgroup;             // "cgroup v1 (memory 8192 MiB, tasks 4096)"; empty: none
  // "user+pid+net+ipc namespaces, uid nobody, rlimits, no_new_privs, landlock v6, seccomp, cgroup v1 (...)"
  std::string Describe() const;
};

// The host's half of the sandbox (core/README.md): rlimits from the
// manifest's policy, new namespaces, an empty root, no_new_privs.
SandboxSpec HostSandbox(const SandboxPolicy& policy);

// Pure: the tasks one backend may hold, for a manifest that asks for
// `wanted`, on a kernel whose task ids end at `pid_max` and whose tasks at
// `threads_max`, for a host whose own cgroups allow `host_cgroup` tasks
// (each 0: unknown): at most a quarter of the kernel's lower limit and
// half of the host's cgroup's, so that one plugin cannot take every task
// id of the machine (or of the host's container, or systemd's TasksMax for
// the user) and leave its host unable to start a thread.
uint64_t BackendTaskLimit(uint64_t wanted, uint64_t pid_max, uint64_t threads_max, uint64_t host_cgroup = 0);
// The same on this machine (kernel.pid_max, kernel.threads-max, the lowest
// pids.max of this process's cgroup and those above it).
uint64_t BackendTaskLimit(uint64_t wanted);

// The sandbox without its namespaces (a degraded one): RLIMIT_NPROC then
// counts every process and thread of the backend's user (nobody's, shared
// by the backends of every root host on the machine, or the user's own),
// not the backend's, and would fail a backend whose user is busy elsewhere.
// It goes where the backend's tasks are bounded otherwise, by its
// cgroup's pids limit (`cgroup`); without one it stays, as nothing else
// bounds them (a manifest may ask for the degraded sandbox itself).
void DropNamespaces(SandboxSpec* spec, bool cgroup);

// The warning a host gives when this user or machine has no cgroup to give
// its backends (among its warnings: the CLI prints them, Python warns
// them), or "" when it has one (or cannot tell for want of descriptors).
std::string MissingCgroupWarning();

// The kernel's memory and task limits on everything the child holds
// (core/cgroup.h); RLIMIT_AS and RLIMIT_NPROC stay as a second line.
// nullptr where the backend runs without one: this user or machine has no
// cgroup to give (MissingCgroupWarning), or making it failed and the manifest
// or host allows a degraded sandbox (said each time). An error where it
// failed and neither allows that; ResourceExhausted, whatever either
// allows, where this process is out of descriptors (the cgroup is not given
// up for a shortage that passes).
absl::StatusOr<std::unique_ptr<BackendCgroup>> MakeCgroup(const BackendManifest& manifest, bool allow_degraded);

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_BACKEND_SANDBOX_H_
