#include "ipc/hangup_watcher.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

namespace codecvisor::ipc {
namespace {

constexpr short kHangupEvents = POLLHUP | POLLRDHUP | POLLERR | POLLNVAL;

}  // namespace

HangupWatcher::Watch& HangupWatcher::Watch::operator=(Watch&& other) noexcept {
  if (this != &other) {
    Reset();
    watcher_ = std::exchange(other.watcher_, nullptr);
    id_ = other.id_;
  }
  return *this;
}

void HangupWatcher::Watch::Reset() {
  if (watcher_ != nullptr) std::exchange(watcher_, nullptr)->Remove(id_);
}

absl::StatusOr<std::unique_ptr<HangupWatcher>> HangupWatcher::Start() {
  UniqueFd wake(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake.valid()) return ErrnoStatus("eventfd for the hang-up watcher");
  std::unique_ptr<HangupWatcher> watcher(new HangupWatcher(std::move(wake)));
  try {
    watcher->thread_ = std::thread([w = watcher.get()] { w->Run(); });
  } catch (const std::system_error& e) {
    return absl::ResourceExhaustedError(std::string("cannot start the hang-up watcher thread: ") + e.what());
  }
  return watcher;
}

HangupWatcher::HangupWatcher(UniqueFd wake) : wake_(std::move(wake)) {}

HangupWatcher::~HangupWatcher() {
  {
    MutexLock lock(&mu_);
    if (!entries_.empty()) {
      // A Watch would later call Remove() on freed memory: fail loudly now.
      std::fprintf(stderr, "HangupWatcher destroyed with %zu watches alive\n", entries_.size());
      std::abort();
    }
    stopping_ = true;
  }
  Nudge();
  if (thread_.joinable()) thread_.join();
}

HangupWatcher::Watch HangupWatcher::Add(int socket, absl::AnyInvocable<void()> on_hangup) {
  uint64_t id;
  {
    MutexLock lock(&mu_);
    id = next_id_++;
    entries_.emplace(id, Entry{socket, std::move(on_hangup)});
  }
  Nudge();
  return Watch(this, id);
}

size_t HangupWatcher::watched() const {
  MutexLock lock(&mu_);
  return entries_.size();
}

void HangupWatcher::Remove(uint64_t id) {
  bool removed;
  {
    MutexLock lock(&mu_);
    removed = entries_.erase(id) > 0;
  }
  // So the thread stops polling a descriptor its owner may close next.
  if (removed) Nudge();
}

void HangupWatcher::Nudge() {
  const uint64_t one = 1;
  // EAGAIN only when the counter is near overflow: a wake-up is pending anyway.
  (void)RetryEintr([&] { return write(wake_.get(), &one, sizeof(one)); });
}

void HangupWatcher::Run() {
  pthread_setname_np(pthread_self(), kHangupThreadName);
  std::vector<pollfd> fds;
  std::vector<uint64_t> ids;  // ids[i] is the entry polled at fds[i]; fds[0] is the eventfd
  for (;;) {
    {
      MutexLock lock(&mu_);
      if (stopping_) return;
      fds.assign(1, pollfd{wake_.get(), POLLIN, 0});
      ids.assign(1, 0);
      for (const auto& [id, entry] : entries_) {
        // Only hang-ups: POLLIN (descriptors waiting) must not wake us.
        fds.push_back(pollfd{entry.socket, POLLRDHUP, 0});
        ids.push_back(id);
      }
    }
    const int n = RetryEintr([&] { return poll(fds.data(), fds.size(), -1); });
    if (n < 0) {
      // ENOMEM: nothing is lost by trying again a little later.
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    if (fds[0].revents & POLLIN) {
      uint64_t count;
      (void)read(wake_.get(), &count, sizeof(count));
    }
    MutexLock lock(&mu_);
    for (size_t i = 1; i < fds.size(); ++i) {
      if ((fds[i].revents & kHangupEvents) == 0) continue;
      // Dropped (and its descriptor perhaps closed and reused) while we polled.
      auto it = entries_.find(ids[i]);
      if (it == entries_.end()) continue;
      absl::AnyInvocable<void()> on_hangup = std::move(it->second.on_hangup);
      entries_.erase(it);
      on_hangup();
    }
  }
}

}  // namespace codecvisor::ipc
