#include "ipc/region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace codecvisor::ipc {
namespace {

Geometry Small() { return {4096, 8192, 4, Geometry::SlotBytesFor(100'000)}; }

TEST(RegionTest, CreateThenMapSeesTheSameGeometryAndBytes) {
  auto host = Region::Create(Small());
  ASSERT_TRUE(host.ok()) << host.status();
  auto peer = Region::Map(UniqueFd(dup(host->fd())));
  ASSERT_TRUE(peer.ok()) << peer.status();
  EXPECT_EQ(peer->geometry().slot_count, 4u);
  EXPECT_EQ(peer->geometry().slot_bytes, Geometry::SlotBytesFor(100'000));
  EXPECT_EQ(peer->layout().total, host->layout().total);
  // Two mappings of one memfd: a write through one is seen through the other.
  host->slot(3)[100] = 0xab;
  EXPECT_EQ(peer->slot(3)[100], 0xab);
}

TEST(RegionTest, MemfdIsSealedAgainstResizing) {
  auto host = Region::Create(Small());
  ASSERT_TRUE(host.ok());
  EXPECT_NE(ftruncate(host->fd(), 4096), 0) << "a backend could SIGBUS the host";
  EXPECT_NE(ftruncate(host->fd(), host->layout().total * 2), 0);
}

TEST(RegionTest, RejectsBadGeometry) {
  Geometry g = Small();
  g.request_ring_bytes = 5000;  // not a power of two
  EXPECT_EQ(Region::Create(g).status().code(), absl::StatusCode::kInvalidArgument);
  g = Small();
  g.slot_count = kMaxSlots + 1;
  EXPECT_EQ(Region::Create(g).status().code(), absl::StatusCode::kInvalidArgument);
  g = Small();
  g.slot_bytes = 1000;  // not whole pages
  EXPECT_EQ(Region::Create(g).status().code(), absl::StatusCode::kInvalidArgument);
}

// The frame size comes from the backend: a huge one must not wrap into a
// small slot that the geometry then accepts.
TEST(RegionTest, SlotBytesForAHugeFrameIsRejectedNotWrapped) {
  for (uint64_t size : {kMaxArenaBytes + 1, ~uint64_t{0}, ~uint64_t{0} - 300, ~uint64_t{0} - 4000}) {
    Geometry g;
    g.slot_count = 1;
    g.slot_bytes = Geometry::SlotBytesFor(size);
    EXPECT_GT(g.slot_bytes, kMaxArenaBytes) << size;
    EXPECT_FALSE(g.Validate().ok()) << size;
  }
  EXPECT_EQ(Geometry::SlotBytesFor(4096 - kSlotPadding), 4096u);
}

TEST(RegionTest, MapRejectsUnsealedOrForeignMemfd) {
  UniqueFd fd(memfd_create("foreign", MFD_CLOEXEC));
  ASSERT_TRUE(fd.valid());
  ASSERT_EQ(ftruncate(fd.get(), 1 << 20), 0);
  EXPECT_EQ(Region::Map(std::move(fd)).status().code(), absl::StatusCode::kDataLoss);
}

TEST(RegionTest, MapRejectsHeaderThatDisagreesWithSize) {
  auto host = Region::Create(Small());
  ASSERT_TRUE(host.ok());
  host->header()->slot_count = 200;  // claims a much larger arena than the memfd holds
  EXPECT_EQ(Region::Map(UniqueFd(dup(host->fd()))).status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace codecvisor::ipc
