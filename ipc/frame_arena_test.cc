#include "ipc/frame_arena.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/falloc.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ipc/unique_fd.h"

namespace codecvisor::ipc {
namespace {

constexpr uint32_t kW = 64, kH = 48;

Geometry Small() { return {4096, 4096, 3, Geometry::SlotBytesFor(kW * kH * 3)}; }

FrameRef Rgb(uint32_t slot) {
  FrameRef f;
  f.slot = slot;
  f.size = kW * kH * 3;
  f.width = kW;
  f.height = kH;
  f.format = OutputFormat::kRgb24;
  f.planes = {{0, kW * 3, kH}};
  return f;
}

TEST(ValidateFrameRefTest, AcceptsAWellFormedFrame) {
  EXPECT_TRUE(ValidateFrameRef(Rgb(2), Small()).ok());
}

TEST(ValidateFrameRefTest, RejectsEveryOutOfBoundsReference) {
  const Geometry g = Small();
  auto expect_bad = [&](FrameRef f, const char* why) {
    EXPECT_EQ(ValidateFrameRef(f, g).code(), absl::StatusCode::kDataLoss) << why;
  };
  FrameRef f = Rgb(3);
  expect_bad(f, "slot past the arena");
  f = Rgb(0);
  f.offset = g.slot_bytes;
  expect_bad(f, "offset at the slot's end with a non-empty size");
  f = Rgb(0);
  f.offset = ~uint64_t{0} - 10;  // offset + size overflows
  expect_bad(f, "overflowing offset");
  f = Rgb(0);
  f.size = g.slot_bytes + 1;
  expect_bad(f, "size past the slot");
  f = Rgb(0);
  f.offset = g.slot_bytes - f.size - kSlotPadding + 1;
  for (Plane& p : f.planes) p.offset = f.offset;
  expect_bad(f, "inside the slot, but leaving less than its padding after it");
  f.offset -= 1;
  for (Plane& p : f.planes) p.offset = f.offset;
  EXPECT_TRUE(ValidateFrameRef(f, g).ok()) << "exactly the padding left";
  f = Rgb(0);
  f.planes[0].stride = 0xffffffff;
  f.planes[0].rows = 0xffffffff;
  expect_bad(f, "plane of 2^64 bytes");
  f = Rgb(0);
  f.planes[0].offset = 8;  // ends 8 bytes past the frame
  expect_bad(f, "plane past the frame");
  f = Rgb(0);
  f.planes[0].stride = kW;  // narrower than a row of RGB
  expect_bad(f, "stride too small");
  f = Rgb(0);
  f.planes.push_back(f.planes[0]);
  expect_bad(f, "two planes for interleaved RGB");
  f = Rgb(0);
  f.width = 0;
  expect_bad(f, "zero width");
}

TEST(HostArenaTest, ClaimReleaseAndDoubleClaim) {
  auto region = Region::Create(Small());
  ASSERT_TRUE(region.ok());
  auto shared = std::make_shared<Region>(*std::move(region));
  auto arena = std::make_shared<HostArena>(shared);
  ASSERT_TRUE(arena->Claim(Rgb(1)).ok());
  EXPECT_EQ(arena->Claim(Rgb(1)).code(), absl::StatusCode::kDataLoss) << "slot published twice";
  EXPECT_EQ(arena->held_count(), 1u);
  arena->Release(1);
  EXPECT_EQ(arena->held_count(), 0u);
  EXPECT_EQ(shared->header()->slot_state[1].load(), static_cast<uint32_t>(SlotState::kFree));
  arena->Release(1);  // not held: ignored and counted
  EXPECT_EQ(arena->misuse_count(), 1u);
}

TEST(HostArenaTest, LeaseKeepsRegionMappedAndReleasesOnDestruction) {
  auto region = Region::Create(Small());
  ASSERT_TRUE(region.ok());
  auto shared = std::make_shared<Region>(*std::move(region));
  shared->slot(2)[5] = 42;
  auto arena = std::make_shared<HostArena>(shared);
  ASSERT_TRUE(arena->Claim(Rgb(2)).ok());
  FrameLease lease(arena, Rgb(2));
  std::weak_ptr<HostArena> weak = arena;
  shared.reset();
  arena.reset();
  ASSERT_FALSE(weak.expired()) << "the lease must keep the arena and region alive";
  EXPECT_EQ(lease.bytes()[5], 42);
  EXPECT_EQ(lease.bytes().size(), kW * kH * 3);
  lease.Reset();
  EXPECT_TRUE(weak.expired());
}

// A backend's view of a fresh 3-slot arena, with a live peer.
class BackendArenaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(region_.ok()) << region_.status();
    ASSERT_EQ(pipe(fds_), 0);
    alive_.emplace(fds_[0], -1, false);
    backend_.emplace(&*region_);
  }
  void TearDown() override {
    close(fds_[0]);
    close(fds_[1]);
  }
  absl::StatusOr<BackendArena::Slot> Acquire(Deadline deadline) { return backend_->Acquire(deadline, *alive_, &wait_); }
  std::atomic<uint32_t>* state() { return region_->header()->slot_state; }

