#include "core/supervisor.h"

#include <algorithm>
#include <system_error>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"

namespace codecvisor {
namespace {

using ipc::Clock;

constexpr size_t kDeathsKept = 16;
constexpr auto kReapWait = std::chrono::seconds(5);
constexpr auto kDeathGrace = std::chrono::seconds(1);

}  // namespace

const char* StateName(BackendState state) {
  switch (state) {
    case BackendState::kDiscovered:
      return "discovered";
    case BackendState::kFailed:
      return "failed";
    case BackendState::kSpawning:
      return "spawning";
    case BackendState::kReady:
      return "ready";
    case BackendState::kRestarting:
      return "restarting";
    case BackendState::kQuarantined:
      return "quarantined";
  }
  return "unknown";
}

namespace {

// The host's options, with the manifest's own start timeout where it sets one.
SupervisorOptions WithManifestsStartTimeout(SupervisorOptions options, const BackendManifest& manifest) {
  if (manifest.start_timeout.has_value()) options.spawn_timeout = *manifest.start_timeout;
  return options;
}

}  // namespace

Supervisor::Supervisor(BackendManifest manifest, std::shared_ptr<SupervisorEnv> env, SupervisorOptions options)
    : manifest_(std::move(manifest)),
      env_(std::move(env)),
      options_(WithManifestsStartTimeout(options, manifest_)),
      policy_(manifest_.restart),
      budget_(options_.spawn.sandbox ? SessionCapacity(manifest_.sandbox.memory_mb) : 0) {}

Supervisor::~Supervisor() { Shutdown(); }

absl::Status Supervisor::StartThreadsLocked() {
  if (threads_started_ || stopping_ || !env_->RunsThreads()) return absl::OkStatus();
  try {
    worker_ = std::thread([this] { WorkLoop(); });
  } catch (const std::system_error& e) {
    return ThreadNotStarted(absl::StrCat("a thread to supervise backend '", manifest_.name, "'"), e);
  }
  threads_started_ = true;
  if (options_.warm_spare || manifest_.warm_spare) {
    try {
      spare_maker_ = std::thread([this] { SpareLoop(); });
    } catch (const std::system_error&) {
      // No warm spare: a restart starts the backend cold.
    }
  }
  return absl::OkStatus();
}

void Supervisor::Shutdown() {
  std::shared_ptr<RunningBackend> current;
  std::unique_ptr<RunningBackend> spare, dying_spare;
  std::map<const RunningBackend*, uint64_t> watches;
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    changed_.NotifyAll();
  }
  // No thread starts once stopping_ is set.
  if (worker_.joinable()) worker_.join();
  if (spare_maker_.joinable()) spare_maker_.join();
  {
    MutexLock lock(&mu_);
    watches = std::move(watches_);
    watches_.clear();
  }
  for (const auto& [backend, id] : watches) env_->Unwatch(id);
  {
    MutexLock lock(&mu_);
    current = std::move(current_);
    spare = std::move(spare_);
    dying_spare = std::move(dying_spare_);
    if (current != nullptr) InterruptChannels(generation_);
    state_ = BackendState::kDiscovered;
  }
  if (current != nullptr) current->Shutdown();
  if (spare != nullptr) spare->Shutdown();
  if (dying_spare != nullptr) dying_spare->Shutdown();
}

absl::StatusOr<std::unique_ptr<RunningBackend>> Supervisor::Spawn() {
  return env_->Start(manifest_, options_.spawn, Clock::now() + options_.spawn_timeout);
}

absl::Status Supervisor::Watch(const RunningBackend& backend) {
  absl::StatusOr<uint64_t> id = env_->WatchExit(backend, [this, b = &backend] { OnExit(b); });
  if (!id.ok()) return id.status();
  watches_[&backend] = *id;
  return absl::OkStatus();
}

void Supervisor::SpawnEagerly() {
  MutexLock lock(&mu_);
  if (state_ == BackendState::kDiscovered) {
    state_ = BackendState::kSpawning;
    if (absl::Status started = StartThreadsLocked(); !started.ok()) {
      state_ = BackendState::kDiscovered;  // the next Acquire tries again
      failure_ = started;
    }
    changed_.NotifyAll();
  }
}

