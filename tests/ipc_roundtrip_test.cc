// File: tests/ipc_roundtrip_test.cc
//
// Round trips between the host and a forked backend: every request and
// response kind once (descriptors passed to the backend, a second channel
// attached through the first, frames of every layout read from the arena),
// then thousands of messages through 4 KiB rings so both wrap many times.
// The rules every test keeps are in ipc_test_support.h.

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
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

// ---- every message kind -------------------------------------------------------------

constexpr uint64_t kSessionFrameSeed = 4242;
constexpr absl::string_view kFileContent = "bytes the host put in the file";
constexpr absl::string_view kBackendMark = "written by the backend";
constexpr off_t kBackendMarkOffset = 100;

int RoundTripBackend(BackendChannel& b) {
  std::unique_ptr<BackendChannel> session;
  for (const Request& want : RoundTripRequests()) {
    Request got = MustReceive(b);
    CHILD_CHECK(got == want);
    Response reply = RoundTripResponse(want.id, std::string(kFileContent));
    if (std::holds_alternative<OpenSession>(want.body)) {
      // The descriptor came over the socket: the child inherited none.
      UniqueFd file = CHILD_VALUE(b.ReceiveDescriptor(kFileToken, In(kGenerous)));
      std::string content(kFileContent.size(), '\0');
      CHILD_CHECK(pread(file.get(), content.data(), content.size(), 0) ==
                  static_cast<ssize_t>(content.size()));
      CHILD_CHECK(pwrite(file.get(), kBackendMark.data(), kBackendMark.size(), kBackendMarkOffset) ==
                  static_cast<ssize_t>(kBackendMark.size()));
      reply = RoundTripResponse(want.id, content);  // echoes what it read
    }
    if (std::holds_alternative<AttachSession>(want.body)) {
      // A second channel, from two descriptors sent in one message.
      std::vector<UniqueFd> fds = CHILD_VALUE(b.ReceiveDescriptors(kAttachToken, 2, In(kGenerous)));
      CHILD_CHECK(fds.size() == 2);
      session = CHILD_VALUE(BackendChannel::Attach(PeerEnds{std::move(fds[0]), std::move(fds[1])}));
    }
    if (auto* batch = std::get_if<FrameBatch>(&reply.body)) LendFrames(b, *batch, FrameSeed(want.id));
    CHILD_CHECK_OK(b.Send(reply, In(kGenerous)));
    if (std::holds_alternative<AttachSession>(want.body)) {
      // Serve the session channel: a ping, then one frame from its own arena.
      Request ping = MustReceive(*session);
      CHILD_CHECK(ping == (Request{1, Ping{kSessionId}}));
      CHILD_CHECK_OK(session->Send({1, Pong{kSessionId}}, In(kGenerous)));
      Request frames = MustReceive(*session);
      FrameBatch one{{Rgb24Frame(16, 8, 0, 48)}, true};
      LendFrames(*session, one, kSessionFrameSeed);
      CHILD_CHECK_OK(session->Send({frames.id, one}, In(kGenerous)));
    }
  }
  return 0;
}

// Host side of AttachSession: a new channel whose backend ends travel to the
// child over the first channel's socket.
void CheckAttachedSession(HostChannel& session) {
  ASSERT_TRUE(session.Send({1, Ping{kSessionId}}, In(kGenerous)).ok());
  absl::StatusOr<Incoming> pong = session.Receive(In(kGenerous));
  ASSERT_TRUE(pong.ok()) << pong.status();
  EXPECT_TRUE(pong->response == (Response{1, Pong{kSessionId}}));
  ASSERT_TRUE(session.Send({2, FrameRequest{IndexList{{0}}}}, In(kGenerous)).ok());
  absl::StatusOr<Incoming> frames = session.Receive(In(kGenerous));
  ASSERT_TRUE(frames.ok()) << frames.status();
  ASSERT_EQ(frames->frames.size(), 1u);
  EXPECT_TRUE(FrameBytesMatch(frames->frames[0].bytes(), kSessionFrameSeed));
}