  absl::StatusOr<Region> region_ = Region::Create(Small());
  int fds_[2] = {-1, -1};
  std::optional<PeerLiveness> alive_;
  std::optional<BackendArena> backend_;
  WaitPolicy wait_;
  const Deadline far_ = Clock::now() + std::chrono::seconds(5);
};

TEST_F(BackendArenaTest, AcquireIsBoundedByDeadlineWhenAllSlotsAreLent) {
  EXPECT_EQ(backend_->FreeSlots(), 3u);
  for (int i = 0; i < 3; ++i) {
    auto slot = Acquire(far_);
    ASSERT_TRUE(slot.ok()) << slot.status();
    backend_->Lend(slot->index);
  }
  EXPECT_FALSE(backend_->HasFreeSlot());
  EXPECT_EQ(backend_->FreeSlots(), 0u);
  auto start = Clock::now();
  auto none = Acquire(Clock::now() + std::chrono::milliseconds(50));
  EXPECT_EQ(none.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(50));
  // The host frees one: the next Acquire gets exactly that slot.
  state()[1].store(static_cast<uint32_t>(SlotState::kFree));
  EXPECT_TRUE(backend_->HasFreeSlot());
  EXPECT_EQ(backend_->FreeSlots(), 1u);
  auto again = Acquire(far_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->index, 1u);
}

// A host that releases each frame before the next is needed keeps the
// backend on the same slots: the lowest free slot is reused, not the next in
// turn, so the slots it writes stay cached and the rest are never touched.
TEST_F(BackendArenaTest, ReusesTheLowestFreeSlot) {
  // Pipelined: the backend takes the next slot while the host holds one.
  std::vector<uint32_t> used;
  uint32_t held = 0;
  for (int frame = 0; frame < 6; ++frame) {
    auto slot = Acquire(far_);
    ASSERT_TRUE(slot.ok()) << slot.status();
    used.push_back(slot->index);
    backend_->Lend(slot->index);
    if (frame > 0) state()[held].store(static_cast<uint32_t>(SlotState::kFree));  // the host lets go
    held = slot->index;
  }
  EXPECT_EQ(used, (std::vector<uint32_t>{0, 1, 0, 1, 0, 1}));
  EXPECT_EQ(state()[2].load(), static_cast<uint32_t>(SlotState::kFree)) << "slot 2 was never needed";
}

// An arena of 2 copy slots and a frame pool of 3.
class FramePoolArenaTest : public BackendArenaTest {
 protected:
  void SetUp() override {
    Geometry g = Small();
    g.slot_count = 5;
    g.pool_slots = 3;
    region_ = Region::Create(g);
    BackendArenaTest::SetUp();
  }
  uint32_t State(uint32_t slot) { return state()[slot].load(); }
  static constexpr uint32_t kFree = static_cast<uint32_t>(SlotState::kFree);
  static constexpr uint32_t kWriting = static_cast<uint32_t>(SlotState::kWriting);
  static constexpr uint32_t kLent = static_cast<uint32_t>(SlotState::kLent);
};

TEST_F(FramePoolArenaTest, CopiesUseOnlyTheCopySlotsAndBorrowsOnlyThePool) {
  EXPECT_EQ(region_->geometry().copy_slots(), 2u);
  EXPECT_EQ(backend_->FreeSlots(), 2u) << "pool slots are not free for copies";
  std::vector<uint32_t> borrowed;
  while (std::optional<BackendArena::Slot> s = backend_->Borrow()) {
    EXPECT_EQ(s->bytes.data(), region_->slot(s->index));
    EXPECT_EQ(backend_->PoolSlotAt(s->bytes.data()), s->index);
    borrowed.push_back(s->index);
  }
  EXPECT_EQ(borrowed, (std::vector<uint32_t>{2, 3, 4}));
  EXPECT_EQ(backend_->borrowed_count(), 3u);
  // The copy slots are untouched by borrowing, and copies never reach the pool.
  for (uint32_t i = 0; i < 2; ++i) {
    auto slot = Acquire(far_);
    ASSERT_TRUE(slot.ok()) << slot.status();
    EXPECT_LT(slot->index, 2u);
    backend_->Lend(slot->index);
  }
  EXPECT_EQ(Acquire(Clock::now() + std::chrono::milliseconds(20)).status().code(),
            absl::StatusCode::kResourceExhausted)
      << "with the copy slots lent, a copy waits even though pool slots exist";
  EXPECT_EQ(backend_->PoolSlotAt(region_->slot(0)), std::nullopt);
  EXPECT_EQ(backend_->PoolSlotAt(region_->slot(2) + 1), std::nullopt);
}

