// File: tests/ipc_channel_end_test.cc
//
// How a channel ends, seen from the side that stays: a backend that dies
// mid-record, is killed mid-reply, or exits while its own child still holds
// the socket (the host must say kUnavailable promptly, and frames it holds
// stay valid); a host that goes away while the backend waits in each of its
// blocking calls; and HostChannel::Interrupt(), from another thread or not.
// The rules every test keeps are in ipc_test_support.h.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "ipc/channel.h"
#include "ipc/messages.h"
#include "ipc/unique_fd.h"
#include "tests/ipc_test_messages.h"
#include "tests/ipc_test_support.h"

namespace codecvisor::ipc {
namespace {

using namespace std::chrono_literals;
using namespace test;  // NOLINT(build/namespaces): the suites' shared helpers

// ---- a peer that dies mid-way -------------------------------------------------------

// Writes the record header and half the payload of `response` at the
// response ring's published tail, and publishes nothing.
void WriteHalfARecord(BackendChannel& b, const Response& response) {
  auto words = CHILD_VALUE(EncodeResponse(response));
  std::span<const uint8_t> bytes = WordBytes(words);
  const uint64_t tail = ResponseControl(b).tail.load(std::memory_order_acquire);
  const uint32_t len = static_cast<uint32_t>(bytes.size());
  PokeRecordHeader(b, tail, len, ~len);
  PokeResponseRing(b, tail + 8, bytes.data(), bytes.size() / 2);
}

TEST(IpcChannelTest, PeerDyingHalfwayThroughARecordIsUnavailable) {
  auto peer = StartPeer(SmallGeometry(), [](BackendChannel& b) {
    CHILD_CHECK_OK(b.Send({1, Pong{1}}, In(kGenerous)));
    usleep(100'000);  // the host is most likely asleep in Receive by now
    WriteHalfARecord(b, {2, Error{ErrorCode::kInternal, std::string(600, 'x')}});
    return 0;  // dies with the record unpublished
  });
  ASSERT_TRUE(peer.ok()) << peer.status();
  HostChannel& host = *peer->host;

  absl::StatusOr<Incoming> first = host.Receive(In(kGenerous));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->response == (Response{1, Pong{1}}));

  const auto start = Clock::now();
  absl::StatusOr<Incoming> second = host.Receive(In(kGenerous));
  const double waited = MillisSince(start);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable) << second.status();
  EXPECT_LT(waited, kPromptMs);
  ExpectExit(peer->child, 0);

  // A dead peer is not a protocol violation: later calls still say "gone".
  EXPECT_EQ(host.Receive(In(100ms)).status().code(), absl::StatusCode::kUnavailable);
  UniqueFd devnull(open("/dev/null", O_RDONLY | O_CLOEXEC));
  EXPECT_EQ(host.SendDescriptor(1, devnull.get(), In(kGenerous)).code(), absl::StatusCode::kUnavailable);
}

TEST(IpcChannelTest, PeerKilledMidReplyIsUnavailableAndLeasesSurvive) {
  auto peer = StartPeer(SmallGeometry(), [](BackendChannel& b) {
    Request r = MustReceive(b);
    CHILD_CHECK(std::holds_alternative<FrameRequest>(r.body));
    FrameBatch batch;
    batch.frames = {Rgb24Frame(16, 8, 0, 48)};
    LendFrames(b, batch, 77);
    CHILD_CHECK_OK(b.Send({r.id, batch}, In(kGenerous)));
    WriteHalfARecord(b, {r.id, Error{ErrorCode::kInternal, std::string(900, 'y')}});
    raise(SIGKILL);
    return 1;
  });
  ASSERT_TRUE(peer.ok()) << peer.status();
  HostChannel& host = *peer->host;

  ASSERT_TRUE(host.Send({1, FrameRequest{IndexList{{0}}}}, In(kGenerous)).ok());
  absl::StatusOr<Incoming> batch = host.Receive(In(kGenerous));
  ASSERT_TRUE(batch.ok()) << batch.status();
  ASSERT_EQ(batch->frames.size(), 1u);
  FrameLease lease = std::move(batch->frames[0]);

  const auto start = Clock::now();
  absl::StatusOr<Incoming> next = host.Receive(In(kGenerous));
  EXPECT_EQ(next.status().code(), absl::StatusCode::kUnavailable) << next.status();
  EXPECT_LT(MillisSince(start), kPromptMs);

  std::optional<int> status = peer->child.Wait(kGenerous);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFSIGNALED(*status) && WTERMSIG(*status) == SIGKILL) << DescribeWaitStatus(*status);

  // The frame the caller holds stays valid after the backend died, and after
  // the channel itself is gone.
  EXPECT_TRUE(FrameBytesMatch(lease.bytes(), 77));
  peer->host.reset();
  ASSERT_TRUE(lease.valid());
  EXPECT_TRUE(FrameBytesMatch(lease.bytes(), 77));
  lease.Reset();
  EXPECT_FALSE(lease.valid());
}

