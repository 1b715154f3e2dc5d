#include "backends/sdk/runner/thread_shortage.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace codecvisor::runner {
namespace {

TEST(ThreadShortageTest, TheThreadCountIsTheTwentiethField) {
  EXPECT_EQ(ThreadsInStat("1 (codecvisor-back) S 0 1 1 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 7 0 9 1 2 3"), 7);
  // A command name with spaces and parentheses of its own.
  EXPECT_EQ(ThreadsInStat("42 (a) b (c) S 0 1 1 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 12 0 9"), 12);
}

TEST(ThreadShortageTest, AnythingElseIsNoCount) {
  EXPECT_EQ(ThreadsInStat(""), std::nullopt);
  EXPECT_EQ(ThreadsInStat("1 (x) S 0 1"), std::nullopt);
  EXPECT_EQ(ThreadsInStat("1 x S 0 1 1 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 7 0"), std::nullopt);
  EXPECT_EQ(ThreadsInStat("1 (x) S 0 1 1 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 seven 0"), std::nullopt);
  EXPECT_EQ(ThreadsInStat("1 (x) S 0 1 1 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 0 0"), std::nullopt);
}

TEST(ThreadShortageTest, OurOwnProcessIsCounted) {
  std::ifstream in("/proc/self/stat");
  std::stringstream s;
  s << in.rdbuf();
  const std::optional<int64_t> threads = ThreadsInStat(s.str());
  ASSERT_TRUE(threads.has_value()) << s.str();
  EXPECT_GE(*threads, 1);
}

TEST(ThreadShortageTest, OnlyARefusalBelowTheOwnLimitIsTheUsers) {
  EXPECT_TRUE(RefusedAboveOwnLimit(3, 4096));
  EXPECT_TRUE(RefusedAboveOwnLimit(4095, 4096));
  EXPECT_FALSE(RefusedAboveOwnLimit(4096, 4096));  // the plugin used up its own
  EXPECT_FALSE(RefusedAboveOwnLimit(5000, 4096));
  EXPECT_FALSE(RefusedAboveOwnLimit(-1, 4096));
}

TEST(ThreadShortageTest, ThreadMessagesAreRecognised) {
  EXPECT_TRUE(SaysNoThread(std::string("cannot open the h264 decoder: ") + std::strerror(EAGAIN)));
  EXPECT_FALSE(SaysNoThread("out of memory for the decoder"));
}

TEST(ThreadShortageTest, ThisProcessFarBelowItsLimitBlamesItsUser) {
  // This test's process runs few threads under any sane limit.
  const ipc::Error e = ThreadRefused("cpu", std::strerror(EAGAIN));
  EXPECT_EQ(e.code, ipc::ErrorCode::kNoThreadFree);
  EXPECT_NE(e.message.find("backend 'cpu' could not start a thread"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("user's limit"), std::string::npos) << e.message;
}

}  // namespace
}  // namespace codecvisor::runner