// A pool slot's pages are the backend's to allocate (the host populates
// only the copy slots). A frame there on pages no one allocated, never
// written or freed since, is refused: reading it would allocate the pages
// against the host.
TEST_F(FramePoolArenaTest, AFrameOnPagesTheBackendNeverWroteIsRefused) {
  auto arena = std::make_shared<HostArena>(std::make_shared<Region>(*std::move(region_)));
  const Region& region = arena->region();
  FrameRef f = Rgb(3);
  const auto said = arena->Claim(f);
  EXPECT_EQ(said.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(said.message().find("never wrote"), std::string::npos) << said;
  std::memset(region.slot(3), 7, f.size);  // the backend writes the frame
  EXPECT_TRUE(arena->Claim(f).ok());
  arena->Release(3);
  // A hole punched in a written frame (what a backend's seccomp filter
  // refuses it) is found again.
  const uint64_t slot_at = region.layout().arena + 3 * region.geometry().slot_bytes;
  ASSERT_EQ(fallocate(region.fd(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, slot_at + 4096, 4096), 0);
  EXPECT_EQ(arena->Claim(f).code(), absl::StatusCode::kDataLoss);
  // Written through the backend's own mapping, which the host's has never
  // touched: what counts is the memfd's pages, not this side's mapping.
  auto peer = Region::Map(UniqueFd(dup(region.fd())));
  ASSERT_TRUE(peer.ok()) << peer.status();
  FrameRef other = Rgb(2);
  std::memset(peer->slot(2), 9, other.size);
  EXPECT_TRUE(arena->Claim(other).ok());
  // Every byte the host may read is checked: a frame whose range (a copy
  // takes it whole) or padding runs onto a page never written is refused,
  // whatever its planes.
  FrameRef row = Rgb(4);
  row.height = 1;
  row.offset = 4096 - kW * 3;
  row.size = kW * 3;
  row.planes = {{row.offset, kW * 3, 1}};
  std::memset(region.slot(4) + row.offset, 7, kW * 3);
  EXPECT_EQ(arena->Claim(row).code(), absl::StatusCode::kDataLoss) << "the padding's page";
  std::memset(region.slot(4) + row.offset, 7, row.size + kSlotPadding);
  EXPECT_TRUE(arena->Claim(row).ok());
}

// A pool slot's first borrow allocates all its pages, so that a decoder's
// frame there is never refused for bytes it did not write.
TEST_F(FramePoolArenaTest, ABorrowAllocatesThePoolSlotsPages) {
  std::optional<BackendArena::Slot> slot = backend_->Borrow();
  ASSERT_TRUE(slot.has_value());
  const uint64_t at = region_->layout().arena + uint64_t{slot->index} * region_->geometry().slot_bytes;
  EXPECT_TRUE(region_->CheckAllocated(at, region_->geometry().slot_bytes).ok());
  const uint32_t last = region_->geometry().slot_count - 1;
  const uint64_t last_at = region_->layout().arena + uint64_t{last} * region_->geometry().slot_bytes;
  EXPECT_FALSE(region_->CheckAllocated(last_at, region_->geometry().slot_bytes).ok()) << "a slot never borrowed";
}

// The life of a pool slot: borrowed, lent to the host as a frame, freed by
// the host while the decoder still references it (it must stay the
// decoder's), lent again (a picture shown twice), given back while the
// host holds it (it becomes borrowable only once the host frees it).
TEST_F(FramePoolArenaTest, ABorrowedSlotIsNeverReusedUntilBothSidesLetGo) {
  std::optional<BackendArena::Slot> a = backend_->Borrow();
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(State(a->index), kWriting);
  auto taken = backend_->TakeBorrowed(a->index);
  ASSERT_TRUE(taken.ok()) << taken.status();
  backend_->Lend(a->index);
  EXPECT_FALSE(backend_->TakeBorrowed(a->index).ok()) << "lent to the host: not again until it is freed";
  state()[a->index].store(kFree);  // the host lets the frame go
  // Still borrowed: the next borrows get the other pool slots, never this one.
  std::optional<BackendArena::Slot> b = backend_->Borrow();
  std::optional<BackendArena::Slot> c = backend_->Borrow();
  ASSERT_TRUE(b.has_value() && c.has_value());
  EXPECT_NE(b->index, a->index);
  EXPECT_NE(c->index, a->index);
  EXPECT_FALSE(backend_->Borrow().has_value());
  // Shown again: lent a second time.
  ASSERT_TRUE(backend_->TakeBorrowed(a->index).ok());
  backend_->Lend(a->index);
  // The decoder lets go while the host holds it: the host's until freed.
  backend_->GiveBack(a->index);
  EXPECT_EQ(State(a->index), kLent);
  EXPECT_FALSE(backend_->Borrow().has_value());
  EXPECT_FALSE(backend_->TakeBorrowed(a->index).ok()) << "no longer borrowed";
  state()[a->index].store(kFree);
  std::optional<BackendArena::Slot> again = backend_->Borrow();
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->index, a->index);
  // A borrow that ends unlent frees its slot at once.
  EXPECT_TRUE(backend_->GiveBack(b->index));
  EXPECT_EQ(State(b->index), kFree);
  // Giving back what is not borrowed changes nothing, and says so.
  EXPECT_FALSE(backend_->GiveBack(b->index));
  EXPECT_FALSE(backend_->GiveBack(0));
  EXPECT_EQ(State(b->index), kFree);
  EXPECT_EQ(State(0), kFree);
  EXPECT_EQ(backend_->borrowed_count(), 2u);
}

// The decoder may drop its last reference between lending a picture and
// the runner sending it: the slot stays the frame's until it is lent (then
// the host's) or abandoned (then free), never borrowable in between.
TEST_F(FramePoolArenaTest, AGiveBackWhileAFrameIsTakenWaitsForItsLendOrAbandon) {
  std::optional<BackendArena::Slot> a = backend_->Borrow();
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(backend_->TakeBorrowed(a->index).ok());
  backend_->GiveBack(a->index);
  EXPECT_EQ(State(a->index), kWriting) << "not freed under the frame being sent";
  std::optional<BackendArena::Slot> b = backend_->Borrow();
  ASSERT_TRUE(b.has_value());
  EXPECT_NE(b->index, a->index);
  backend_->Lend(a->index);
  EXPECT_EQ(State(a->index), kLent);
  std::optional<BackendArena::Slot> c = backend_->Borrow();
  ASSERT_TRUE(c.has_value());
  EXPECT_NE(c->index, a->index);
  EXPECT_FALSE(backend_->Borrow().has_value()) << "the host holds the third";
  state()[a->index].store(kFree);  // the host lets it go
  std::optional<BackendArena::Slot> again = backend_->Borrow();
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->index, a->index);
  // Taken, given back, then abandoned (the decode failed): free at once.
  ASSERT_TRUE(backend_->TakeBorrowed(b->index).ok());
  backend_->GiveBack(b->index);
  backend_->Abandon(b->index);
  EXPECT_EQ(State(b->index), kFree);
  backend_->GiveBack(c->index);
  std::optional<BackendArena::Slot> d = backend_->Borrow();
  ASSERT_TRUE(d.has_value());
}

