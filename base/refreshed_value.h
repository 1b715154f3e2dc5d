// File: base/refreshed_value.h
//
// A value read from the system (a /proc file, a limit) that a process asks
// for often and that seldom changes: read at most once a second, and again
// at once in a forked child (whose pid differs), which may live in another
// cgroup or namespace than its parent. Lock-free: a fork while another
// thread held a lock would leave the child waiting on it for good; two
// threads that both read the system agree on what they read.

#ifndef CODECVISOR_BASE_REFRESHED_VALUE_H_
#define CODECVISOR_BASE_REFRESHED_VALUE_H_

#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>

namespace codecvisor {

// T: a type std::atomic holds without a lock (an integer). One per value,
// usually a function's static.
template <typename T>
class RefreshedValue {
 public:
  // The value `read()` gave in this process within the last second, or
  // what it gives now.
  template <typename Read>
  T Get(Read read) {
    const pid_t pid = getpid();
    const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now().time_since_epoch())
                            .count();
    if (pid_.load(std::memory_order_acquire) == pid && now - at_ms_.load(std::memory_order_relaxed) < 1000) {
      return value_.load(std::memory_order_relaxed);
    }
    const T value = read();
    value_.store(value, std::memory_order_relaxed);
    at_ms_.store(now, std::memory_order_relaxed);
    pid_.store(pid, std::memory_order_release);
    return value;
  }

 private:
  std::atomic<pid_t> pid_{0};
  std::atomic<int64_t> at_ms_{0};
  std::atomic<T> value_{};
};

}  // namespace codecvisor

#endif  // CODECVISOR_BASE_REFRESHED_VALUE_H_
