// File: backends/sdk/runner/time_slice.h
//
// Asks the kernel's fair scheduler (EEVDF custom slices, Linux 6.12 and
// later) for a longer time slice for the calling thread, which every thread
// it starts afterwards inherits: the runner calls it before it starts any,
// so the vendor's decoder threads have it too.
//
// Why: a thread woken with a shorter slice than the running one may preempt
// it. The host's thread is woken for each frame and runs for microseconds;
// with the default slices it can wait out a decoder thread's whole slice
// (1.4 ms on this 2-CPU machine, longer than a 360p frame), and meanwhile
// the backend, finding the last frame's slot not yet freed, converts the
// next frame into a slot that is out of cache. CPU shares are unchanged
// (weights are not touched), and the runner's threads compete with one
// another as before, since they all have the same slice. Kernels without
// custom slices report none and are left alone.

#ifndef CODECVISOR_BACKENDS_SDK_RUNNER_TIME_SLICE_H_
#define CODECVISOR_BACKENDS_SDK_RUNNER_TIME_SLICE_H_

#include <cstdint>

#include "absl/status/statusor.h"

namespace codecvisor::runner {

struct TimeSlice {
  uint64_t before_ns = 0;  // 0: the kernel has no custom slices
  uint64_t after_ns = 0;
};

// Multiplies the calling thread's slice by `factor`, up to the kernel's
// 100 ms. Only for SCHED_OTHER and SCHED_BATCH threads; others keep theirs.
absl::StatusOr<TimeSlice> LengthenTimeSlice(uint32_t factor);

}  // namespace codecvisor::runner

#endif  // CODECVISOR_BACKENDS_SDK_RUNNER_TIME_SLICE_H_
