#include "ipc/idle_cores.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace codecvisor::ipc {
namespace {

TEST(IdleCoresTest, ReadsTheRunnableCountFromLoadavg) {
  EXPECT_EQ(RunnableFromLoadavg("1.09 2.06 2.16 1/90 25695\n"), 1);
  EXPECT_EQ(RunnableFromLoadavg("0.00 0.00 0.00 17/1203 1"), 17);
  EXPECT_EQ(RunnableFromLoadavg(""), std::nullopt);
  EXPECT_EQ(RunnableFromLoadavg("1.0 2.0 3.0 x/90 1"), std::nullopt);
  EXPECT_EQ(RunnableFromLoadavg("1.0 2.0 3.0"), std::nullopt);
  EXPECT_EQ(RunnableFromLoadavg("1.0 2.0 3.0 -1/90 1"), std::nullopt);
}

TEST(IdleCoresTest, TheCallerIsNotCountedAsRunnable) {
  EXPECT_EQ(IdleCoresFrom(2, 1), 2);  // only the caller runs
  EXPECT_EQ(IdleCoresFrom(2, 2), 1);
  EXPECT_EQ(IdleCoresFrom(2, 3), 0);
  EXPECT_EQ(IdleCoresFrom(2, 9), 0);
  EXPECT_EQ(IdleCoresFrom(2, 0), 2);
}

struct FakeSource {
  int64_t now_ns = 1'000'000;
  int value = 1;
  int reads = 0;
};

CachedIdleCores CacheOver(FakeSource& src) {
  return CachedIdleCores([&src] { return src.now_ns; },
                         [&src] {
                           ++src.reads;
                           return src.value;
                         },
                         /*refresh_ns=*/10'000'000);
}

TEST(CachedIdleCoresTest, ReadsOnFirstUseThenKeepsTheValueUntilItIsOld) {
  FakeSource src;
  CachedIdleCores cache = CacheOver(src);
  EXPECT_EQ(cache.Get(), 1);
  EXPECT_EQ(src.reads, 1);
  src.value = 2;
  src.now_ns += 9'999'999;  // not yet 10 ms
  EXPECT_EQ(cache.Get(), 1);
  EXPECT_EQ(src.reads, 1);
  src.now_ns += 1;  // 10 ms since the read
  EXPECT_EQ(cache.Get(), 2);
  EXPECT_EQ(src.reads, 2);
  src.value = 0;
  EXPECT_EQ(cache.Get(), 2);  // the refresh restarted the 10 ms
  EXPECT_EQ(src.reads, 2);
}

TEST(CachedIdleCoresTest, ReadsOnFirstUseWhateverTheClockSays) {
  FakeSource src;
  src.now_ns = 0;
  src.value = 2;
  CachedIdleCores cache = CacheOver(src);
  EXPECT_EQ(cache.Get(), 2);
  EXPECT_EQ(src.reads, 1);
}

TEST(CachedIdleCoresTest, AFailedReadIsFinal) {
  FakeSource src;
  src.value = -1;
  CachedIdleCores cache = CacheOver(src);
  EXPECT_EQ(cache.Get(), -1);
  src.value = 2;
  src.now_ns += 1'000'000'000;
  EXPECT_EQ(cache.Get(), -1);
  EXPECT_EQ(src.reads, 1);
}

TEST(IdleCoresTest, ThisMachineIsReadable) {
  // /proc is mounted where the tests run; the value depends on the load.
  EXPECT_GE(IdleCores(), 0);
  EXPECT_GE(IdleCores(), 0);  // the cached value
}

}  // namespace
}  // namespace codecvisor::ipc
