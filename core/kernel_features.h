// File: core/kernel_features.h
//
// What the running kernel offers of the mechanisms the backend sandbox and
// the channel are built on (docs/SANDBOX.md), for
// `codecvisor doctor` and for diagnostics. Each mechanism is tried, not
// guessed from the kernel version: namespaces, no_new_privs and a seccomp
// filter in a short-lived probe child, the rest with calls that change
// nothing (a query, or a deliberately invalid argument whose error tells
// "supported" from "missing").
//
// Side effects: none on the calling process beyond descriptors opened and
// closed within the call. One probe child is created (clone3, else clone, else fork),
// answers over a pipe within milliseconds, and is reaped before the call
// returns; it is created with no exit signal when clone3 (or the legacy clone with a pidfd) is available, so a
// SIGCHLD handler or a waitpid(-1) elsewhere in the process neither sees
// nor reaps it (with the fork fallback, a concurrent waitpid(-1) could).
//
// Thread-safety: ProbeKernelFeatures() may be called from any thread, and
// from several at once; it keeps no state between calls (each call probes
// afresh, in a few milliseconds). The child it creates only makes raw
// system calls, so the other threads' locks do not matter to it.

#ifndef CODECVISOR_CORE_KERNEL_FEATURES_H_
#define CODECVISOR_CORE_KERNEL_FEATURES_H_

#include <string>
#include <vector>

namespace codecvisor {

struct KernelFeature {
  bool present = false;
  // One line: what was tried and what came of it; when missing, the
  // failing call and its errno ("unshare(CLONE_NEWUSER): EPERM (Operation
  // not permitted)") and, where known, the usual cause.
  std::string detail;
};

// Set to 1 in a host's environment, every backend of that process runs with
// what sandbox the kernel allows, warning, where it would otherwise not
// start (as each manifest's [sandbox] allow_degraded = true would have it).
inline constexpr char kAllowDegradedEnv[] = "CODECVISOR_ALLOW_DEGRADED_SANDBOX";

// How much the backend launcher needs a mechanism.
enum class FeatureNeed {
  // Without it no backend starts (allow_degraded does not help).
  kAlways,
  // Without it a backend refuses to start unless its manifest sets
  // [sandbox] allow_degraded = true (or the host passes
  // SpawnOptions::allow_degraded, or its environment kAllowDegradedEnv);
  // then it runs without it, with a warning.
  kUnlessDegraded,
  // Used where this user and machine have it; without it a backend starts,
  // and the host says once what is missing (a non-root user without cgroup
  // delegation, a container with a read-only cgroup filesystem).
  kWhereAvailable,
};

struct KernelFeatures {
  std::string kernel;  // KernelName()

  // New namespaces, each tried with unshare() in the probe child: the user
  // namespace first, the others inside it (as the launcher creates them
  // together), or directly when there is no user namespace.
  KernelFeature user_namespace;
  KernelFeature pid_namespace;
  KernelFeature net_namespace;
  KernelFeature ipc_namespace;
  // A fresh proc mounted by the first process of a new pid namespace, in a
  // mount namespace of its own, as the runner mounts one (refused where the
  // proc already mounted has parts masked: a container's default).
  KernelFeature proc_mount;
  // seccomp-bpf in filter mode: PR_SET_SECCOMP(SECCOMP_MODE_FILTER, NULL)
  // fails with EFAULT (the mode is known, the filter unreadable), the TRAP
  // and ERRNO actions are available, and an allow-all filter installs with
  // SECCOMP_FILTER_FLAG_TSYNC in the probe child.
  KernelFeature seccomp;
  int seccomp_mode = -1;  // PR_GET_SECCOMP of the calling thread: 0 none, 2 filtered; -1 unknown
  // Landlock: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION).
  KernelFeature landlock;
  int landlock_abi = 0;  // 0: none
  // pidfd_open and pidfd_send_signal (signal 0) on a pidfd of the calling
  // process, and waitid(P_PIDFD) where the kernel has it (Linux 5.4; on
  // 5.3 children are reaped by pid, and the detail says so).
  KernelFeature pidfd;
  // memfd_create(MFD_ALLOW_SEALING) and the seals the channel adds
  // (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), read back with F_GET_SEALS.
  KernelFeature memfd_sealing;
  // PR_SET_NO_NEW_PRIVS in the probe child, read back there.
  KernelFeature no_new_privs;
  bool no_new_privs_set = false;  // whether the calling process already has it
  // clone3 with CLONE_PIDFD, else (clone3 answering ENOSYS: an old kernel,
  // or a container's seccomp profile) the legacy clone with it: how the
  // probe child itself is created, and how the launcher starts backends.
  // The key stays "clone3".
  KernelFeature clone3;
  // A cgroup per backend with memory and pids limits (core/cgroup.h): the
  // hierarchy used, or why none can be.
  KernelFeature cgroups;
};

// One entry of KernelFeatures::All(): a stable key for JSON, a label for
// people, and what the launcher needs of it.
struct NamedFeature {
  const char* key;    // "user_namespace", "seccomp", "landlock", ...
  const char* label;  // "user namespace", "seccomp-bpf", "landlock", ...
  FeatureNeed need;
  const KernelFeature* feature;  // points into the KernelFeatures
};

// Every feature of `features`, in report order. The pointers live as long
// as `features`.
std::vector<NamedFeature> AllFeatures(const KernelFeatures& features);

// Probes the running kernel (see the file comment).
[[nodiscard]] KernelFeatures ProbeKernelFeatures();

// "Linux 6.1.0-13-amd64 x86_64" (uname), or why it is unknown.
std::string KernelName();

// "EPERM (Operation not permitted)", or "errno 4242". Thread-safe.
std::string ErrnoText(int err);

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_KERNEL_FEATURES_H_
