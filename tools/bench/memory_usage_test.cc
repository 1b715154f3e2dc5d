#include "tools/bench/memory_usage.h"

#include <gtest/gtest.h>

#include <vector>

namespace codecvisor::bench {
namespace {

TEST(MemoryUsageTest, ReadsAndResetsThePeak) {
  auto rss = ProcStatusKb("VmRSS");
  ASSERT_TRUE(rss.ok()) << rss.status();
  EXPECT_GT(*rss, 0);
  EXPECT_FALSE(ProcStatusKb("NoSuchField").ok());
  {
    std::vector<char> big(64 << 20, 1);  // raise the peak by 64 MiB
    asm volatile("" : : "r"(big.data()) : "memory");
  }
  ASSERT_TRUE(ResetPeakRss().ok());
  auto hwm = ProcStatusKb("VmHWM");
  ASSERT_TRUE(hwm.ok());
  auto now = ProcStatusKb("VmRSS");
  ASSERT_TRUE(now.ok());
  EXPECT_LT(*hwm, *now + (32 << 10)) << "the 64 MiB peak survived the reset";
}

// Resident at once, every page: VmRSS grows by its size.
TEST(MemoryUsageTest, ResidentMemoryIsResident) {
  auto before = ProcStatusKb("VmRSS");
  ASSERT_TRUE(before.ok());
  ResidentMemory memory(64);
  ASSERT_EQ(memory.bytes(), uint64_t{64} << 20);
  auto after = ProcStatusKb("VmRSS");
  ASSERT_TRUE(after.ok());
  EXPECT_GE(*after - *before, 60 << 10) << "64 MiB written is not resident";
  EXPECT_GT(memory.RewriteMs(), 0);
  EXPECT_EQ(ResidentMemory(0).bytes(), 0u);
}

}  // namespace
}  // namespace codecvisor::bench
