// File: core/cgroup.h
//
// A cgroup per backend process, made by the host: the kernel's memory limit
// counts every page the child faults in, memfd and tmpfs pages included
// (RLIMIT_AS counts mappings only, and a memfd filled with fallocate is no
// mapping), and its pids limit counts the child's own threads, not every
// process of the nobody user. The child joins it between clone and exec,
// before any vendor code runs; the host removes it once the child is
// reaped.
//
// Both hierarchies: cgroup v2 (memory.max, pids.max, in a child of the
// host's own cgroup, whose controllers must be delegated to it) and v1
// (memory.limit_in_bytes and pids.max, in the memory and pids hierarchies,
// as on hybrid hosts). Where neither can be used (a non-root user without
// delegation, a container with a read-only /sys/fs/cgroup) `missing` says
// why, and `codecvisor doctor` reports it.

#ifndef CODECVISOR_CORE_CGROUP_H_
#define CODECVISOR_CORE_CGROUP_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace codecvisor {

struct CgroupLayout {
  int version = 0;          // 2 or 1; 0: none usable (see `missing`)
  std::string memory_dir;   // the host's own cgroup directory (v2: the only one)
  std::string pids_dir;     // v1 only
  std::string memory_mount;  // where memory_dir's hierarchy is mounted
  std::string pids_mount;    // v1 only
  std::string missing;      // why no version is usable
  // The probe could not open what it reads (this process at its
  // descriptor limit): version 0 says nothing of the machine; probe again.
  bool short_of_descriptors = false;
  std::string Describe() const;  // "cgroup v1: memory at DIR, pids at DIR"
};

// Where backend cgroups go, from the texts of /proc/self/cgroup and
// /proc/self/mountinfo. Pure: checks no permission (see Usable()).
CgroupLayout FindCgroupLayout(absl::string_view proc_self_cgroup, absl::string_view mountinfo);

// FindCgroupLayout on this process, then checks that a cgroup can be made
// there now (v2: its controllers delegated, or delegable), setting version
// 0 and `missing` otherwise.
CgroupLayout ProbeCgroupLayout();

class BackendCgroup {
 public:
  // Makes the backend's cgroup(s) under `layout` with these limits. Also
  // removes empty ones left by hosts of this pid namespace that no longer
  // run: in the host's own cgroup, its parent and its siblings.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<BackendCgroup>> Create(const CgroupLayout& layout,
                                                                             const std::string& backend,
                                                                             uint64_t memory_bytes,
                                                                             uint64_t max_tasks);
  BackendCgroup(const BackendCgroup&) = delete;
  BackendCgroup& operator=(const BackendCgroup&) = delete;
  // Removes the directories; the processes in them must be gone.
  ~BackendCgroup() { Remove(); }
  // The same, before the object goes (a host shutting down while a
  // decoder still holds its backend). Again: nothing to do.
  void Remove();

  // The cgroup.procs files the child's pid is written to.
  const std::vector<std::string>& procs_files() const { return procs_files_; }
  // The memory events the kernel counted: OOM kills in this cgroup.
  uint64_t OomKills() const;
  const std::string& memory_dir() const { return dirs_.front(); }
  int version() const { return version_; }

 private:
  BackendCgroup() = default;
  int version_ = 0;
  std::vector<std::string> dirs_;
  std::vector<std::string> procs_files_;
};

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_CGROUP_H_
