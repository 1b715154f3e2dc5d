// File: ipc/mutex.h
//
// The mutex codecvisor's own code locks: std::mutex with Clang's
// thread-safety annotations, so ABSL_GUARDED_BY is checked at compile time.
// Not absl::Mutex: Debian's Abseil is not built with ThreadSanitizer, which
// then cannot see its locking and reports races that are not there.

#ifndef CODECVISOR_IPC_MUTEX_H_
#define CODECVISOR_IPC_MUTEX_H_

#include <mutex>

#include "absl/base/thread_annotations.h"

namespace codecvisor {

class ABSL_LOCKABLE Mutex {
 public:
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

 private:
  std::mutex mu_;
};

class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* mu_;
};

}  // namespace codecvisor

#endif  // CODECVISOR_IPC_MUTEX_H_
