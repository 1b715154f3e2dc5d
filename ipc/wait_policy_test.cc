// File: ipc/wait_policy_test.cc
//
// The wait policy's decisions for given histories of waits and naps: no
// clock, no threads.

#include "ipc/wait_policy.h"

#include <chrono>

#include <gtest/gtest.h>

namespace codecvisor::ipc {
namespace {

using namespace std::chrono_literals;
using std::chrono::nanoseconds;

constexpr WaitConditions kIdleCore{.idle_cores = 1};
constexpr WaitConditions kNoIdleCore{.idle_cores = 0};
constexpr WaitConditions kUnknown{.idle_cores = -1};

void RecordWaits(WaitPolicy& p, nanoseconds each, int n = 8) {
  for (int i = 0; i < n; ++i) p.RecordWait(each);
}

TEST(WaitPolicyTest, BeforeItKnowsTheWaitsItSpinsBrieflyThenSleeps) {
  WaitPolicy p;
  RecordWaits(p, 10ms, WaitPolicy::kWarmWaits - 1);
  EXPECT_EQ(p.expected_wait(), nanoseconds(-1));
  EXPECT_EQ(p.Plan(kIdleCore), (WaitPlan{.spin = WaitPolicy::kColdSpin}));
  // With every core busy the spin yields them.
  EXPECT_EQ(p.Plan(kNoIdleCore), (WaitPlan{.spin = WaitPolicy::kColdSpin, .yield = true}));
}

TEST(WaitPolicyTest, ShortWaitsAreSpunThroughTwiceTheirLength) {
  WaitPolicy p;
  RecordWaits(p, 10us);
  EXPECT_EQ(p.Plan(kIdleCore), (WaitPlan{.spin = 20us}));
  EXPECT_EQ(p.Plan(kNoIdleCore), (WaitPlan{.spin = 20us, .yield = true}));
  RecordWaits(p, 100ns);
  EXPECT_EQ(p.Plan(kIdleCore).spin, WaitPolicy::kMinSpin);
  RecordWaits(p, 40us);
  EXPECT_EQ(p.Plan(kIdleCore).spin, WaitPolicy::kSpinWhole);
}

// The issue this policy exists for: waits of a frame's length (hundreds of
// microseconds) must not all become sleeps on an idle machine. They nap
// until shortly before the frame is due, then poll.
TEST(WaitPolicyTest, FrameLengthWaitsNapUntilShortlyBeforeTheFrameThenPoll) {
  WaitPolicy p;
  RecordWaits(p, 500us);
  const WaitPlan plan = p.Plan(kIdleCore);
  EXPECT_EQ(plan.spin, 0ns);
  EXPECT_EQ(plan.nap, 500us - WaitPolicy::kDefaultLead);
  EXPECT_EQ(plan.poll, WaitPolicy::kLeadMargin + 500us * WaitPolicy::kPollPerMille / 1000);
  EXPECT_FALSE(plan.yield);
  // Unknown idleness (a sandboxed runner) plans as if a core were idle.
  EXPECT_EQ(p.Plan(kUnknown), plan);
}

TEST(WaitPolicyTest, TheNapEndsAsEarlyAsNapsHaveBeenOversleeping) {
  WaitPolicy p;
  RecordWaits(p, 2ms);
  for (nanoseconds late : {30us, 40us, 50us, 60us, 900us}) p.RecordOversleep(late);
  // The median oversleep (50 us) plus the margin; the 900 us outlier does not move it.
  EXPECT_EQ(p.lead(), 50us + WaitPolicy::kLeadMargin);
  EXPECT_EQ(p.Plan(kIdleCore).nap, 2ms - 70us);
}

TEST(WaitPolicyTest, ItPlansForTheLowQuartileOfTheLastEightWaits) {
  WaitPolicy p;
  RecordWaits(p, 800us, 6);
  p.RecordWait(400us);
  p.RecordWait(5ms);
  EXPECT_EQ(p.expected_wait(), 800us);  // one early frame does not move it
  p.RecordWait(300us);
  EXPECT_EQ(p.expected_wait(), 400us);  // two do
  // Older waits leave the history.
  RecordWaits(p, 1ms);
  EXPECT_EQ(p.expected_wait(), 1ms);
}

// Answers too irregular for a nap's poll to catch: the waits sleep, and
// try napping again once the misses have left the history.
TEST(WaitPolicyTest, AfterPollsMissRepeatedlyWaitsSleepForAWhile) {
  WaitPolicy p;
  RecordWaits(p, 500us);
  for (int i = 0; i < WaitPolicy::kMissesToStop - 1; ++i) p.RecordWait(500us, /*poll_missed=*/true);
  EXPECT_GT(p.Plan(kIdleCore).nap, 0ns);
  p.RecordWait(500us, /*poll_missed=*/true);
  EXPECT_EQ(p.Plan(kIdleCore), WaitPlan{});
  // Sleeping waits push the misses out; the oldest leaves after
  // 8 - (kMissesToStop - 1) of them.
  for (int i = 0; i < 8 - WaitPolicy::kMissesToStop; ++i) {
    p.RecordWait(500us);
    EXPECT_EQ(p.Plan(kIdleCore), WaitPlan{}) << i;
  }
  p.RecordWait(500us);
  EXPECT_GT(p.Plan(kIdleCore).nap, 0ns);
}

TEST(WaitPolicyTest, WithNoIdleCoreFrameLengthWaitsSleepAndLeaveTheCore) {
  WaitPolicy p;
  RecordWaits(p, 500us);
  EXPECT_EQ(p.Plan(kNoIdleCore), WaitPlan{});
}

TEST(WaitPolicyTest, LongWaitsSleepWithNoTimedWakeUp) {
  WaitPolicy p;
  RecordWaits(p, 200ms);  // an idle session
  EXPECT_EQ(p.Plan(kIdleCore), WaitPlan{});
}

TEST(WaitPolicyTest, WaitsTooShortToNapArePolledFromTheStart) {
  WaitPolicy p;
  RecordWaits(p, 120us);  // past the spin limit, shorter than the lead plus a minimal nap
  const WaitPlan plan = p.Plan(kIdleCore);
  EXPECT_EQ(plan.nap, 0ns);
  EXPECT_GT(plan.spin, 0ns);
  EXPECT_LT(plan.spin, 120us);
}

// The CPU a wait may cost beyond its wake-up: the poll window stays within
// the margin plus kPollPerMille of the wait, whatever the wait's length.
TEST(WaitPolicyTest, ThePollWindowIsBoundedByAShareOfTheWait) {
  for (nanoseconds wait : {nanoseconds(300us), nanoseconds(1ms), nanoseconds(5ms), nanoseconds(20ms), nanoseconds(50ms)}) {
    WaitPolicy p;
    RecordWaits(p, wait);
    const WaitPlan plan = p.Plan(kIdleCore);
    EXPECT_GT(plan.nap, 0ns) << wait.count();
    EXPECT_LE(plan.poll, std::max(WaitPolicy::kMinPoll, WaitPolicy::kLeadMargin + wait * WaitPolicy::kPollPerMille / 1000))
        << wait.count();
    EXPECT_LE(plan.poll, WaitPolicy::kMaxPoll) << wait.count();
  }
}

}  // namespace
}  // namespace codecvisor::ipc
