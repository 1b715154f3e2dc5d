#include "core/progress_watch.h"

namespace codecvisor {

bool ProgressWatch::KeepWaiting(std::optional<nanoseconds> cpu) {
  if (!cpu.has_value() || !last_cpu_.has_value() || extensions_ >= kMaxExtensions) return false;
  const nanoseconds used = *cpu - *last_cpu_;
  last_cpu_ = cpu;
  if (used * 1000 < timeout_ * kMinBusyPerMille) return false;
  ++extensions_;
  busy_ += used;
  return true;
}

}  // namespace codecvisor
