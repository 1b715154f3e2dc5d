#include "core/restart_policy.h"

#include <gtest/gtest.h>

#include <vector>

namespace codecvisor {
namespace {

using std::chrono::milliseconds;

TEST(RestartPolicyTest, FirstRestartIsImmediateThenBackoffDoublesToTheCap) {
  RestartPolicy p({10, milliseconds(60'000), milliseconds(10), milliseconds(50)});
  auto t = RestartPolicy::Clock::now();
  EXPECT_EQ(p.OnCrash(t).delay, milliseconds(0));
  EXPECT_EQ(p.OnCrash(t).delay, milliseconds(10));
  EXPECT_EQ(p.OnCrash(t).delay, milliseconds(20));
  EXPECT_EQ(p.OnCrash(t).delay, milliseconds(40));
  EXPECT_EQ(p.OnCrash(t).delay, milliseconds(50));
  EXPECT_EQ(p.OnCrash(t).delay, milliseconds(50));
}

TEST(RestartPolicyTest, QuarantinesAfterTooManyCrashesInTheWindow) {
  RestartPolicy p({3, milliseconds(1000), milliseconds(1), milliseconds(8)});
  auto t = RestartPolicy::Clock::now();
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(p.OnCrash(t + milliseconds(i)).quarantine) << i;
  EXPECT_TRUE(p.OnCrash(t + milliseconds(3)).quarantine);
}

TEST(RestartPolicyTest, OldCrashesLeaveTheWindow) {
  RestartPolicy p({2, milliseconds(100), milliseconds(1), milliseconds(8)});
  auto t = RestartPolicy::Clock::now();
  p.OnCrash(t);
  p.OnCrash(t + milliseconds(10));
  // 200 ms later both are out of the window: this is a first crash again.
  auto d = p.OnCrash(t + milliseconds(210));
  EXPECT_FALSE(d.quarantine);
  EXPECT_EQ(d.delay, milliseconds(0));
  EXPECT_EQ(p.crashes_in_window(), 1);
}

TEST(RestartPolicyTest, EnoughSuccessesInARowRestoreTheBudget) {
  RestartPolicy p({2, milliseconds(60'000), milliseconds(1), milliseconds(8), 8, 3});
  auto t = RestartPolicy::Clock::now();
  p.OnCrash(t);
  p.OnCrash(t);
  p.OnSuccess();
  p.OnSuccess();
  EXPECT_EQ(p.crashes_in_window(), 2) << "two successes of the three that heal";
  p.OnSuccess();
  EXPECT_EQ(p.crashes_in_window(), 0);
  EXPECT_FALSE(p.OnCrash(t).quarantine);
  EXPECT_EQ(p.OnCrash(t).delay, milliseconds(1));
}

// The default limits: a backend whose every request crashes once and then
// succeeds on its replay, or that crashes on every other request, is
// crash-looping, and is quarantined at the sixth crash in the minute; one
// that serves three requests between crashes is restarted at once each time.
TEST(RestartPolicyTest, CrashingOnEveryOtherRequestQuarantines) {
  const RestartLimits defaults;
  auto t = RestartPolicy::Clock::now();
  for (int served_between : {1, 2, defaults.heal_after_successes - 1}) {
    RestartPolicy p;
    int crashes = 0;
    for (RestartPolicy::Decision d; !d.quarantine; ++crashes) {
      ASSERT_LE(crashes, defaults.max_restarts) << served_between;
      d = p.OnCrash(t + milliseconds(100 * crashes));
      for (int i = 0; i < served_between; ++i) p.OnSuccess();
    }
    EXPECT_EQ(crashes, defaults.max_restarts + 1) << served_between;
  }
  RestartPolicy healthy;
  for (int crash = 0; crash < 20; ++crash) {
    const RestartPolicy::Decision d = healthy.OnCrash(t + milliseconds(100 * crash));
    EXPECT_FALSE(d.quarantine) << crash;
    EXPECT_EQ(d.delay, milliseconds(0)) << crash;
    for (int i = 0; i < defaults.heal_after_successes; ++i) healthy.OnSuccess();
  }
}

TEST(RestartPolicyTest, ACrashStartsTheCountOfSuccessesAgain) {
  RestartPolicy p({5, milliseconds(60'000), milliseconds(1), milliseconds(8), 8, 3});
  auto t = RestartPolicy::Clock::now();
  p.OnCrash(t);
  p.OnSuccess();
  p.OnSuccess();
  EXPECT_EQ(p.successes_since_crash(), 2);
  p.OnCrash(t);
  EXPECT_EQ(p.successes_since_crash(), 0);
  p.OnSuccess();
  p.OnSuccess();
  EXPECT_EQ(p.crashes_in_window(), 2) << "four successes, but never three in a row";
  p.OnSuccess();
  EXPECT_EQ(p.crashes_in_window(), 0);
}

// A poison request's crashes leave the budget, and with them the break
// they made in the run of successes: an unrelated crash before them heals
// once enough requests were served since it, poison or not between.
TEST(RestartPolicyTest, APoisonVerdictDoesNotEndTheRunOfSuccesses) {
  RestartPolicy p({5, milliseconds(60'000), milliseconds(1), milliseconds(8), 8, 3});
  auto t = RestartPolicy::Clock::now();
  p.OnCrash(t, 1);  // an outside kill, say
  p.OnSuccess();
  p.OnSuccess();
  p.OnCrash(t, 2);
  p.OnCrash(t, 3);
  EXPECT_EQ(p.successes_since_crash(), 0);
  const std::vector<uint64_t> guilty = {2, 3};
  p.OnPoison(guilty, t);
  EXPECT_EQ(p.crashes_in_window(), 1);
  EXPECT_EQ(p.successes_since_crash(), 2);
  p.OnSuccess();
  EXPECT_EQ(p.crashes_in_window(), 0) << "three served since the outside kill";
}

TEST(RestartPolicyTest, ResetMakesTheBudgetWholeAtOnce) {
  RestartPolicy p({1, milliseconds(60'000), milliseconds(1), milliseconds(8)});
  auto t = RestartPolicy::Clock::now();
  p.OnCrash(t);
  ASSERT_TRUE(p.OnCrash(t).quarantine);
  p.Reset();
  EXPECT_EQ(p.crashes_in_window(), 0);
  EXPECT_EQ(p.poison_in_a_row(), 0);
  EXPECT_FALSE(p.OnCrash(t).quarantine);
}

TEST(RestartPolicyTest, APoisonVerdictTakesItsCrashesOffTheBudget) {
  // 5 crashes a minute: three poison requests of two crashes each, one
  // after the other, would quarantine at the sixth crash; judged one by
  // one, they leave the budget whole for the next.
  RestartPolicy p({5, milliseconds(60'000), milliseconds(10), milliseconds(2'000)});
  auto t = RestartPolicy::Clock::now();
  uint64_t generation = 1;
  for (int request = 0; request < 3; ++request) {
    const std::vector<uint64_t> guilty = {generation, generation + 1};
    EXPECT_EQ(p.OnCrash(t, generation++).delay, milliseconds(0)) << request;
    EXPECT_EQ(p.OnCrash(t, generation++).delay, milliseconds(10)) << request << ": the backoff did not grow";
    p.OnPoison(guilty, t);
    EXPECT_EQ(p.crashes_in_window(), 0);
  }
  EXPECT_EQ(p.poison_in_a_row(), 3);
}

TEST(RestartPolicyTest, OnlyTheGuiltyCrashesLeaveTheBudget) {
  RestartPolicy p({5, milliseconds(60'000), milliseconds(1), milliseconds(8)});
  auto t = RestartPolicy::Clock::now();
  p.OnCrash(t, 1);  // the poison request's first death
  p.OnCrash(t, 2);  // a death that blamed nobody, in between
  p.OnCrash(t);     // a restart that failed
  p.OnCrash(t, 3);  // the poison request's second death
  const std::vector<uint64_t> guilty = {1, 3};
  p.OnPoison(guilty, t);
  EXPECT_EQ(p.crashes_in_window(), 2);
  p.OnPoison(guilty, t);  // nothing left of theirs
  EXPECT_EQ(p.crashes_in_window(), 2);
}

TEST(RestartPolicyTest, ACrashAfterTooManyPoisonVerdictsInARowQuarantines) {
  RestartLimits limits;
  limits.max_poison_in_a_row = 3;
  RestartPolicy p(limits);
  auto t = RestartPolicy::Clock::now();
  uint64_t generation = 1;
  auto poison_request = [&] {
    const std::vector<uint64_t> guilty = {generation, generation + 1};
    bool quarantine = p.OnCrash(t, generation++).quarantine;
    quarantine = p.OnCrash(t, generation++).quarantine || quarantine;
    p.OnPoison(guilty, t);
    return quarantine;
  };
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(poison_request()) << i;
  p.OnSuccess();
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(poison_request()) << "after a success, " << i;
  const RestartPolicy::Decision d = p.OnCrash(t, generation);
  EXPECT_TRUE(d.quarantine && d.after_poison) << "a crash after the third in a row";
}

TEST(RestartPolicyTest, VerdictsOnTheCallersShortDeadlinesNeverQuarantine) {
  // Kills for a deadline the caller made short: the crashes leave the
  // budget, and the verdicts do not count toward the limit.
  RestartLimits limits;
  limits.max_restarts = 5;
  limits.max_poison_in_a_row = 3;
  RestartPolicy p(limits);
  auto t = RestartPolicy::Clock::now();
  for (uint64_t g = 1; g <= 40; g += 2) {
    const std::vector<uint64_t> guilty = {g, g + 1};
    EXPECT_FALSE(p.OnCrash(t, g).quarantine) << g;
    EXPECT_FALSE(p.OnCrash(t, g + 1).quarantine) << g;
    p.OnPoison(guilty, t, /*toward_quarantine=*/false);
  }
  EXPECT_EQ(p.crashes_in_window(), 0);
  EXPECT_EQ(p.poison_in_a_row(), 0);
  // The verdicts that count still do.
  uint64_t g = 100;
  for (int i = 0; i < 3; ++i, g += 2) {
    EXPECT_FALSE(p.OnCrash(t, g).quarantine || p.OnCrash(t, g + 1).quarantine);
    const std::vector<uint64_t> guilty = {g, g + 1};
    p.OnPoison(guilty, t);
  }
  EXPECT_TRUE(p.OnCrash(t, g).quarantine);
}

TEST(RestartPolicyTest, PoisonVerdictsLeaveTheLimitWithTheWindow) {
  RestartLimits limits;
  limits.max_poison_in_a_row = 2;
  limits.window = milliseconds(1000);
  RestartPolicy p(limits);
  auto t = RestartPolicy::Clock::now();
  for (uint64_t g = 1; g <= 10; g += 2) {
    const std::vector<uint64_t> guilty = {g, g + 1};
    EXPECT_FALSE(p.OnCrash(t, g).quarantine) << g;
    EXPECT_FALSE(p.OnCrash(t, g + 1).quarantine) << g;
    p.OnPoison(guilty, t);
    t += milliseconds(600);  // the verdict before last has left the window by the next crash
  }
}

// A manifest that counts every crash (max_poison_in_a_row 0) counts a
// poison request's, and those of kills a caller's short deadline made
// (toward_quarantine false): the sixth quarantines.
TEST(RestartPolicyTest, NoPoisonLimitCountsPoisonCrashesLikeAny) {
  for (bool toward_quarantine : {true, false}) {
    RestartLimits limits;
    limits.max_restarts = 5;
    limits.max_poison_in_a_row = 0;
    RestartPolicy p(limits);
    auto t = RestartPolicy::Clock::now();
    for (uint64_t g = 1; g <= 4; g += 2) {
      const std::vector<uint64_t> guilty = {g, g + 1};
      EXPECT_FALSE(p.OnCrash(t, g).quarantine);
      EXPECT_FALSE(p.OnCrash(t, g + 1).quarantine);
      p.OnPoison(guilty, t, toward_quarantine);
    }
    EXPECT_EQ(p.crashes_in_window(), 4) << toward_quarantine;
    EXPECT_FALSE(p.OnCrash(t, 5).quarantine) << toward_quarantine;
    const RestartPolicy::Decision d = p.OnCrash(t, 6);
    EXPECT_TRUE(d.quarantine && !d.after_poison) << "the sixth crash; " << toward_quarantine;
  }
}

// A quarantine lasts a minute, twice as long for each one that follows
// before the budget heals, up to the cap; an explicit reset, or enough
// requests served after a lift, start the count again.
TEST(RestartPolicyTest, AQuarantineLastsLongerEachTimeUntilTheBudgetHeals) {
  RestartLimits limits;
  limits.quarantine = milliseconds(60'000);
  limits.quarantine_max = milliseconds(300'000);
  RestartPolicy p(limits);
  EXPECT_EQ(p.OnQuarantine(), milliseconds(60'000));
  p.LiftQuarantine();
  EXPECT_EQ(p.OnQuarantine(), milliseconds(120'000));
  p.LiftQuarantine();
  EXPECT_EQ(p.OnQuarantine(), milliseconds(240'000));
  p.LiftQuarantine();
  EXPECT_EQ(p.OnQuarantine(), milliseconds(300'000));
  p.LiftQuarantine();
  EXPECT_EQ(p.OnQuarantine(), milliseconds(300'000));
  p.Reset();
  EXPECT_EQ(p.OnQuarantine(), milliseconds(60'000));
  p.LiftQuarantine();
  // Fewer requests served than heal_after_successes: still a streak.
  for (int i = 1; i < limits.heal_after_successes; ++i) p.OnSuccess();
  EXPECT_EQ(p.OnQuarantine(), milliseconds(120'000));
  p.LiftQuarantine();
  for (int i = 0; i < limits.heal_after_successes; ++i) p.OnSuccess();
  EXPECT_EQ(p.OnQuarantine(), milliseconds(60'000)) << "healed after the lift";
}

TEST(RestartPolicyTest, ALiftedQuarantineLeavesTheBudgetWhole) {
  RestartPolicy p({3, milliseconds(60'000), milliseconds(1), milliseconds(8)});
  auto t = RestartPolicy::Clock::now();
  for (int i = 0; i < 3; ++i) ASSERT_FALSE(p.OnCrash(t).quarantine);
  ASSERT_TRUE(p.OnCrash(t).quarantine);
  p.OnQuarantine();
  p.LiftQuarantine();
  EXPECT_EQ(p.crashes_in_window(), 0);
  EXPECT_EQ(p.OnCrash(t + milliseconds(1)).delay, milliseconds(0)) << "a first crash again";
}

TEST(RestartPolicyTest, AQuarantineOfZeroLastsUntilReset) {
  RestartLimits limits;
  limits.quarantine = milliseconds(0);
  RestartPolicy p(limits);
  EXPECT_EQ(p.OnQuarantine(), milliseconds(0));
  EXPECT_EQ(p.OnQuarantine(), milliseconds(0));
}

}  // namespace
}  // namespace codecvisor
