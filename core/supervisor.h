// File: core/supervisor.h
//
// Supervisor: keeps one backend running. It spawns the backend's child on
// first use (or eagerly), sees it die at once (its env calls back when the
// child exits), reaps it, interrupts every channel still waiting on it,
// and restarts it under a RestartPolicy: the first restart immediately,
// then with exponential backoff, and quarantine after too many crashes in a
// window. Optionally it keeps a warm spare, a second child already started
// and through its handshake, so that failover skips the cold start.
//
// Every effect on the system goes through a SupervisorEnv
// (core/supervisor_env.h): with a fake one the whole state machine runs in
// a unit test, driven by RunDueWorkForTest() and a fake clock.
//
// Sessions (VideoDecoder) do the replay: they report a failure, learn from
// the DeathRecord whether their request was to blame, re-open on the new
// generation and re-issue what was in flight.
//
// Threads: none until the backend is first wanted; then one worker
// (starts, restarts, heartbeats) and, with a warm spare, one that starts
// spares. Exits are seen on the env's thread (one per Host).
//
// Thread-safety: every method may be called from any thread.

#ifndef CODECVISOR_CORE_SUPERVISOR_H_
#define CODECVISOR_CORE_SUPERVISOR_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "base/mutex.h"
#include "core/death_record.h"
#include "core/idle_cpu_watch.h"
#include "core/manifest.h"
#include "core/restart_policy.h"
#include "core/session_budget.h"
#include "core/solo_gate.h"
#include "core/supervisor_env.h"
#include "ipc/channel.h"

namespace codecvisor {

enum class BackendState { kDiscovered, kFailed, kSpawning, kReady, kRestarting, kQuarantined };
const char* StateName(BackendState state);

struct BackendHandle {
  std::shared_ptr<RunningBackend> process;
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
  // Sessions closed to make room for others (SessionBudget) and re-opened
  // on their next request, since the host started.
  uint64_t parked = 0;
  uint64_t restarts = 0;
  std::optional<DeathRecord> last_exit;
  bool spare_ready = false;
  // Why no warm spare is kept any more ("its warm spare used 12.0 s of CPU
  // in 10.0 s with no decoder open on it: stopped, ..."), or empty.
  std::string spare_stopped;
  std::string sandbox;  // what is engaged for the current child
  std::optional<ipc::HelloReply> hello;  // the current child's handshake
  // A call on the control channel (create(), an open, the close of a
  // session a closed decoder left) is inside the plugin's code now, as the
  // child's control region says (its crash hints): a hint, for status
  // displays and tests.
  bool control_call_in_vendor_code = false;
};

class Supervisor {
 public:
  // Starts no thread and no child: both wait for the backend's first use.
  Supervisor(BackendManifest manifest, std::shared_ptr<SupervisorEnv> env, SupervisorOptions options);
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

  // A request on `generation` succeeded: counts toward making the restart
  // budget whole (RestartPolicy::OnSuccess), and lets a warm spare start
  // (kSpareHoldoff). A success of a generation that has since died counts
  // for neither: the death came after it.
  void RecordSuccess(uint64_t generation);
  // A request (or open) was judged poison, guilty of the deaths of
  // `generations`: those leave the restart budget (RestartPolicy::OnPoison,
  // which says what `toward_quarantine` false is for).
  void RecordPoison(std::span<const uint64_t> generations, bool toward_quarantine = true);
  // Lifts a quarantine or a load failure; the next Acquire starts afresh.
  void Reset();
  // Starts the child now instead of on first use.
  void SpawnEagerly();

  // Channels to interrupt at once if `generation` dies.
  void WatchChannel(uint64_t generation, std::weak_ptr<ipc::HostChannel> channel);
  void SessionOpened();
  void SessionClosed();
  // An open the backend process of `generation` answered from its plugin
  // (a session, or the plugin's own error).
  void OpenAnswered(uint64_t generation);
  // Whether that process has answered opens and holds no session now.
  bool AnsweredOpensAndHoldsNoSession(uint64_t generation);

  // Parking (core/session_budget.h). A session the supervisor may close
  // to make room for another: TryPark() closes it unless a call of its own
  // is running (then false), and must not call back into the supervisor.
  // TryDrop() does the same for a session whose backend has died, without
  // a word to it, and hands what the session held (its channel, the dead
  // process) to `remains`, which the caller destroys once its locks are
  // released: before a cold restart, so that their descriptors are free
  // for the new process.
  class Parkable {
   public:
    virtual bool TryPark() = 0;
    virtual bool TryDrop(std::shared_ptr<void>* remains) = 0;

