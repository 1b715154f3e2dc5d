// File: core/exit_watcher.h
//
// One thread that watches many descriptors (backend pidfds) and calls each
// one's callback once when it turns readable: an epoll set over all of them
// plus an eventfd to stop. A host has one, so a hundred discovered backends
// cost one thread, not a hundred; the thread starts with the first Add, so
// a host whose backends never start has none. A death is seen as soon as
// the kernel marks the pidfd readable: the thread sleeps in epoll_wait with
// no timeout.
//
// Thread-safe. Callbacks run on the watcher thread, one at a time: they
// must not block for long (a slow one delays the others' deaths).

#ifndef CODECVISOR_CORE_EXIT_WATCHER_H_
#define CODECVISOR_CORE_EXIT_WATCHER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "base/mutex.h"
#include "ipc/unique_fd.h"

namespace codecvisor {

// The watcher thread's name (/proc/self/task/TID/comm), so that tests and
// `top -H` can count it.
inline constexpr char kExitWatcherThreadName[] = "cv-exit-watch";

class ExitWatcher {
 public:
  ExitWatcher() = default;
  // Stops and joins the thread; callbacks not yet run never run.
  ~ExitWatcher();
  ExitWatcher(const ExitWatcher&) = delete;
  ExitWatcher& operator=(const ExitWatcher&) = delete;

  // Calls `on_ready` once, on the watcher thread, when `fd` is readable.
  // `fd` must stay open until the callback has run or Remove() returned.
  // Returns an id for Remove(), or the error (no descriptor or thread
  // left): then nothing watches `fd`.
  [[nodiscard]] absl::StatusOr<uint64_t> Add(int fd, std::function<void()> on_ready);
  // After it returns, the callback of `id` is not running (unless Remove is
  // called from it) and never will. Unknown and fired ids are fine.
  void Remove(uint64_t id);

  // Whether the thread has been started, for tests.
  bool StartedForTest() const;

 private:
  struct Watch {
    int fd;
    std::function<void()> on_ready;
  };
  void Loop();
  absl::Status StartLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable Mutex mu_;
  CondVar done_;  // running_ changed
  ipc::UniqueFd epoll_ ABSL_GUARDED_BY(mu_);
  ipc::UniqueFd stop_ ABSL_GUARDED_BY(mu_);  // eventfd
  std::map<uint64_t, Watch> watches_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t running_ ABSL_GUARDED_BY(mu_) = 0;  // the id whose callback runs now
  std::thread thread_;
};

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_EXIT_WATCHER_H_
