#include "core/supervisor.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace codecvisor {
namespace {

using ipc::Clock;

constexpr size_t kDeathsKept = 16;
constexpr int kMaxSpareFailures = 3;
constexpr auto kReapWait = std::chrono::seconds(5);
constexpr auto kDeathGrace = std::chrono::seconds(1);

bool Exited(int pidfd) {
  pollfd p{pidfd, POLLIN, 0};
  return poll(&p, 1, 0) == 1;
}

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

std::string DeathRecord::Describe() const {
  if (killed_by_supervisor) return absl::StrCat("killed by codecvisor: ", kill_reason);
  return DescribeExit(exit, recorded_signal, violation_syscall, oom_killed);
}

Supervisor::Supervisor(BackendManifest manifest, InstallLayout layout, std::shared_ptr<ProcessLauncher> launcher,
                       SupervisorOptions options)
    : manifest_(std::move(manifest)),
      layout_(std::move(layout)),
      launcher_(std::move(launcher)),
      options_(options),
      policy_(manifest_.restart),
      wake_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  watcher_ = std::thread([this] { WatchLoop(); });
  if (options_.warm_spare || manifest_.warm_spare) spare_maker_ = std::thread([this] { SpareLoop(); });
}

Supervisor::~Supervisor() { Shutdown(); }

void Supervisor::Wake() {
  uint64_t one = 1;
  (void)!write(wake_fd_.get(), &one, sizeof(one));
}

void Supervisor::Shutdown() {
  std::shared_ptr<BackendProcess> current;
  std::unique_ptr<BackendProcess> spare;
  {
    MutexLock lock(&mu_);
    if (stopping_ && !watcher_.joinable()) return;
    stopping_ = true;
    changed_.NotifyAll();
  }
  Wake();
  if (watcher_.joinable()) watcher_.join();
  if (spare_maker_.joinable()) spare_maker_.join();
  {
    MutexLock lock(&mu_);
    current = std::move(current_);
    spare = std::move(spare_);
    if (current != nullptr) InterruptChannels(generation_);
    state_ = BackendState::kDiscovered;
  }
  if (current != nullptr) current->Shutdown();
  if (spare != nullptr) spare->Shutdown();
}

absl::StatusOr<std::unique_ptr<BackendProcess>> Supervisor::Spawn() {
  return BackendProcess::Start(manifest_, layout_, launcher_, options_.spawn, Clock::now() + options_.spawn_timeout);
}

void Supervisor::SpawnEagerly() {
  MutexLock lock(&mu_);
  if (state_ == BackendState::kDiscovered) {
    state_ = BackendState::kSpawning;
    Wake();
  }
}

absl::StatusOr<BackendHandle> Supervisor::Acquire(ipc::Deadline deadline) {
  MutexLock lock(&mu_);
  for (;;) {
    if (stopping_) return absl::UnavailableError(absl::StrCat("backend '", manifest_.name, "' is shut down"));
    switch (state_) {
      case BackendState::kReady:
        return BackendHandle{current_, generation_};
      case BackendState::kFailed:
      case BackendState::kQuarantined:
        return failure_;
      case BackendState::kDiscovered:
        state_ = BackendState::kSpawning;
        Wake();
        break;
      case BackendState::kSpawning:
      case BackendState::kRestarting:
        break;
    }
    if (!changed_.WaitUntil(&mu_, deadline) && Clock::now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "backend '", manifest_.name, "' is ", StateName(state_), " and was not ready in time",
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
    if (generation != generation_ || current_ == nullptr || stopping_) {
      return absl::UnavailableError(absl::StrCat("backend '", manifest_.name, "' generation ", generation,
                                                 " is gone and its exit was not recorded"));
    }
    if (!pending_kill_.has_value() && Clock::now() >= kill_after && !Exited(current_->pidfd())) {
      // Still alive although a session gave up on it: a hang or a protocol
      // violation. Kill it, and blame only this session's request.
      DeathRecord kill;
      kill.generation = generation;
      kill.killed_by_supervisor = true;
      kill.kill_reason = reason;
      kill.blamed_session = session;
      pending_kill_ = kill;
      current_->Kill();
      Wake();
    }
    const auto wake = pending_kill_.has_value() || Clock::now() >= kill_after ? deadline : std::min(deadline, kill_after);
    if (!changed_.WaitUntil(&mu_, wake) && Clock::now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat("backend '", manifest_.name, "' did not exit in time"));
    }
  }
}

