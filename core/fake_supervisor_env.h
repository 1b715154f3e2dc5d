// File: core/fake_supervisor_env.h
//
// A SupervisorEnv for unit tests: no process, no thread, and a clock that
// moves only when the test says so. Each Start() makes a FakeBackend (or
// fails, as the test scripted); the test kills, hangs and crashes them and
// delivers their exits, and the Supervisor under test reacts exactly as it
// would to a real child. Drive it with Supervisor::RunDueWorkForTest().
//
// Thread-safety: every method may be called from any thread; exit
// callbacks run on the thread that calls Exit().

#ifndef CODECVISOR_CORE_FAKE_SUPERVISOR_ENV_H_
#define CODECVISOR_CORE_FAKE_SUPERVISOR_ENV_H_

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "base/mutex.h"
#include "core/supervisor_env.h"

namespace codecvisor {

// The state of one fake backend child, which the test inspects and
// scripts. Owned by the env, so it outlives the RunningBackend the
// supervisor holds (and drops after the child's death).
class FakeChild {
 public:
  explicit FakeChild(int serial) : serial_(serial) {}

  // The n-th child the env started, from 1.
  int serial() const { return serial_; }
  // SIGKILLs the supervisor sent it.
  int kills() const;
  // Whether the supervisor stopped it (Shutdown).
  bool shut_down() const;
  bool exited() const;
  // What the runner recorded on the control channel before dying.
  void SetControlCrashHints(ipc::CrashHints hints);
  void SetOomKilled(bool oom);
  // Heartbeats fail with this from now on (a hung child).
  void SetPingStatus(absl::Status status);
  // The CPU time it has used (0 until set; nullopt: unknown).
  void SetCpuTime(std::optional<std::chrono::nanoseconds> cpu);

 private:
  friend class FakeBackend;
  friend class FakeSupervisorEnv;
  const int serial_;
  mutable Mutex mu_;
  int kills_ ABSL_GUARDED_BY(mu_) = 0;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<ExitStatus> exit_ ABSL_GUARDED_BY(mu_);
  ipc::CrashHints control_hints_ ABSL_GUARDED_BY(mu_);
  bool oom_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status ping_ ABSL_GUARDED_BY(mu_);
  std::optional<std::chrono::nanoseconds> cpu_ ABSL_GUARDED_BY(mu_){0};
};

class FakeSupervisorEnv final : public SupervisorEnv {
 public:
  FakeSupervisorEnv();

  ipc::Clock::time_point Now() const override;
  absl::StatusOr<std::unique_ptr<RunningBackend>> Start(const BackendManifest& manifest, const SpawnOptions& spawn,
                                                        ipc::Deadline deadline) override;
  absl::StatusOr<uint64_t> WatchExit(const RunningBackend& backend, std::function<void()> on_exit) override;
  void Unwatch(uint64_t id) override;
  bool RunsThreads() const override { return false; }

  // Moves the clock.
  void Advance(std::chrono::milliseconds by);
  // The next Start() calls fail with these, in order; then they succeed.
  void FailNextStarts(std::vector<absl::Status> failures);
  // The next `n` WatchExit calls fail (epoll out of room).
  void FailNextWatches(int n);
  // How many times Start() was called, failures included.
  int starts() const;
  // The child of the n-th successful start (from 1); null if none.
  FakeChild* child(int serial) const;
  // How many children started successfully.
  int children() const;
  // The child ends with `exit`: the supervisor's exit callback runs now, on
  // this thread, as the watcher thread would run it.
  void Exit(FakeChild* child, ExitStatus exit);
  // Like Exit() for every backend killed but not yet exited: the kernel
  // carrying out the supervisor's SIGKILLs.
  void DeliverKills();
  // Exit watches still registered.
  int watches() const;

 private:
  mutable Mutex mu_;
  ipc::Clock::time_point now_ ABSL_GUARDED_BY(mu_);
  std::deque<absl::Status> failures_ ABSL_GUARDED_BY(mu_);
  int watch_failures_ ABSL_GUARDED_BY(mu_) = 0;
  int starts_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::shared_ptr<FakeChild>> children_ ABSL_GUARDED_BY(mu_);
  // Exit watches: the child's serial and the callback.
  std::map<uint64_t, std::pair<int, std::function<void()>>> watches_ ABSL_GUARDED_BY(mu_);
  uint64_t next_watch_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_FAKE_SUPERVISOR_ENV_H_
