// File: core/supervisor.h
//
// Supervisor: keeps one backend running. It spawns the backend's child on
// first use (or eagerly), sees it die at once (a watcher thread polls the
// child's pidfd), reaps it, interrupts every channel still waiting on it,
// and restarts it under a RestartPolicy: the first restart immediately,
// then with exponential backoff, and quarantine after too many crashes in a
// window. Optionally it keeps a warm spare, a second child already started
// and through its handshake, so that failover skips the cold start.
//
// Sessions (VideoDecoder) do the replay: they report a failure, learn from
// the DeathRecord whether their request was to blame, re-open on the new
// generation and re-issue what was in flight.
//
// Thread-safety: every method may be called from any thread.

#ifndef CODECVISOR_CORE_SUPERVISOR_H_
#define CODECVISOR_CORE_SUPERVISOR_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "core/backend_process.h"
#include "core/install_layout.h"
#include "core/manifest.h"
#include "core/process.h"
#include "core/restart_policy.h"
#include "core/solo_gate.h"
#include "ipc/channel.h"
#include "ipc/mutex.h"
#include "ipc/unique_fd.h"

namespace codecvisor {

enum class BackendState { kDiscovered, kFailed, kSpawning, kReady, kRestarting, kQuarantined };
const char* StateName(BackendState state);

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
  // How many channels (sessions', and the control channel for an open) were
  // inside vendor code when it died: the suspects of a death that names
  // no culprit.
  int suspects = 0;
  std::chrono::system_clock::time_point when;

  // "killed by signal 11 (SIGSEGV)", "sandbox violation: syscall socket",
  // or "killed by codecvisor: <reason>".
  std::string Describe() const;
};

struct BackendHandle {
  std::shared_ptr<BackendProcess> process;
  uint64_t generation = 0;
};

struct SupervisorOptions {
  std::chrono::milliseconds spawn_timeout{10'000};
  // Idle heartbeat on the control channel; zero turns it off.
  std::chrono::milliseconds heartbeat_interval{2'000};
  bool warm_spare = false;
  SpawnOptions spawn;
};

// A snapshot for `codecvisor backends`.
struct SupervisorStatus {
  BackendState state = BackendState::kDiscovered;
  std::string diagnostic;  // why failed or quarantined
  pid_t pid = -1;
  uint64_t generation = 0;
  std::chrono::steady_clock::duration uptime{};
  int sessions = 0;
  uint64_t restarts = 0;
  std::optional<DeathRecord> last_exit;
  bool spare_ready = false;
  std::string sandbox;  // what is engaged for the current child
  std::optional<ipc::HelloReply> hello;  // the current child's handshake
};

class Supervisor {
 public:
  Supervisor(BackendManifest manifest, InstallLayout layout, std::shared_ptr<ProcessLauncher> launcher,
             SupervisorOptions options);
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // The running child, started or restarted as needed; waits through a
  // restart's backoff until `deadline`. kFailedPrecondition with the
  // diagnostic when the backend cannot load or is quarantined.
  [[nodiscard]] absl::StatusOr<BackendHandle> Acquire(ipc::Deadline deadline);

  // Session `session` saw generation `generation` fail. With `kill` (a hang,
  // a malformed message) a child still alive is killed at once, `reason`
  // recorded and the session blamed. Without it (the peer hung up) the child
  // is given a grace period to finish dying, and killed as above only if it
  // is still alive after that. Returns how the generation ended, once the
  // child is reaped (waits at most until `deadline`).
  [[nodiscard]] absl::StatusOr<DeathRecord> ReportFailure(uint64_t generation, uint64_t session, bool kill,
                                                          const std::string& reason, ipc::Deadline deadline);

  // A request succeeded: the restart budget is whole again.
  void RecordSuccess();
  // Lifts a quarantine or a load failure; the next Acquire starts afresh.
  void Reset();
  // Starts the child now instead of on first use.
  void SpawnEagerly();

  // Channels to interrupt at once if `generation` dies.
  void WatchChannel(uint64_t generation, std::weak_ptr<ipc::HostChannel> channel);
  void SessionOpened();
  void SessionClosed();

  SupervisorStatus Status() const;
  // Every request and open on this backend passes it; a suspect passes
  // alone (solo_gate.h).
  SoloGate& gate() { return gate_; }
  const BackendManifest& manifest() const { return manifest_; }

  // Stops the watcher and every child. Idempotent.
  void Shutdown();

 private:
  void WatchLoop();
  // Keeps a warm spare started, on a thread of its own: a spare's start
  // (up to spawn_timeout) never delays the watcher's handling of a death.
  void SpareLoop();
  bool WantSpare() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Spawns a child (handshake included) without holding mu_.
  absl::StatusOr<std::unique_ptr<BackendProcess>> Spawn();
  // Records the death of the current generation and decides the restart.
  void OnDeath(const ExitStatus& exit, const BackendProcess& process) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void InterruptChannels(uint64_t generation) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Wake();

  const BackendManifest manifest_;
  const InstallLayout layout_;
  const std::shared_ptr<ProcessLauncher> launcher_;
  const SupervisorOptions options_;

  mutable Mutex mu_;
  CondVar changed_;  // state, current_ or deaths_ changed
  BackendState state_ ABSL_GUARDED_BY(mu_) = BackendState::kDiscovered;
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<BackendProcess> current_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<BackendProcess> spare_ ABSL_GUARDED_BY(mu_);
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  std::chrono::steady_clock::time_point started_at_ ABSL_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point restart_at_ ABSL_GUARDED_BY(mu_);
  // A kill the supervisor made, waiting for the child to die.
  std::optional<DeathRecord> pending_kill_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, DeathRecord> deaths_ ABSL_GUARDED_BY(mu_);  // the last few generations
  std::multimap<uint64_t, std::weak_ptr<ipc::HostChannel>> channels_ ABSL_GUARDED_BY(mu_);
  RestartPolicy policy_ ABSL_GUARDED_BY(mu_);
  uint64_t restarts_ ABSL_GUARDED_BY(mu_) = 0;
  int sessions_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int spare_failures_ ABSL_GUARDED_BY(mu_) = 0;  // in a row; spares stop at kMaxSpareFailures

  SoloGate gate_;
  ipc::UniqueFd wake_fd_;  // eventfd: wakes the watcher
  std::thread watcher_;
  std::thread spare_maker_;  // only with a warm spare
};

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_SUPERVISOR_H_
