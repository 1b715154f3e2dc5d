#include "core/exit_watcher.h"

#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <cstdio>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace codecvisor {

ExitWatcher::~ExitWatcher() {
  {
    MutexLock lock(&mu_);
    watches_.clear();
    if (stop_.valid()) {
      uint64_t one = 1;
      (void)!write(stop_.get(), &one, sizeof(one));
    }
  }
  if (thread_.joinable()) thread_.join();
}

bool ExitWatcher::StartedForTest() const {
  MutexLock lock(&mu_);
  return epoll_.valid();
}

absl::Status ExitWatcher::StartLocked() {
  if (epoll_.valid()) return absl::OkStatus();
  ipc::UniqueFd epoll(epoll_create1(EPOLL_CLOEXEC));
  if (!epoll.valid()) return ipc::ErrnoStatus("epoll_create1");
  ipc::UniqueFd stop(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!stop.valid()) return ipc::ErrnoStatus("eventfd");
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = 0;  // ids start at 1
  if (epoll_ctl(epoll.get(), EPOLL_CTL_ADD, stop.get(), &event) != 0) return ipc::ErrnoStatus("epoll_ctl");
  epoll_ = std::move(epoll);
  stop_ = std::move(stop);
  try {
    thread_ = std::thread([this] { Loop(); });
    // Named here, not by the thread itself, so that it has its name as soon as Add returns.
    pthread_setname_np(thread_.native_handle(), kExitWatcherThreadName);
  } catch (const std::system_error& e) {
    epoll_.reset();
    stop_.reset();
    return absl::ResourceExhaustedError(absl::StrCat("cannot start the exit watcher thread: ", e.what()));
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> ExitWatcher::Add(int fd, std::function<void()> on_ready) {
  MutexLock lock(&mu_);
  if (absl::Status s = StartLocked(); !s.ok()) return s;
  const uint64_t id = next_id_++;
  epoll_event event{};
  event.events = EPOLLIN | EPOLLONESHOT;
  event.data.u64 = id;
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &event) != 0) return ipc::ErrnoStatus("epoll_ctl(pidfd)");
  watches_.emplace(id, Watch{fd, std::move(on_ready)});
  return id;
}

void ExitWatcher::Remove(uint64_t id) {
  MutexLock lock(&mu_);
  if (auto it = watches_.find(id); it != watches_.end()) {
    (void)epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, it->second.fd, nullptr);
    watches_.erase(it);
    return;
  }
  if (std::this_thread::get_id() == thread_.get_id()) return;  // from the callback itself
  while (running_ == id) done_.Wait(&mu_);
}

void ExitWatcher::Loop() {
  int epoll;
  {
    MutexLock lock(&mu_);
    epoll = epoll_.get();  // stays open until the destructor joins
  }
  for (;;) {
    epoll_event events[16];
    const int n = epoll_wait(epoll, events, 16, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::fprintf(stderr, "codecvisor: ERROR: the backend exit watcher failed: %s\n", std::strerror(errno));
      return;
    }
    for (int i = 0; i < n; ++i) {
      const uint64_t id = events[i].data.u64;
      if (id == 0) return;  // stop
      std::function<void()> on_ready;
      {
        MutexLock lock(&mu_);
        auto it = watches_.find(id);
        if (it == watches_.end()) continue;  // removed meanwhile
        // Deregistered before the callback: its fd may be closed as soon
        // as the callback has run.
        (void)epoll_ctl(epoll, EPOLL_CTL_DEL, it->second.fd, nullptr);
        on_ready = std::move(it->second.on_ready);
        watches_.erase(it);
        running_ = id;
      }
      on_ready();
      MutexLock lock(&mu_);
      running_ = 0;
      done_.NotifyAll();
    }
  }
}

}  // namespace codecvisor