absl::StatusOr<BackendHandle> Supervisor::Acquire(ipc::Deadline deadline) {
  MutexLock lock(&mu_);
  // Starts begun before this call: a shortage is returned only from a
  // later one.
  const uint64_t attempts_before = start_attempts_;
  for (;;) {
    if (stopping_) {
      return absl::UnavailableError(absl::StrCat("backend '", manifest_.name, "' is shut down: its host was destroyed"));
    }
    switch (state_) {
      case BackendState::kReady:
        return BackendHandle{current_, generation_};
      case BackendState::kQuarantined:
        if (!quarantine_until_.has_value() || env_->Now() < *quarantine_until_) return failure_;
        // Its time is over: restarted now, with the budget whole. As a
        // restart, not a first start: one that fails counts as a crash
        // (retried, or quarantined again for longer), never `failed`.
        policy_.LiftQuarantine();
        quarantine_until_.reset();
        state_ = BackendState::kRestarting;
        restart_at_ = env_->Now();
        failure_ = absl::OkStatus();
        changed_.NotifyAll();
        continue;
      case BackendState::kFailed:
        return failure_;
      case BackendState::kDiscovered:
        // The start this call waited for failed for want of the host's own
        // descriptors: starting again at once would fail the same way.
        if (short_attempt_ > attempts_before && IsHostShortage(failure_)) return failure_;
        state_ = BackendState::kSpawning;
        if (absl::Status started = StartThreadsLocked(); !started.ok()) {
          state_ = BackendState::kDiscovered;  // the next Acquire tries again
          failure_ = started;
          return started;
        }
        changed_.NotifyAll();
        break;
      case BackendState::kRestarting:
        // Likewise a restart (retried in a while, OnFailedRestart): the
        // caller, who may hold the descriptors it lacks, hears why now
        // rather than at its deadline. One that comes while the retry
        // waits has it made now (or, if one is under way, the next one),
        // and gets its outcome: the caller may have just closed what the
        // restart lacked.
        if (short_attempt_ > attempts_before && IsHostShortage(failure_)) return failure_;
        if (IsHostShortage(failure_) && start_attempts_ == attempts_before) {
          restart_at_ = std::min(restart_at_, env_->Now());
          changed_.NotifyAll();
        }
        break;
      case BackendState::kSpawning:
        break;
    }
    if (!changed_.WaitUntil(&mu_, deadline) && Clock::now() >= deadline) {
      // A start still under way when the caller's deadline passed: say
      // what it is doing and when it gives up, not only that it is late.
      const std::string starting =
          state_ == BackendState::kSpawning
              ? absl::StrCat(
                    " (its start is sandboxing it, loading the plugin's library and running its create(); "
                    "each attempt gives up after ",
                    options_.spawn_timeout.count(), " ms: [restart] start_timeout_seconds in its manifest)")
              : "";
      return absl::DeadlineExceededError(
          absl::StrCat("backend '", manifest_.name, "' is ", StateName(state_), " and was not ready in time", starting,
                       failure_.ok() ? "" : absl::StrCat(" (last failed start: ", failure_.message(), ")")));
    }
  }
}

absl::StatusOr<DeathRecord> Supervisor::ReportFailure(uint64_t generation, uint64_t session, bool kill,
                                                      const std::string& reason, ipc::Deadline deadline) {
  // A hung-up peer is usually a child in the middle of dying: its sockets
  // close before its pidfd turns readable. Killing it then would record the
  // wrong cause and blame the wrong request.
  const auto kill_after = kill ? Clock::now() : Clock::now() + kDeathGrace;
  MutexLock lock(&mu_);
  for (;;) {
    if (auto it = deaths_.find(generation); it != deaths_.end()) return it->second;
    if (generation < generation_ && !stopping_) {
      // Gone so many deaths ago that its record was dropped (a decoder idle
      // while others' requests had it restarted): the session reopens on
      // the current generation like any other that outlived its backend.
      DeathRecord forgotten;
      forgotten.generation = generation;
      forgotten.forgotten = true;
      return forgotten;
    }
    if (stopping_) {
      // Not a death: the host is being destroyed, and stopped the process.
      return absl::UnavailableError(
          absl::StrCat("backend '", manifest_.name, "' is shut down: its host was destroyed"));
    }
    if (generation != generation_ || current_ == nullptr) {
      return absl::UnavailableError(absl::StrCat("backend '", manifest_.name, "' generation ", generation,
                                                 " is gone and its exit was not recorded"));
    }
    if (!pending_kill_.has_value() && Clock::now() >= kill_after && !current_->Exited()) {
      // Still alive although a session gave up on it: a hang or a protocol
      // violation. Kill it, and blame only this session's request.
      DeathRecord kill;
      kill.generation = generation;
      kill.killed_by_supervisor = true;
      kill.kill_reason = reason;
      kill.blamed_session = session;
      pending_kill_ = kill;
      current_->Kill();
    }
    const auto wake = pending_kill_.has_value() || Clock::now() >= kill_after ? deadline : std::min(deadline, kill_after);
    if (!changed_.WaitUntil(&mu_, wake) && Clock::now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat("backend '", manifest_.name, "' did not exit in time"));
    }
  }
}

