#include "backends/sdk/runner/cancel_check.h"

#include <thread>

#include "gtest/gtest.h"

namespace codecvisor::runner {
namespace {

int32_t Ask(CancelCheck& check) { return check.abi()->cancelled(check.abi()); }

TEST(CancelCheckTest, OutsideAScopeTheAnswerIsNo) {
  CancelCheck check;
  EXPECT_EQ(Ask(check), 0);
}

TEST(CancelCheckTest, TheProbeAnswersUntilItSaysYesAndTheAnswerStays) {
  CancelCheck check;
  int probes = 0;
  bool cancelled = false;
  CancelCheck::Scope scope(check, [&] {
    ++probes;
    return cancelled;
  });
  EXPECT_EQ(Ask(check), 0);
  EXPECT_EQ(Ask(check), 0);
  EXPECT_FALSE(scope.told());
  cancelled = true;
  EXPECT_EQ(Ask(check), 1);
  EXPECT_TRUE(scope.told());
  cancelled = false;  // the Cancel was read once; the request stays cancelled
  EXPECT_EQ(Ask(check), 1);
  EXPECT_EQ(probes, 3);
}

TEST(CancelCheckTest, AScopeEndsWithItsCall) {
  CancelCheck check;
  {
    CancelCheck::Scope scope(check, [] { return true; });
  }
  EXPECT_EQ(Ask(check), 0);
  // The next call starts over: a new request is not cancelled.
  CancelCheck::Scope next(check, [] { return false; });
  EXPECT_EQ(Ask(check), 0);
}

TEST(CancelCheckTest, AnotherThreadIsToldNoAndNeverRunsTheProbe) {
  CancelCheck check;
  int probes = 0;
  CancelCheck::Scope scope(check, [&] {
    ++probes;
    return true;
  });
  int32_t answer = -1;
  std::thread([&] { answer = Ask(check); }).join();
  EXPECT_EQ(answer, 0);
  EXPECT_EQ(probes, 0);
  EXPECT_EQ(Ask(check), 1);
}

TEST(CancelCheckTest, AnotherSessionsCheckIsNotAnsweredByThisScope) {
  CancelCheck mine;
  CancelCheck other;
  CancelCheck::Scope scope(mine, [] { return true; });
  EXPECT_EQ(Ask(other), 0);
  EXPECT_EQ(Ask(mine), 1);
}

TEST(CancelCheckTest, NestedScopesAnswerInnermostFirst) {
  CancelCheck a;
  CancelCheck b;
  CancelCheck::Scope outer(a, [] { return true; });
  {
    CancelCheck::Scope inner(b, [] { return false; });
    EXPECT_EQ(Ask(b), 0);
    EXPECT_EQ(Ask(a), 0) << "only the innermost scope answers";
  }
  EXPECT_EQ(Ask(a), 1);
}

// A call from inside the probe (a plugin's signal handler that ran while
// the runner read the channel) does not run the probe again.
TEST(CancelCheckTest, ACallFromInsideTheProbeIsToldTheLastAnswer) {
  CancelCheck check;
  int probes = 0;
  int32_t inner = -1;
  CancelCheck::Scope scope(check, [&] {
    ++probes;
    inner = Ask(check);
    return true;
  });
  EXPECT_EQ(Ask(check), 1);
  EXPECT_EQ(inner, 0);
  EXPECT_EQ(probes, 1);
}

TEST(CancelCheckTest, ANullSelfIsNo) {
  CancelCheck check;
  CancelCheck::Scope scope(check, [] { return true; });
  EXPECT_EQ(check.abi()->cancelled(nullptr), 0);
}

}  // namespace
}  // namespace codecvisor::runner