TEST(IpcChannelTest, EveryMessageKindRoundTripsAcrossProcesses) {
  UniqueFd file(memfd_create("roundtrip-video", MFD_CLOEXEC));
  ASSERT_TRUE(file.valid());
  ASSERT_EQ(pwrite(file.get(), kFileContent.data(), kFileContent.size(), 0),
            static_cast<ssize_t>(kFileContent.size()));

  const Geometry geometry = SmallGeometry(/*slots=*/4);
  auto peer = StartPeer(geometry, RoundTripBackend);
  ASSERT_TRUE(peer.ok()) << peer.status();
  HostChannel& host = *peer->host;
  std::unique_ptr<HostChannel> session;

  std::set<size_t> request_kinds, response_kinds;
  for (const Request& request : RoundTripRequests()) {
    SCOPED_TRACE(absl::StrCat("request ", request.id, " (", KindName(request), ")"));
    request_kinds.insert(request.body.index());
    if (std::holds_alternative<OpenSession>(request.body)) {
      ASSERT_TRUE(host.SendDescriptor(kFileToken, file.get(), In(kGenerous)).ok());
    }
    if (std::holds_alternative<AttachSession>(request.body)) {
      auto created = HostChannel::Create(SmallGeometry(/*slots=*/2));
      ASSERT_TRUE(created.ok()) << created.status();
      PeerEnds ends = std::move(created->second);
      session = std::move(created->first);
      auto pidfd = OpenPidFd(peer->child.pid());
      ASSERT_TRUE(pidfd.ok()) << pidfd.status();
      session->WatchProcess(*std::move(pidfd));
      const int fds[] = {ends.memfd.get(), ends.socket.get()};
      ASSERT_TRUE(host.SendDescriptors(kAttachToken, fds, In(kGenerous)).ok());
    }  // the host closes its copies of the session's backend ends
    ASSERT_TRUE(host.Send(request, In(kGenerous)).ok());
    absl::StatusOr<Incoming> in = host.Receive(In(kGenerous));
    ASSERT_TRUE(in.ok()) << in.status();
    response_kinds.insert(in->response.body.index());

    Response want = RoundTripResponse(request.id, std::string(kFileContent));
    if (auto* got_batch = std::get_if<FrameBatch>(&in->response.body)) {
      auto& want_batch = std::get<FrameBatch>(want.body);
      ASSERT_EQ(got_batch->frames.size(), want_batch.frames.size());
      ASSERT_EQ(in->frames.size(), got_batch->frames.size());
      std::set<uint32_t> slots;
      for (size_t i = 0; i < got_batch->frames.size(); ++i) {
        const FrameRef& ref = got_batch->frames[i];
        EXPECT_LT(ref.slot, geometry.slot_count);
        slots.insert(ref.slot);
        want_batch.frames[i].slot = ref.slot;  // the only field the backend chose
        const FrameLease& lease = in->frames[i];
        ASSERT_TRUE(lease.valid());
        EXPECT_TRUE(lease.ref() == ref);
        EXPECT_EQ(lease.bytes().size(), ref.size);
        EXPECT_TRUE(FrameBytesMatch(lease.bytes(), FrameSeed(request.id) + i)) << "frame " << i;
      }
      EXPECT_EQ(slots.size(), got_batch->frames.size()) << "two frames of one batch share a slot";
      EXPECT_EQ(host.arena().held_count(), got_batch->frames.size());
    } else {
      EXPECT_TRUE(in->frames.empty());
    }
    EXPECT_EQ(in->response.id, request.id);
    EXPECT_EQ(KindName(in->response), std::string(KindName(want)));
    EXPECT_TRUE(in->response == want)
        << "decoded " << KindName(in->response) << " differs from what the backend sent";
    in->frames.clear();
    EXPECT_EQ(host.arena().held_count(), 0u);
    if (std::holds_alternative<AttachSession>(request.body)) {
      ASSERT_NO_FATAL_FAILURE(CheckAttachedSession(*session));
    }
  }
  EXPECT_EQ(request_kinds.size(), std::variant_size_v<decltype(Request::body)>) << "not every kind sent";
  EXPECT_EQ(response_kinds.size(), std::variant_size_v<decltype(Response::body)>) << "not every kind seen";

  ExpectExit(peer->child, 0);
  // The descriptor worked in the backend in both directions.
  std::string mark(kBackendMark.size(), '\0');
  ASSERT_EQ(pread(file.get(), mark.data(), mark.size(), kBackendMarkOffset),
            static_cast<ssize_t>(mark.size()));
  EXPECT_EQ(mark, kBackendMark);
  EXPECT_EQ(host.arena().misuse_count(), 0u);
}

