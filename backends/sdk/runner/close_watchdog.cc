#include "backends/sdk/runner/close_watchdog.h"

#include <pthread.h>

#include <algorithm>
#include <cstdio>
#include <system_error>
#include <utility>

namespace codecvisor::runner {

CloseWatchdog::CloseWatchdog(std::chrono::milliseconds limit, OnLate on_late)
    : limit_(limit), on_late_(std::move(on_late)) {
  try {
    thread_ = std::thread([this] {
      // Named from inside: naming another thread writes its /proc comm
      // file, which Landlock refuses.
      pthread_setname_np(pthread_self(), "cv-close-watch");
      Run();
    });
  } catch (const std::system_error& e) {
    std::fprintf(stderr, "codecvisor-backend: WARNING: closes go unwatched (no thread for the close watchdog: %s)\n",
                 e.what());
  }
}

CloseWatchdog::~CloseWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

CloseWatchdog::Watch::~Watch() {
  if (owner_ != nullptr) owner_->End(id_);
}

CloseWatchdog::Watch CloseWatchdog::Start(std::string what) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!thread_.joinable()) return Watch();
  const uint64_t id = next_id_++;
  watched_.emplace(id, Entry{Clock::now() + limit_, std::move(what)});
  changed_.notify_all();
  return Watch(this, id);
}

void CloseWatchdog::End(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  watched_.erase(id);
}

void CloseWatchdog::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    Clock::time_point earliest = Clock::time_point::max();
    for (const auto& [id, entry] : watched_) {
      if (!entry.reported) earliest = std::min(earliest, entry.deadline);
    }
    if (earliest == Clock::time_point::max()) {
      changed_.wait(lock);
      continue;
    }
    if (Clock::now() < earliest) {
      changed_.wait_until(lock, earliest);
      continue;
    }
    // One late close at a time, copied to the stack: the entry stays (its
    // Watch erases it) so that nothing is freed here.
    char what[256] = {};
    for (auto& [id, entry] : watched_) {
      if (!entry.reported && entry.deadline <= Clock::now()) {
        entry.reported = true;
        std::snprintf(what, sizeof(what), "%s", entry.what.c_str());
        break;
      }
    }
    lock.unlock();
    on_late_(what);
    lock.lock();
  }
}

}  // namespace codecvisor::runner
