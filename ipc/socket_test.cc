#include "ipc/socket.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

namespace codecvisor::ipc {
namespace {

Deadline In(int ms) { return Clock::now() + std::chrono::milliseconds(ms); }

TEST(SocketTest, DescriptorTravelsAndStillWorks) {
  auto pair = MakeSocketPair();
  ASSERT_TRUE(pair.ok());
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  const uint8_t tag[] = {1, 2, 3};
  const int fds[] = {p[1]};
  ASSERT_TRUE(SendWithDescriptors(pair->first.get(), tag, fds, In(1000)).ok());
  close(p[1]);
  auto got = ReceiveWithDescriptors(pair->second.get(), 16, 1, In(1000));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->bytes, std::vector<uint8_t>({1, 2, 3}));
  ASSERT_EQ(got->fds.size(), 1u);
  EXPECT_TRUE(fcntl(got->fds[0].get(), F_GETFD) & FD_CLOEXEC);
  ASSERT_EQ(write(got->fds[0].get(), "x", 1), 1);
  char c;
  ASSERT_EQ(read(p[0], &c, 1), 1);
  EXPECT_EQ(c, 'x');
  close(p[0]);
}

TEST(SocketTest, TooManyDescriptorsAreAllClosed) {
  auto pair = MakeSocketPair();
  ASSERT_TRUE(pair.ok());
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  const int fds[] = {p[0], p[1]};
  ASSERT_TRUE(SendWithDescriptors(pair->first.get(), std::span<const uint8_t>(), fds, In(1000)).ok());
  close(p[0]);
  close(p[1]);
  auto got = ReceiveWithDescriptors(pair->second.get(), 16, 1, In(1000));
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
}

// A receiver with no descriptor free gets the message's bytes and a
// kResourceExhausted it can answer, not a broken channel.
TEST(SocketTest, DescriptorsWithNoSlotFreeAreResourceExhausted) {
  auto pair = MakeSocketPair();
  ASSERT_TRUE(pair.ok());
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  const uint8_t tag[] = {7};
  const int fds[] = {p[0], p[1]};
  ASSERT_TRUE(SendWithDescriptors(pair->first.get(), tag, fds, In(1000)).ok());
  close(p[0]);
  close(p[1]);
  // The lowest free number as the soft limit: every slot below it is taken.
  const int lowest_free = fcntl(0, F_DUPFD_CLOEXEC, 0);
  ASSERT_GE(lowest_free, 0);
  close(lowest_free);
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  rlimit full = saved;
  full.rlim_cur = static_cast<rlim_t>(lowest_free);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &full), 0);
  auto got = ReceiveWithDescriptors(pair->second.get(), 16, 2, In(1000));
  setrlimit(RLIMIT_NOFILE, &saved);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kResourceExhausted) << got.status();
  EXPECT_NE(got.status().message().find("no descriptor free"), std::string::npos) << got.status();
}

TEST(SocketTest, ReceiveHonoursDeadline) {
  auto pair = MakeSocketPair();
  ASSERT_TRUE(pair.ok());
  auto got = ReceiveWithDescriptors(pair->second.get(), 16, 1, In(30));
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST(PeerLivenessTest, SeesHangUpAndInterrupt) {
  auto pair = MakeSocketPair();
  ASSERT_TRUE(pair.ok());
  PeerLiveness live(pair->first.get(), -1, true);
  EXPECT_TRUE(live.Check().ok());
  pair->second.reset();
  EXPECT_EQ(live.Check().code(), absl::StatusCode::kUnavailable);
  auto pair2 = MakeSocketPair();
  ASSERT_TRUE(pair2.ok());
  PeerLiveness live2(pair2->first.get(), -1, true);
  live2.Interrupt();
  EXPECT_EQ(live2.Check().code(), absl::StatusCode::kCancelled);
}

TEST(PeerLivenessTest, HostRejectsAndClosesDescriptorsFromPeer) {
  auto pair = MakeSocketPair();
  ASSERT_TRUE(pair.ok());
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  const int fds[] = {p[1]};
  ASSERT_TRUE(SendWithDescriptors(pair->second.get(), std::span<const uint8_t>(), fds, In(1000)).ok());
  close(p[1]);
  PeerLiveness live(pair->first.get(), -1, /*host_side=*/true);
  EXPECT_EQ(live.Check().code(), absl::StatusCode::kDataLoss);
  // The only write end was the one in flight: the host closed it unread, so
  // the pipe now reads EOF.
  char c;
  EXPECT_EQ(read(p[0], &c, 1), 0);
  close(p[0]);
}

TEST(PeerLivenessTest, PidFdSeesExit) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) _exit(0);
  auto pidfd = OpenPidFd(pid);
  ASSERT_TRUE(pidfd.ok()) << pidfd.status();
  auto pair = MakeSocketPair();
  ASSERT_TRUE(pair.ok());
  PeerLiveness live(pair->first.get(), pidfd->get(), true);
  // The child exits promptly; poll until the pidfd says so.
  absl::Status s;
  for (int i = 0; i < 4000 && (s = live.Check()).ok(); ++i) usleep(5000);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("exited"), std::string::npos);
  waitpid(pid, nullptr, 0);
}

}  // namespace
}  // namespace codecvisor::ipc
