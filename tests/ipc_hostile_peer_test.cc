// File: tests/ipc_hostile_peer_test.cc
//
// A backend that breaks the protocol on purpose, one violation per channel:
// garbage records, impossible ring indices and lengths, frame references
// outside the arena, a slot published twice while the host holds it, and
// messages past the decoder's limits. Each must surface on the host as a
// kDataLoss that every later call repeats, giving back any slot claimed for
// the bad message. The rules every test keeps are in ipc_test_support.h.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "ipc/channel.h"
#include "ipc/messages.h"
#include "ipc/unique_fd.h"
#include "tests/ipc_test_messages.h"
#include "tests/ipc_test_support.h"

namespace codecvisor::ipc {
namespace {

using namespace std::chrono_literals;
using namespace test;  // NOLINT(build/namespaces): the suites' shared helpers

// ---- hostile content ----------------------------------------------------------------

struct HostileCase {
  std::string name;
  BackendBody body;  // misbehaves, then should await the host's hang-up
  std::string want;  // a substring of the expected kDataLoss message
  Geometry geometry = SmallGeometry();
  int valid_before = 0;   // well-formed responses that precede the bad one
  size_t held_after = 0;  // slots the host still holds after the violation
};

// Runs one hostile backend: its violation must surface as kDataLoss from the
// host's Receive, and every later call must return that same error.
void RunHostileCase(const HostileCase& c) {
  SCOPED_TRACE(c.name);
  auto peer = StartPeer(c.geometry, c.body);
  ASSERT_TRUE(peer.ok()) << peer.status();
  HostChannel& host = *peer->host;

  std::vector<Incoming> kept;
  for (int i = 0; i < c.valid_before; ++i) {
    absl::StatusOr<Incoming> in = host.Receive(In(kGenerous));
    ASSERT_TRUE(in.ok()) << in.status();
    kept.push_back(*std::move(in));
  }
  absl::StatusOr<Incoming> bad = host.Receive(In(kGenerous));
  ASSERT_FALSE(bad.ok()) << "accepted a " << KindName(bad->response);
  const absl::Status error = bad.status();
  EXPECT_EQ(error.code(), absl::StatusCode::kDataLoss) << error;
  EXPECT_TRUE(absl::StrContains(error.message(), c.want)) << error << "\nexpected: " << c.want;

  // Sticky: the channel is dead, whatever the backend does next.
  EXPECT_EQ(host.Receive(In(100ms)).status(), error);
  EXPECT_EQ(host.Receive(In(100ms)).status(), error);
  EXPECT_EQ(host.Send({99, Ping{99}}, In(100ms)), error);
  UniqueFd devnull(open("/dev/null", O_RDONLY | O_CLOEXEC));
  EXPECT_EQ(host.SendDescriptor(99, devnull.get(), In(kGenerous)), error);
  EXPECT_EQ(host.arena().held_count(), c.held_after);

  kept.clear();
  peer->host.reset();
  ExpectExit(peer->child, 0);
}

// A hostile body that sends `response` with the real encoder, then (to check
// that the error is sticky) a well-formed Pong.
BackendBody SendsThenPongs(Response response) {
  return [response](BackendChannel& b) {
    CHILD_CHECK_OK(b.Send(response, In(kGenerous)));
    CHILD_CHECK_OK(b.Send({100, Pong{100}}, In(kGenerous)));
    return AwaitHostHangUp(b);
  };
}

BackendBody SendsRaw(std::vector<uint8_t> bytes) {
  return [bytes](BackendChannel& b) {
    CHILD_CHECK_OK(b.SendRawForTest(bytes));
    return AwaitHostHangUp(b);
  };
}

std::vector<uint8_t> RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& byte : v) byte = static_cast<uint8_t>(rng());
  return v;
}

TEST(IpcChannelTest, GarbageRecordsAreStickyDataLoss) {
  std::vector<HostileCase> cases;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const size_t n = 8 * (4 + seed * 37);
    cases.push_back({absl::StrCat("random ", n, " bytes, seed ", seed), SendsRaw(RandomBytes(n, seed)),
                     "malformed response"});
  }
  cases.push_back({"random bytes, not whole words", SendsRaw(RandomBytes(13, 5)), "not whole words"});
  cases.push_back({"empty record", SendsRaw({}), "empty"});
  // A well-formed message with trailing junk.
  {
    auto words = EncodeResponse({1, Pong{1}});
    ASSERT_TRUE(words.ok());
    std::vector<uint8_t> bytes(WordBytes(*words).begin(), WordBytes(*words).end());
    bytes.resize(bytes.size() + 16, 0xAB);
    cases.push_back({"trailing bytes", SendsRaw(bytes), "trailing"});
  }
  for (const HostileCase& c : cases) RunHostileCase(c);
}

