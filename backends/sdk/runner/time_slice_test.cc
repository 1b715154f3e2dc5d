#include "backends/sdk/runner/time_slice.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <thread>

#include "gtest/gtest.h"

namespace codecvisor::runner {
namespace {

uint64_t SliceOfThisThread() {
  struct {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
    uint32_t util_min, util_max;
  } attr{};
  EXPECT_EQ(syscall(SYS_sched_getattr, 0, &attr, sizeof(attr), 0), 0);
  return attr.runtime;
}

TEST(TimeSliceTest, TheSliceIsLengthenedAndThreadsStartedAfterInheritIt) {
  // On a thread of its own, so the test process's main thread is untouched.
  std::thread([] {
    const uint64_t before = SliceOfThisThread();
    absl::StatusOr<TimeSlice> slice = LengthenTimeSlice(2);
    ASSERT_TRUE(slice.ok()) << slice.status();
    EXPECT_EQ(slice->before_ns, before);
    if (before == 0) {
      // A kernel without custom slices (before 6.12): nothing to change.
      EXPECT_EQ(slice->after_ns, 0u);
      return;
    }
    EXPECT_EQ(slice->after_ns, std::min<uint64_t>(2 * before, 100'000'000));
    EXPECT_EQ(SliceOfThisThread(), slice->after_ns);
    uint64_t inherited = 0;
    std::thread([&] { inherited = SliceOfThisThread(); }).join();
    EXPECT_EQ(inherited, slice->after_ns);
  }).join();
}

TEST(TimeSliceTest, TheSliceStopsAtTheKernelsLimit) {
  std::thread([] {
    absl::StatusOr<TimeSlice> slice = LengthenTimeSlice(1'000'000);
    ASSERT_TRUE(slice.ok()) << slice.status();
    if (slice->before_ns != 0) EXPECT_EQ(slice->after_ns, 100'000'000u);
  }).join();
}

}  // namespace
}  // namespace codecvisor::runner
