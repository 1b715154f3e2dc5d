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
  if (n >= 2) {
    auto delay = limits_.backoff_initial;
    for (int i = 2; i < n && delay < limits_.backoff_max; ++i) delay *= 2;
    d.delay = std::min(delay, limits_.backoff_max);
  }
  return d;
}

void RestartPolicy::OnSuccess() { crashes_.clear(); }

}  // namespace codecvisor
