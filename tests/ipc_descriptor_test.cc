// File: tests/ipc_descriptor_test.cc
//
// The channel's socket and what a channel leaves behind: the host accepts no
// descriptor from a backend (however many, and even while responses are
// ready), SendDescriptor never blocks on a backend that stops reading, and
// fifty channels with their children leak no descriptor or mapping. The
// rules every test keeps are in ipc_test_support.h.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "ipc/channel.h"
#include "ipc/messages.h"
#include "ipc/socket.h"
#include "ipc/unique_fd.h"
#include "tests/ipc_test_messages.h"
#include "tests/ipc_test_support.h"

namespace codecvisor::ipc {
namespace {

using namespace std::chrono_literals;
using namespace test;  // NOLINT(build/namespaces): the suites' shared helpers

// ---- the host accepts no descriptors ------------------------------------------------

// Sends `fd_count` descriptors (pipe ends) with `data_bytes` of data over the
// raw socket, bypassing SendWithDescriptors' limit of eight.
int SendDescriptorsToHost(BackendChannel& b, int fd_count, size_t data_bytes) {
  std::vector<int> fds;
  while (static_cast<int>(fds.size()) < fd_count) {
    int p[2];
    CHILD_CHECK(pipe2(p, O_CLOEXEC) == 0);
    fds.push_back(p[0]);
    fds.push_back(p[1]);
  }
  fds.resize(static_cast<size_t>(fd_count));
  std::vector<uint8_t> data(std::max<size_t>(data_bytes, 1), 0x5A);
  iovec iov{data.data(), data.size()};
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()), 0);
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
  std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  CHILD_CHECK(sendmsg(b.socket_for_test(), &msg, MSG_NOSIGNAL) == static_cast<ssize_t>(data.size()));
  return AwaitHostHangUp(b);
}

TEST(IpcChannelTest, HostRefusesDescriptorsFromThePeer) {
  struct Case {
    const char* name;
    BackendBody body;
  };
  const Case cases[] = {
      {"one descriptor via SendWithDescriptors",
       [](BackendChannel& b) {
         int p[2];
         CHILD_CHECK(pipe2(p, O_CLOEXEC) == 0);
         const uint8_t token[8] = {1};
         const int fds[] = {p[0], p[1]};
         CHILD_CHECK_OK(SendWithDescriptors(b.socket_for_test(), token, fds, In(kGenerous)));
         return AwaitHostHangUp(b);
       }},
      {"eight descriptors and 1000 bytes",
       [](BackendChannel& b) { return SendDescriptorsToHost(b, 8, 1000); }},
      {"twenty descriptors", [](BackendChannel& b) { return SendDescriptorsToHost(b, 20, 8); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto peer = StartPeer(SmallGeometry(), c.body);
    ASSERT_TRUE(peer.ok()) << peer.status();
    HostChannel& host = *peer->host;
    const int fds_before = CountOpenFds();

    absl::StatusOr<Incoming> in = host.Receive(In(kGenerous));
    ASSERT_FALSE(in.ok());
    EXPECT_EQ(in.status().code(), absl::StatusCode::kDataLoss) << in.status();
    EXPECT_EQ(CountOpenFds(), fds_before) << "a descriptor from the backend stayed open in the host";
    EXPECT_EQ(host.Receive(In(100ms)).status(), in.status());
    EXPECT_EQ(host.Send({1, Ping{1}}, In(100ms)), in.status());
    EXPECT_EQ(CountOpenFds(), fds_before);

    peer->host.reset();
    ExpectExit(peer->child, 0);
  }
}

// ---- regressions: bugs this suite found in ipc/, now fixed --------------------------

// A backend that never reads its socket fills the host's send buffer (about
// 280 descriptor messages with the default wmem); SendDescriptor must then
// give up at its deadline rather than block for as long as the backend
// lives. The watchdog (kill after 1 s) only bounds the test if that breaks.
TEST(IpcChannelTest, SendDescriptorNeverBlocksOnABackendThatStopsReading) {
  auto peer = StartPeer(SmallGeometry(), AwaitHostHangUp);  // never reads its socket
  ASSERT_TRUE(peer.ok()) << peer.status();
  HostChannel& host = *peer->host;
  UniqueFd devnull(open("/dev/null", O_RDONLY | O_CLOEXEC));

  const pid_t pid = peer->child.pid();  // reaped only by the guard, after join()
  std::mutex mu;
  std::condition_variable cv;
  bool finished = false;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, 1s, [&] { return finished; })) kill(pid, SIGKILL);
  });
  double longest_ms = 0;
  int sent = 0;
  absl::Status last;
  for (int i = 0; i < 1000; ++i) {
    const auto start = Clock::now();
    last = host.SendDescriptor(static_cast<uint64_t>(i), devnull.get(), In(100ms));
    longest_ms = std::max(longest_ms, MillisSince(start));
    if (!last.ok()) break;
    ++sent;
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    finished = true;
  }
  cv.notify_one();
  watchdog.join();
  EXPECT_LT(longest_ms, 500) << "SendDescriptor blocked for " << longest_ms << " ms after " << sent
                             << " unread descriptors; it ended with " << last;
}

