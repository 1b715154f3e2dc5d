#include "backends/sdk/runner/wake_policy.h"

#include <vector>

#include <gtest/gtest.h>

namespace codecvisor::runner {
namespace {

using std::chrono::microseconds;

// A stream of cheap frames from a session with `slots` arena slots, whose
// host frees every slot of a batch as soon as it is woken (before the next
// frame's slot is taken): which frames wake it.
std::vector<int> WakingFrames(uint32_t slots, int frames) {
  std::vector<int> woke;
  uint32_t unwoken = 0;
  for (int i = 0; i < frames; ++i) {
    const uint32_t in_use = unwoken + 1;  // the batch so far and this frame
    const FrameSent f{
        .final = i + 1 == frames, .decode_time = microseconds(300), .unwoken = unwoken, .free_slots = slots - in_use};
    if (ShouldWakeHost(f)) {
      woke.push_back(i);
      unwoken = 0;
    } else {
      ++unwoken;
    }
  }
  return woke;
}

TEST(WakePolicyTest, CheapFramesShareAWakeUpWhileSlotsLast) {
  EXPECT_EQ(WakingFrames(4, 10), (std::vector<int>{2, 5, 8, 9}));
  EXPECT_EQ(WakingFrames(8, 9), (std::vector<int>{3, 7, 8})) << "at most kFramesPerWake per wake-up";
  EXPECT_EQ(WakingFrames(2, 3), (std::vector<int>{0, 1, 2})) << "two slots: every frame wakes the host";
  EXPECT_EQ(WakingFrames(1, 2), (std::vector<int>{0, 1}));
}

TEST(WakePolicyTest, SlowAndLastFramesWakeAtOnce) {
  EXPECT_TRUE(ShouldWakeHost({.decode_time = kQuietFrameBelow, .unwoken = 0, .free_slots = 7}));
  EXPECT_FALSE(ShouldWakeHost({.decode_time = kQuietFrameBelow - microseconds(1), .unwoken = 0, .free_slots = 7}));
  EXPECT_TRUE(ShouldWakeHost({.final = true, .decode_time = microseconds(1), .unwoken = 0, .free_slots = 7}));
}

}  // namespace
}  // namespace codecvisor::runner
