#include "core/frame_selection.h"

#include "gtest/gtest.h"

namespace codecvisor::internal {
namespace {

TEST(CountFromEndTest, NegativeBoundsCountFromTheEnd) {
  EXPECT_EQ(*CountFromEnd(ipc::IndexRange{-3, 40, 1}, 40), (ipc::IndexRange{37, 40, 1}));
  EXPECT_EQ(*CountFromEnd(ipc::IndexRange{35, -1, 2}, 40), (ipc::IndexRange{35, 39, 2}));
  EXPECT_EQ(*CountFromEnd(ipc::IndexRange{-2, -5, 1}, 40), (ipc::IndexRange{38, 35, 1}));
  // Without negative bounds the range is left as it is, count known or not.
  EXPECT_EQ(*CountFromEnd(ipc::IndexRange{2, 9, 3}, -1), (ipc::IndexRange{2, 9, 3}));
}

TEST(CountFromEndTest, ABoundBeforeTheFirstFrameOrAnUnknownCountIsOutOfRange) {
  EXPECT_TRUE(absl::IsOutOfRange(CountFromEnd(ipc::IndexRange{-41, 3, 1}, 40).status()));
  EXPECT_TRUE(absl::IsOutOfRange(CountFromEnd(ipc::IndexRange{0, -41, 1}, 40).status()));
  EXPECT_TRUE(absl::IsOutOfRange(CountFromEnd(ipc::IndexRange{-1, 5, 1}, -1).status()));
}

TEST(DescribeSelectionTest, NamesEachKindAndShortensLongLists) {
  EXPECT_EQ(DescribeSelection({ipc::IndexRange{0, 10, 2}}), "frames [0, 10) step 2");
  EXPECT_EQ(DescribeSelection({ipc::IndexList{{1, 2, 3, 4, 5, 6, 7, 8, 9}}}),
            "frame indices [1, 2, 3, 4, 5, 6, 7, 8, ...]");
  EXPECT_EQ(DescribeSelection({ipc::PtsRange{1, 2}}), "frames played in [1, 2) s");
}

}  // namespace
}  // namespace codecvisor::internal