TEST_F(FramePoolArenaTest, TakeBorrowedRefusesSlotsNotBorrowed) {
  EXPECT_FALSE(backend_->TakeBorrowed(0).ok()) << "a copy slot";
  EXPECT_FALSE(backend_->TakeBorrowed(3).ok()) << "a pool slot not borrowed";
  EXPECT_FALSE(backend_->TakeBorrowed(99).ok()) << "out of range";
}

TEST_F(FramePoolArenaTest, TheHostCountsHeldCopySlotsApart) {
  auto arena = std::make_shared<HostArena>(std::make_shared<Region>(std::move(*region_)));
  FrameRef copy = Rgb(1), pooled = Rgb(3);
  std::memset(arena->region().slot(3), 7, pooled.size);  // as the backend's decoder writes it
  ASSERT_TRUE(arena->Claim(copy).ok());
  ASSERT_TRUE(arena->Claim(pooled).ok());
  EXPECT_EQ(arena->held_count(), 2u);
  EXPECT_EQ(arena->held_copy_count(), 1u);
}

TEST(GeometryTest, AFramePoolLeavesACopySlot) {
  Geometry g = Small();
  g.pool_slots = g.slot_count;
  EXPECT_FALSE(g.Validate().ok());
  g.pool_slots = g.slot_count - 1;
  EXPECT_TRUE(g.Validate().ok());
}

}  // namespace
}  // namespace codecvisor::ipc