void Supervisor::OnExit(const RunningBackend* backend) {
  // The watch is forgotten in the last critical section that touches this
  // supervisor: until then Shutdown() finds it and waits for this call.
  std::shared_ptr<RunningBackend> current;
  std::unique_ptr<RunningBackend> dead_spare;
  {
    MutexLock lock(&mu_);
    if (current_.get() == backend) {
      current = current_;
    } else {
      watches_.erase(backend);
      if (spare_.get() == backend) {
        dead_spare = std::move(spare_);
        ++spare_failures_;
        changed_.NotifyAll();  // the spare maker starts another
      } else if (dying_spare_.get() == backend) {
        dead_spare = std::move(dying_spare_);
      }
    }
  }
  if (dead_spare != nullptr) dead_spare->Shutdown();
  if (current == nullptr) return;
  absl::StatusOr<ExitStatus> exit = current->Reap(Clock::now() + kReapWait);
  MutexLock lock(&mu_);
  watches_.erase(backend);
  if (current_ == current) OnDeath(exit.ok() ? *exit : ExitStatus{true, 9}, *current);
}

void Supervisor::OnDeath(const ExitStatus& exit, const RunningBackend& process) {
  DeathRecord record;
  record.generation = generation_;
  record.exit = exit;
  std::vector<ipc::CrashHints> hints = {process.ControlCrashHints()};
  auto [first, last] = channels_.equal_range(generation_);
  for (auto it = first; it != last; ++it) {
    if (auto channel = it->second.lock()) hints.push_back(channel->ReadCrashHints());
  }
  AddCrashHints(hints, &record);
  record.oom_killed = process.OomKilled();
  record.when = std::chrono::system_clock::now();
  if (pending_kill_.has_value() && pending_kill_->generation == generation_) {
    record.killed_by_supervisor = true;
    record.kill_reason = pending_kill_->kill_reason;
    record.blamed_session = pending_kill_->blamed_session;
  }
  pending_kill_.reset();
  deaths_[generation_] = record;
  while (deaths_.size() > kDeathsKept) deaths_.erase(deaths_.begin());
  InterruptChannels(generation_);
  current_.reset();
  if (stopping_) return;
  const RestartPolicy::Decision decision = policy_.OnCrash(env_->Now(), record.generation);
  if (decision.quarantine) {
    Quarantine(decision, "crashes", "crashed again", record.Describe(), CrashAdvice(record, BacktraceEnabled()));
  } else {
    state_ = BackendState::kRestarting;
    restart_at_ = env_->Now() + decision.delay;
    ++restarts_;
  }
  changed_.NotifyAll();
}

void Supervisor::InterruptChannels(uint64_t generation) {
  auto [begin, end] = channels_.equal_range(generation);
  for (auto it = begin; it != end; ++it) {
    if (auto channel = it->second.lock()) channel->Interrupt();
  }
  channels_.erase(begin, end);
}

void Supervisor::WatchChannel(uint64_t generation, std::weak_ptr<ipc::HostChannel> channel) {
  MutexLock lock(&mu_);
  // Drop entries of channels already gone, so the map stays small.
  for (auto it = channels_.begin(); it != channels_.end();) {
    it = it->second.expired() ? channels_.erase(it) : std::next(it);
  }
  if (generation == generation_ && current_ != nullptr) {
    channels_.emplace(generation, std::move(channel));
  } else if (auto c = channel.lock()) {
    c->Interrupt();  // that generation is already dead
  }
}

void Supervisor::OpenAnswered(uint64_t generation) {
  MutexLock lock(&mu_);
  if (opens_answered_generation_ != generation) opens_answered_ = 0;
  opens_answered_generation_ = generation;
  ++opens_answered_;
}

