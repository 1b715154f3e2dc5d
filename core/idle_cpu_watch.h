// File: core/idle_cpu_watch.h
//
// Whether a backend that has nothing to do keeps using CPU. A backend with
// no decoder open on it has no work: a plugin whose threads run on after
// its sessions closed (broken, or hostile) burns cores the host's other
// work needs, and no request's deadline ever sees it. The supervisor
// samples the backend's CPU time with each heartbeat; a backend idle for a
// whole window that used more than half a core over it is stopped (and
// restarted when a decoder wants it, under the restart policy, so one that
// does it from the start ends quarantined). Pure logic on the samples, as
// ProgressWatch; not thread-safe.

#ifndef CODECVISOR_CORE_IDLE_CPU_WATCH_H_
#define CODECVISOR_CORE_IDLE_CPU_WATCH_H_

#include <chrono>
#include <optional>
#include <string>

namespace codecvisor {

class IdleCpuWatch {
 public:
  using nanoseconds = std::chrono::nanoseconds;
  using time_point = std::chrono::steady_clock::time_point;

  // Idle this long, at least, before a verdict: the work a close leaves
  // (a decoder's threads winding down) is over well within it.
  static constexpr std::chrono::seconds kWindow{10};
  static constexpr int kMaxBusyPerMille = 500;  // half a core

  // At `now`: whether the backend has been idle since the last sample (no
  // decoder open on it), and its CPU time (nullopt: unknown, which ends
  // the watch until it is known again). Returns what it used while idle
  // ("used X s of CPU in Y s with no decoder open on it") when that was
  // more than kMaxBusyPerMille of a core over a window of at least
  // kWindow; then the watch starts over.
  std::optional<std::string> Sample(time_point now, bool idle, std::optional<nanoseconds> cpu);

  // A new backend: earlier samples are another process's.
  void Reset() { since_.reset(); }

 private:
  std::optional<time_point> since_;  // idle from then on, with cpu_at_since_ used
  nanoseconds cpu_at_since_{0};
};

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_IDLE_CPU_WATCH_H_
