// File: core/cgroup_birth.h
//
// Starts a child inside its cgroups instead of moving it there after
// clone. Moving a process (its pid written to cgroup.procs) takes the
// kernel's cgroup_threadgroup_rwsem for writing, which waits for an RCU
// grace period: about 10 ms a start on this project's 2-vCPU VM
// (`codecvisor-bench restart`: cold_spawn_ms 29-36 ms moving the child,
// 19-21 ms with it born inside). Instead:
// - cgroup v2: clone3's CLONE_INTO_CGROUP (Linux 5.7) creates the child in
//   the cgroup a descriptor of its directory names;
// - cgroup v1: the cloning thread moves itself ("0" written to DIR/tasks,
//   which the kernel does without that lock: a thread moving itself can
//   neither exit nor exec meanwhile), clones, and moves back; the child is
//   born in the thread's cgroups.
// Where either is refused (a kernel without CLONE_INTO_CGROUP, a seccomp
// profile without clone3, a tasks file the host may not write), the caller
// moves the child by its pid as before. Not thread-safe: one per clone, on
// the cloning thread.

#ifndef CODECVISOR_CORE_CGROUP_BIRTH_H_
#define CODECVISOR_CORE_CGROUP_BIRTH_H_

#include <string>
#include <vector>

#include "ipc/unique_fd.h"

namespace codecvisor {

class CgroupBirth {
 public:
  // For the cgroups whose cgroup.procs files are `procs_files` (one, v2;
  // one per hierarchy, v1), each made in the cloning thread's own cgroup of
  // that hierarchy (BackendCgroup::Create), which a v1 thread returns to.
  // Opens every file it needs now; none if `procs_files` is empty.
  CgroupBirth(const std::vector<std::string>& procs_files, int version);
  ~CgroupBirth();  // Leave()
  CgroupBirth(const CgroupBirth&) = delete;
  CgroupBirth& operator=(const CgroupBirth&) = delete;

  // v2: the cgroup directory's descriptor for clone_args.cgroup (with
  // CLONE_INTO_CGROUP); -1 otherwise.
  int clone_into() const { return v2_dir_.get(); }
  // v1: moves the calling thread into the cgroups; false (and in none) if
  // that is refused or this is not v1.
  bool Enter();
  // v1: moves the calling thread back where it was, if Enter() moved it.
  // The parent calls it at once after clone.
  void Leave();
  // Whether the thread is in the cgroups now (Enter() done, Leave() not).
  bool entered() const { return entered_; }
  // Whether the clone is to use it: entered (v1), or clone_into() (v2).
  bool in_use() const { return entered_ || v2_dir_.valid(); }
  // Leaves, and closes every descriptor: the child is then moved by pid.
  void Abandon();
  // In the child after clone: closes the descriptors it inherited, without
  // freeing anything (the child may not allocate or free).
  void CloseInChild() const;

 private:
  ipc::UniqueFd v2_dir_;
  std::vector<ipc::UniqueFd> enter_tasks_, leave_tasks_;  // v1: DIR/tasks, PARENT/tasks
  bool entered_ = false;
};

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_CGROUP_BIRTH_H_
