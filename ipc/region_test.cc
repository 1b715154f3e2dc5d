#include "ipc/region.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

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

// Resident KiB of this process's mapping that starts at `base`, from
// /proc/self/smaps; -1 if there is none.
long RssKb(const void* base) {
  std::ifstream smaps("/proc/self/smaps");
  const uintptr_t want = reinterpret_cast<uintptr_t>(base);
  bool in_mapping = false;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long start = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &start, &end) == 2) {
      in_mapping = start == want;
      continue;
    }
    long kb = 0;
    if (in_mapping && std::sscanf(line.c_str(), "Rss: %ld kB", &kb) == 1) return kb;
  }
  return -1;
}

// Every page of the region, frame slots included, is mapped on both sides
// before the first frame: no frame takes a page fault.
TEST(RegionTest, BothSidesMapEveryPageAtOnce) {
  const Geometry g{4096, 8192, 3, Geometry::SlotBytesFor(1 << 20)};
  auto host = Region::Create(g);
  ASSERT_TRUE(host.ok()) << host.status();
  auto peer = Region::Map(UniqueFd(dup(host->fd())));
  ASSERT_TRUE(peer.ok()) << peer.status();
  const long total_kb = static_cast<long>(host->layout().total / 1024);
  EXPECT_EQ(RssKb(host->header()), total_kb);
  EXPECT_EQ(RssKb(peer->header()), total_kb);
}

// A frame pool's pages are left to fault in as the backend's decoder
// writes them: both sides make resident everything before the pool.
TEST(RegionTest, TheFramePoolIsNotMadeResidentInAdvance) {
  Geometry g{4096, 8192, 5, Geometry::SlotBytesFor(1 << 20)};
  g.pool_slots = 3;
  auto host = Region::Create(g);
  ASSERT_TRUE(host.ok()) << host.status();
  auto peer = Region::Map(UniqueFd(dup(host->fd())));
  ASSERT_TRUE(peer.ok()) << peer.status();
  EXPECT_EQ(peer->geometry().pool_slots, 3u);
  EXPECT_EQ(peer->geometry().copy_slots(), 2u);
  const long before_pool_kb = static_cast<long>((host->layout().arena + 2 * g.slot_bytes) / 1024);
  EXPECT_EQ(RssKb(host->header()), before_pool_kb);
  EXPECT_EQ(RssKb(peer->header()), before_pool_kb);
  // The backend's first write to a pool slot brings its page in on both sides.
  peer->slot(4)[0] = 7;
  EXPECT_EQ(host->slot(4)[0], 7);
  EXPECT_EQ(RssKb(host->header()), before_pool_kb + 4);
}

// A region larger than kHostPopulatedBytes (frames a backend claims to be
// huge): the host allocates that much of it, the backend's mapping the
// rest, against the backend's own memory limit.
TEST(RegionTest, TheHostAllocatesAtMostItsShareOfALargeRegion) {
  const Geometry g{4096, 8192, 3, Geometry::SlotBytesFor(64 << 20)};
  auto host = Region::Create(g);
  ASSERT_TRUE(host.ok()) << host.status();
  ASSERT_GT(host->layout().total, kHostPopulatedBytes + (64 << 20));
  EXPECT_EQ(RssKb(host->header()), static_cast<long>(kHostPopulatedBytes / 1024));
  auto peer = Region::Map(UniqueFd(dup(host->fd())));
  ASSERT_TRUE(peer.ok()) << peer.status();
  EXPECT_EQ(RssKb(peer->header()), static_cast<long>(host->layout().total / 1024));
}

TEST(RegionTest, MemfdIsSealedAgainstResizing) {
  auto host = Region::Create(Small());
  ASSERT_TRUE(host.ok());
  EXPECT_NE(ftruncate(host->fd(), 4096), 0) << "a backend could SIGBUS the host";
  EXPECT_NE(ftruncate(host->fd(), host->layout().total * 2), 0);
}

// Under a file-size limit (`ulimit -f`) the region's memfd counts against
// it: growing it past the limit would raise SIGXFSZ, whose default kills
// the host without a word. In a child, whose SIGXFSZ is the default.
TEST(RegionTest, AFileSizeLimitBelowTheRegionIsAnErrorNamingItNotSigxfsz) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    signal(SIGXFSZ, SIG_DFL);
    const rlimit limit{1 << 20, 1 << 20};
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(10);
    // Below the limit: made as usual.
    if (!Region::Create({4096, 8192, 1, Geometry::SlotBytesFor(100'000)}).ok()) _exit(11);
    auto big = Region::Create({4096, 8192, 4, Geometry::SlotBytesFor(1'000'000)});
    if (big.ok()) _exit(12);
    if (!absl::IsResourceExhausted(big.status())) _exit(13);
    const std::string message(big.status().message());
    if (message.find("`ulimit -f`") == std::string::npos || message.find("1048576") == std::string::npos) _exit(14);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_FALSE(WIFSIGNALED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: setrlimit, 11: a small region refused, 12: the large one made, "
                                       "13: not kResourceExhausted, 14: the message names no limit";
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