   protected:
    ~Parkable() = default;
  };
  // `session` may be parked from now until Withdraw(token), which returns
  // only once no TryPark() of it is running.
  void Enroll(uint64_t token, Parkable* session);
  void Withdraw(uint64_t token);
  // Before session `token` (re)opens: parks the least recently used other
  // sessions until its `bytes` fit the backend's address space
  // (SessionCapacity of the manifest's memory_mb). `bytes` 0: the size of
  // the last session opened, the best guess for a first open.
  void MakeRoom(uint64_t token, uint64_t bytes);
  // Parks the least recently used other session that is idle: for an open
  // the backend refused for want of resources. False when none could be.
  bool ParkOne(uint64_t token);
  // Session `token` holds `bytes` of the backend's address space (opened),
  // was used, or holds nothing (closed, lost with its backend).
  void SessionHolds(uint64_t token, uint64_t bytes);
  void SessionUsed(uint64_t token);
  void SessionReleased(uint64_t token);
  // Before a cold restart: drops every idle session (all of the dead
  // backend's), destroying what they held, the dead process too, outside
  // the roster's lock. A session inside a call drops its own as the call
  // finds the death.
  void DropDeadSessions();

  SupervisorStatus Status() const;
  // Every request and open on this backend passes it; a suspect passes
  // alone (solo_gate.h).
  SoloGate& gate() { return gate_; }
  const BackendManifest& manifest() const { return manifest_; }
  // How long a caller waits for the backend to be ready again after it died
  // or hung: a start that hangs is given up at spawn_timeout, then the
  // restart's backoff, then a fresh start of up to spawn_timeout.
  std::chrono::milliseconds RecoveryWait() const {
    return 2 * options_.spawn_timeout + manifest_.restart.backoff_max + std::chrono::seconds(1);
  }

  // Stops the threads and every child. Idempotent.
  void Shutdown();

  // With an env that runs no threads (a fake): does, on the caller's
  // thread, every piece of work now due (a start, a restart whose backoff
  // is over, a heartbeat, a warm spare), as the worker threads would.
  void RunDueWorkForTest();

 private:
  enum class Work { kNone, kSpawn, kHeartbeat };

