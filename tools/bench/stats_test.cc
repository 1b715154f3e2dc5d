#include "tools/bench/stats.h"

#include <gtest/gtest.h>
#include <vector>

namespace codecvisor::bench {
namespace {

TEST(StatsTest, MedianIsAMeasuredValue) {
  EXPECT_EQ(Median({}), 0);
  EXPECT_EQ(Median({3, 1, 2}), 2);
  EXPECT_EQ(Median({4, 1, 3, 2}), 3);
}

TEST(StatsTest, PercentileIsNearestRank) {
  std::vector<double> v;
  for (int i = 1; i <= 50; ++i) v.push_back(51 - i);  // 50..1, unsorted
  EXPECT_EQ(Percentile(v, 50), 25);
  EXPECT_EQ(Percentile(v, 95), 48);  // ceil(47.5) = 48th of 50
  EXPECT_EQ(Percentile(v, 100), 50);
  EXPECT_EQ(Percentile({7}, 95), 7);
  EXPECT_EQ(Percentile({}, 50), 0);
}

TEST(StatsTest, QuartilesAreNearestRank) {
  std::vector<double> v;
  for (int i = 1; i <= 8; ++i) v.push_back(9 - i);  // 8..1, unsorted
  EXPECT_EQ(Quartiles(v), (std::vector<double>{2, 4, 6}));
  EXPECT_EQ(Quartiles({}), (std::vector<double>{0, 0, 0}));
}

TEST(StatsTest, PairedSpeedRatiosPairByPosition) {
  // Baseline 0.5 s against 0.625 s is the measured side at 0.8 of its speed
  // (times exact in binary, so each quotient is the nearest double).
  const std::vector<double> baseline = {0.5, 0.25, 0.75};
  const std::vector<double> measured = {0.625, 0.125, 0.75};
  EXPECT_EQ(PairedSpeedRatios(baseline, measured), (std::vector<double>{0.8, 2.0, 1.0}));
  // Only as many pairs as the shorter side has; a time of zero is no pair.
  const std::vector<double> shorter = {0.625, 0};
  EXPECT_EQ(PairedSpeedRatios(baseline, shorter), (std::vector<double>{0.8}));
}

TEST(StatsTest, Rounded) {
  EXPECT_DOUBLE_EQ(Rounded(1.23456, 2), 1.23);
  EXPECT_DOUBLE_EQ(Rounded(99.95, 0), 100);
}

TEST(StatsTest, BufferUseCountsFramesPerBufferAndRanksThem) {
  const char slots[3] = {};
  BufferUse a;
  for (int i = 0; i < 6; ++i) a.Add(&slots[i % 2 == 0 ? 0 : (i == 5 ? 2 : 1)]);
  EXPECT_EQ(a.CountsByRank(), (std::vector<int64_t>{3, 2, 1}));
  BufferUse b;
  b.Add(&slots[1], 4);
  b.Merge(a);
  EXPECT_EQ(b.CountsByRank(), (std::vector<int64_t>{6, 3, 1}));
  // Two decoders' slots (different addresses) summed by rank.
  const std::vector<double> shares = SharesByRank({{6, 3, 1}, {10}});
  ASSERT_EQ(shares.size(), 3u);
  EXPECT_DOUBLE_EQ(shares[0], 16.0 / 20);
  EXPECT_DOUBLE_EQ(shares[1], 3.0 / 20);
  EXPECT_DOUBLE_EQ(shares[2], 1.0 / 20);
  EXPECT_TRUE(SharesByRank({}).empty());
}

}  // namespace
}  // namespace codecvisor::bench
