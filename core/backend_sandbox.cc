#include "core/backend_sandbox.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/cgroup_paths.h"
#include "base/refreshed_value.h"
#include "core/empty_root.h"
#include "core/loader_folders.h"

namespace codecvisor {

std::string EngagedSandbox::Describe() const {
  std::vector<std::string> parts;
  if (namespaces) parts.push_back(empty_root ? "user+pid+net+ipc+mount namespaces" : "user+pid+net+ipc namespaces");
  if (empty_root) parts.push_back("empty root");
  if (unprivileged_ids) parts.push_back("uid nobody");
  if (rlimits) parts.push_back("rlimits");
  if (no_new_privs) parts.push_back("no_new_privs");
  if (landlock_abi > 0) parts.push_back(absl::StrCat("landlock v", landlock_abi));
  if (seccomp) parts.push_back(seccomp_log_only ? "seccomp (log only)" : "seccomp");
  if (!cgroup.empty()) parts.push_back(cgroup);
  return parts.empty() ? "none" : absl::StrJoin(parts, ", ");
}

uint64_t BackendTaskLimit(uint64_t wanted, uint64_t pid_max, uint64_t threads_max, uint64_t host_cgroup) {
  uint64_t limit = wanted;
  for (const auto [known, share] : {std::pair{pid_max, pid_max / 4}, std::pair{threads_max, threads_max / 4},
                                    std::pair{host_cgroup, host_cgroup / 2}}) {
    if (known > 0) limit = std::min(limit, std::max<uint64_t>(share, 1));
  }
  return limit;
}

uint64_t BackendTaskLimit(uint64_t wanted) {
  // Asked three times for each start (its rlimit, its cgroup, what the
  // sandbox engaged says): the four files are read once a second at most.
  static RefreshedValue<uint64_t> most;
  return std::min(wanted, most.Get([] {
    auto read = [](const char* path) -> uint64_t {
      uint64_t value = 0;
      return absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadFileText(path)), &value) ? value : 0;
    };
    const uint64_t host_cgroup = LowestPidsLimit(
        PidsCgroupDirs(ReadFileText("/proc/self/cgroup"), ReadFileText("/proc/self/mountinfo")), ReadFileText);
    return BackendTaskLimit(~uint64_t{0}, read("/proc/sys/kernel/pid_max"), read("/proc/sys/kernel/threads-max"),
                            host_cgroup);
  }));
}

SandboxSpec HostSandbox(const SandboxPolicy& policy) {
  SandboxSpec s;
  s.namespaces = true;
  s.unprivileged_without_namespaces = true;
  // Its filesystem: the system libraries, its declared paths and devices,
  // and nothing else (core/empty_root.h).
  // And the folders an administrator registered with the loader
  // (core/loader_folders.h), where a vendor library ldconfig knows lives.
  std::vector<std::string> read_only = policy.read_paths;
  read_only.insert(read_only.end(), LoaderFolders().begin(), LoaderFolders().end());
  s.empty_root = PlanEmptyRoot(read_only, policy.devices, ProbeHostPath);
  s.no_new_privs = true;
  // When memory runs out, the kernel kills a backend before its host: a
  // backend is restarted, the host's work would be lost.
  s.oom_score_adj = "1000";
  // File size: 1 GiB. Landlock leaves the child no file to open for
  // writing; the one file it may hold is the host's stderr, which can be a
  // large log, so the runner ignores SIGXFSZ and a write past the limit
  // just fails.
  // No real-time scheduling and no raised priority, whatever the host's
  // user may have (an audio group's rtprio allowance, a container's
  // --ulimit rtprio): a SCHED_FIFO thread that spins would starve the
  // host and everything else on its core.
  s.rlimits = {{RLIMIT_CORE, 0},
               {RLIMIT_FSIZE, uint64_t{1} << 30},
               {RLIMIT_CPU, policy.cpu_seconds},
               {RLIMIT_NOFILE, policy.open_files},
               {RLIMIT_NPROC, BackendTaskLimit(policy.threads)},
               {RLIMIT_RTPRIO, 0},
               {RLIMIT_NICE, 0}};
#ifndef CODECVISOR_SANITIZER
  // Sanitizer runtimes reserve terabytes of shadow address space, so an
  // address-space limit would stop an instrumented runner from starting.
  s.rlimits.emplace_back(RLIMIT_AS, policy.memory_mb << 20);
#endif
  return s;
}

void DropNamespaces(SandboxSpec* spec, bool cgroup) {
  spec->namespaces = false;
  if (cgroup) {
    std::erase_if(spec->rlimits, [](const std::pair<int, uint64_t>& r) { return r.first == RLIMIT_NPROC; });
  }
}

// This host's cgroup layout, probed once, but again while a probe runs
// short of descriptors: a shortage must not leave every later backend of
// the process without its cgroup.
absl::StatusOr<CgroupLayout> HostCgroupLayout() {
  static std::mutex mu;
  static std::optional<CgroupLayout> probed;
  std::lock_guard<std::mutex> lock(mu);
  if (!probed.has_value()) {
    CgroupLayout layout = ProbeCgroupLayout();
    if (layout.short_of_descriptors) {
      return absl::ResourceExhaustedError(absl::StrCat("probing the cgroup filesystems: ", layout.missing));
    }
    probed = std::move(layout);
  }
  return *probed;
}

std::string MissingCgroupWarning() {
  absl::StatusOr<CgroupLayout> layout = HostCgroupLayout();
  if (!layout.ok() || layout->version != 0) return "";
  return absl::StrCat("backends run without a cgroup (", layout->missing,
                      "); their memory and tasks are bounded by RLIMIT_AS and RLIMIT_NPROC only, and memfd_create "
                      "is refused to them (nothing else would bound what memfds hold)");
}

absl::StatusOr<std::unique_ptr<BackendCgroup>> MakeCgroup(const BackendManifest& manifest, bool allow_degraded) {
  absl::StatusOr<CgroupLayout> host_layout = HostCgroupLayout();
  if (!host_layout.ok()) return host_layout.status();
  const CgroupLayout& layout = *host_layout;
  // Not a failure: an unprivileged host without delegation, a container
  // with a read-only /sys/fs/cgroup. The host's warnings say so
  // (MissingCgroupWarning), and `codecvisor doctor`.
  if (layout.version == 0) return nullptr;
  // Never more than this host may use: a manifest's memory_mb of a
  // terabyte would leave only the kernel's OOM killer to stop the backend.
  const size_t usable = UsableMemoryBytes();  // 0: unknown
  const uint64_t memory = std::min<uint64_t>(manifest.sandbox.memory_mb << 20, usable > 0 ? usable : ~uint64_t{0});
  absl::StatusOr<std::unique_ptr<BackendCgroup>> made =
      BackendCgroup::Create(layout, manifest.name, memory, BackendTaskLimit(manifest.sandbox.threads));
  if (made.ok()) return made;
  if (absl::IsResourceExhausted(made.status())) return made.status();  // this process's descriptors
  if (!allow_degraded) {
    return absl::FailedPreconditionError(absl::StrCat(made.status().message(), kDegradedSandboxAdvice));
  }
  std::fprintf(stderr,
               "codecvisor: WARNING: backend '%s': no cgroup (%s); its memory and tasks are bounded by rlimits "
               "only, as allowed by its manifest or the host, and memfd_create is refused to it\n",
               manifest.name.c_str(), std::string(made.status().message()).c_str());
  return nullptr;
}

}  // namespace codecvisor
