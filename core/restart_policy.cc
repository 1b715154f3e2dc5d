#include "core/restart_policy.h"

#include <algorithm>

namespace codecvisor {

void RestartPolicy::Expire(Clock::time_point now) {
  while (!crashes_.empty() && now - crashes_.front().when > limits_.window) crashes_.pop_front();
  while (!poison_.empty() && now - poison_.front() > limits_.window) poison_.pop_front();
}

RestartPolicy::Decision RestartPolicy::OnCrash(Clock::time_point now, uint64_t generation) {
  Expire(now);
  crashes_.push_back({now, generation, successes_});
  Decision d;
  const int n = static_cast<int>(crashes_.size());
  if (n > limits_.max_restarts) {
    d.quarantine = true;
    return d;
  }
  if (limits_.max_poison_in_a_row > 0 && poison_in_a_row() >= limits_.max_poison_in_a_row) {
    d.quarantine = d.after_poison = true;
    return d;
  }
  if (n >= 2) {
    auto delay = limits_.backoff_initial;
    for (int i = 2; i < n && delay < limits_.backoff_max; ++i) delay *= 2;
    d.delay = std::min(delay, limits_.backoff_max);
  }
  return d;
}

void RestartPolicy::OnPoison(std::span<const uint64_t> generations, Clock::time_point now, bool toward_quarantine) {
  if (limits_.max_poison_in_a_row == 0) return;
  Expire(now);
  std::erase_if(crashes_, [&](const Crash& c) {
    return c.generation != 0 && std::find(generations.begin(), generations.end(), c.generation) != generations.end();
  });
  if (toward_quarantine) poison_.push_back(now);
  HealIfServedEnough();
}

void RestartPolicy::OnSuccess() {
  poison_.clear();
  ++successes_;
  HealIfServedEnough();
}

int RestartPolicy::successes_since_crash() const {
  return crashes_.empty() ? 0 : static_cast<int>(successes_ - crashes_.back().successes_before);
}

void RestartPolicy::HealIfServedEnough() {
  // Since the latest crash in the budget, or, with none, since the last
  // quarantine was lifted.
  const uint64_t since = crashes_.empty() ? successes_ - successes_at_lift_ : successes_since_crash();
  if (since >= static_cast<uint64_t>(limits_.heal_after_successes)) {
    crashes_.clear();
    quarantines_ = 0;
  }
}

std::chrono::milliseconds RestartPolicy::OnQuarantine() {
  if (limits_.quarantine.count() <= 0) return std::chrono::milliseconds(0);
  auto lasts = limits_.quarantine;
  for (int i = 0; i < quarantines_ && lasts < limits_.quarantine_max; ++i) lasts *= 2;
  ++quarantines_;
  return std::max(std::min(lasts, limits_.quarantine_max), limits_.quarantine);
}

void RestartPolicy::LiftQuarantine() {
  crashes_.clear();
  poison_.clear();
  successes_at_lift_ = successes_;
}

void RestartPolicy::Reset() {
  crashes_.clear();
  poison_.clear();
  quarantines_ = 0;
}

}  // namespace codecvisor
