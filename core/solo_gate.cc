#include "core/solo_gate.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace codecvisor {
namespace {

// The gates the calling thread holds a pass of (one entry per pass).
thread_local std::vector<const SoloGate*> held_by_thread;

}  // namespace

SoloGate::Pass& SoloGate::Pass::operator=(Pass&& other) noexcept {
  if (this != &other) {
    Leave();
    gate_ = std::exchange(other.gate_, nullptr);
    solo_ = std::exchange(other.solo_, false);
  }
  return *this;
}

void SoloGate::Pass::Leave() {
  if (gate_ == nullptr) return;
  SoloGate* gate = std::exchange(gate_, nullptr);
  MutexLock lock(&gate->mu_);
  --gate->inside_;
  if (solo_) gate->solo_in_ = false;
  if (auto it = std::find(held_by_thread.begin(), held_by_thread.end(), gate); it != held_by_thread.end()) {
    held_by_thread.erase(it);
  }
  gate->changed_.NotifyAll();
}

bool SoloGate::HeldByThisThread() const {
  return std::find(held_by_thread.begin(), held_by_thread.end(), this) != held_by_thread.end();
}

bool SoloGate::SoloBlocks(Clock::time_point now) const {
  return (solo_in_ && now < solo_hold_until_) || (solo_waiting_ > 0 && now < solo_wait_until_);
}

SoloGate::Pass SoloGate::Enter() {
  Pass pass;
  MutexLock lock(&mu_);
  if (!HeldByThisThread()) {
    for (Clock::time_point now = Clock::now(); SoloBlocks(now); now = Clock::now()) {
      Clock::time_point wake = Clock::time_point::max();
      if (solo_in_ && now < solo_hold_until_) wake = solo_hold_until_;
      if (solo_waiting_ > 0 && now < solo_wait_until_) wake = std::min(wake, solo_wait_until_);
      changed_.WaitUntil(&mu_, wake);
    }
  }
  ++inside_;
  held_by_thread.push_back(this);
  pass.gate_ = this;
  return pass;
}

SoloGate::Pass SoloGate::EnterSolo(Clock::time_point wait_until, Clock::time_point hold_until) {
  {
    MutexLock lock(&mu_);
    // This thread is inside already: it cannot be alone, and must not wait
    // for itself.
    if (!HeldByThisThread()) {
      solo_wait_until_ = solo_waiting_++ == 0 ? wait_until : std::max(solo_wait_until_, wait_until);
      changed_.NotifyAll();  // shared entries now wait
      for (;;) {
        const Clock::time_point now = Clock::now();
        const bool other_solo_holds = solo_in_ && now < solo_hold_until_;
        if (inside_ == 0 && !other_solo_holds) {
          --solo_waiting_;
          ++inside_;
          solo_in_ = true;
          solo_hold_until_ = hold_until;
          held_by_thread.push_back(this);
          Pass pass;
          pass.gate_ = this;
          pass.solo_ = true;
          return pass;
        }
        if (now >= wait_until) break;
        changed_.WaitUntil(&mu_, other_solo_holds ? std::min(wait_until, solo_hold_until_) : wait_until);
      }
      --solo_waiting_;
      changed_.NotifyAll();
    }
  }
  // Not alone by its deadline: in beside the others, as they would be.
  return Enter();
}

int SoloGate::inside() const {
  MutexLock lock(&mu_);
  return inside_;
}

bool SoloGate::held_solo() const {
  MutexLock lock(&mu_);
  return solo_in_ && Clock::now() < solo_hold_until_;
}

int SoloGate::solo_waiting() const {
  MutexLock lock(&mu_);
  return solo_waiting_;
}

}  // namespace codecvisor
