// File: core/idle_cpu_watch_test.cc

#include "core/idle_cpu_watch.h"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace codecvisor {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const IdleCpuWatch::time_point t0 = IdleCpuWatch::time_point() + std::chrono::hours(1);

// Samples every 2 s (the heartbeat) of a backend that uses `per_mille` of
// a core, idle throughout; the seconds at which the watch spoke.
std::vector<int> Verdicts(int per_mille, int samples, bool idle = true) {
  IdleCpuWatch watch;
  std::vector<int> at;
  for (int i = 0; i <= samples; ++i) {
    const auto cpu = milliseconds(2000 * i * per_mille / 1000);
    if (watch.Sample(t0 + seconds(2 * i), idle, cpu).has_value()) at.push_back(2 * i);
  }
  return at;
}

TEST(IdleCpuWatchTest, ABackendSpinningWithNothingToDoIsCaughtOnceAWindowHasPassed) {
  EXPECT_EQ(Verdicts(1000, 12), (std::vector<int>{10, 20}));  // a whole core: at 10 s, then again
  EXPECT_EQ(Verdicts(2000, 6), (std::vector<int>{10}));       // two cores
  EXPECT_EQ(Verdicts(600, 6), (std::vector<int>{10}));
}

TEST(IdleCpuWatchTest, LittleCpuWhileIdleIsNoVerdict) {
  EXPECT_TRUE(Verdicts(0, 30).empty());
  EXPECT_TRUE(Verdicts(100, 30).empty());  // a driver's polling thread
  EXPECT_TRUE(Verdicts(500, 30).empty());  // exactly half a core is allowed
}

TEST(IdleCpuWatchTest, ABusyBackendWithDecodersOpenIsNeverJudged) {
  EXPECT_TRUE(Verdicts(2000, 30, /*idle=*/false).empty());
}

TEST(IdleCpuWatchTest, TheWindowStartsWhenTheBackendBecomesIdle) {
  IdleCpuWatch watch;
  // Decoding (two cores) until 20 s, then idle and quiet: the decoding
  // does not count against the idle window.
  for (int s = 0; s <= 20; s += 2) EXPECT_FALSE(watch.Sample(t0 + seconds(s), false, seconds(s * 2)));
  for (int s = 22; s <= 60; s += 2) EXPECT_FALSE(watch.Sample(t0 + seconds(s), true, seconds(40))) << s;
  // A decoder opened for a moment at 62 s ends the idle stretch; spinning
  // from 64 s on is caught 10 s later, not at once.
  EXPECT_FALSE(watch.Sample(t0 + seconds(62), false, seconds(40)));
  EXPECT_FALSE(watch.Sample(t0 + seconds(64), true, seconds(40)));
  for (int s = 66; s < 74; s += 2) EXPECT_FALSE(watch.Sample(t0 + seconds(s), true, seconds(40 + s - 64))) << s;
  EXPECT_TRUE(watch.Sample(t0 + seconds(74), true, seconds(50)));
}

TEST(IdleCpuWatchTest, AnUnknownCpuTimeOrANewProcessStartsOver) {
  IdleCpuWatch watch;
  EXPECT_FALSE(watch.Sample(t0, true, seconds(0)));
  EXPECT_FALSE(watch.Sample(t0 + seconds(6), true, std::nullopt));  // procfs hidden
  EXPECT_FALSE(watch.Sample(t0 + seconds(12), true, seconds(12)));  // the window starts again here
  EXPECT_FALSE(watch.Sample(t0 + seconds(14), true, seconds(1)));   // a restarted backend's own CPU time
  EXPECT_FALSE(watch.Sample(t0 + seconds(20), true, seconds(7)));
  EXPECT_TRUE(watch.Sample(t0 + seconds(24), true, seconds(11)));
  watch.Reset();
  EXPECT_FALSE(watch.Sample(t0 + seconds(40), true, seconds(500)));
}

TEST(IdleCpuWatchTest, TheVerdictSaysWhatWasUsed) {
  IdleCpuWatch watch;
  ASSERT_FALSE(watch.Sample(t0, true, seconds(0)));
  const std::optional<std::string> verdict = watch.Sample(t0 + seconds(10), true, seconds(16));
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(*verdict, "used 16.0 s of CPU in 10.0 s with no decoder open on it");
}

}  // namespace
}  // namespace codecvisor
