#include "core/process_cpu.h"

#include <unistd.h>

#include <chrono>

#include <gtest/gtest.h>

namespace codecvisor {
namespace {

using std::chrono::milliseconds;

TEST(ParseStatCpuTimeTest, ReadsUserAndSystemTicksAfterTheCommand) {
  // A command with a space and a parenthesis, as a plugin's thread may name itself.
  const char stat[] = "4242 (codec (x) 1) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 3 0 123 0 0\n";
  EXPECT_EQ(ParseStatCpuTime(stat, 100), milliseconds(3250));
  EXPECT_EQ(ParseStatCpuTime(stat, 250), milliseconds(1300));
}

TEST(ParseStatCpuTimeTest, RefusesWhatIsNoStatLine) {
  EXPECT_EQ(ParseStatCpuTime("", 100), std::nullopt);
  EXPECT_EQ(ParseStatCpuTime("4242 (cut) S 1 2 3", 100), std::nullopt);
  EXPECT_EQ(ParseStatCpuTime("4242 (x) S 1 4242 4242 0 -1 4194560 100 0 0 0 u 75 0", 100), std::nullopt);
  EXPECT_EQ(ParseStatCpuTime("4242 (x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0", 0), std::nullopt);
}

TEST(ProcessCpuTimeTest, ThisProcessUsesCpuAsItSpins) {
  const std::optional<std::chrono::nanoseconds> before = ProcessCpuTime(getpid());
  ASSERT_TRUE(before.has_value());
  // Spin until the count moves (a tick is at most 10 ms of CPU here).
  std::optional<std::chrono::nanoseconds> now = before;
  for (int i = 0; i < 1'000'000'000 && now == before; ++i) {
    if (i % 100'000 == 0) now = ProcessCpuTime(getpid());
  }
  ASSERT_TRUE(now.has_value());
  EXPECT_GT(*now, *before);
  EXPECT_EQ(ProcessCpuTime(-1), std::nullopt);
}

}  // namespace
}  // namespace codecvisor
