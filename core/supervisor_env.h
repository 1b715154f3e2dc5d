// File: core/supervisor_env.h
//
// The seam between the Supervisor's state machine and the operating system
// (as leveldb's Env and Envoy's TimeSource are): starting a backend child,
// observing it (kill, exit, crash hints, liveness) and the clock the restart
// policy reads. SystemSupervisorEnv (core/system_supervisor_env.h) is the
// real thing, one per Host; a fake (core/fake_supervisor_env.h) lets the
// restart, blame and replay logic be tested in milliseconds without
// processes.
//
// Thread-safety: every method of both interfaces may be called from any
// thread. Ownership: the Supervisor shares its env (a Host's supervisors
// share one) and owns the backends it starts.

#ifndef CODECVISOR_CORE_SUPERVISOR_ENV_H_
#define CODECVISOR_CORE_SUPERVISOR_ENV_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <system_error>

#include "absl/status/statusor.h"
#include "core/manifest.h"
#include "core/process.h"
#include "ipc/channel.h"
#include "ipc/messages.h"

namespace codecvisor {

// A session opened on a backend and attached to its own channel.
struct OpenedSession {
  std::shared_ptr<ipc::HostChannel> channel;  // shared: the supervisor may interrupt it
  ipc::SessionOpened info;
};

// How much of the sandbox to apply (core/README.md, "Sandbox").
struct SpawnOptions {
  // Off only for benchmarks and debugging: the child then runs with the
  // host's privileges, and a warning says so.
  bool sandbox = true;
  // Run with what the kernel offers when a mechanism is missing, warning
  // loudly, instead of refusing to start. The manifest can ask for it too.
  bool allow_degraded = false;
};

// The limits of this process that a shortage of its own may be: each
// RLIM_INFINITY where there is none.
struct ProcessLimits {
  uint64_t processes;      // RLIMIT_NPROC, for the user's processes and threads
  uint64_t descriptors;    // RLIMIT_NOFILE
  uint64_t address_space;  // RLIMIT_AS, bytes
  uint64_t data;           // RLIMIT_DATA, bytes
};
ProcessLimits CurrentProcessLimits();
// Which of `limits` a failure whose message is `cause` ran into, as the
// advice HostShortage appends: " (this process may hold 64 descriptors:
// `ulimit -n`)"; empty where the error names no limit of the process's.
// EAGAIN from clone3 or pthread_create: the user's processes and threads,
// or, for a thread, room for its stack under an address-space or data
// limit; ENOMEM: those two limits, where set; EMFILE: descriptors.
std::string WhoseLimit(absl::string_view cause, const ProcessLimits& limits);

// The host itself short of what a session needs (a descriptor, memory for
// its shared region): `cause`, kResourceExhausted, marked so that no one
// blames or replaces the backend for it; the message says whose limit it is.
[[nodiscard]] absl::Status HostShortage(const absl::Status& cause);
// Whether `status` came from HostShortage.
bool IsHostShortage(const absl::Status& status);
// HostShortage of a backend that could not start a thread under its
// user's limit (the runner's noThreadFree): threads its user's other
// processes hold, which processes ending (a backend just killed) give back.
[[nodiscard]] absl::Status UsersThreadShortage(const absl::Status& cause);
bool IsUsersThreadShortage(const absl::Status& status);
// The backend out of descriptors for another session (the runner's
// noDescriptorFree): `cause`, kFailedPrecondition, marked.
[[nodiscard]] absl::Status BackendDescriptorShortage(const absl::Status& cause);
bool IsBackendDescriptorShortage(const absl::Status& status);
// A thread this process could not start (`what`: which; `e`: std::thread's
// exception): HostShortage, but EPERM, which no limit gives: a seccomp
// profile that refuses clone3 (older Docker and containerd defaults), with
// which glibc 2.34 and later start every thread: kFailedPrecondition,
// saying so.
[[nodiscard]] absl::Status ThreadNotStarted(absl::string_view what, const std::system_error& e);
// HostShortage(status) for a kResourceExhausted status (ipc::ErrnoStatus's
// EMFILE, ENFILE, ENOMEM), else `status`: for the host's own calls.
[[nodiscard]] absl::Status MaybeHostShortage(const absl::Status& status);

// One started backend child, as the supervisor and the sessions see it.
// BackendProcess (core/backend_process.h) is the real one.
class RunningBackend {
 public:
  virtual ~RunningBackend() = default;

  // Opens `video_fd` and attaches a session channel (BackendProcess::OpenSession).
  [[nodiscard]] virtual absl::StatusOr<OpenedSession> OpenSession(int video_fd, ipc::OpenSession options,
                                                                  uint32_t slots, ipc::Deadline deadline,
                                                                  bool* channel_failure, uint64_t* file_token) = 0;
  // What the runner recorded on the control channel as it died: whether an
  // open was inside vendor code, a stray fault.
  virtual ipc::CrashHints ControlCrashHints() const = 0;
  // Whether the kernel killed it for going over its memory limit.
  virtual bool OomKilled() const = 0;
  // Sends SIGKILL; never to another process.
  virtual void Kill() = 0;
  // Whether it has exited (not necessarily reaped). Never blocks.
  virtual bool Exited() const = 0;
  // Reaps it if it has exited by `deadline`, once; later calls return the
  // same status.
  [[nodiscard]] virtual absl::StatusOr<ExitStatus> Reap(ipc::Deadline deadline) = 0;
  // A heartbeat: OK if it answered by `deadline` (or is busy answering an open).
  [[nodiscard]] virtual absl::Status Ping(ipc::Deadline deadline) = 0;
  // Stops and reaps it; at most about a second. Idempotent.
  virtual void Shutdown() = 0;
  // Readable once it has exited; -1 where there is none (a fake).
  virtual int pidfd() const = 0;
  virtual pid_t pid() const = 0;
  // The CPU time it has used, all its threads; nullopt if unknown.
  virtual std::optional<std::chrono::nanoseconds> CpuTime() const = 0;
  virtual const ipc::HelloReply& hello() const = 0;
  // What of the sandbox is engaged, in words ("none" for nothing).
  virtual std::string DescribeSandbox() const = 0;
};

class SupervisorEnv {
 public:
  virtual ~SupervisorEnv() = default;

  // The time every restart decision is made at (backoff, the restart
  // window, heartbeats, uptime). Blocking waits stay on ipc::Clock.
  virtual ipc::Clock::time_point Now() const = 0;
  // Starts a child for `manifest` and completes its handshake by
  // `deadline`; the error names the manifest and why it did not start.
  [[nodiscard]] virtual absl::StatusOr<std::unique_ptr<RunningBackend>> Start(const BackendManifest& manifest,
                                                                               const SpawnOptions& spawn,
                                                                               ipc::Deadline deadline) = 0;
  // Calls `on_exit` once, on a thread of the env's, when `backend` has
  // exited. Returns an id for Unwatch, or why it cannot be watched (then
  // the caller must not keep the backend). `backend` must outlive the watch.
  [[nodiscard]] virtual absl::StatusOr<uint64_t> WatchExit(const RunningBackend& backend,
                                                           std::function<void()> on_exit) = 0;
  // After it returns, the `on_exit` of `id` is not running (unless Unwatch
  // is called from it) and never will. Unknown or fired ids are fine.
  virtual void Unwatch(uint64_t id) = 0;
  // Whether supervisors run threads of their own (for restarts, heartbeats
  // and the warm spare). A fake says no: the test drives the work with
  // Supervisor::RunDueWorkForTest().
  virtual bool RunsThreads() const = 0;
};

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_SUPERVISOR_ENV_H_
