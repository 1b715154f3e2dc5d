#include "core/fake_supervisor_env.h"

#include <signal.h>

#include <utility>

#include "absl/strings/str_cat.h"

namespace codecvisor {

// What the supervisor holds: a view of a FakeChild.
class FakeBackend final : public RunningBackend {
 public:
  explicit FakeBackend(std::shared_ptr<FakeChild> child) : child_(std::move(child)) {}

  absl::StatusOr<OpenedSession> OpenSession(int, ipc::OpenSession, uint32_t, ipc::Deadline, bool* channel_failure,
                                            uint64_t* file_token) override {
    *channel_failure = false;
    *file_token = 0;
    return absl::UnimplementedError("a fake backend opens no session");
  }
  ipc::CrashHints ControlCrashHints() const override {
    MutexLock lock(&child_->mu_);
    return child_->control_hints_;
  }
  bool OomKilled() const override {
    MutexLock lock(&child_->mu_);
    return child_->oom_;
  }
  void Kill() override {
    MutexLock lock(&child_->mu_);
    ++child_->kills_;
  }
  bool Exited() const override { return child_->exited(); }
  absl::StatusOr<ExitStatus> Reap(ipc::Deadline) override {
    MutexLock lock(&child_->mu_);
    if (!child_->exit_.has_value()) return absl::DeadlineExceededError("the fake child has not exited");
    return *child_->exit_;
  }
  absl::Status Ping(ipc::Deadline) override {
    MutexLock lock(&child_->mu_);
    if (child_->exit_.has_value()) return absl::UnavailableError("the fake child has exited");
    return child_->ping_;
  }
  void Shutdown() override {
    MutexLock lock(&child_->mu_);
    child_->shut_down_ = true;
    if (!child_->exit_.has_value()) child_->exit_ = ExitStatus{false, 0};
  }
  int pidfd() const override { return -1; }
  pid_t pid() const override { return 1000 + child_->serial(); }
  std::optional<std::chrono::nanoseconds> CpuTime() const override {
    MutexLock lock(&child_->mu_);
    return child_->cpu_;
  }
  const ipc::HelloReply& hello() const override { return hello_; }
  std::string DescribeSandbox() const override { return "none"; }
  int serial() const { return child_->serial(); }

 private:
  const std::shared_ptr<FakeChild> child_;
  ipc::HelloReply hello_;
};

int FakeChild::kills() const {
  MutexLock lock(&mu_);
  return kills_;
}

bool FakeChild::shut_down() const {
  MutexLock lock(&mu_);
  return shut_down_;
}

bool FakeChild::exited() const {
  MutexLock lock(&mu_);
  return exit_.has_value();
}

void FakeChild::SetControlCrashHints(ipc::CrashHints hints) {
  MutexLock lock(&mu_);
  control_hints_ = hints;
}

void FakeChild::SetOomKilled(bool oom) {
  MutexLock lock(&mu_);
  oom_ = oom;
}

void FakeChild::SetCpuTime(std::optional<std::chrono::nanoseconds> cpu) {
  MutexLock lock(&mu_);
  cpu_ = cpu;
}

void FakeChild::SetPingStatus(absl::Status status) {
  MutexLock lock(&mu_);
  ping_ = std::move(status);
}

// Any fixed origin will do: only differences of these times matter.
FakeSupervisorEnv::FakeSupervisorEnv() : now_(ipc::Clock::time_point() + std::chrono::hours(1)) {}

ipc::Clock::time_point FakeSupervisorEnv::Now() const {
  MutexLock lock(&mu_);
  return now_;
}

void FakeSupervisorEnv::Advance(std::chrono::milliseconds by) {
  MutexLock lock(&mu_);
  now_ += by;
}

absl::StatusOr<std::unique_ptr<RunningBackend>> FakeSupervisorEnv::Start(const BackendManifest& manifest,
                                                                          const SpawnOptions&, ipc::Deadline) {
  MutexLock lock(&mu_);
  ++starts_;
  if (!failures_.empty()) {
    absl::Status failure = failures_.front();
    failures_.pop_front();
    absl::Status named(failure.code(), absl::StrCat("backend '", manifest.name, "': ", failure.message()));
    // As BackendProcess::Start's do, the failure keeps its payloads (a HostShortage's mark).
    failure.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) { named.SetPayload(url, payload); });
    return named;
  }
  children_.push_back(std::make_shared<FakeChild>(static_cast<int>(children_.size()) + 1));
  return std::make_unique<FakeBackend>(children_.back());
}

absl::StatusOr<uint64_t> FakeSupervisorEnv::WatchExit(const RunningBackend& backend, std::function<void()> on_exit) {
  MutexLock lock(&mu_);
  if (watch_failures_ > 0) {
    --watch_failures_;
    return absl::ResourceExhaustedError("epoll_ctl: No space left on device");
  }
  const uint64_t id = next_watch_++;
  watches_.emplace(id, std::make_pair(static_cast<const FakeBackend&>(backend).serial(), std::move(on_exit)));
  return id;
}

void FakeSupervisorEnv::Unwatch(uint64_t id) {
  MutexLock lock(&mu_);
  watches_.erase(id);
}

void FakeSupervisorEnv::FailNextWatches(int n) {
  MutexLock lock(&mu_);
  watch_failures_ += n;
}

void FakeSupervisorEnv::FailNextStarts(std::vector<absl::Status> failures) {
  MutexLock lock(&mu_);
  failures_.insert(failures_.end(), failures.begin(), failures.end());
}

int FakeSupervisorEnv::starts() const {
  MutexLock lock(&mu_);
  return starts_;
}

int FakeSupervisorEnv::children() const {
  MutexLock lock(&mu_);
  return static_cast<int>(children_.size());
}

FakeChild* FakeSupervisorEnv::child(int serial) const {
  MutexLock lock(&mu_);
  if (serial < 1 || serial > static_cast<int>(children_.size())) return nullptr;
  return children_[serial - 1].get();
}

int FakeSupervisorEnv::watches() const {
  MutexLock lock(&mu_);
  return static_cast<int>(watches_.size());
}

void FakeSupervisorEnv::Exit(FakeChild* child, ExitStatus exit) {
  {
    MutexLock lock(&child->mu_);
    child->exit_ = exit;
  }
  std::vector<std::function<void()>> due;
  {
    MutexLock lock(&mu_);
    for (auto it = watches_.begin(); it != watches_.end();) {
      if (it->second.first != child->serial()) {
        ++it;
        continue;
      }
      due.push_back(std::move(it->second.second));
      it = watches_.erase(it);
    }
  }
  for (auto& on_exit : due) on_exit();
}

void FakeSupervisorEnv::DeliverKills() {
  std::vector<FakeChild*> killed;
  {
    MutexLock lock(&mu_);
    for (auto& c : children_) {
      if (c->kills() > 0 && !c->exited()) killed.push_back(c.get());
    }
  }
  for (FakeChild* c : killed) Exit(c, ExitStatus{true, SIGKILL});
}

}  // namespace codecvisor
