#include "ipc/idle_cores.h"

#include <gtest/gtest.h>

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

TEST(IdleCoresTest, ThisMachineIsReadable) {
  // /proc is mounted where the tests run; the value depends on the load.
  EXPECT_GE(IdleCores(), 0);
  EXPECT_GE(IdleCores(), 0);  // the cached value
}

}  // namespace
}  // namespace codecvisor::ipc
