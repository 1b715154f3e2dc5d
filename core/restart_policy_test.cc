#include "core/restart_policy.h"

#include <gtest/gtest.h>

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

TEST(RestartPolicyTest, SuccessRestoresTheBudget) {
  RestartPolicy p({2, milliseconds(60'000), milliseconds(1), milliseconds(8)});
  auto t = RestartPolicy::Clock::now();
  p.OnCrash(t);
  p.OnCrash(t);
  p.OnSuccess();
  EXPECT_EQ(p.crashes_in_window(), 0);
  EXPECT_FALSE(p.OnCrash(t).quarantine);
  EXPECT_EQ(p.OnCrash(t).delay, milliseconds(1));
}

TEST(RestartPolicyTest, APoisonVerdictTakesItsCrashesOffTheBudget) {
  // 5 crashes a minute: three poison requests of two crashes each, one
  // after the other, would quarantine at the sixth crash; judged one by
  // one, they leave the budget whole for the next.
  RestartPolicy p({5, milliseconds(60'000), milliseconds(10), milliseconds(2'000)});
  auto t = RestartPolicy::Clock::now();
  for (int request = 0; request < 3; ++request) {
    EXPECT_EQ(p.OnCrash(t).delay, milliseconds(0)) << request;
    EXPECT_EQ(p.OnCrash(t).delay, milliseconds(10)) << request << ": the backoff did not grow";
    p.OnPoison(2);
    EXPECT_EQ(p.crashes_in_window(), 0);
  }
  EXPECT_EQ(p.poison_in_a_row(), 3);
}

TEST(RestartPolicyTest, OnlyTheGuiltyCrashesLeaveTheBudget) {
  RestartPolicy p({5, milliseconds(60'000), milliseconds(1), milliseconds(8)});
  auto t = RestartPolicy::Clock::now();
  for (int i = 0; i < 3; ++i) p.OnCrash(t);  // a crash nobody was blamed for, then a poison request's two
  p.OnPoison(2);
  EXPECT_EQ(p.crashes_in_window(), 1);
  p.OnPoison(2);  // never below empty
  EXPECT_EQ(p.crashes_in_window(), 0);
}

TEST(RestartPolicyTest, ACrashAfterTooManyPoisonVerdictsInARowQuarantines) {
  RestartLimits limits;
  limits.max_poison_in_a_row = 3;
  RestartPolicy p(limits);
  auto t = RestartPolicy::Clock::now();
  auto poison_request = [&] {
    bool quarantine = p.OnCrash(t).quarantine || p.OnCrash(t).quarantine;
    p.OnPoison(2);
    return quarantine;
  };
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(poison_request()) << i;
  p.OnSuccess();
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(poison_request()) << "after a success, " << i;
  const RestartPolicy::Decision d = p.OnCrash(t);
  EXPECT_TRUE(d.quarantine && d.after_poison) << "a crash after the third in a row";
}

TEST(RestartPolicyTest, NoPoisonLimitCountsPoisonCrashesLikeAny) {
  RestartLimits limits;
  limits.max_restarts = 5;
  limits.max_poison_in_a_row = 0;
  RestartPolicy p(limits);
  auto t = RestartPolicy::Clock::now();
  for (int request = 0; request < 2; ++request) {
    EXPECT_FALSE(p.OnCrash(t).quarantine);
    EXPECT_FALSE(p.OnCrash(t).quarantine);
    p.OnPoison(2);
  }
  EXPECT_EQ(p.crashes_in_window(), 4);
  EXPECT_FALSE(p.OnCrash(t).quarantine);
  const RestartPolicy::Decision d = p.OnCrash(t);
  EXPECT_TRUE(d.quarantine && !d.after_poison) << "the sixth crash";
}

}  // namespace
}  // namespace codecvisor