void Supervisor::OnDeath(const ExitStatus& exit, const BackendProcess& process) {
  DeathRecord record;
  record.generation = generation_;
  record.exit = exit;
  // A fault recorded on a thread inside a vendor call names its culprit; one
  // on a thread in no vendor call (a plugin's worker thread, the runner's
  // own code: the stray fault the runner records on the control region)
  // names nobody, even while an open is in vendor code on the control
  // channel. So does an exit() that the sandbox caught inside a vendor call
  // (crash_hints.h). The culprit's signal wins over a stray one.
  bool signal_is_stray = false;
  auto note = [&](ipc::CrashHints hints) {
    if (hints.in_call != 0) ++record.suspects;
    if (hints.exit_code >= 0) record.exit_recorded |= hints.in_call != 0;
    const bool culprit = hints.fault_signal != 0 && hints.in_call != 0;
    const uint32_t signal = hints.any_fault_signal();
    if (signal == 0) return;
    record.culprit_recorded |= culprit;
    if (record.recorded_signal == 0 || (signal_is_stray && culprit)) {
      record.recorded_signal = signal;
      signal_is_stray = hints.fault_signal == 0;
    }
    if (record.violation_syscall < 0) record.violation_syscall = hints.violation_syscall;
  };
  note(process.ControlCrashHints());
  auto [first, last] = channels_.equal_range(generation_);
  for (auto it = first; it != last; ++it) {
    if (auto channel = it->second.lock()) note(channel->ReadCrashHints());
  }
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
  const RestartPolicy::Decision decision = policy_.OnCrash(Clock::now());
  if (decision.quarantine) {
    state_ = BackendState::kQuarantined;
    failure_ = absl::FailedPreconditionError(absl::StrCat(
        "backend '", manifest_.name, "' (", manifest_.path, ") is quarantined after ",
        policy_.crashes_in_window(), " crashes within ", policy_.limits().window.count() / 1000,
        " s (last: ", record.Describe(), "); lift it with `codecvisor backends --reset ", manifest_.name,
        "` or Host::ResetBackend()"));
  } else {
    state_ = BackendState::kRestarting;
    restart_at_ = Clock::now() + decision.delay;
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

void Supervisor::SessionOpened() {
  MutexLock lock(&mu_);
  ++sessions_;
}

void Supervisor::SessionClosed() {
  MutexLock lock(&mu_);
  --sessions_;
}

void Supervisor::RecordSuccess() {
  MutexLock lock(&mu_);
  policy_.OnSuccess();
}

void Supervisor::Reset() {
  MutexLock lock(&mu_);
  policy_.Reset();
  if (state_ == BackendState::kQuarantined || state_ == BackendState::kFailed) {
    state_ = BackendState::kDiscovered;
    failure_ = absl::OkStatus();
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
    s.sandbox = current_->sandbox().Describe();
    s.hello = current_->hello();
    s.uptime = Clock::now() - started_at_;
  }
  s.generation = generation_;
  s.sessions = sessions_;
  s.restarts = restarts_;
  if (!deaths_.empty()) s.last_exit = deaths_.rbegin()->second;
  s.spare_ready = spare_ != nullptr;
  return s;
}

bool Supervisor::WantSpare() const {
  return !stopping_ && state_ == BackendState::kReady && spare_ == nullptr && spare_failures_ < kMaxSpareFailures;
}

void Supervisor::SpareLoop() {
  for (;;) {
    {
      MutexLock lock(&mu_);
      while (!stopping_ && !WantSpare()) changed_.Wait(&mu_);
      if (stopping_) return;
    }
    absl::StatusOr<std::unique_ptr<BackendProcess>> started = Spawn();
    std::unique_ptr<BackendProcess> unwanted;
    {
      MutexLock lock(&mu_);
      if (!started.ok()) {
        ++spare_failures_;
        continue;
      }
      // Stopping, or the watcher restarted the backend cold meanwhile and
      // a spare is no longer wanted: this one is not kept.
      if (!WantSpare()) {
        unwanted = *std::move(started);
      } else {
        spare_ = *std::move(started);
        spare_failures_ = 0;
      }
    }
    if (unwanted != nullptr) {
      unwanted->Shutdown();
    } else {
      Wake();  // the watcher now watches the spare's pidfd too
    }
  }
}

void Supervisor::WatchLoop() {
  auto next_heartbeat = Clock::now() + options_.heartbeat_interval;
  for (;;) {
    bool spawn = false, heartbeat = false;
    int pidfd = -1, spare_pidfd = -1;
    std::shared_ptr<BackendProcess> current;
    Clock::time_point wake_at = Clock::now() + std::chrono::seconds(1);
    {
      MutexLock lock(&mu_);
      if (stopping_) return;
      const auto now = Clock::now();
      if (state_ == BackendState::kSpawning || (state_ == BackendState::kRestarting && now >= restart_at_)) {
        spawn = true;
      } else if (state_ == BackendState::kRestarting) {
        wake_at = restart_at_;
      }
      if (current_ != nullptr) {
        current = current_;
        pidfd = current_->pidfd();
        if (options_.heartbeat_interval.count() > 0) {
          heartbeat = now >= next_heartbeat;
          wake_at = std::min(wake_at, next_heartbeat);
        }
      }
      if (spare_ != nullptr) spare_pidfd = spare_->pidfd();
    }

    if (spawn) {
      std::unique_ptr<BackendProcess> process;
      {
        MutexLock lock(&mu_);
        process = std::move(spare_);  // a warm spare makes failover skip the cold start
      }
      if (process == nullptr) {
        absl::StatusOr<std::unique_ptr<BackendProcess>> started = Spawn();
        if (!started.ok()) {
          MutexLock lock(&mu_);
          failure_ = started.status();
          if (state_ == BackendState::kRestarting) {
            // It ran before: the cause may pass (a handshake late under
            // load, threads or memory short for a moment). Count it as a
            // crash: retried with backoff, quarantined once the restart
            // budget is spent.
            const RestartPolicy::Decision decision = policy_.OnCrash(Clock::now());
            if (!decision.quarantine) {
              restart_at_ = Clock::now() + decision.delay;
            } else {
              state_ = BackendState::kQuarantined;
              failure_ = absl::FailedPreconditionError(absl::StrCat(
                  "backend '", manifest_.name, "' (", manifest_.path, ") is quarantined after ",
                  policy_.crashes_in_window(), " crashes or failed restarts within ",
                  policy_.limits().window.count() / 1000, " s (last: ", started.status().message(),
                  "); lift it with `codecvisor backends --reset ", manifest_.name, "` or Host::ResetBackend()"));
            }
          } else {
            state_ = BackendState::kFailed;  // it never ran: a load failure is for the user to fix
          }
          changed_.NotifyAll();
          continue;
        }
        process = *std::move(started);
      }
      MutexLock lock(&mu_);
      if (stopping_) {
        current_ = std::move(process);  // Shutdown() stops it
        return;
      }
      current_ = std::move(process);
      ++generation_;
      started_at_ = Clock::now();
      state_ = BackendState::kReady;
      failure_ = absl::OkStatus();
      next_heartbeat = Clock::now() + options_.heartbeat_interval;
      changed_.NotifyAll();
      continue;
    }

    if (heartbeat) {
      next_heartbeat = Clock::now() + options_.heartbeat_interval;
      absl::Status alive = current->Ping(Clock::now() + options_.heartbeat_interval);
      if (!alive.ok() && !Exited(pidfd)) {
        MutexLock lock(&mu_);
        if (current_ == current && !pending_kill_.has_value()) {
          DeathRecord kill;
          kill.generation = generation_;
          kill.killed_by_supervisor = true;
          kill.kill_reason = absl::StrCat("no answer to a heartbeat: ", alive.message());
          pending_kill_ = kill;
          current->Kill();
        }
      }
      continue;
    }

    pollfd fds[3] = {{wake_fd_.get(), POLLIN, 0}, {pidfd, POLLIN, 0}, {spare_pidfd, POLLIN, 0}};
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(wake_at - Clock::now()).count();
    poll(fds, 3, static_cast<int>(std::clamp<int64_t>(ms, 0, 1000)));
    if (fds[0].revents & POLLIN) {
      uint64_t drained;
      (void)!read(wake_fd_.get(), &drained, sizeof(drained));
    }
    if (pidfd >= 0 && (fds[1].revents & POLLIN)) {
      absl::StatusOr<ExitStatus> exit = current->Reap(Clock::now() + kReapWait);
      MutexLock lock(&mu_);
      if (current_ == current) OnDeath(exit.ok() ? *exit : ExitStatus{true, 9}, *current);
    }
    if (spare_pidfd >= 0 && (fds[2].revents & POLLIN)) {
      std::unique_ptr<BackendProcess> dead;
      {
        MutexLock lock(&mu_);
        if (spare_ != nullptr && spare_->pidfd() == spare_pidfd) dead = std::move(spare_);
        ++spare_failures_;
        changed_.NotifyAll();  // the spare maker starts another
      }
      if (dead != nullptr) dead->Shutdown();
    }
  }
}

}  // namespace codecvisor
