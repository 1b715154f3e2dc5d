// File: core/process_child.h
//
// The launcher's child between clone and execve (core/process.cc): it
// applies the host's part of the sandbox and execs, or reports up the
// error pipe why it could not. Internal to //core:process.

#ifndef CODECVISOR_CORE_PROCESS_CHILD_H_
#define CODECVISOR_CORE_PROCESS_CHILD_H_

#include <signal.h>
#include <sys/types.h>

#include "core/cgroup_birth.h"
#include "core/process.h"

namespace codecvisor::process_internal {

// What a child that failed before exec reports up the error pipe: the
// errno, and which part of its set-up failed.
struct ChildError {
  int err;
  int step;  // an index into the empty-root plan, or one of these:
};
constexpr int kNoStep = -1;    // the rest of the set-up, or execve
constexpr int kRootStep = -2;  // the mounts around the empty-root plan's steps
constexpr int kIdsStep = -3;   // becoming nobody without a user namespace
constexpr int kCgroupStep = -4;  // moving into its cgroups (CgroupBirth::EnterInChild)

// Between clone and execve only async-signal-safe calls are allowed: the
// host may have other threads holding locks (minijail's rule), and the
// child runs on the host's memory (core/process_clone.h), of which it may
// write only its own stack and the cloning thread's thread-local state
// (errno). On a failure of its set-up, the errno goes up the pipe and the
// child exits (exit_group); one whose host died exits without a report.
// Every signal is blocked until just before execve, which gets
// `exec_mask`; those that came before setsid() are thrown away.
[[noreturn]] void ChildAfterClone(const LaunchSpec& spec, char* const* argv, char* const* envp,
                                  const sigset_t* exec_mask, int error_pipe, int error_pipe_reader, int go_pipe,
                                  pid_t parent, bool become_outside_ids, const CgroupBirth& birth);

}  // namespace codecvisor::process_internal

#endif  // CODECVISOR_CORE_PROCESS_CHILD_H_
