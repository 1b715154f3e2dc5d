// File: ipc/hangup_watcher.h
//
// One thread that sleeps in poll() on many channel sockets at once and
// calls back when a socket's peer hangs up (POLLHUP/POLLRDHUP/POLLERR). A
// channel whose hang-ups are delivered this way (BackendChannel::
// WatchHangups) needs no periodic liveness check: its waits sleep on their
// futex until woken or until their deadline, so an idle backend wakes no
// one. Without it, each idle wait polls its socket every kLivenessSlice
// (10 ms: 100 wake-ups a second per idle thread).
//
// Only hang-ups wake the watcher: a socket with data waiting (descriptors
// the host sent) does not, since POLLIN is not asked for.
//
// Thread-safety: Add() and ~Watch() from any thread. A callback runs on the
// watcher's thread with the watcher's lock held: it must be short, must not
// block, and must not add or drop watches (an Interrupt() is what it is for).
// Once ~Watch() returns, its callback is not running and never will.

#ifndef CODECVISOR_IPC_HANGUP_WATCHER_H_
#define CODECVISOR_IPC_HANGUP_WATCHER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <thread>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "base/mutex.h"
#include "ipc/unique_fd.h"

namespace codecvisor::ipc {

// The watcher thread's name (top -H, /proc/PID/task/TID/comm).
inline constexpr char kHangupThreadName[] = "cv-hangups";

class HangupWatcher {
 public:
  // Registration of one socket; dropping it stops the watch. Move-only.
  class Watch {
   public:
    Watch() = default;
    Watch(Watch&& other) noexcept : watcher_(other.watcher_), id_(other.id_) { other.watcher_ = nullptr; }
    Watch& operator=(Watch&& other) noexcept;
    ~Watch() { Reset(); }
    // Stops the watch now; its callback is not running once this returns.
    void Reset();

   private:
    friend class HangupWatcher;
    Watch(HangupWatcher* watcher, uint64_t id) : watcher_(watcher), id_(id) {}
    HangupWatcher* watcher_ = nullptr;
    uint64_t id_ = 0;
  };

  // Creates the wake-up eventfd and starts the thread.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<HangupWatcher>> Start();
  // Stops and joins the thread. Every Watch must be gone by then.
  ~HangupWatcher();
  HangupWatcher(const HangupWatcher&) = delete;
  HangupWatcher& operator=(const HangupWatcher&) = delete;

  // Calls `on_hangup` once, on the watcher's thread, when the peer of
  // `socket` (borrowed: it must stay open while the Watch lives) hangs up;
  // at once if it already has.
  [[nodiscard]] Watch Add(int socket, absl::AnyInvocable<void()> on_hangup);

  // Sockets watched now (fired ones are no longer watched).
  size_t watched() const;

 private:
  struct Entry {
    int socket;
    absl::AnyInvocable<void()> on_hangup;
  };

  explicit HangupWatcher(UniqueFd wake);
  void Remove(uint64_t id);
  void Nudge();  // makes the thread re-read the set
  void Run();

  UniqueFd wake_;  // eventfd
  mutable Mutex mu_;
  std::map<uint64_t, Entry> entries_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace codecvisor::ipc

#endif  // CODECVISOR_IPC_HANGUP_WATCHER_H_
