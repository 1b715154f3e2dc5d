// File: core/solo_gate.h
//
// Lets a request into one backend alone. Every request and open on a
// backend passes its gate: normally many at once; a solo pass waits until
// every other pass has left, and holds new ones out while it waits and
// while it is in. A backend death that names no culprit (a fault on a
// plugin's own thread, say) blames whoever was inside vendor code, and
// with several requests in there that convicts bystanders; replaying each
// suspect alone makes the next death name exactly one (core/README.md,
// "Blame").
//
// Both waits are bounded, so a solo request can only delay the others:
// one that cannot get in alone by its deadline goes in beside them, and
// one still in after its hold limit lets the others in. A thread that
// already holds a pass (a sink decoding from another session of the same
// backend) re-enters without waiting, so it never waits on itself.

#ifndef CODECVISOR_CORE_SOLO_GATE_H_
#define CODECVISOR_CORE_SOLO_GATE_H_

#include <chrono>

#include "base/mutex.h"

namespace codecvisor {

class SoloGate {
 public:
  using Clock = std::chrono::steady_clock;

  // Held while a request is inside the backend. Movable, but left on the
  // thread that entered (which is how re-entry is recognised); leaves on
  // destruction.
  class Pass {
   public:
    Pass() = default;
    Pass(Pass&& other) noexcept { *this = std::move(other); }
    Pass& operator=(Pass&& other) noexcept;
    ~Pass() { Leave(); }
    // Whether no other pass was in when this one entered, and none could
    // enter while it was held (until the hold limit).
    bool solo() const { return solo_; }

   private:
    friend class SoloGate;
    void Leave();
    SoloGate* gate_ = nullptr;
    bool solo_ = false;
  };

  SoloGate() = default;
  SoloGate(const SoloGate&) = delete;
  SoloGate& operator=(const SoloGate&) = delete;

  // A shared pass: waits while a solo pass is waiting or in (each bounded
  // by that pass's own limits).
  Pass Enter();
  // A solo pass: waits until no other pass is in, until `wait_until`; then
  // holds the others out until `hold_until`. Past `wait_until` it enters
  // beside the others and is not solo.
  Pass EnterSolo(Clock::time_point wait_until, Clock::time_point hold_until);

  // For tests: passes in now, whether a solo pass holds the others out,
  // and solo passes waiting.
  int inside() const;
  bool held_solo() const;
  int solo_waiting() const;

 private:
  bool HeldByThisThread() const;
  // Whether a solo pass is in or waiting and its limits still apply.
  bool SoloBlocks(Clock::time_point now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable Mutex mu_;
  CondVar changed_;
  int inside_ ABSL_GUARDED_BY(mu_) = 0;
  // The solo pass in (or the first waiting), and until when it holds.
  bool solo_in_ ABSL_GUARDED_BY(mu_) = false;
  Clock::time_point solo_hold_until_ ABSL_GUARDED_BY(mu_);
  int solo_waiting_ ABSL_GUARDED_BY(mu_) = 0;
  Clock::time_point solo_wait_until_ ABSL_GUARDED_BY(mu_);  // of the waiter that gives up last
};

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_SOLO_GATE_H_
