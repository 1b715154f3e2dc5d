// File: core/cgroup_birth.h
//
// Puts a child into its cgroups without the host moving it there by pid
// after clone. That move (its pid written to cgroup.procs) takes the
// kernel's cgroup_threadgroup_rwsem for writing, which waits for an RCU
// grace period: about 10 ms a start on this project's 2-vCPU VM
// (`codecvisor-bench restart`: cold_spawn_ms 29-32 ms with the host moving
// the child, 17-21 ms without; docs/SANDBOX.md). Instead:
// - cgroup v2: clone3's CLONE_INTO_CGROUP (Linux 5.7) creates the child in
//   the cgroup a descriptor of its directory names;
// - cgroup v1: the child moves itself, first thing after clone, writing "0"
//   (the writing thread) to each cgroup's tasks file through a descriptor
//   the host opened, which the kernel does without that lock: a thread
//   moving itself can neither exit nor exec meanwhile. (Not the cloning
//   thread entering the cgroups for the clone: what the host's thread
//   allocates there, kernel memory included, would be charged to the
//   backend's memory limit, whose OOM killer would then pick the host.)
// The kernel checks the permission with the opener's credentials, so a
// child already in its user namespace may write. Where a descriptor cannot
// be opened or the kernel refuses CLONE_INTO_CGROUP, the caller moves the
// child by pid as before. Not thread-safe: one per clone.

#ifndef CODECVISOR_CORE_CGROUP_BIRTH_H_
#define CODECVISOR_CORE_CGROUP_BIRTH_H_

#include <string>
#include <vector>

#include "ipc/unique_fd.h"

namespace codecvisor {

class CgroupBirth {
 public:
  // For the cgroups whose cgroup.procs files are `procs_files` (one, v2;
  // one per hierarchy, v1). Opens every descriptor it needs now (close on
  // exec); none if `procs_files` is empty. None either if one cannot be
  // opened: in_use() is then false.
  CgroupBirth(const std::vector<std::string>& procs_files, int version);
  CgroupBirth(const CgroupBirth&) = delete;
  CgroupBirth& operator=(const CgroupBirth&) = delete;

  // v2: the cgroup directory's descriptor for clone_args.cgroup (with
  // CLONE_INTO_CGROUP); -1 otherwise.
  int clone_into() const { return v2_dir_.get(); }
  // v1: whether the child moves itself (EnterInChild).
  bool child_moves_itself() const { return !tasks_.empty(); }
  bool in_use() const { return v2_dir_.valid() || child_moves_itself(); }
  // Closes every descriptor: the child is then moved by pid.
  void Abandon();

  // In the child, first thing after clone: moves it into its v1 cgroups
  // (0 on success, else the errno) and closes every descriptor inherited
  // from this object, whose numbers the child needs. Allocates and frees
  // nothing.
  int EnterInChild() const;

 private:
  ipc::UniqueFd v2_dir_;
  std::vector<ipc::UniqueFd> tasks_;  // v1: each cgroup's tasks file
};

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_CGROUP_BIRTH_H_