  // Starts the worker threads if the env runs threads and they are not
  // running yet (the backend is wanted for the first time). A host
  // shortage when the worker cannot be started (`ulimit -u`); without the
  // warm spare's thread, restarts start the backend cold.
  absl::Status StartThreadsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What is due at `now`; otherwise kNone and, in `*due`, when to look again.
  Work NextWork(ipc::Clock::time_point now, ipc::Clock::time_point* due) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DoWork(Work work) ABSL_LOCKS_EXCLUDED(mu_);
  // Starts the backend (or promotes the warm spare) and makes it current.
  void StartBackend() ABSL_LOCKS_EXCLUDED(mu_);
  void Heartbeat() ABSL_LOCKS_EXCLUDED(mu_);
  // With each heartbeat answered: kills `current` if it has used more than
  // half a core with no decoder on it for a while (IdleCpuWatch).
  void StopIfBusyWhileIdle(const std::shared_ptr<RunningBackend>& current) ABSL_LOCKS_EXCLUDED(mu_);
  // With each heartbeat: kills the warm spare, which never has a decoder,
  // if it has used more than half a core for a while (its plugin's threads
  // spin from create() on), and starts no spare again: its plugin would
  // spin in every one.
  void StopSpareIfBusy() ABSL_LOCKS_EXCLUDED(mu_);
  void WorkLoop();
  // Keeps a warm spare started, on a thread of its own: a spare's start
  // (up to spawn_timeout) never delays the handling of a death.
  void SpareLoop();
  // Starts one spare and keeps it if it is still wanted.
  void StartSpare() ABSL_LOCKS_EXCLUDED(mu_);
  // Whether a spare would be kept: warm spares asked for, the backend
  // ready, none kept yet, and not given up on.
  bool WantSpare() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // When the spare wanted may start (kSpareHoldoff): a time on the env's
  // clock, time_point::min() once the current child has served a request,
  // and never before a spare refused for the host's shortage may retry.
  ipc::Clock::time_point SpareDue() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Spawns a child (handshake included) without holding mu_.
  absl::StatusOr<std::unique_ptr<RunningBackend>> Spawn();
  // Has the env call OnExit when `backend` exits.
  absl::Status Watch(const RunningBackend& backend) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The env saw `backend` (current or spare) exit.
  void OnExit(const RunningBackend* backend) ABSL_LOCKS_EXCLUDED(mu_);
  // Records the death of the current generation and decides the restart.
  void OnDeath(const ExitStatus& exit, const RunningBackend& process) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A restart's start failed: counted as a crash, retried or quarantined.
  void OnFailedRestart(const absl::Status& why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Enters kQuarantined with the message saying why: the restart budget was
  // spent on `what` ("crashes"), or (`decision.after_poison`) it did
  // `again` ("crashed again") after too many poison requests in a row; the
  // `last` crash ended so; `advice` is appended. It lasts as long as the
  // policy says (RestartPolicy::OnQuarantine).
  void Quarantine(const RestartPolicy::Decision& decision, absl::string_view what, absl::string_view again,
                  absl::string_view last, absl::string_view advice) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void InterruptChannels(uint64_t generation) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool ParkOneLocked(uint64_t token) ABSL_EXCLUSIVE_LOCKS_REQUIRED(roster_mu_);

  const BackendManifest manifest_;
  const std::shared_ptr<SupervisorEnv> env_;
  const SupervisorOptions options_;

  mutable Mutex mu_;
  CondVar changed_;  // state, current_ or deaths_ changed
  BackendState state_ ABSL_GUARDED_BY(mu_) = BackendState::kDiscovered;
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<RunningBackend> current_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<RunningBackend> spare_ ABSL_GUARDED_BY(mu_);
  // A spare StopSpareIfBusy killed, until its exit (never promoted), and why.
  std::unique_ptr<RunningBackend> dying_spare_ ABSL_GUARDED_BY(mu_);
  std::string spare_stopped_ ABSL_GUARDED_BY(mu_);
  // The env's exit watches of the children above, for Shutdown.
  std::map<const RunningBackend*, uint64_t> watches_ ABSL_GUARDED_BY(mu_);
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  // Whether the first start has been retried (StartBackend): once only.
  bool first_start_retried_ ABSL_GUARDED_BY(mu_) = false;
  // Starts begun (StartBackend numbers each), and the number of the last
  // that failed on the host's own shortage: an Acquire returns that
  // shortage only from a start begun after it was called.
  uint64_t start_attempts_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t short_attempt_ ABSL_GUARDED_BY(mu_) = 0;
  // Times on the env's clock.
  ipc::Clock::time_point started_at_ ABSL_GUARDED_BY(mu_);
  // Whether the current child has served a request (RecordSuccess).
  bool served_since_start_ ABSL_GUARDED_BY(mu_) = false;
  ipc::Clock::time_point restart_at_ ABSL_GUARDED_BY(mu_);
  // When the quarantine ends (the next Acquire then starts afresh); none:
  // until Reset.
  std::optional<ipc::Clock::time_point> quarantine_until_ ABSL_GUARDED_BY(mu_);
  ipc::Clock::time_point next_heartbeat_ ABSL_GUARDED_BY(mu_);
  // A kill the supervisor made, waiting for the child to die.
  std::optional<DeathRecord> pending_kill_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, DeathRecord> deaths_ ABSL_GUARDED_BY(mu_);  // the last few generations
  std::multimap<uint64_t, std::weak_ptr<ipc::HostChannel>> channels_ ABSL_GUARDED_BY(mu_);
  // Opens the process of opens_answered_generation_ answered (OpenAnswered).
  uint64_t opens_answered_generation_ ABSL_GUARDED_BY(mu_) = 0;
  size_t opens_answered_ ABSL_GUARDED_BY(mu_) = 0;
  RestartPolicy policy_ ABSL_GUARDED_BY(mu_);
  uint64_t restarts_ ABSL_GUARDED_BY(mu_) = 0;
  int sessions_ ABSL_GUARDED_BY(mu_) = 0;
  IdleCpuWatch idle_cpu_ ABSL_GUARDED_BY(mu_);        // of current_, reset as one starts
  IdleCpuWatch spare_idle_cpu_ ABSL_GUARDED_BY(mu_);  // of spare_, reset as one is kept
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int spare_failures_ ABSL_GUARDED_BY(mu_) = 0;  // in a row; spares stop at kMaxSpareFailures
  // No spare starts before this time on the env's clock (after one the
  // host's descriptor shortage refused), and the wait after the next such
  // refusal: 0.5 s, doubling to 30 s, 0.5 s again once a spare starts.
  ipc::Clock::time_point spare_retry_at_ ABSL_GUARDED_BY(mu_) = ipc::Clock::time_point::min();
  std::chrono::milliseconds spare_retry_delay_ ABSL_GUARDED_BY(mu_){500};

  bool threads_started_ ABSL_GUARDED_BY(mu_) = false;

  // Parking, under a lock of its own: TryPark() takes the session's own
  // lock (try only), which its thread holds while it may call the methods
  // above; never mu_ inside it.
  mutable Mutex roster_mu_ ABSL_ACQUIRED_AFTER(mu_);
  SessionBudget budget_ ABSL_GUARDED_BY(roster_mu_);
  std::map<uint64_t, Parkable*> parkable_ ABSL_GUARDED_BY(roster_mu_);
  uint64_t last_session_bytes_ ABSL_GUARDED_BY(roster_mu_) = 0;
  // Read by Status() without roster_mu_, which parking holds across Close
  // sends.
  std::atomic<uint64_t> parked_{0};

  SoloGate gate_;
  std::thread worker_;       // from the first use on, with an env that runs threads
  std::thread spare_maker_;  // likewise, only with a warm spare
};

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_SUPERVISOR_H_
