#include "backends/sdk/runner/time_slice.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace codecvisor::runner {
namespace {

// The kernel's struct sched_attr (glibc 2.36 has no wrapper or definition).
struct SchedAttr {
  uint32_t size;
  uint32_t sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime;  // for the fair class: the requested slice, in ns
  uint64_t sched_deadline;
  uint64_t sched_period;
  uint32_t sched_util_min;
  uint32_t sched_util_max;
};

constexpr uint64_t kMaxSliceNs = 100'000'000;  // the kernel's upper clamp

absl::StatusOr<SchedAttr> Get() {
  SchedAttr attr{};
  if (syscall(SYS_sched_getattr, 0, &attr, sizeof(attr), 0) != 0) {
    return absl::InternalError(absl::StrCat("sched_getattr: ", std::strerror(errno)));
  }
  return attr;
}

}  // namespace

absl::StatusOr<TimeSlice> LengthenTimeSlice(uint32_t factor) {
  absl::StatusOr<SchedAttr> attr = Get();
  if (!attr.ok()) return attr.status();
  TimeSlice slice{attr->sched_runtime, attr->sched_runtime};
  if (attr->sched_policy != SCHED_OTHER && attr->sched_policy != SCHED_BATCH) return slice;
  if (attr->sched_runtime == 0) return slice;  // no custom slices before Linux 6.12
  attr->size = sizeof(SchedAttr);
  attr->sched_flags = 0;
  attr->sched_runtime = std::min(kMaxSliceNs, attr->sched_runtime * std::max(factor, 1u));
  if (syscall(SYS_sched_setattr, 0, &*attr, 0) != 0) {
    return absl::InternalError(absl::StrCat("sched_setattr: ", std::strerror(errno)));
  }
  absl::StatusOr<SchedAttr> now = Get();
  if (!now.ok()) return now.status();
  slice.after_ns = now->sched_runtime;
  return slice;
}

}  // namespace codecvisor::runner
