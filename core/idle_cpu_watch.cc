// File: core/idle_cpu_watch.cc

#include "core/idle_cpu_watch.h"

#include "absl/strings/str_format.h"

namespace codecvisor {

std::optional<std::string> IdleCpuWatch::Sample(time_point now, bool idle, std::optional<nanoseconds> cpu) {
  if (!idle || !cpu.has_value()) {
    since_.reset();
    return std::nullopt;
  }
  if (!since_.has_value() || *cpu < cpu_at_since_) {
    since_ = now;
    cpu_at_since_ = *cpu;
    return std::nullopt;
  }
  const nanoseconds window = now - *since_;
  if (window < kWindow) return std::nullopt;
  const nanoseconds used = *cpu - cpu_at_since_;
  since_ = now;
  cpu_at_since_ = *cpu;
  if (used * 1000 <= window * kMaxBusyPerMille) return std::nullopt;
  using seconds = std::chrono::duration<double>;
  return absl::StrFormat("used %.1f s of CPU in %.1f s with no decoder open on it", seconds(used).count(),
                         seconds(window).count());
}

}  // namespace codecvisor
