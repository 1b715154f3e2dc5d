// ProgressWatch's decisions for given clocks and CPU histories: no
// process, no real clock.

#include "core/progress_watch.h"

#include <gtest/gtest.h>

namespace codecvisor {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kTimeout{1000};
const ProgressWatch::time_point kStart{};

TEST(ProgressWatchTest, AnIdleBackendIsHungAtTheFirstDeadline) {
  ProgressWatch watch(kTimeout);
  watch.Sample(kStart, milliseconds(500));
  EXPECT_FALSE(watch.KeepWaiting(kStart + kTimeout, milliseconds(520)));  // 2% of a core: a sleeping thread
  EXPECT_EQ(watch.extensions(), 0);
}

TEST(ProgressWatchTest, ADecodingBackendGetsAnotherTimeoutEachTime) {
  ProgressWatch watch(kTimeout);
  watch.Sample(kStart, milliseconds(0));
  EXPECT_TRUE(watch.KeepWaiting(kStart + kTimeout, milliseconds(950)));        // nearly a core
  EXPECT_TRUE(watch.KeepWaiting(kStart + 2 * kTimeout, milliseconds(1050)));   // exactly a tenth of one
  EXPECT_FALSE(watch.KeepWaiting(kStart + 3 * kTimeout, milliseconds(1149)));  // less: it stopped working
  EXPECT_EQ(watch.extensions(), 2);
  EXPECT_EQ(watch.busy(), milliseconds(1050));
}

TEST(ProgressWatchTest, ABackendThatNeverAnswersIsKilledAfterTheBound) {
  ProgressWatch watch(kTimeout);
  watch.Sample(kStart, milliseconds(0));
  for (int i = 1; i <= ProgressWatch::kMaxExtensions; ++i) {
    EXPECT_TRUE(watch.KeepWaiting(kStart + kTimeout * i, milliseconds(2000) * i)) << i;  // two cores, spinning
  }
  const int last = ProgressWatch::kMaxExtensions + 1;
  EXPECT_FALSE(watch.KeepWaiting(kStart + kTimeout * last, milliseconds(2000) * last));
}

TEST(ProgressWatchTest, EachAnswerHasItsOwnExtensions) {
  ProgressWatch watch(kTimeout);
  watch.Sample(kStart, milliseconds(0));
  for (int i = 1; i <= ProgressWatch::kMaxExtensions; ++i) {
    ASSERT_TRUE(watch.KeepWaiting(kStart + kTimeout * i, milliseconds(1000) * i));
  }
  watch.Answered();
  const auto later = kStart + kTimeout * (ProgressWatch::kMaxExtensions + 1);
  EXPECT_TRUE(watch.KeepWaiting(later, milliseconds(1000) * (ProgressWatch::kMaxExtensions + 1)));
  EXPECT_EQ(watch.extensions(), 1);
}

TEST(ProgressWatchTest, TheSampleIsRenewedAQuarterTimeoutAfterTheLast) {
  ProgressWatch watch(kTimeout);
  EXPECT_TRUE(watch.WantsSample(kStart));
  watch.Sample(kStart, milliseconds(0));
  EXPECT_FALSE(watch.WantsSample(kStart + kTimeout / 4 - milliseconds(1)));  // answers meanwhile read no CPU time
  EXPECT_TRUE(watch.WantsSample(kStart + kTimeout / 4));
}

TEST(ProgressWatchTest, BusyTimeIsMeasuredOverTheWholeWindowSinceTheSample) {
  // Sampled 250 ms before the last answer, which came 1000 ms before the
  // deadline: 100 ms of CPU in 1250 ms is 8%, not the tenth of a core asked for.
  ProgressWatch watch(kTimeout);
  watch.Sample(kStart, milliseconds(0));
  EXPECT_FALSE(watch.KeepWaiting(kStart + milliseconds(1250), milliseconds(100)));
}

TEST(ProgressWatchTest, UnknownCpuTimeExtendsNothing) {
  ProgressWatch never_sampled(kTimeout);
  EXPECT_FALSE(never_sampled.KeepWaiting(kStart + kTimeout, milliseconds(900)));
  ProgressWatch unknown_start(kTimeout);
  unknown_start.Sample(kStart, std::nullopt);
  EXPECT_FALSE(unknown_start.KeepWaiting(kStart + kTimeout, milliseconds(900)));
  ProgressWatch unknown_now(kTimeout);
  unknown_now.Sample(kStart, milliseconds(0));
  EXPECT_FALSE(unknown_now.KeepWaiting(kStart + kTimeout, std::nullopt));
}

TEST(ProgressWatchTest, ACpuTimeThatGoesBackwardsIsNoProgress) {
  ProgressWatch watch(kTimeout);
  watch.Sample(kStart, milliseconds(5000));
  EXPECT_FALSE(watch.KeepWaiting(kStart + kTimeout, milliseconds(100)));
}

}  // namespace
}  // namespace codecvisor