TEST(IpcChannelTest, ImpossibleRingIndicesAndLengthsAreStickyDataLoss) {
  std::vector<HostileCase> cases;
  cases.push_back({"record claims more than is published",
                   [](BackendChannel& b) {
                     PokeRecordHeader(b, 0, 512, ~uint32_t{512});
                     PublishResponseTail(b, 16);
                     return AwaitHostHangUp(b);
                   },
                   "claims 512 bytes"});
  cases.push_back({"record claims 4 GiB",
                   [](BackendChannel& b) {
                     PokeRecordHeader(b, 0, 0xFFFFFFFF, 0);
                     PublishResponseTail(b, 64);
                     return AwaitHostHangUp(b);
                   },
                   "claims 4294967295 bytes"});
  // A ring large enough that the whole oversized record is published: only
  // the kMaxMessageBytes limit can refuse it.
  {
    HostileCase c{"published record longer than kMaxMessageBytes",
                  [](BackendChannel& b) {
                    const uint32_t len = static_cast<uint32_t>(kMaxMessageBytes + 8);
                    PokeRecordHeader(b, 0, len, ~len);
                    PublishResponseTail(b, RecordBytes(len));
                    return AwaitHostHangUp(b);
                  },
                  absl::StrCat("at most ", kMaxMessageBytes)};
    c.geometry = SmallGeometry(4, 2 << 20);
    cases.push_back(std::move(c));
  }
  cases.push_back({"corrupt length check word",
                   [](BackendChannel& b) {
                     PokeRecordHeader(b, 0, 8, 0x12345678);
                     PublishResponseTail(b, 16);
                     return AwaitHostHangUp(b);
                   },
                   "corrupt"});
  cases.push_back({"length not whole words",
                   [](BackendChannel& b) {
                     PokeRecordHeader(b, 0, 12, ~uint32_t{12});
                     PublishResponseTail(b, RecordBytes(12));
                     return AwaitHostHangUp(b);
                   },
                   "not whole words"});
  cases.push_back({"partial record header",
                   [](BackendChannel& b) {
                     PokeRecordHeader(b, 0, 8, ~uint32_t{8});
                     PublishResponseTail(b, 4);
                     return AwaitHostHangUp(b);
                   },
                   "partial record header"});
  cases.push_back({"tail past the ring's capacity",
                   [](BackendChannel& b) {
                     PublishResponseTail(b, b.geometry().response_ring_bytes + 8);
                     return AwaitHostHangUp(b);
                   },
                   "impossible"});
  cases.push_back({"tail of 2^64 - 1",
                   [](BackendChannel& b) {
                     PublishResponseTail(b, ~uint64_t{0});
                     return AwaitHostHangUp(b);
                   },
                   "impossible"});
  {
    HostileCase c{"tail moved back behind the host's head",
                  [](BackendChannel& b) {
                    CHILD_CHECK_OK(b.Send({1, Pong{1}}, In(kGenerous)));
                    const uint64_t tail = ResponseControl(b).tail.load();
                    // Wait (bounded) until the host has consumed it.
                    const Deadline until = In(kGenerous);
                    while (ResponseControl(b).head.load() != tail && Clock::now() < until) usleep(1000);
                    CHILD_CHECK(ResponseControl(b).head.load() == tail);
                    PublishResponseTail(b, tail - 8);
                    return AwaitHostHangUp(b);
                  },
                  "impossible"};
    c.valid_before = 1;
    cases.push_back(std::move(c));
  }
  for (const HostileCase& c : cases) RunHostileCase(c);

  // The other ring: an impossible consumer index in the request ring breaks
  // the host's next Send, and that error is sticky too.
  auto peer = StartPeer(SmallGeometry(), [](BackendChannel& b) {
    b.region_for_test().header()->request.head.store(uint64_t{1} << 40, std::memory_order_release);
    CHILD_CHECK_OK(b.Send({1, Pong{1}}, In(kGenerous)));
    return AwaitHostHangUp(b);
  });
  ASSERT_TRUE(peer.ok()) << peer.status();
  HostChannel& host = *peer->host;
  ASSERT_TRUE(host.Receive(In(kGenerous)).ok());  // the head is poisoned by now
  const absl::Status error = host.Send({1, Ping{1}}, In(kGenerous));
  EXPECT_EQ(error.code(), absl::StatusCode::kDataLoss) << error;
  EXPECT_TRUE(absl::StrContains(error.message(), "consumer index")) << error;
  EXPECT_EQ(host.Send({2, Ping{2}}, In(100ms)), error);
  EXPECT_EQ(host.Receive(In(100ms)).status(), error);
  peer->host.reset();
  ExpectExit(peer->child, 0);
}