// What a backend published before it died is read before its death is
// reported, also once the channel was interrupted for that death (as the
// supervisor does when it reaps the process): a frame finished before a
// crash reached the caller or not depending on which the host saw first.
TEST(IpcChannelTest, WhatADeadPeerPublishedIsReadBeforeItsDeath) {
  auto peer = StartPeer(SmallGeometry(), [](BackendChannel& b) {
    CHILD_CHECK_OK(b.Send({1, Pong{1}}, In(kGenerous)));
    CHILD_CHECK_OK(b.Send({2, Pong{2}}, In(kGenerous)));
    return 0;
  });
  ASSERT_TRUE(peer.ok()) << peer.status();
  HostChannel& host = *peer->host;
  ExpectExit(peer->child, 0);
  host.Interrupt();
  for (uint64_t id : {1, 2}) {
    absl::StatusOr<Incoming> in = host.Receive(In(kGenerous));
    ASSERT_TRUE(in.ok()) << "response " << id << ": " << in.status();
    EXPECT_TRUE(in->response == (Response{id, Pong{id}}));
  }
  // Then the interrupt, as for any interrupted channel.
  EXPECT_EQ(host.Receive(In(kGenerous)).status().code(), absl::StatusCode::kCancelled);
}

// Sets PR_SET_CHILD_SUBREAPER for the test's lifetime, so that a grandchild
// orphaned by our child is reparented to us and can be reaped.
class ScopedSubreaper {
 public:
  ScopedSubreaper() { ok_ = prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0; }
  ~ScopedSubreaper() {
    if (ok_) prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
  }
  bool ok() const { return ok_; }

 private:
  bool ok_ = false;
};

TEST(IpcChannelTest, PidFdSeesDeadPeerWhoseChildStillHoldsTheSocket) {
  ScopedSubreaper subreaper;
  ASSERT_TRUE(subreaper.ok());
  // Where the child tells us its own child's pid.
  void* shared = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(shared, MAP_FAILED);
  auto* grandchild_pid = new (shared) std::atomic<pid_t>(0);

  auto peer = StartPeer(SmallGeometry(), [grandchild_pid](BackendChannel& b) {
    const pid_t g = fork();
    if (g == 0) {
      // Keeps the channel socket open until the host hangs up (bounded).
      pollfd p{b.socket_for_test(), POLLRDHUP, 0};
      poll(&p, 1, 5000);
      _exit(0);
    }
    grandchild_pid->store(g);
    return 7;  // the backend dies; its socket lives on in the grandchild
  });
  ASSERT_TRUE(peer.ok()) << peer.status();

  const auto start = Clock::now();
  absl::StatusOr<Incoming> in = peer->host->Receive(In(kGenerous));
  EXPECT_EQ(in.status().code(), absl::StatusCode::kUnavailable) << in.status();
  EXPECT_TRUE(absl::StrContains(in.status().message(), "exited")) << in.status();
  EXPECT_LT(MillisSince(start), kPromptMs);

  ExpectExit(peer->child, 7);
  ChildProcess grandchild;
  if (grandchild_pid->load() > 0) grandchild = ChildProcess(grandchild_pid->load());
  EXPECT_GT(grandchild.pid(), 0);
  peer->host.reset();  // the grandchild sees the hang-up and leaves
  if (grandchild.pid() > 0) ExpectExit(grandchild, 0);
  munmap(shared, 4096);
}

// ---- the host goes away -------------------------------------------------------------

enum class BlockedIn { kReceive, kSend, kAcquire, kReceiveDescriptor };

// Backend: signals readiness, then blocks in the chosen wait until the host's
// end disappears. Exit code 0 if that wait ended with kUnavailable promptly.
int BlockedBackend(BackendChannel& b, BlockedIn where) {
  absl::Status result;
  double waited = 0;
  switch (where) {
    case BlockedIn::kReceive: {
      CHILD_CHECK_OK(b.Send({1, Pong{1}}, In(kGenerous)));
      const auto start = Clock::now();
      result = b.Receive(In(kGenerous)).status();
      waited = MillisSince(start);
      break;
    }
    case BlockedIn::kSend: {
      CHILD_CHECK_OK(b.Send({1, Pong{1}}, In(kGenerous)));
      for (uint64_t i = 2;; ++i) {  // fills the ring; the host reads no more
        const auto start = Clock::now();
        result = b.Send({i, Pong{i}}, In(kGenerous));
        waited = MillisSince(start);
        if (!result.ok()) break;
      }
      break;
    }
    case BlockedIn::kAcquire: {
      Request r = MustReceive(b);
      FrameBatch all;
      for (uint32_t i = 0; i < b.geometry().slot_count; ++i) all.frames.push_back(Rgb24Frame(16, 8, 0, 48));
      LendFrames(b, all, 10);
      CHILD_CHECK_OK(b.Send({r.id, all}, In(kGenerous)));
      const auto start = Clock::now();
      result = b.AcquireSlot(In(kGenerous)).status();
      waited = MillisSince(start);
      break;
    }
    case BlockedIn::kReceiveDescriptor: {
      CHILD_CHECK_OK(b.Send({1, Pong{1}}, In(kGenerous)));
      const auto start = Clock::now();
      result = b.ReceiveDescriptor(5, In(kGenerous)).status();
      waited = MillisSince(start);
      break;
    }
  }
  std::fprintf(stderr, "[backend child] after the host left: %s (%.1f ms)\n", result.ToString().c_str(),
               waited);
  if (absl::IsDeadlineExceeded(result) || absl::IsResourceExhausted(result)) return 2;
  if (!absl::IsUnavailable(result)) return 3;
  if (waited >= kPromptMs) return 4;
  return 0;
}

