#include "backends/sdk/runner/wake_policy.h"

#include <gtest/gtest.h>

#include <vector>

namespace codecvisor::runner {
namespace {

using std::chrono::microseconds;

// A stream of cheap frames from a session with `slots` arena slots, whose
// host frees every slot of a batch as soon as it is woken (before the next
// frame's slot is taken): which frames wake it.
std::vector<int> WakingFrames(uint32_t slots, int frames, uint64_t frame_bytes = 96 * 64 * 3) {
  std::vector<int> woke;
  uint32_t unwoken = 0;
  for (int i = 0; i < frames; ++i) {
    const uint32_t in_use = unwoken + 1;  // the batch so far and this frame
    const FrameSent f{
        .final = i + 1 == frames,
        .decode_time = microseconds(300),
        .unwoken = unwoken,
        .free_slots = slots - in_use,
        .frame_bytes = frame_bytes,
    };
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

TEST(WakePolicyTest, LargeFramesWakeAtOnce) {
  // 640x360 RGB24 does not batch; 320x240 RGB24 (230,400 bytes) does.
  EXPECT_EQ(WakingFrames(4, 4, 640 * 360 * 3), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(WakingFrames(4, 4, 320 * 240 * 3), (std::vector<int>{2, 3}));
  EXPECT_FALSE(ShouldWakeHost({.unwoken = 0, .free_slots = 7, .frame_bytes = kBatchedFrameBytesMax}));
  EXPECT_TRUE(ShouldWakeHost({.unwoken = 0, .free_slots = 7, .frame_bytes = kBatchedFrameBytesMax + 1}));
}

TEST(WakePolicyTest, SlowAndLastFramesWakeAtOnce) {
  EXPECT_TRUE(ShouldWakeHost({.decode_time = kQuietFrameBelow, .unwoken = 0, .free_slots = 7}));
  EXPECT_FALSE(ShouldWakeHost({.decode_time = kQuietFrameBelow - microseconds(1), .unwoken = 0, .free_slots = 7}));
  EXPECT_TRUE(ShouldWakeHost({.final = true, .decode_time = microseconds(1), .unwoken = 0, .free_slots = 7}));
}

}  // namespace
}  // namespace codecvisor::runner
