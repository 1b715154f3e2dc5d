// File: core/progress_watch.h
//
// Whether a request past its deadline is hung or still being worked on.
// A request's deadline (DecoderOptions::request_timeout) bounds the wait
// for the backend's next answer; some answers take longer than any
// sensible timeout and are not hangs: frame 12,999 of a file with one key
// frame decodes all 13,000 before the first answer. A hung backend
// (deadlocked, sleeping forever, waiting on something the sandbox denies)
// uses no CPU; a decoding one uses a core. So at a deadline the waiter
// compares the backend process's CPU time with a sample taken earlier: at
// least kMinBusyPerMille of the time since then spent on a CPU extends the
// wait by another timeout, up to kMaxExtensions times for one answer, so
// that a backend spinning forever is still killed.
//
// Reading the CPU time costs a procfs read, too much for every frame, so
// the sample is renewed as answers come only when it is older than a
// quarter of the timeout. A backend that answered busily and then hung
// may so be given one extension (the busy stretch before its last answer
// counts): it is killed one timeout later. The CPU time is the whole
// process's: another decoder's work on the same backend also counts,
// which can only delay a hang's kill, never beyond the bound. Pure: the
// caller reads the clock and the CPU time.

#ifndef CODECVISOR_CORE_PROGRESS_WATCH_H_
#define CODECVISOR_CORE_PROGRESS_WATCH_H_

#include <chrono>
#include <optional>

namespace codecvisor {

class ProgressWatch {
 public:
  using nanoseconds = std::chrono::nanoseconds;
  using time_point = std::chrono::steady_clock::time_point;

  static constexpr int kMaxExtensions = 9;
  static constexpr int kMinBusyPerMille = 100;  // a tenth of a core

  explicit ProgressWatch(nanoseconds timeout) : timeout_(timeout) {}

  // Whether the CPU sample is missing or old enough to take again (each
  // answer asks).
  bool WantsSample(time_point now) const { return !sampled_ || now - sampled_at_ >= timeout_ / 4; }
  // The backend's CPU time at `now` (nullopt: unknown).
  void Sample(time_point now, std::optional<nanoseconds> cpu);
  // An answer came: the next wait has its own extensions.
  void Answered() { extensions_ = 0; }
  // At a deadline, with the backend's CPU time now: whether to wait
  // another timeout.
  bool KeepWaiting(time_point now, std::optional<nanoseconds> cpu);

  int extensions() const { return extensions_; }
  // The CPU time the backend used over the extensions of the current wait.
  nanoseconds busy() const { return busy_; }

 private:
  nanoseconds timeout_;
  bool sampled_ = false;
  time_point sampled_at_;
  std::optional<nanoseconds> cpu_;
  int extensions_ = 0;
  nanoseconds busy_{0};
};

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_PROGRESS_WATCH_H_