TEST(IpcChannelTest, BackendSeesHostHangUpInEveryWait) {
  const std::pair<const char*, BlockedIn> modes[] = {
      {"Receive", BlockedIn::kReceive},
      {"Send into a full ring", BlockedIn::kSend},
      {"Acquire with every slot held", BlockedIn::kAcquire},
      {"ReceiveDescriptor", BlockedIn::kReceiveDescriptor},
  };
  for (const auto& [name, where] : modes) {
    SCOPED_TRACE(name);
    const BlockedIn mode = where;
    auto peer =
        StartPeer(SmallGeometry(2, 4096), [mode](BackendChannel& b) { return BlockedBackend(b, mode); });
    ASSERT_TRUE(peer.ok()) << peer.status();
    HostChannel& host = *peer->host;

    std::optional<Incoming> held;
    if (mode == BlockedIn::kAcquire) {
      ASSERT_TRUE(host.Send({1, FrameRequest{IndexList{{0, 1}}}}, In(kGenerous)).ok());
      absl::StatusOr<Incoming> in = host.Receive(In(kGenerous));
      ASSERT_TRUE(in.ok()) << in.status();
      held = *std::move(in);  // the host keeps every slot, past its channel's end
    } else {
      absl::StatusOr<Incoming> ready = host.Receive(In(kGenerous));
      ASSERT_TRUE(ready.ok()) << ready.status();
    }
    if (mode == BlockedIn::kSend) {
      // Let the backend fill the response ring and block on it.
      const RingControl& ctl = host.region_for_test().header()->response;
      const Deadline until = In(kGenerous);
      while (ctl.tail.load() - ctl.head.load() < 4096 - 64 && Clock::now() < until) usleep(1000);
    }
    usleep(20'000);  // most likely blocked by now; correct either way
    peer->host.reset();
    ExpectExit(peer->child, 0);
    if (held) {
      for (size_t i = 0; i < held->frames.size(); ++i)
        EXPECT_TRUE(FrameBytesMatch(held->frames[i].bytes(), 10 + i));
    }
  }
}

// ---- Interrupt() --------------------------------------------------------------------

TEST(IpcChannelTest, InterruptFromAnotherThreadEndsAReceive) {
  auto peer = StartPeer(SmallGeometry(), AwaitHostHangUp);  // never answers
  ASSERT_TRUE(peer.ok()) << peer.status();
  HostChannel& host = *peer->host;

  std::thread interrupter([&host] {
    std::this_thread::sleep_for(50ms);
    host.Interrupt();
  });
  const auto start = Clock::now();
  absl::StatusOr<Incoming> in = host.Receive(In(kGenerous));
  const double waited = MillisSince(start);
  interrupter.join();
  EXPECT_EQ(in.status().code(), absl::StatusCode::kCancelled) << in.status();
  EXPECT_LT(waited, kPromptMs);
  EXPECT_EQ(host.Receive(In(100ms)).status().code(), absl::StatusCode::kCancelled);
  peer->host.reset();
  ExpectExit(peer->child, 0);
}

// ---- regressions: bugs this suite found in ipc/, now fixed --------------------------

// Interrupt() fails every later call, even one that would not have to wait
// (a response already published, room in the ring).
TEST(IpcChannelTest, InterruptFailsLaterCallsEvenWhenTheyNeedNotWait) {
  auto peer = StartPeer(SmallGeometry(), [](BackendChannel& b) {
    CHILD_CHECK_OK(b.Send({1, Pong{1}}, In(kGenerous)));
    return AwaitHostHangUp(b);
  });
  ASSERT_TRUE(peer.ok()) << peer.status();
  HostChannel& host = *peer->host;
  // Wait until the Pong is published, without consuming it.
  const RingControl& ctl = host.region_for_test().header()->response;
  const Deadline until = In(kGenerous);
  while (ctl.tail.load() == 0 && Clock::now() < until) usleep(1000);
  ASSERT_NE(ctl.tail.load(), 0u);

  host.Interrupt();
  absl::StatusOr<Incoming> in = host.Receive(In(100ms));
  EXPECT_EQ(in.status().code(), absl::StatusCode::kCancelled)
      << "Receive after Interrupt() returned " << (in.ok() ? KindName(in->response) : "an error");
  EXPECT_EQ(host.Send({2, Ping{2}}, In(100ms)).code(), absl::StatusCode::kCancelled);
  UniqueFd devnull(open("/dev/null", O_RDONLY | O_CLOEXEC));
  EXPECT_EQ(host.SendDescriptor(3, devnull.get(), In(kGenerous)).code(), absl::StatusCode::kCancelled);
  peer->host.reset();
  ExpectExit(peer->child, 0);
}

}  // namespace
}  // namespace codecvisor::ipc