bool Supervisor::AnsweredOpensAndHoldsNoSession(uint64_t generation) {
  MutexLock lock(&mu_);
  if (opens_answered_generation_ != generation || opens_answered_ == 0) return false;
  for (auto [it, end] = channels_.equal_range(generation); it != end; ++it) {
    if (!it->second.expired()) return false;
  }
  return true;
}

void Supervisor::SessionOpened() {
  MutexLock lock(&mu_);
  ++sessions_;
}

void Supervisor::SessionClosed() {
  MutexLock lock(&mu_);
  --sessions_;
}

void Supervisor::RecordSuccess(uint64_t generation) {
  MutexLock lock(&mu_);
  if (generation != generation_ || current_ == nullptr) return;
  policy_.OnSuccess();
  if (!served_since_start_) {
    served_since_start_ = true;
    changed_.NotifyAll();  // the spare maker may start the spare
  }
}

void Supervisor::RecordPoison(std::span<const uint64_t> generations, bool toward_quarantine) {
  MutexLock lock(&mu_);
  policy_.OnPoison(generations, env_->Now(), toward_quarantine);
}

void Supervisor::Reset() {
  MutexLock lock(&mu_);
  policy_.Reset();
  quarantine_until_.reset();
  if (state_ == BackendState::kQuarantined || state_ == BackendState::kFailed) {
    state_ = BackendState::kDiscovered;
    failure_ = absl::OkStatus();
    first_start_retried_ = false;
    changed_.NotifyAll();
  }
}

SupervisorStatus Supervisor::Status() const {
  MutexLock lock(&mu_);
  SupervisorStatus s;
  s.state = state_;
  s.diagnostic = failure_.ok() ? "" : std::string(failure_.message());
  if (current_ != nullptr) {
    s.pid = current_->pid();
    s.sandbox = current_->DescribeSandbox();
    s.hello = current_->hello();
    s.uptime = env_->Now() - started_at_;
    s.control_call_in_vendor_code = current_->ControlCrashHints().in_call != 0;
  }
  s.generation = generation_;
  s.sessions = sessions_;
  s.restarts = restarts_;
  s.parked = parked_.load(std::memory_order_relaxed);
  if (!deaths_.empty()) s.last_exit = deaths_.rbegin()->second;
  s.spare_ready = spare_ != nullptr;
  s.spare_stopped = spare_stopped_;
  return s;
}

Supervisor::Work Supervisor::NextWork(Clock::time_point now, Clock::time_point* due) {
  *due = Clock::time_point::max();
  if (state_ == BackendState::kSpawning || (state_ == BackendState::kRestarting && now >= restart_at_)) {
    return Work::kSpawn;
  }
  if (state_ == BackendState::kRestarting) *due = restart_at_;
  if (current_ != nullptr && options_.heartbeat_interval.count() > 0) {
    if (now >= next_heartbeat_) return Work::kHeartbeat;
    *due = std::min(*due, next_heartbeat_);
  }
  return Work::kNone;
}

void Supervisor::DoWork(Work work) {
  switch (work) {
    case Work::kSpawn:
      StartBackend();
      break;
    case Work::kHeartbeat:
      Heartbeat();
      break;
    case Work::kNone:
      break;
  }
}

void Supervisor::WorkLoop() {
  MutexLock lock(&mu_);
  while (!stopping_) {
    Clock::time_point due;
    const Work work = NextWork(env_->Now(), &due);
    if (work == Work::kNone) {
      // The env's clock is the real one here: `due` is a real deadline.
      if (due == Clock::time_point::max()) {
        changed_.Wait(&mu_);
      } else {
        changed_.WaitUntil(&mu_, due);
      }
      continue;
    }
    mu_.Unlock();
    DoWork(work);
    mu_.Lock();
  }
}

void Supervisor::RunDueWorkForTest() {
  for (;;) {
    Work work;
    bool spare;
    {
      MutexLock lock(&mu_);
      if (stopping_) return;
      Clock::time_point due;
      work = NextWork(env_->Now(), &due);
      spare = WantSpare() && env_->Now() >= SpareDue();
    }
    if (work != Work::kNone) {
      DoWork(work);
    } else if (spare) {
      StartSpare();
    } else {
      return;
    }
  }
}

}  // namespace codecvisor
