#include "core/progress_watch.h"

namespace codecvisor {

void ProgressWatch::Sample(time_point now, std::optional<nanoseconds> cpu) {
  sampled_ = true;
  sampled_at_ = now;
  cpu_ = cpu;
}

bool ProgressWatch::KeepWaiting(time_point now, std::optional<nanoseconds> cpu) {
  if (extensions_ == 0) busy_ = nanoseconds(0);
  if (!sampled_ || !cpu_.has_value() || !cpu.has_value() || extensions_ >= kMaxExtensions) return false;
  const nanoseconds used = *cpu - *cpu_;
  const nanoseconds window = now - sampled_at_;
  Sample(now, cpu);
  if (window <= nanoseconds(0) || used * 1000 < window * kMinBusyPerMille) return false;
  ++extensions_;
  busy_ += used;
  return true;
}

}  // namespace codecvisor