// A backend that keeps a response ready never makes the host sleep; the
// host must still find the descriptor it sent on the socket (checked at least
// every kLivenessSlice of traffic) and break the channel.
TEST(IpcChannelTest, DescriptorFromPeerBreaksTheChannelEvenWhileResponsesAreReady) {
  auto peer = StartPeer(SmallGeometry(), [](BackendChannel& b) {
    int p[2];
    CHILD_CHECK(pipe2(p, O_CLOEXEC) == 0);
    const uint8_t token[8] = {1};
    const int fds[] = {p[0]};
    CHILD_CHECK_OK(SendWithDescriptors(b.socket_for_test(), token, fds, In(kGenerous)));
    CHILD_CHECK_OK(b.Send({1, Pong{1}}, In(kGenerous)));
    return AwaitHostHangUp(b);
  });
  ASSERT_TRUE(peer.ok()) << peer.status();
  HostChannel& host = *peer->host;
  const RingControl& ctl = host.region_for_test().header()->response;
  const Deadline until = In(kGenerous);
  while (ctl.tail.load() == 0 && Clock::now() < until) usleep(1000);
  ASSERT_NE(ctl.tail.load(), 0u);  // the descriptor went first

  absl::StatusOr<Incoming> in = host.Receive(In(kGenerous));
  EXPECT_EQ(in.status().code(), absl::StatusCode::kDataLoss)
      << "got " << (in.ok() ? KindName(in->response) : "an error");
  peer->host.reset();
  ExpectExit(peer->child, 0);
}

// ---- no leaks -----------------------------------------------------------------------

TEST(IpcChannelTest, ChannelsAndChildrenLeakNoDescriptorsOrMappings) {
  constexpr int kChannels = 50;
  const int fds_before = CountOpenFds();
  const int maps_before = CountChannelMappings();
  ASSERT_GE(fds_before, 0);

  for (int i = 0; i < kChannels; ++i) {
    SCOPED_TRACE(absl::StrCat("channel ", i));
    std::optional<FrameLease> outlives_channel;
    {
      auto peer = StartPeer(SmallGeometry(2), [](BackendChannel& b) {
        Request r = MustReceive(b);
        CHILD_CHECK(std::holds_alternative<Hello>(r.body));
        CHILD_CHECK_OK(b.Send(RoundTripResponse(1, ""), In(kGenerous)));
        r = MustReceive(b);
        FrameBatch batch{{Rgb24Frame(16, 8, 0, 48), Nv12Frame(32, 16, 0)}, true};
        LendFrames(b, batch, 300);
        CHILD_CHECK_OK(b.Send({r.id, batch}, In(kGenerous)));
        r = MustReceive(b);
        CHILD_CHECK(std::holds_alternative<Close>(r.body));
        CHILD_CHECK_OK(b.Send({r.id, Closed{}}, In(kGenerous)));
        return AwaitHostHangUp(b);
      });
      ASSERT_TRUE(peer.ok()) << peer.status();
      HostChannel& host = *peer->host;
      EXPECT_EQ(CountChannelMappings(), maps_before + 1);
      ASSERT_TRUE(host.Send({1, Hello{}}, In(kGenerous)).ok());
      ASSERT_TRUE(host.Receive(In(kGenerous)).ok());
      ASSERT_TRUE(host.Send({2, FrameRequest{IndexList{{0, 1}}}}, In(kGenerous)).ok());
      absl::StatusOr<Incoming> frames = host.Receive(In(kGenerous));
      ASSERT_TRUE(frames.ok()) << frames.status();
      ASSERT_EQ(frames->frames.size(), 2u);
      EXPECT_TRUE(FrameBytesMatch(frames->frames[0].bytes(), 300));
      EXPECT_TRUE(FrameBytesMatch(frames->frames[1].bytes(), 301));
      outlives_channel = std::move(frames->frames[1]);
      frames->frames.clear();
      ASSERT_TRUE(host.Send({3, Close{}}, In(kGenerous)).ok());
      absl::StatusOr<Incoming> closed = host.Receive(In(kGenerous));
      ASSERT_TRUE(closed.ok()) << closed.status();
      EXPECT_TRUE(std::holds_alternative<Closed>(closed->response.body));
      peer->host.reset();
      ExpectExit(peer->child, 0);
    }
    // The channel is gone; one lease keeps its mapping (and nothing else).
    EXPECT_EQ(CountChannelMappings(), maps_before + 1);
    EXPECT_TRUE(FrameBytesMatch(outlives_channel->bytes(), 301));
    outlives_channel.reset();
    EXPECT_EQ(CountChannelMappings(), maps_before);
  }
  EXPECT_EQ(CountOpenFds(), fds_before);
  EXPECT_EQ(CountChannelMappings(), maps_before);
}

}  // namespace
}  // namespace codecvisor::ipc
