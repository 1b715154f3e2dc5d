// File: backends/sdk/runner/close_watchdog.h
//
// A deadline on the vendor's close_session. The host does not wait for a
// session's close (the caller's decoder is already gone), so a
// close_session that never returns keeps its session thread, and whatever
// CPU it spins, for the life of the process, seen by no caller: each
// decoder closed adds one. The watchdog gives each close `limit`; a close
// still running past it is reported (OnLate), and the runner's OnLate ends
// the process, which the host sees as a crash: it restarts the backend and
// replays the other sessions' requests.
//
// One thread, started by the constructor: the runner makes the watchdog
// before any plugin code runs, which could take every thread the process
// may have (a thread started at the first close found none, and closes
// went unwatched for good). If it cannot start, closes go unwatched, said
// on stderr. Reporting a late close allocates nothing and takes no
// lock the hung close may hold (no malloc, no stdio). A Watch must not
// outlive its watchdog (the runner never destroys it).

#ifndef CODECVISOR_BACKENDS_SDK_RUNNER_CLOSE_WATCHDOG_H_
#define CODECVISOR_BACKENDS_SDK_RUNNER_CLOSE_WATCHDOG_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace codecvisor::runner {

class CloseWatchdog {
 public:
  using Clock = std::chrono::steady_clock;
  // Called on the watchdog's thread with what was late ("close_session of
  // session 3"), once per late close.
  using OnLate = std::function<void(const char* what)>;

  CloseWatchdog(std::chrono::milliseconds limit, OnLate on_late);
  // Stops and joins the thread (tests; the runner never destroys it).
  ~CloseWatchdog();
  CloseWatchdog(const CloseWatchdog&) = delete;
  CloseWatchdog& operator=(const CloseWatchdog&) = delete;

  // A close watched until destroyed.
  class Watch {
   public:
    Watch() = default;
    Watch(Watch&& other) noexcept : owner_(other.owner_), id_(other.id_) { other.owner_ = nullptr; }
    Watch& operator=(Watch&& other) noexcept {
      if (this != &other) {
        if (owner_ != nullptr) owner_->End(id_);
        owner_ = other.owner_;
        id_ = other.id_;
        other.owner_ = nullptr;
      }
      return *this;
    }
    ~Watch();

   private:
    friend class CloseWatchdog;
    Watch(CloseWatchdog* owner, uint64_t id) : owner_(owner), id_(id) {}
    CloseWatchdog* owner_ = nullptr;
    uint64_t id_ = 0;
  };

  // Watches `what` from now until the Watch returned is destroyed.
  Watch Start(std::string what);

 private:
  struct Entry {
    Clock::time_point deadline;
    std::string what;
    bool reported = false;
  };
  void Run();
  void End(uint64_t id);

  const std::chrono::milliseconds limit_;
  const OnLate on_late_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::map<uint64_t, Entry> watched_;  // guarded by mu_
  uint64_t next_id_ = 1;               // guarded by mu_
  bool stopping_ = false;              // guarded by mu_
  std::thread thread_;                 // set by the constructor only
};

}  // namespace codecvisor::runner

#endif  // CODECVISOR_BACKENDS_SDK_RUNNER_CLOSE_WATCHDOG_H_
