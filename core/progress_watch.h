// File: core/progress_watch.h
//
// Whether a request past its deadline is hung or still being worked on.
// A request's deadline (DecoderOptions::request_timeout) bounds the wait
// for the backend's next answer; some answers take longer than any
// sensible timeout and are not hangs: frame 12,999 of a file with one key
// frame decodes all 13,000 before the first answer. A hung backend
// (deadlocked, sleeping forever, waiting on something the sandbox denies)
// uses no CPU; a decoding one uses a core. So at each deadline the waiter
// compares the backend process's CPU time with the last deadline's: at
// least kMinBusyPerMille of the wait spent on a CPU extends the wait by
// another timeout, up to kMaxExtensions times, so that a backend spinning
// forever is still killed, after (1 + kMaxExtensions) timeouts.
//
// The CPU time is the whole backend process's: another decoder's work on
// the same backend also counts, which can only delay a hang's kill, never
// beyond the bound. Pure: the caller reads the clock and the CPU time.

#ifndef CODECVISOR_CORE_PROGRESS_WATCH_H_
#define CODECVISOR_CORE_PROGRESS_WATCH_H_

#include <chrono>
#include <optional>

namespace codecvisor {

class ProgressWatch {
 public:
  using nanoseconds = std::chrono::nanoseconds;

  static constexpr int kMaxExtensions = 9;
  static constexpr int kMinBusyPerMille = 100;  // a tenth of a core

  // `timeout`: the wait a deadline ends; `cpu`: the backend's CPU time as
  // the wait begins (nullopt: unknown, and the first deadline is final).
  ProgressWatch(nanoseconds timeout, std::optional<nanoseconds> cpu) : timeout_(timeout), last_cpu_(cpu) {}

  // At a deadline, with the backend's CPU time now: whether to wait
  // another timeout.
  bool KeepWaiting(std::optional<nanoseconds> cpu);

  int extensions() const { return extensions_; }
  // The CPU time the backend used over the extended waits.
  nanoseconds busy() const { return busy_; }

 private:
  nanoseconds timeout_;
  std::optional<nanoseconds> last_cpu_;
  int extensions_ = 0;
  nanoseconds busy_{0};
};

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_PROGRESS_WATCH_H_
