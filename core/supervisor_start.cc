// The supervisor's starts: the backend's process, first or after a death,
// cold or from a warm spare; the spare itself; the heartbeat; and what a
// start that fails leads to (a retry, failed, quarantined). The work loop
// that calls them is in supervisor.cc.

#include <algorithm>
#include <chrono>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/supervisor.h"

namespace codecvisor {
namespace {

using ipc::Clock;

// A spare that fails to start this many times in a row is not tried again.
constexpr int kMaxSpareFailures = 3;

// A spare starts once the child it would replace has served a request, or
// this long after that child started, whichever comes first. Starting a
// sandboxed process (tens of milliseconds of CPU: its namespaces, the
// runner and the plugin's libraries loading) beside the request a failover
// replays took cores from that replay: with the next spare started at
// once, a warm failover's first frame came about twice as late on two
// cores (`codecvisor-bench restart`, failover_ms_warm_p50).
constexpr std::chrono::milliseconds kSpareHoldoff{250};

// How long a restart the host's own shortage failed waits before it is tried again.
constexpr std::chrono::milliseconds kHostShortageRetry{500};
// The longest a spare refused for the host's shortage waits to try again.
constexpr std::chrono::milliseconds kSpareShortageRetryMax{30'000};

}  // namespace

bool Supervisor::WantSpare() const {
  return !stopping_ && (options_.warm_spare || manifest_.warm_spare) && state_ == BackendState::kReady &&
         spare_ == nullptr && spare_failures_ < kMaxSpareFailures;
}

Clock::time_point Supervisor::SpareDue() const {
  return std::max(served_since_start_ ? Clock::time_point::min() : started_at_ + kSpareHoldoff, spare_retry_at_);
}

void Supervisor::SpareLoop() {
  for (;;) {
    {
      MutexLock lock(&mu_);
      for (;;) {
        if (stopping_) return;
        if (!WantSpare()) {
          changed_.Wait(&mu_);
        } else if (const Clock::time_point due = SpareDue(); env_->Now() < due) {
          // The env's clock is the real one here: `due` is a real deadline.
          changed_.WaitUntil(&mu_, due);
        } else {
          break;
        }
      }
    }
    StartSpare();
  }
}

void Supervisor::StartSpare() {
  absl::StatusOr<std::unique_ptr<RunningBackend>> started = Spawn();
  std::unique_ptr<RunningBackend> unwanted;
  {
    MutexLock lock(&mu_);
    if (!started.ok() && IsHostShortage(started.status())) {
      // The host's own decoders hold its descriptors: not the spare's
      // failure, and tried again once some may have closed, each time
      // later (a spare's start takes descriptors a caller's open may need).
      spare_retry_at_ = env_->Now() + spare_retry_delay_;
      spare_retry_delay_ = std::min(2 * spare_retry_delay_, kSpareShortageRetryMax);
      return;
    }
    if (!started.ok()) {
      ++spare_failures_;
      return;
    }
    // Stopping, or the worker restarted the backend cold meanwhile and a
    // spare is no longer wanted: this one is not kept. Nor is one whose
    // exit cannot be watched, which counts as a failed spare (it was
    // started again at once, without end, while watches failed).
    if (!WantSpare()) {
      unwanted = *std::move(started);
    } else if (!Watch(**started).ok()) {
      unwanted = *std::move(started);
      ++spare_failures_;
    } else {
      spare_ = *std::move(started);
      spare_idle_cpu_.Reset();
      spare_failures_ = 0;
      spare_retry_delay_ = kHostShortageRetry;
    }
  }
  if (unwanted != nullptr) unwanted->Shutdown();
}

void Supervisor::OnFailedRestart(const absl::Status& why) {
  if (IsHostShortage(why)) {
    // The host out of descriptors for the channel: not the backend's doing,
    // and it passes when the host's own decoders close. Tried again in a
    // while, not counted against the backend; those waiting for it get
    // the shortage (Acquire).
    restart_at_ = env_->Now() + kHostShortageRetry;
    return;
  }
  // It ran before: the cause may pass (a handshake late under load, threads
  // or memory short for a moment). Count it as a crash: retried with
  // backoff, quarantined once the restart budget is spent.
  const RestartPolicy::Decision decision = policy_.OnCrash(env_->Now());
  if (!decision.quarantine) {
    restart_at_ = env_->Now() + decision.delay;
    return;
  }
  Quarantine(decision, "crashes or failed restarts", "failed to restart", why.message(), "");
}

void Supervisor::Quarantine(const RestartPolicy::Decision& decision, absl::string_view what, absl::string_view again,
                            absl::string_view last, absl::string_view advice) {
  state_ = BackendState::kQuarantined;
  const std::chrono::milliseconds lasts = policy_.OnQuarantine();
  if (lasts.count() > 0) {
    quarantine_until_ = env_->Now() + lasts;
  } else {
    quarantine_until_.reset();
  }
  const std::string until = lasts.count() > 0
                                ? absl::StrCat("; the next request after ", lasts.count() / 1000,
                                               " s starts it again, or lift the quarantine now in this process with")
                                : "; a quarantine lasts as long as its host: lift it in this process with";
  const std::string why =
      decision.after_poison
          ? absl::StrCat(": it ", again, " once ", policy_.poison_in_a_row(), " requests or opens in a row within ",
                         policy_.limits().window.count() / 1000,
                         " s were poison, with none served between (it may crash on every input)")
          : absl::StrCat(" after ", policy_.crashes_in_window(), " ", what, " within ",
                         policy_.limits().window.count() / 1000, " s");
  failure_ = absl::FailedPreconditionError(
      absl::StrCat("backend '", manifest_.name, "' (", manifest_.path, ") is quarantined", why, " (last: ", last, ")",
                   until, " Host::ResetBackend(\"", manifest_.name, "\") (Python: codecvisor.backends.reset(\"",
                   manifest_.name, "\"))", advice));
}

void Supervisor::StartBackend() {
  std::unique_ptr<RunningBackend> process;
  bool restart = false;
  uint64_t attempt = 0;
  {
    MutexLock lock(&mu_);
    process = std::move(spare_);  // a warm spare makes failover skip the cold start
    restart = generation_ > 0;
    attempt = ++start_attempts_;
  }
  // The sessions of the process that died hold descriptors a cold start
  // needs: in a host at its descriptor limit, decoders waiting for this
  // restart would otherwise hold what it lacks. (A warm spare needs none:
  // its failover is not delayed by their teardown.)
  if (restart && process == nullptr) DropDeadSessions();
  absl::Status failed;
  if (process == nullptr) {
    absl::StatusOr<std::unique_ptr<RunningBackend>> started = Spawn();
    if (started.ok()) {
      process = *std::move(started);
    } else {
      failed = started.status();
    }
  }
  std::unique_ptr<RunningBackend> unwatched;  // stopped once mu_ is released
  MutexLock lock(&mu_);
  if (process != nullptr && stopping_) {
    current_ = std::move(process);  // Shutdown() stops it
    return;
  }
  if (process != nullptr && !watches_.count(process.get())) {
    if (absl::Status s = Watch(*process); !s.ok()) {
      failed = MaybeHostShortage(absl::Status(
          s.code(), absl::StrCat("backend '", manifest_.name, "': cannot watch its process: ", s.message())));
      unwatched = std::move(process);
    }
  }
  if (process == nullptr) {
    failure_ = failed;
    if (IsHostShortage(failed)) short_attempt_ = attempt;
    // A restart's failure may pass: retried as a crash. A first start that
    // died (killed from outside: the OOM killer, a user's kill) or answered
    // late (a loaded machine) gets one more try, as a crash; one that
    // failed any other way, or twice, is for the user to fix (a library,
    // symbol, ABI or init that fails, or crashes, every time), and more
    // tries would only run the plugin's failing start again.
    const bool may_pass = absl::IsUnavailable(failed) || absl::IsDeadlineExceeded(failed);
    if (IsHostShortage(failed) && state_ == BackendState::kSpawning) {
      // A first start (or the first after a reset), and this process out
      // of descriptors for the backend's channels: not the backend's
      // doing, and it passes when the caller closes some. Those waiting
      // get the shortage; the next Acquire starts it again.
      state_ = BackendState::kDiscovered;
    } else if (state_ == BackendState::kRestarting && generation_ > 0) {
      OnFailedRestart(failed);
    } else if (may_pass && !first_start_retried_) {
      first_start_retried_ = true;
      state_ = BackendState::kRestarting;
      OnFailedRestart(failed);
    } else {
      state_ = BackendState::kFailed;
    }
    changed_.NotifyAll();
    return;
  }
  current_ = std::move(process);
  ++generation_;
  idle_cpu_.Reset();  // earlier samples are another process's
  started_at_ = env_->Now();
  served_since_start_ = false;
  state_ = BackendState::kReady;
  failure_ = absl::OkStatus();
  next_heartbeat_ = env_->Now() + options_.heartbeat_interval;
  changed_.NotifyAll();
}

void Supervisor::Heartbeat() {
  std::shared_ptr<RunningBackend> current;
  {
    MutexLock lock(&mu_);
    next_heartbeat_ = env_->Now() + options_.heartbeat_interval;
    current = current_;
  }
  if (current == nullptr) return;
  StopSpareIfBusy();
  absl::Status alive = current->Ping(Clock::now() + options_.heartbeat_interval);
  if (alive.ok()) {
    StopIfBusyWhileIdle(current);
    return;
  }
  if (current->Exited()) return;
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

void Supervisor::StopIfBusyWhileIdle(const std::shared_ptr<RunningBackend>& current) {
  const std::optional<std::chrono::nanoseconds> cpu = current->CpuTime();
  MutexLock lock(&mu_);
  if (current_ != current) return;
  // No decoder on it: no session open, none opening, no request.
  std::optional<std::string> busy = idle_cpu_.Sample(env_->Now(), sessions_ == 0, cpu);
  if (!busy.has_value() || pending_kill_.has_value()) return;
  DeathRecord kill;
  kill.generation = generation_;
  kill.killed_by_supervisor = true;
  kill.kill_reason = absl::StrCat(*busy, " (its threads kept running after its sessions closed): stopped");
  pending_kill_ = kill;
  current->Kill();
}

void Supervisor::StopSpareIfBusy() {
  MutexLock lock(&mu_);
  if (spare_ == nullptr) return;
  // (Its CPU time, a procfs read, under mu_: spare_ may be promoted or
  // replaced as soon as it is let go.)
  const std::optional<std::string> busy = spare_idle_cpu_.Sample(env_->Now(), /*idle=*/true, spare_->CpuTime());
  if (!busy.has_value()) return;
  // Its plugin would do the same in every spare: none is started again.
  // Out of spare_ before the kill: a restart before its exit (the backend
  // in use dying meanwhile) must not take a dying spare for a ready one.
  spare_failures_ = kMaxSpareFailures;
  spare_stopped_ = absl::StrCat("its warm spare ", *busy, ": stopped, and no spare is kept for it again");
  dying_spare_ = std::move(spare_);
  dying_spare_->Kill();
}

}  // namespace codecvisor
