#include "core/session_budget.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace codecvisor {
namespace {

TEST(SessionBudgetTest, ParksLeastRecentlyUsedFirstAndSkipsTheAsker) {
  SessionBudget budget(100);
  budget.Hold(1, 30);
  budget.Hold(2, 30);
  budget.Hold(3, 30);
  EXPECT_EQ(budget.held(), 90u);
  EXPECT_TRUE(budget.Fits(10));
  EXPECT_FALSE(budget.Fits(11));
  budget.Touch(1);  // 2 is now the least recently used
  EXPECT_EQ(budget.LeastRecentlyUsed(0), (std::vector<uint64_t>{2, 3, 1}));
  EXPECT_EQ(budget.LeastRecentlyUsed(3), (std::vector<uint64_t>{2, 1}));
}

TEST(SessionBudgetTest, ReleasingAndReholdingMovesTheSession) {
  SessionBudget budget(100);
  budget.Hold(1, 40);
  budget.Hold(2, 40);
  budget.Release(1);
  EXPECT_EQ(budget.held(), 40u);
  EXPECT_TRUE(budget.Fits(60));
  budget.Hold(1, 50);  // re-opened, at a different size: the most recent
  budget.Hold(2, 10);  // a re-open replaces what the session held
  EXPECT_EQ(budget.held(), 60u);
  EXPECT_EQ(budget.LeastRecentlyUsed(0), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(budget.sessions(), 2u);
  budget.Release(7);  // unknown: nothing happens
  budget.Touch(7);
  EXPECT_EQ(budget.held(), 60u);
  EXPECT_EQ(budget.sessions(), 2u);
}

TEST(SessionBudgetTest, ParkingInOrderMakesRoom) {
  // What the supervisor does: park in that order until the new one fits.
  SessionBudget budget(100);
  for (uint64_t token = 1; token <= 5; ++token) budget.Hold(token, 20);
  budget.Touch(2);
  std::vector<uint64_t> parked;
  for (uint64_t token : budget.LeastRecentlyUsed(0)) {
    if (budget.Fits(45)) break;
    budget.Release(token);
    parked.push_back(token);
  }
  EXPECT_EQ(parked, (std::vector<uint64_t>{1, 3, 4}));
  EXPECT_EQ(budget.held(), 40u);
}

TEST(SessionBudgetTest, ZeroCapacityFitsEverything) {
  SessionBudget budget(0);
  budget.Hold(1, UINT64_MAX / 2);
  EXPECT_TRUE(budget.Fits(UINT64_MAX / 2));
}

TEST(SessionBudgetTest, OverCapacityFitsNothing) {
  // Sessions opened before a smaller budget was in force, or whose
  // estimate was wrong, can hold more than the capacity: nothing fits and
  // the subtraction must not wrap.
  SessionBudget budget(100);
  budget.Hold(1, 150);
  EXPECT_FALSE(budget.Fits(0));
  EXPECT_FALSE(budget.Fits(1));
}

TEST(SessionBudgetTest, AddressSpaceCountsStacksForTheDecodersThreads) {
  constexpr uint64_t kStack = uint64_t{8} << 20;
  EXPECT_EQ(SessionAddressSpace(1000, 1, 2), 1000 + kStack);      // decodes on the session's thread
  EXPECT_EQ(SessionAddressSpace(1000, 4, 2), 1000 + 5 * kStack);  // four frame threads
  EXPECT_EQ(SessionAddressSpace(1000, 0, 2), 1000 + 4 * kStack);  // automatic: cores + 1
  // FFmpeg's automatic count stops at 16 threads: a 64-core host's
  // sessions are not 66 stacks each (the review helper's).
  EXPECT_EQ(SessionAddressSpace(1000, 0, 64), 1000 + 17 * kStack);
  EXPECT_EQ(SessionCapacity(8192), uint64_t{6144} << 20);
  EXPECT_EQ(SessionCapacity(0), 0u);
  EXPECT_EQ(SessionCapacity(UINT64_MAX), 0u);
}

}  // namespace
}  // namespace codecvisor
