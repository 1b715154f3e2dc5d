// File: base/mutex.h
//
// The mutex codecvisor's own code locks: std::mutex with Clang's
// thread-safety annotations, so ABSL_GUARDED_BY is checked at compile time.
// Not absl::Mutex: Debian's Abseil is not built with ThreadSanitizer, which
// then cannot see its locking and reports races that are not there.

#ifndef CODECVISOR_BASE_MUTEX_H_
#define CODECVISOR_BASE_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"

namespace codecvisor {

class ABSL_LOCKABLE Mutex {
 public:
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  // BasicLockable, for CondVar; prefer MutexLock.
  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  bool try_lock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) { return mu_.try_lock(); }

 private:
  std::mutex mu_;
};

// A condition variable for Mutex. Waits may wake spuriously: re-check.
class CondVar {
 public:
  // Waits until notified or `deadline`; false on timeout.
  template <typename Clock, typename Duration>
  bool WaitUntil(Mutex* mu, std::chrono::time_point<Clock, Duration> deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return cv_.wait_until(*mu, deadline) == std::cv_status::no_timeout;
  }
  // Waits until notified.
  void Wait(Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { cv_.wait(*mu); }
  void NotifyAll() { cv_.notify_all(); }

 private:
  std::condition_variable_any cv_;
};

class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  // Takes over a lock already held (after a successful try_lock()).
  MutexLock(Mutex* mu, std::adopt_lock_t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) : mu_(mu) {}
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* mu_;
};

}  // namespace codecvisor

#endif  // CODECVISOR_BASE_MUTEX_H_
