// ProgressWatch's decisions for given CPU histories: no process, no clock.

#include "core/progress_watch.h"

#include <gtest/gtest.h>

namespace codecvisor {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

constexpr milliseconds kTimeout{1000};

TEST(ProgressWatchTest, AnIdleBackendIsHungAtTheFirstDeadline) {
  ProgressWatch watch(kTimeout, milliseconds(500));
  EXPECT_FALSE(watch.KeepWaiting(milliseconds(520)));  // 20 ms of CPU in a second: a sleeping thread
  EXPECT_EQ(watch.extensions(), 0);
}

TEST(ProgressWatchTest, ADecodingBackendGetsAnotherTimeoutEachTime) {
  ProgressWatch watch(kTimeout, milliseconds(0));
  EXPECT_TRUE(watch.KeepWaiting(milliseconds(950)));   // a core, nearly
  EXPECT_TRUE(watch.KeepWaiting(milliseconds(1050)));  // exactly a tenth of a core
  EXPECT_FALSE(watch.KeepWaiting(milliseconds(1149)));  // less: it stopped working
  EXPECT_EQ(watch.extensions(), 2);
  EXPECT_EQ(watch.busy(), milliseconds(1050));
}

TEST(ProgressWatchTest, ABackendThatNeverAnswersIsKilledAfterTheBound) {
  ProgressWatch watch(kTimeout, milliseconds(0));
  for (int i = 1; i <= ProgressWatch::kMaxExtensions; ++i) {
    EXPECT_TRUE(watch.KeepWaiting(milliseconds(2000) * i)) << i;  // two cores, spinning
  }
  EXPECT_FALSE(watch.KeepWaiting(milliseconds(2000) * (ProgressWatch::kMaxExtensions + 1)));
  EXPECT_EQ(watch.extensions(), ProgressWatch::kMaxExtensions);
}

TEST(ProgressWatchTest, UnknownCpuTimeExtendsNothing) {
  ProgressWatch unknown_start(kTimeout, std::nullopt);
  EXPECT_FALSE(unknown_start.KeepWaiting(milliseconds(900)));
  ProgressWatch unknown_now(kTimeout, milliseconds(0));
  EXPECT_FALSE(unknown_now.KeepWaiting(std::nullopt));
}

TEST(ProgressWatchTest, ACpuTimeThatGoesBackwardsIsNoProgress) {
  // A restarted process's count starts again from 0; the caller's pid
  // check aside, it must not read as work done.
  ProgressWatch watch(kTimeout, milliseconds(5000));
  EXPECT_FALSE(watch.KeepWaiting(milliseconds(100)));
}

}  // namespace
}  // namespace codecvisor
