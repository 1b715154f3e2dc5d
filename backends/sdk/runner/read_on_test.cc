#include "backends/sdk/runner/read_on.h"

#include <gtest/gtest.h>

#include <cmath>

namespace codecvisor::runner {
namespace {

TEST(ReadOnTest, FramesMovingForwardAreTaken) {
  ReadOn r;
  for (double t : {0.5, 0.54, 0.58, 2.0, 2.04}) EXPECT_TRUE(r.Takes(t)) << t;
}

TEST(ReadOnTest, AFrameEarlierThanTheLastEndsTheRange) {
  ReadOn r;
  EXPECT_TRUE(r.Takes(1.0));
  EXPECT_TRUE(r.Takes(1.04));
  EXPECT_FALSE(r.Takes(1.0));
}

TEST(ReadOnTest, NaNEndsTheRange) {
  ReadOn first;
  EXPECT_TRUE(first.Takes(std::nan("")));  // the first is the runner's own lookup: checked elsewhere
  ReadOn r;
  EXPECT_TRUE(r.Takes(1.0));
  EXPECT_FALSE(r.Takes(std::nan("")));
}

TEST(ReadOnTest, FramesSharingATimeAreTakenAFewInARow) {
  ReadOn r;
  // Pairs, as a muxer that rounded two frames onto one time writes them.
  for (double t : {0.0, 0.0, 0.08, 0.08, 0.16, 0.16}) EXPECT_TRUE(r.Takes(t)) << t;
  // A later time starts the count again.
  for (int i = 0; i <= ReadOn::kMaxFramesAtOneTime; ++i) EXPECT_TRUE(r.Takes(0.24)) << i;
}

TEST(ReadOnTest, AVendorRepeatingItsLastFrameIsCutOff) {
  ReadOn r;
  EXPECT_TRUE(r.Takes(1.96));
  int taken = 0;
  while (taken < 1000 && r.Takes(1.96)) ++taken;
  EXPECT_EQ(taken, ReadOn::kMaxFramesAtOneTime);
  EXPECT_FALSE(r.Takes(1.96));
}

}  // namespace
}  // namespace codecvisor::runner
