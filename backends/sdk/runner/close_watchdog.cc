#include "backends/sdk/runner/close_watchdog.h"

#include <pthread.h>

#include <algorithm>
#include <system_error>
#include <utility>
#include <vector>

namespace codecvisor::runner {

CloseWatchdog::CloseWatchdog(std::chrono::milliseconds limit, OnLate on_late)
    : limit_(limit), on_late_(std::move(on_late)) {}

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
  if (!started_) {
    started_ = true;
    try {
      thread_ = std::thread([this] { Run(); });
      pthread_setname_np(thread_.native_handle(), "cv-close-watch");
    } catch (const std::system_error&) {
      return Watch();  // no thread to spare: this close and later ones go unwatched
    }
  }
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
    if (watched_.empty()) {
      changed_.wait(lock);
      continue;
    }
    Clock::time_point earliest = Clock::time_point::max();
    for (const auto& [id, entry] : watched_) earliest = std::min(earliest, entry.deadline);
    if (Clock::now() < earliest) {
      changed_.wait_until(lock, earliest);
      continue;
    }
    std::vector<std::string> late;
    for (auto it = watched_.begin(); it != watched_.end();) {
      if (it->second.deadline <= Clock::now()) {
        late.push_back(std::move(it->second.what));
        it = watched_.erase(it);
      } else {
        ++it;
      }
    }
    lock.unlock();
    for (const std::string& what : late) on_late_(what);
    lock.lock();
  }
}

}  // namespace codecvisor::runner
