#include "core/restart_policy.h"

#include <algorithm>

namespace codecvisor {

RestartPolicy::Decision RestartPolicy::OnCrash(Clock::time_point now) {
  while (!crashes_.empty() && now - crashes_.front() > limits_.window) crashes_.pop_front();
  crashes_.push_back(now);
  Decision d;
  const int n = static_cast<int>(crashes_.size());
  if (n > limits_.max_restarts) {
    d.quarantine = true;
    return d;
  }
  if (limits_.max_poison_in_a_row > 0 && poison_in_a_row_ >= limits_.max_poison_in_a_row) {
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

void RestartPolicy::OnPoison(int deaths) {
  if (limits_.max_poison_in_a_row == 0) return;
  for (int i = 0; i < deaths && !crashes_.empty(); ++i) crashes_.pop_back();
  ++poison_in_a_row_;
}

void RestartPolicy::OnSuccess() {
  crashes_.clear();
  poison_in_a_row_ = 0;
}

}  // namespace codecvisor
