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

}  // namespace
}  // namespace codecvisor
