// File: core/supervisor_sessions.cc
//
// The supervisor's roster of sessions for parking (core/session_budget.h):
// which sessions hold how much of the backend's address space, and the
// closing of the least recently used idle ones to make room for another.

#include <memory>
#include <vector>

#include "core/supervisor.h"

namespace codecvisor {

void Supervisor::Enroll(uint64_t token, Parkable* session) {
  MutexLock lock(&roster_mu_);
  parkable_[token] = session;
}

void Supervisor::Withdraw(uint64_t token) {
  MutexLock lock(&roster_mu_);
  parkable_.erase(token);
  budget_.Release(token);
}

void Supervisor::MakeRoom(uint64_t token, uint64_t bytes) {
  MutexLock lock(&roster_mu_);
  if (bytes == 0) bytes = last_session_bytes_;
  while (!budget_.Fits(bytes) && ParkOneLocked(token)) {
  }
}

bool Supervisor::ParkOne(uint64_t token) {
  MutexLock lock(&roster_mu_);
  return ParkOneLocked(token);
}

bool Supervisor::ParkOneLocked(uint64_t token) {
  for (uint64_t other : budget_.LeastRecentlyUsed(token)) {
    auto it = parkable_.find(other);
    if (it == parkable_.end() || !it->second->TryPark()) continue;  // busy: the next one
    budget_.Release(other);
    parked_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  return false;
}

void Supervisor::DropDeadSessions() {
  std::vector<std::shared_ptr<void>> remains;  // destroyed after the lock is released
  {
    MutexLock lock(&roster_mu_);
    for (const auto& [token, session] : parkable_) {
      std::shared_ptr<void> held;
      if (!session->TryDrop(&held)) continue;
      budget_.Release(token);
      if (held != nullptr) remains.push_back(std::move(held));
    }
  }
}

void Supervisor::SessionHolds(uint64_t token, uint64_t bytes) {
  MutexLock lock(&roster_mu_);
  budget_.Hold(token, bytes);
  last_session_bytes_ = bytes;
}

void Supervisor::SessionUsed(uint64_t token) {
  MutexLock lock(&roster_mu_);
  budget_.Touch(token);
}

void Supervisor::SessionReleased(uint64_t token) {
  MutexLock lock(&roster_mu_);
  budget_.Release(token);
}

}  // namespace codecvisor
