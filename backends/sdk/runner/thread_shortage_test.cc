#include "backends/sdk/runner/thread_shortage.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

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

// Under an address-space limit a thread's stack cannot be mapped and
// pthread_create answers EAGAIN: the limit was named as the thread count's
// ("the backend runs 2 threads, its limit: [sandbox] threads = 4096").
TEST(ThreadShortageTest, NoRoomForAStackNamesTheAddressSpace) {
#ifdef CODECVISOR_SANITIZER
  // As the sandbox does not set it there (core/backend_sandbox.cc).
  GTEST_SKIP() << "a sanitizer's runtime cannot run under an address-space limit";
#endif
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Far below what the process has mapped already: no new mapping fits.
    const rlimit limit{16 << 20, RLIM_INFINITY};
    if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(10);
    const ipc::Error e = ThreadRefused("cpu", std::strerror(EAGAIN));
    if (e.code != ipc::ErrorCode::kResourceExhausted) _exit(11);
    if (e.message.find("no room for a thread's stack") == std::string::npos) _exit(12);
    if (e.message.find("limited to 16 MiB") == std::string::npos) _exit(13);
    if (e.message.find("[sandbox] threads") != std::string::npos) _exit(14);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: setrlimit, 11: not kResourceExhausted, 12: no stack named, "
                                       "13: no limit named, 14: the thread limit named";
}

}  // namespace
}  // namespace codecvisor::runner