// A batch whose first frame is fine (and gets claimed) and whose second is
// `bad`: the violation must also give back the slot claimed before it.
BackendBody SendsGoodThenBadFrame(FrameRef bad) {
  FrameRef good = Rgb24Frame(16, 8, 0, 48);
  good.slot = 0;
  return SendsThenPongs({1, FrameBatch{{good, bad}, true}});
}

TEST(IpcChannelTest, OutOfRangeFrameReferencesAreStickyDataLoss) {
  const Geometry g = SmallGeometry(/*slots=*/4);
  auto frame = [](uint32_t slot) {
    FrameRef f = Rgb24Frame(16, 8, 0, 48);
    f.slot = slot;
    return f;
  };
  std::vector<std::pair<std::string, FrameRef>> bad;
  {
    FrameRef f = frame(g.slot_count);
    bad.push_back({"slot just past the arena", f});
    f.slot = ~uint32_t{0};
    bad.push_back({"slot 2^32 - 1", f});
  }
  {
    FrameRef f = Rgb24Frame(16, 8, g.slot_bytes - 100, 48);
    f.slot = 1;
    bad.push_back({"offset + size past the slot", f});
    f = Rgb24Frame(16, 8, g.slot_bytes + 4096, 48);
    f.slot = 1;
    bad.push_back({"offset past the slot", f});
    f = frame(1);
    f.offset = 8;
    f.size = ~uint64_t{0} - 4;  // offset + size overflows
    f.planes[0].offset = 8;
    bad.push_back({"offset + size overflows", f});
  }
  {
    FrameRef f = frame(1);
    f.planes[0].stride = 64;  // 64 x 8 > the frame's 384 bytes
    bad.push_back({"plane past the frame's end", f});
    f = frame(1);
    f.offset = 512;
    f.planes[0].offset = 0;
    bad.push_back({"plane before the frame", f});
    f = frame(1);
    f.planes[0].offset = ~uint64_t{0} - 10;
    bad.push_back({"plane offset near 2^64", f});
    f = frame(1);
    f.size = g.slot_bytes;
    f.planes[0].stride = 0xFFFFFFFF;
    f.planes[0].rows = 0xFFFFFFFF;
    bad.push_back({"plane of nearly 2^64 bytes", f});
    f = frame(1);
    f.planes[0].stride = 40;  // less than 16 * 3
    bad.push_back({"stride narrower than a row", f});
    f = frame(1);
    f.planes[0].rows = 4;
    bad.push_back({"plane rows differ from the height", f});
    f = PlanarFrame(16, 8, 0, 16);
    f.slot = 1;
    f.planes.pop_back();
    bad.push_back({"planar frame with two planes", f});
    f = Nv12Frame(32, 16, 0);
    f.slot = 1;
    f.planes.clear();
    bad.push_back({"native frame with no planes", f});
    f = Nv12Frame(32, 16, 0);
    f.slot = 1;
    f.planes[1].rows = 17;
    bad.push_back({"native plane taller than the frame", f});
  }
  {
    FrameRef f = frame(1);
    f.width = 0;
    bad.push_back({"zero width", f});
    f = frame(1);
    f.height = 0;
    bad.push_back({"zero height", f});
    f = frame(1);
    f.width = kMaxFrameSide + 1;
    bad.push_back({"width over kMaxFrameSide", f});
  }
  for (auto& [name, ref] : bad) {
    RunHostileCase({name, SendsGoodThenBadFrame(ref), "frame reference", g});
  }
}

