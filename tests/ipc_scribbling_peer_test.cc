// File: tests/ipc_scribbling_peer_test.cc
//
// A backend that rewrites shared memory while the host reads it: random
// bytes over the whole response ring and its control words, and well-formed
// records whose bytes flip while the host copies them out. The host may see
// valid responses, kDataLoss (then sticky), kDeadlineExceeded or
// kUnavailable; never a crash, and never a frame view outside the arena
// (every byte is touched, so ASan would see one). The rules every test keeps
// are in ipc_test_support.h.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <climits>
#include <cstdio>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "ipc/channel.h"
#include "ipc/messages.h"
#include "tests/ipc_test_messages.h"
#include "tests/ipc_test_support.h"

namespace codecvisor::ipc {
namespace {

using namespace std::chrono_literals;
using namespace test;  // NOLINT(build/namespaces): the suites' shared helpers

// ---- a peer that rewrites messages while they are read ------------------------------

bool AllowedWhileScribbled(const absl::Status& s) {
  return absl::IsDataLoss(s) || absl::IsDeadlineExceeded(s) || absl::IsUnavailable(s);
}

// Host: checks what a successful Receive returned under attack and touches
// every byte of every frame (so ASan would see a view outside the arena).
void CheckSurvivedResponse(const HostChannel& host, const Incoming& in) {
  const Geometry& g = host.geometry();
  const Region& region = host.region_for_test();
  size_t expected_frames = 0;
  if (auto* batch = std::get_if<FrameBatch>(&in.response.body)) expected_frames = batch->frames.size();
  ASSERT_EQ(in.frames.size(), expected_frames);
  for (const FrameLease& lease : in.frames) {
    ASSERT_TRUE(lease.valid());
    EXPECT_TRUE(ValidateFrameRef(lease.ref(), g).ok());
    std::span<const uint8_t> bytes = lease.bytes();
    const uint8_t* slot = region.slot(lease.ref().slot);
    EXPECT_GE(bytes.data(), slot);
    EXPECT_LE(bytes.data() + bytes.size(), slot + g.slot_bytes);
    volatile uint8_t sink = 0;
    for (uint8_t byte : bytes) sink = sink ^ byte;
    (void)sink;
  }
}

struct ScribbleStats {
  int valid = 0, data_loss = 0, deadline = 0, unavailable = 0;
  std::string ToString() const {
    return absl::StrCat(valid, " valid, ", data_loss, " data loss, ", deadline, " deadline, ", unavailable,
                        " unavailable");
  }
};

// The literal attack: random bytes over the whole response ring, its head,
// tail and doorbell words, as fast as the child can, for `duration`.
int ScribblingBackend(BackendChannel& b, uint64_t seed, Clock::duration duration) {
  RingControl& ctl = ResponseControl(b);
  auto* ring = reinterpret_cast<uint64_t*>(b.region_for_test().response_ring());
  const uint64_t cap = b.geometry().response_ring_bytes;
  std::mt19937_64 rng(seed);
  const Deadline stop = In(duration);
  while (Clock::now() < stop) {
    for (uint64_t i = 0; i < cap / 8; ++i) ring[i] = rng();
    ctl.head.store(rng(), std::memory_order_relaxed);
    const uint64_t r = rng();
    switch (r % 4) {
      case 0:
        ctl.tail.store(rng(), std::memory_order_release);
        break;
      case 1:
        ctl.tail.store(rng() % (2 * cap), std::memory_order_release);
        break;
      case 2:
        ctl.tail.store(8 * (rng() % (cap / 8)), std::memory_order_release);
        break;
      case 3:
        ctl.tail.store(ctl.tail.load() + 8 * (rng() % 64), std::memory_order_release);
        break;
    }
    ctl.data_bell.seq.store(static_cast<uint32_t>(rng()));
    ctl.space_bell.waiters.store(static_cast<uint32_t>(rng()));
    RingDoorbell(&ctl.data_bell);
  }
  return 0;
}

TEST(IpcChannelTest, HostSurvivesPeerScribblingOverTheRing) {
  const auto scribble_for = 300ms;
  auto peer = StartPeer(SmallGeometry(4, 16 << 10),
                        [&](BackendChannel& b) { return ScribblingBackend(b, 42, scribble_for); });
  ASSERT_TRUE(peer.ok()) << peer.status();
  HostChannel& host = *peer->host;

  ScribbleStats stats;
  std::optional<absl::Status> first_error;
  const Deadline stop = In(scribble_for + 50ms);
  while (Clock::now() < stop) {
    absl::StatusOr<Incoming> in = host.Receive(In(20ms));
    if (in.ok()) {
      ++stats.valid;
      CheckSurvivedResponse(host, *in);
      continue;
    }
    ASSERT_TRUE(AllowedWhileScribbled(in.status())) << in.status();
    if (absl::IsDataLoss(in.status())) {
      ++stats.data_loss;
      if (!first_error) first_error = in.status();
      ASSERT_EQ(in.status(), *first_error) << "a DataLoss must stay the same error";
    } else {
      ASSERT_FALSE(first_error.has_value()) << "after " << *first_error << " got " << in.status();
      (absl::IsUnavailable(in.status()) ? stats.unavailable : stats.deadline)++;
      if (absl::IsUnavailable(in.status())) break;
    }
  }
  std::printf("scribbled ring: %s\n", stats.ToString().c_str());
  peer->host.reset();
  ExpectExit(peer->child, 0);
}

// The subtler attack, repeated over many channels because the first DataLoss
// ends a channel: the child publishes well-formed records and keeps flipping
// their bytes (header included) while the host copies them out, sometimes
// moving the tail or trashing the ring.
int RewritingBackend(BackendChannel& b, uint64_t seed) {
  RingControl& ctl = ResponseControl(b);
  uint8_t* ring = b.region_for_test().response_ring();
  const uint64_t cap = b.geometry().response_ring_bytes;
  std::mt19937_64 rng(seed);

  std::vector<kj::Array<capnp::word>> messages;
  {
    FrameRef a = Rgb24Frame(16, 8, 0, 48);
    a.slot = 0;
    FrameRef c = Nv12Frame(32, 16, 64);
    c.slot = 1;
    messages.push_back(CHILD_VALUE(EncodeResponse({1, FrameBatch{{a, c}, false}})));
    messages.push_back(CHILD_VALUE(EncodeResponse({2, Pong{0x1234}})));
    messages.push_back(CHILD_VALUE(EncodeResponse({3, Error{ErrorCode::kCorruptData, "bad packet"}})));
    messages.push_back(CHILD_VALUE(EncodeResponse({4, TestMetadata("av1")})));
    messages.push_back(CHILD_VALUE(EncodeResponse(RoundTripResponse(1, ""))));
  }

  uint64_t tail = 0;
  const Deadline stop = In(kPrompt);
  for (uint64_t iter = 0; Clock::now() < stop; ++iter) {
    if ((iter & 7) == 0 && !b.liveness().Check().ok()) break;  // the host moved on
    const kj::Array<capnp::word>& m = messages[rng() % messages.size()];
    const std::span<const uint8_t> payload = WordBytes(m);
    const uint64_t need = RecordBytes(payload.size());
    const uint64_t head = ctl.head.load(std::memory_order_acquire);
    uint64_t record = tail;
    if (head <= tail && tail - head + need <= cap) {
      const uint32_t len = static_cast<uint32_t>(payload.size());
      PokeRecordHeader(b, tail, len, ~len);
      PokeResponseRing(b, tail + 8, payload.data(), payload.size());
      tail += need;
      ctl.tail.store(tail, std::memory_order_release);
      RingDoorbell(&ctl.data_bell);
    } else {
      record = tail - std::min(tail, need);
    }
    // Rewrite the record while the host may be copying it.
    const int flips = rng() % 4 == 0 ? static_cast<int>(1 + rng() % 8) : 0;
    for (int i = 0; i < flips; ++i) {
      ring[(record + rng() % need) & (cap - 1)] ^= static_cast<uint8_t>(1u << (rng() % 8));
    }
    switch (rng() % 64) {
      case 0:
        ctl.tail.store(rng(), std::memory_order_release);
        break;
      case 1:
        ctl.tail.store(tail + 8 * (rng() % (cap / 8)), std::memory_order_release);
        break;
      case 2:
        ctl.tail.store(head + 8 * (rng() % 4), std::memory_order_release);
        break;
      case 3:
        for (uint64_t i = 0; i < cap; ++i) ring[i] = static_cast<uint8_t>(rng());
        break;
      case 4:
        ctl.data_bell.waiters.store(static_cast<uint32_t>(rng()));
        break;
      default:
        break;
    }
  }
  return 0;
}

TEST(IpcChannelTest, HostSurvivesPeerRewritingRecordsWhileTheyAreRead) {
  const Geometry g = SmallGeometry(4, 8 << 10);
  ScribbleStats stats;
  int rounds = 0;
  const Deadline stop = In(300ms);
  while (Clock::now() < stop || rounds == 0) {
    ++rounds;
    auto peer = StartPeer(g, [rounds](BackendChannel& b) { return RewritingBackend(b, 1000 + rounds); });
    ASSERT_TRUE(peer.ok()) << peer.status();
    HostChannel& host = *peer->host;
    const Deadline round_end = In(30ms);
    for (;;) {
      absl::StatusOr<Incoming> in = host.Receive(In(10ms));
      if (in.ok()) {
        ++stats.valid;
        CheckSurvivedResponse(host, *in);
        if (Clock::now() >= round_end) break;
        continue;
      }
      ASSERT_TRUE(AllowedWhileScribbled(in.status())) << in.status();
      if (absl::IsDataLoss(in.status())) {
        ++stats.data_loss;
        EXPECT_EQ(host.Receive(In(10ms)).status(), in.status());
        break;
      }
      if (absl::IsUnavailable(in.status())) {
        ++stats.unavailable;
        break;
      }
      ++stats.deadline;
      if (Clock::now() >= round_end) break;
    }
    peer->host.reset();
    ExpectExit(peer->child, 0);
  }
  std::printf("rewritten records over %d channels: %s\n", rounds, stats.ToString().c_str());
  EXPECT_GT(stats.valid + stats.data_loss, 0);
}

// Crash hints are written by the backend, which may write anything: the
// host's decoding of the "plus one" fields must not overflow (UBSan aborts
// on a signed overflow) and must give back what a sane backend stored.
TEST(IpcChannelTest, CrashHintsWithExtremeValuesAreReadWithoutOverflow) {
  Geometry geometry;
  geometry.slot_count = 1;
  geometry.slot_bytes = Geometry::SlotBytesFor(4096);
  auto created = HostChannel::Create(geometry);
  ASSERT_TRUE(created.ok()) << created.status();
  auto backend = BackendChannel::Attach(std::move(created->second));
  ASSERT_TRUE(backend.ok()) << backend.status();
  RegionHeader* h = (*backend)->header();
  h->backend_violation_syscall.store(INT32_MIN);
  h->backend_exit_code.store(0x80000000u);
  CrashHints hints = created->first->ReadCrashHints();
  EXPECT_EQ(hints.violation_syscall, INT32_MAX);
  EXPECT_EQ(hints.exit_code, INT32_MAX);
  h->backend_violation_syscall.store(0);  // none recorded
  h->backend_exit_code.store(0);
  hints = created->first->ReadCrashHints();
  EXPECT_EQ(hints.violation_syscall, -1);
  EXPECT_EQ(hints.exit_code, -1);
  h->backend_violation_syscall.store(60 + 1);  // exit(2) was denied
  h->backend_exit_code.store(3 + 1);
  hints = created->first->ReadCrashHints();
  EXPECT_EQ(hints.violation_syscall, 60);
  EXPECT_EQ(hints.exit_code, 3);
}

}  // namespace
}  // namespace codecvisor::ipc
