// File: ipc/wait_policy.h
//
// How one waiting thread waits for its peer: spin, nap until just before
// the answer is due, poll, or sleep until woken. Pure: it decides from the
// figures it is given (how long the last waits took, how late its timed
// naps woke, how many cores are idle) and reads no clock. Not thread-safe:
// one per waiting thread.
//
// Why not simply sleep: on a VM whose idle vCPUs halt at once, a futex
// wake-up reaches a sleeping thread hundreds of microseconds later, which
// on small frames is a large share of a frame. Why not simply spin: the
// host's spinning would take a core the decoder's threads need, and a
// 1080p frame's wait is milliseconds. So a wait of a frame's length naps
// (a timed futex sleep, which a ring still ends early) until the answer is
// about due, less the time a wake-up has been taking, then polls for a
// short window that is bounded by a share of the wait, then sleeps. The
// nap's wake-up costs wall time, not CPU: the thread is running again,
// polling, when the frame lands. When no core is idle, vCPUs do not halt
// and wake-ups are cheap: the thread sleeps and leaves the core to others.
// Short waits (a busy peer answering within microseconds) are spun.

#ifndef CODECVISOR_IPC_WAIT_POLICY_H_
#define CODECVISOR_IPC_WAIT_POLICY_H_

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace codecvisor::ipc {

// One wait, in the order its phases run; a phase of length 0 is skipped.
// After the last phase the waiter sleeps until woken, its deadline, or the
// peer's death.
struct WaitPlan {
  std::chrono::nanoseconds spin{0};  // check the condition in a loop this long
  std::chrono::nanoseconds nap{0};   // then one futex sleep ending this long after the wait began (a ring ends it early)
  std::chrono::nanoseconds poll{0};  // then check in a loop this long after the nap
  bool yield = false;                // loop with sched_yield (other threads want the core), not a pause

  friend bool operator==(const WaitPlan&, const WaitPlan&) = default;
};

// What the waiter knows of the machine when it starts to wait.
struct WaitConditions {
  // Cores with nothing runnable besides the waiting thread (ipc/idle_cores.h);
  // -1 when unknown (a sandboxed runner cannot read /proc).
  int idle_cores = -1;
};

class WaitPolicy {
 public:
  using nanoseconds = std::chrono::nanoseconds;

  // Waits expected at most this long are spun through (twice the expected
  // length, at least kMinSpin): a waiting thread that sleeps costs the
  // waker a syscall and itself a wake-up, more than this much spinning.
  static constexpr nanoseconds kSpinWhole{50'000};
  static constexpr nanoseconds kMinSpin{2'000};
  // Before this many waits are known, each wait spins this long, then sleeps.
  static constexpr size_t kWarmWaits = 4;
  static constexpr nanoseconds kColdSpin{20'000};
  // Waits expected longer than this (an idle session, a slow seek) sleep:
  // no timed nap and no wake-up before the answer.
  static constexpr nanoseconds kMaxNapWait{std::chrono::milliseconds(50)};
  // A nap shorter than this is not worth its syscall: poll instead.
  static constexpr nanoseconds kMinNap{20'000};
  // How early a nap ends, before any nap has been seen to oversleep...
  static constexpr nanoseconds kDefaultLead{150'000};
  // ...and, once some have, the median oversleep plus this margin.
  static constexpr nanoseconds kLeadMargin{20'000};
  // The poll after a nap lasts the lead's margin plus this share of the
  // expected wait (the CPU a waiter may spend on a wait, in per mille)...
  static constexpr int kPollPerMille = 10;
  // ...at least kMinPoll, at most kMaxPoll.
  static constexpr nanoseconds kMinPoll{20'000};
  static constexpr nanoseconds kMaxPoll{100'000};
  // When this many of the last kHistory waits napped and polled in vain
  // (answers too irregular to time: a loaded machine), waits sleep until
  // enough waits have passed since.
  static constexpr int kMissesToStop = 4;

  WaitPlan Plan(const WaitConditions& conditions) const;

  // Feeds back how long one wait took, from its start until the condition
  // held (however it was waited for), and whether it napped and its poll
  // ended before the answer came.
  void RecordWait(nanoseconds waited, bool poll_missed = false);
  // Feeds back how far past its planned end a nap that was not rung ended.
  void RecordOversleep(nanoseconds late);

  // The wait to plan for: the second shortest of the last kHistory waits
  // (a low quartile: sleeping past the answer costs a wake-up, waking
  // before it costs only polling), or -1 ns before kWarmWaits waits.
  nanoseconds expected_wait() const;
  // How long before the expected answer a nap ends.
  nanoseconds lead() const;

 private:
  static constexpr size_t kHistory = 8;
  std::array<nanoseconds, kHistory> waits_{};
  size_t wait_count_ = 0;
  uint32_t missed_ = 0;  // bit i: the i-th last wait's poll missed
  std::array<nanoseconds, kHistory> oversleeps_{};
  size_t oversleep_count_ = 0;
};

}  // namespace codecvisor::ipc

#endif  // CODECVISOR_IPC_WAIT_POLICY_H_
