// File: core/death_record.h
//
// How one backend child ended, as the supervisor records it for the
// sessions that judge their requests by it (core/blame.h). Plain data.

#ifndef CODECVISOR_CORE_DEATH_RECORD_H_
#define CODECVISOR_CORE_DEATH_RECORD_H_

#include <chrono>
#include <cstdint>
#include <span>
#include <string>

#include "core/process.h"
#include "ipc/channel.h"

namespace codecvisor {

// How a session's kill reason begins when it waited past its deadline.
inline constexpr char kNoAnswerWithin[] = "no answer within ";

// How one generation (one child process) of a backend ended.
struct DeathRecord {
  uint64_t generation = 0;
  ExitStatus exit;
  // Set when the supervisor killed it: a hang or a protocol violation seen
  // by session `blamed_session`; only that session's request is to blame.
  bool killed_by_supervisor = false;
  std::string kill_reason;
  uint64_t blamed_session = 0;
  // Whether some channel of this generation (a session's or the control
  // channel) carries the fault signal: then exactly that request is to
  // blame, and the others that were inside vendor code are bystanders.
  bool culprit_recorded = false;
  // Whether some channel records that its vendor call ended the process
  // with exit()/_exit() (the sandbox catches those): then exactly that
  // request is to blame for an exit.
  bool exit_recorded = false;
  // What the runner recorded as it died: the fault signal (as the init of
  // its pid namespace it cannot always die of that signal itself, e.g.
  // abort() ends in SIGSEGV), and the syscall the sandbox denied, if any.
  uint32_t recorded_signal = 0;
  int32_t violation_syscall = -1;
  // Its memory cgroup counted an OOM kill: a SIGKILL from the kernel for
  // going over its memory limit.
  bool oom_killed = false;
  // It faulted with its address space full (RLIMIT_AS, the manifest's
  // memory_mb): most likely an allocation failed and went unchecked.
  bool address_space_full = false;
  // The runner ended it because a close_session ran past the manifest's
  // close_timeout_seconds (its watchdog said so in the control region).
  bool close_hung = false;
  // How many channels (sessions', and the control channel for an open) were
  // inside vendor code when it died: the suspects of a death that names
  // no culprit.
  int suspects = 0;
  std::chrono::system_clock::time_point when;
  // An earlier generation whose record is no longer kept (many deaths
  // since): how it ended is unknown, and it names nobody.
  bool forgotten = false;

  // "killed by signal 11 (SIGSEGV)", "sandbox violation: syscall socket",
  // or "killed by codecvisor: <reason>".
  std::string Describe() const;
  // Killed by the supervisor because a session waited past its deadline.
  bool KilledForNoAnswer() const;
};

// Adds to `record` what the runner recorded on each channel of the dead
// child (`channels`: the control channel's hints first, then each
// session's): the suspects (channels inside a vendor call); whether a
// fault on a thread inside a vendor call names its culprit (one on a
// thread in no vendor call, a plugin's worker or the runner's own code,
// names nobody, even while an open is in vendor code); whether an exit()
// the sandbox caught inside a vendor call names one; the signal it died
// of (the culprit's wins over a stray one, else the first recorded); and
// the first syscall the sandbox denied. Only what `record->exit` bears out
// is taken (Corroborated): the child writes the hints.
void AddCrashHints(std::span<const ipc::CrashHints> channels, DeathRecord* record);

// `hints` as far as `exit`, the death the host saw, bears them out: a
// plugin may write anything there, and could have its own death described
// as a sandbox violation, a kill, or "signal -294968296". A fault signal
// the runner's handlers record, for a death by a signal; a trapped
// syscall (and SIGSYS), for the runner's exit after a trap (128 + SIGSYS)
// or a death by SIGSYS, which also makes that channel's call the culprit
// where the trap came inside a fault's handler; an exit code, for an exit
// with that code.
ipc::CrashHints Corroborated(ipc::CrashHints hints, const ExitStatus& exit);

// How a backend process ended, in words: "killed by signal 6 (SIGABRT)",
// "sandbox violation: syscall socket", "exited with code 3". The runner's
// crash hints win over the bare exit status: as the init of its pid
// namespace it cannot always die of the signal that killed it.
// `oom_killed`: its memory cgroup counted an OOM kill.
std::string DescribeExit(const ExitStatus& exit, uint32_t recorded_signal, int32_t violation_syscall,
                         bool oom_killed = false);

// Whether `signal` is one that faulting code raises on itself (SIGSEGV,
// SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP), as opposed to one sent from
// outside (SIGKILL, SIGTERM) or the sandbox's SIGSYS.
bool IsCrashSignal(int signal);

// What a vendor can do about a crash, to append to its message: for a fault
// signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP) that was not a
// sandbox violation, how to see where it happened ("; for the crashing
// thread's backtrace, run with CODECVISOR_BACKEND_BACKTRACE=1"), or, when
// `backtrace_enabled`, where that backtrace went. "" for any other end.
std::string CrashAdvice(const ExitStatus& exit, uint32_t recorded_signal, int32_t violation_syscall,
                        bool backtrace_enabled);
std::string CrashAdvice(const DeathRecord& death, bool backtrace_enabled);

// Why a runner that ended with `exit` before answering its handshake did,
// where the plugin made it exit, to append to its message: an exit() in
// create() (the sandbox recorded its code in `hints`), or an exit code the
// runner never uses while it starts (it answers the handshake with its own
// failures): the library's constructors. "" for any other end, and for a
// code the runner uses (an exit(3) in a constructor reads as its own).
std::string PluginExitWhileStarting(const ExitStatus& exit, const ipc::CrashHints& hints);

// Whether this process's environment has CODECVISOR_BACKEND_BACKTRACE=1,
// which makes the backends it starts print a crash's backtrace.
bool BacktraceEnabled();

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_DEATH_RECORD_H_