// ---- wrap-around --------------------------------------------------------------------

constexpr int kWrapRoundTrips = 5000;

// Request `i` of the wrap-around test: pings, and OpenSession requests with
// labels of varying size (up to ~1.7 KiB in a 4 KiB ring).
Request WrapRequest(int i) {
  if (i % 3 == 0) return {static_cast<uint64_t>(i), Ping{static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull}};
  OpenSession open;
  open.file_token = static_cast<uint64_t>(i);
  open.file_label = std::string(static_cast<size_t>((i * 97) % 1700), static_cast<char>('a' + i % 26));
  return {static_cast<uint64_t>(i), open};
}

Response WrapResponse(const Request& r) {
  if (auto* ping = std::get_if<Ping>(&r.body)) return {r.id, Pong{ping->nonce}};
  const auto& open = std::get<OpenSession>(r.body);
  return {r.id, Error{ErrorCode::kNotFound, open.file_label + "!"}};
}

TEST(IpcChannelTest, RingsWrapAroundManyTimes) {
  Geometry g = SmallGeometry(/*slots=*/1, /*ring_bytes=*/4096);
  auto peer = StartPeer(g, [](BackendChannel& b) {
    for (int i = 0; i < kWrapRoundTrips; ++i) {
      Request r = MustReceive(b);
      CHILD_CHECK(r == WrapRequest(i));
      CHILD_CHECK_OK(b.Send(WrapResponse(r), In(kGenerous)));
    }
    return AwaitHostHangUp(b);
  });
  ASSERT_TRUE(peer.ok()) << peer.status();
  HostChannel& host = *peer->host;

  // Two requests in flight: the rings fill up (the largest records take half
  // a ring) and both sides wait for space, but never on each other.
  const auto start = Clock::now();
  int sent = 0;
  for (int received = 0; received < kWrapRoundTrips; ++received) {
    while (sent < kWrapRoundTrips && sent < received + 2) {
      absl::Status s = host.Send(WrapRequest(sent), In(kGenerous));
      ASSERT_TRUE(s.ok()) << "request " << sent << ": " << s;
      ++sent;
    }
    absl::StatusOr<Incoming> in = host.Receive(In(kGenerous));
    ASSERT_TRUE(in.ok()) << "reply " << received << ": " << in.status();
    ASSERT_TRUE(in->response == WrapResponse(WrapRequest(received))) << "reply " << received;
  }
  const uint64_t response_bytes = host.region_for_test().header()->response.tail.load();
  const uint64_t request_bytes = host.region_for_test().header()->request.tail.load();
  std::printf("%d round trips in %.0f ms; request ring wrapped %llu times, response ring %llu times\n",
              kWrapRoundTrips, MillisSince(start), static_cast<unsigned long long>(request_bytes / 4096),
              static_cast<unsigned long long>(response_bytes / 4096));
  EXPECT_GT(request_bytes, 500u * 4096);
  EXPECT_GT(response_bytes, 500u * 4096);
  peer->host.reset();
  ExpectExit(peer->child, 0);
}

}  // namespace
}  // namespace codecvisor::ipc