TEST(IpcChannelTest, SlotPublishedTwiceWhileHeldIsStickyDataLoss) {
  auto frame = [](uint32_t slot) {
    FrameRef f = Rgb24Frame(16, 8, 0, 48);
    f.slot = slot;
    return f;
  };
  RunHostileCase(
      {"same slot twice in one batch", SendsThenPongs({1, FrameBatch{{frame(2), frame(2)}}}), "still holds"});
  {
    HostileCase c{"slot published again while the host holds it",
                  [frame](BackendChannel& b) {
                    CHILD_CHECK_OK(b.Send({1, FrameBatch{{frame(1)}}}, In(kGenerous)));
                    CHILD_CHECK_OK(b.Send({2, FrameBatch{{frame(3), frame(1)}}}, In(kGenerous)));
                    CHILD_CHECK_OK(b.Send({3, Pong{3}}, In(kGenerous)));
                    return AwaitHostHangUp(b);
                  },
                  "still holds"};
    c.valid_before = 1;
    c.held_after = 1;  // the first lease, still in the caller's hands
    RunHostileCase(c);
  }

  // Control: once the host has released a slot, publishing it again is fine.
  auto peer = StartPeer(SmallGeometry(), [frame](BackendChannel& b) {
    CHILD_CHECK_OK(b.Send({1, FrameBatch{{frame(1)}}}, In(kGenerous)));
    std::atomic<uint32_t>& state = b.region_for_test().header()->slot_state[1];
    const Deadline until = In(kGenerous);
    while (state.load() != static_cast<uint32_t>(SlotState::kFree) && Clock::now() < until) usleep(1000);
    CHILD_CHECK(state.load() == static_cast<uint32_t>(SlotState::kFree));
    CHILD_CHECK_OK(b.Send({2, FrameBatch{{frame(1)}}}, In(kGenerous)));
    return AwaitHostHangUp(b);
  });
  ASSERT_TRUE(peer.ok()) << peer.status();
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<Incoming> in = peer->host->Receive(In(kGenerous));
    ASSERT_TRUE(in.ok()) << in.status();
    ASSERT_EQ(in->frames.size(), 1u);
    EXPECT_EQ(in->frames[0].ref().slot, 1u);
  }  // each lease is released as `in` goes
  EXPECT_EQ(peer->host->arena().held_count(), 0u);
  peer->host.reset();
  ExpectExit(peer->child, 0);
}

TEST(IpcChannelTest, MessagesBreakingDecodeLimitsAreStickyDataLoss) {
  const Geometry big = SmallGeometry(4, 128 << 10);
  std::vector<HostileCase> cases;
  {
    FrameRef f = Nv12Frame(32, 16, 0);
    f.slot = 1;
    f.planes.resize(kMaxPlanes + 1, f.planes[0]);
    cases.push_back({"too many planes", SendsThenPongs({1, FrameBatch{{f}}}), "planes has 5 entries", big});
  }
  {
    FrameBatch batch;
    for (size_t i = 0; i <= kMaxFramesPerBatch; ++i) batch.frames.push_back(Rgb24Frame(16, 8, 0, 48));
    cases.push_back({"too many frames", SendsThenPongs({1, batch}), "frames has 257 entries", big});
  }
  {
    FrameRef f = Rgb24Frame(16, 8, 0, 48);
    f.format = static_cast<OutputFormat>(7);
    cases.push_back({"unknown frame format", SendsThenPongs({1, FrameBatch{{f}}}), "unknown value 7", big});
  }
  cases.push_back({"unknown error code", SendsThenPongs({1, Error{static_cast<ErrorCode>(99), "?"}}),
                   "unknown value 99", big});
  cases.push_back({"error text over kMaxTextBytes",
                   SendsThenPongs({1, Error{ErrorCode::kInternal, std::string(kMaxTextBytes + 1, 'e')}}),
                   "error message is", big});
  {
    HelloReply h;
    h.devices.assign(kMaxDevices + 1, "cpu");
    cases.push_back({"too many devices", SendsThenPongs({1, h}), "devices has 65 entries", big});
  }
  for (const HostileCase& c : cases) RunHostileCase(c);
}

}  // namespace
}  // namespace codecvisor::ipc
