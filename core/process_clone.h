// File: core/process_clone.h
//
// Starts a child that shares the host's memory until it execs, as
// posix_spawn does (CLONE_VM | CLONE_VFORK), instead of a copy of it, as a
// fork-style clone makes. A copy costs in proportion to what the host has
// resident: the kernel copies its page tables and marks every private page
// copy-on-write, so that each page the host writes afterwards takes a
// fault. For a training process with GiBs resident that is hundreds of
// milliseconds per backend start and more after it; sharing costs the same
// whatever the host's size (figures: `codecvisor-bench restart
// --host-resident-mb`, tools/bench/README.md).
// Internal to //core:process.
//
// The price is posix_spawn's rules, which this file keeps:
// - the child runs on a stack of its own, mapped here, but with the cloning
//   thread's thread-local storage (errno, glibc's cancellation state, the
//   sanitizers' state): safe only because that thread is suspended until
//   the child has exec'd or exited (CLONE_VFORK), so the two never run at
//   once, and because nothing cancels that thread;
// - every signal is blocked across the clone, and stays blocked in the
//   child until just before its execve; each handler the host installed is
//   set back to the default first thing, as a host handler run in the
//   child would run on the host's memory;
// - the child allocates nothing and writes no memory but its own stack and
//   that thread-local state (core/process_child.h's rules).
// Since the cloning thread sleeps until the exec, what the host must do for
// the child before it may exec (write its id maps, move it into a cgroup,
// let it go on) runs on a helper thread, `started`, once the child runs. The
// helper also keeps the deadline: a child that has not exec'd by then is
// killed, which wakes the cloning thread.
//
// A ThreadSanitizer build clones without CLONE_VM (still CLONE_VFORK, so the
// protocol is the same): its runtime cannot have a second process running on
// its state.
//
// A traced host (a debugger attached: TracerPid in /proc/thread-self/status) clones
// a copy, as fork does, without CLONE_VM or CLONE_VFORK: gdb stops every
// other thread of a process one of whose threads is in a vfork until the
// child execs, and the helper the child waits for would never run (the
// start hung for good under `gdb --args python train.py`). The helper
// then waits, within the deadline, for the child's first byte and, after
// `started`, for the exec on a pipe of its own that the exec closes (or
// whatever closes the child's copies of the host's descriptors first); a
// process another thread forked meanwhile may hold that pipe open too, so
// at the deadline a child that has exec'd (ChildExeced) is started all the
// same. The cloning thread joins the helper. The copy costs what a fork
// costs, in proportion to the host's resident memory.

#ifndef CODECVISOR_CORE_PROCESS_CLONE_H_
#define CODECVISOR_CORE_PROCESS_CLONE_H_

#include <signal.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <functional>

#include "ipc/unique_fd.h"

namespace codecvisor::process_internal {

// Marks the code that runs in the child before its exec (and every lambda
// in it, which the mark does not reach): not instrumented by
// AddressSanitizer, whose handling of a call that never returns would take
// the child's stack for the suspended thread's and print a warning on the
// host's stderr.
#define CODECVISOR_CHILD_CODE __attribute__((no_sanitize("address")))

// The child's exit, before its exec: exit_group itself, as a sanitizer's
// _exit interceptor would run its exit processing on the host's state.
[[noreturn]] CODECVISOR_CHILD_CODE inline void ExitChild(int code) {
  syscall(SYS_exit_group, code);
  __builtin_unreachable();
}

struct CloneRequest {
  // CLONE_NEW* flags; CLONE_VM, CLONE_VFORK and the pid and pidfd flags are
  // added here.
  uint64_t flags = 0;
  // A cgroup v2 directory to be born in (clone3's CLONE_INTO_CGROUP), or -1.
  int cgroup_dir = -1;
  // Runs in the child on its own stack, with default handlers and every
  // signal blocked; sets `exec_mask` (the cloning thread's mask) just
  // before it execs. Must exec or exit, never return.
  int (*child)(void* arg, const sigset_t* exec_mask) = nullptr;
  void* child_arg = nullptr;
  // On a helper thread once the child runs (it may be waiting for this):
  // its pid in this process's pid namespace, and whether it was born in
  // `cgroup_dir`. False: the helper kills the child. `started` must not
  // signal or reap it itself; the caller gets its pid and pidfd either way,
  // and reaps it.
  std::function<bool(pid_t pid, bool born_in_cgroup)> started;
  std::chrono::milliseconds exec_deadline{10'000};
};

struct CloneResult {
  pid_t pid = -1;  // -1: no child; `err` and `call` say why
  int err = 0;
  const char* call = "clone3";  // the call that made the child, or failed
  ipc::UniqueFd pidfd;
  bool born_in_cgroup = false;   // in `cgroup_dir` from its first instruction
  bool deadline_passed = false;  // the helper killed it before it exec'd
  bool copied = false;           // a traced host's: a copy, without CLONE_VM and CLONE_VFORK
};

// Clones `request.child` and returns once it has exec'd or exited (or, if
// the clone failed, at once; call "pthread_create", err its errno (EAGAIN)
// or ENOMEM, where no helper thread could be started). clone3 on x86_64,
// else, and where a seccomp profile answers clone3 with ENOSYS (Docker's
// and containerd's default ones do), glibc's clone with the same namespace
// flags, no
// CLONE_INTO_CGROUP (it is clone3's alone: a cgroup v2 child is then moved
// by pid, about 10 ms more per start), and the pidfd from pidfd_open.
CloneResult CloneUntilExec(const CloneRequest& request);

// In the child, once it has left the host's process group (setsid):
// throws away every signal that came while they were blocked, a Ctrl-C to
// that group among them, which would kill it at the exec. Async-signal-safe.
void DiscardPendingSignals();

// Whether child `pid` has exec'd: its executable is no longer this
// process's. For a wait on a pipe the exec closes, which a process another
// thread forked meanwhile may hold open too.
bool ChildExeced(pid_t pid);

// Whether a tracer is attached to the calling thread (TracerPid in
// /proc/thread-self/status): its starts are copies (see above).
bool HostIsTraced();

// Tests: take the clone path (true) even where clone3 works.
void ForceLegacyCloneForTesting(bool legacy);

// Whether children share the host's memory until they exec (false in a
// ThreadSanitizer build).
bool StartsShareHostMemory();

}  // namespace codecvisor::process_internal

#endif  // CODECVISOR_CORE_PROCESS_CLONE_H_
