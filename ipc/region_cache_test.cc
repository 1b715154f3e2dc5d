#include "ipc/region_cache.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>
#include <vector>
#include <memory>
#include <utility>
#include <variant>

#include <gtest/gtest.h>
#include "ipc/channel.h"
#include "ipc/region.h"

namespace codecvisor::ipc {
namespace {

Geometry SmallGeometry(uint32_t slots = 2) {
  Geometry g;
  g.slot_count = slots;
  g.slot_bytes = Geometry::SlotBytesFor(4096);
  return g;
}

Region NewRegion(const Geometry& g) {
  absl::StatusOr<Region> r = Region::Create(g);
  EXPECT_TRUE(r.ok()) << r.status();
  return *std::move(r);
}

// The memfd's inode: the same region, whatever address it is mapped at.
ino_t Inode(const Region& r) {
  struct stat st;
  EXPECT_EQ(fstat(r.fd(), &st), 0);
  return st.st_ino;
}

void MarkDetached(Region& r) { r.header()->backend_detached.store(1, std::memory_order_release); }

TEST(RegionCacheTest, AReleasedDetachedRegionComesBackReset) {
  auto cache = RegionCache::Make({.max_regions = 2});
  ino_t inode = 0;
  {
    std::shared_ptr<Region> r = cache->Adopt(NewRegion(SmallGeometry()));
    inode = Inode(*r);
    EXPECT_EQ(cache->size(), 0u);  // held: not in the cache
    r->header()->request.tail.store(640);
    r->header()->slot_state[1].store(static_cast<uint32_t>(SlotState::kLent));
    r->header()->backend_in_call.store(1);
    MarkDetached(*r);
  }
  EXPECT_EQ(cache->size(), 1u);
  std::shared_ptr<Region> again = cache->Take(SmallGeometry());
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(Inode(*again), inode);
  EXPECT_EQ(again->header()->magic, kRegionMagic);
  EXPECT_EQ(again->header()->slot_count, 2u);
  EXPECT_EQ(again->header()->request.tail.load(), 0u);
  EXPECT_EQ(again->header()->slot_state[1].load(), 0u);
  EXPECT_EQ(again->header()->backend_in_call.load(), 0u);
  EXPECT_EQ(again->header()->backend_detached.load(), 0u);
  EXPECT_EQ(cache->size(), 0u);
}

TEST(RegionCacheTest, ARegionTheBackendStillHasIsNotHandedOut) {
  auto cache = RegionCache::Make({.max_regions = 2});
  { std::shared_ptr<Region> r = cache->Adopt(NewRegion(SmallGeometry())); }
  EXPECT_EQ(cache->size(), 1u);
  EXPECT_EQ(cache->Take(SmallGeometry()), nullptr);
  EXPECT_EQ(cache->size(), 1u);
}

TEST(RegionCacheTest, OnlyTheSameGeometryFits) {
  auto cache = RegionCache::Make({.max_regions = 2});
  {
    std::shared_ptr<Region> r = cache->Adopt(NewRegion(SmallGeometry(2)));
    MarkDetached(*r);
  }
  EXPECT_EQ(cache->Take(SmallGeometry(3)), nullptr);
  Geometry bigger_slots = SmallGeometry(2);
  bigger_slots.slot_bytes += 4096;
  EXPECT_EQ(cache->Take(bigger_slots), nullptr);
  EXPECT_NE(cache->Take(SmallGeometry(2)), nullptr);
}

TEST(RegionCacheTest, KeepsAtMostItsLimitDroppingTheOldest) {
  auto cache = RegionCache::Make({.max_regions = 2});
  ino_t inodes[3];
  for (int i = 0; i < 3; ++i) {
    std::shared_ptr<Region> r = cache->Adopt(NewRegion(SmallGeometry()));
    inodes[i] = Inode(*r);
    MarkDetached(*r);
  }
  EXPECT_EQ(cache->size(), 2u);
  std::shared_ptr<Region> a = cache->Take(SmallGeometry());
  std::shared_ptr<Region> b = cache->Take(SmallGeometry());
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(Inode(*a), inodes[2]);  // newest first
  EXPECT_EQ(Inode(*b), inodes[1]);
  EXPECT_EQ(cache->Take(SmallGeometry()), nullptr);
}

// Whether [base, base + bytes) is mapped in this process.
bool Mapped(uint8_t* base, size_t bytes) {
  std::vector<unsigned char> pages(bytes / 4096 + 1);
  return mincore(base, bytes, pages.data()) == 0 || errno != ENOMEM;
}

TEST(RegionCacheTest, ARegionReleasedAfterTheCacheIsGoneIsUnmapped) {
  auto cache = RegionCache::Make({.max_regions = 2});
  std::shared_ptr<Region> r = cache->Adopt(NewRegion(SmallGeometry()));
  uint8_t* base = r->base();
  const size_t bytes = r->layout().total;
  MarkDetached(*r);
  cache.reset();
  ASSERT_TRUE(Mapped(base, bytes));
  r.reset();
  EXPECT_FALSE(Mapped(base, bytes));
}

TEST(RegionCacheTest, ARegionOverTheByteLimitIsNotKept) {
  Geometry big = SmallGeometry(4);
  auto cache = RegionCache::Make({.max_regions = 2, .max_region_bytes = Layout::For(big).total - 1});
  {
    std::shared_ptr<Region> r = cache->Adopt(NewRegion(big));
    MarkDetached(*r);
  }
  EXPECT_EQ(cache->size(), 0u);
  {
    std::shared_ptr<Region> r = cache->Adopt(NewRegion(SmallGeometry(1)));
    MarkDetached(*r);
  }
  EXPECT_EQ(cache->size(), 1u);
}

TEST(RegionCacheTest, AnIdleRegionIsUnmappedAtTheNextCall) {
  auto cache = RegionCache::Make({.max_regions = 2, .max_idle = std::chrono::milliseconds(1)});
  uint8_t* base = nullptr;
  size_t bytes = 0;
  {
    std::shared_ptr<Region> r = cache->Adopt(NewRegion(SmallGeometry()));
    base = r->base();
    bytes = r->layout().total;
    MarkDetached(*r);
  }
  EXPECT_EQ(cache->size(), 1u);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(cache->Take(SmallGeometry()), nullptr);
  EXPECT_EQ(cache->size(), 0u);
  EXPECT_FALSE(Mapped(base, bytes));
}

// A child forked while a region was out may still view its pages (they
// are MAP_SHARED): the parent must not put a new session's frames there,
// and the child lets go of it without touching the cache.
TEST(RegionCacheTest, ARegionOutAtAForkIsNeverKeptOnEitherSide) {
  auto cache = RegionCache::Make({.max_regions = 2});
  std::shared_ptr<Region> r = cache->Adopt(NewRegion(SmallGeometry()));
  MarkDetached(*r);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    r.reset();
    _exit(cache->size() == 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  r.reset();
  EXPECT_EQ(cache->size(), 0u);
  // One shared after the fork is kept again.
  {
    std::shared_ptr<Region> later = cache->Adopt(NewRegion(SmallGeometry()));
    MarkDetached(*later);
  }
  EXPECT_EQ(cache->size(), 1u);
}

TEST(RegionCacheTest, AZeroLimitKeepsNothing) {
  auto cache = RegionCache::Make({.max_regions = 0});
  {
    std::shared_ptr<Region> r = cache->Adopt(NewRegion(SmallGeometry()));
    MarkDetached(*r);
  }
  EXPECT_EQ(cache->size(), 0u);
}

// The whole path: a session's channel, its backend end detaching when it
// is destroyed, and the next session's channel on the same pages, working.
TEST(RegionCacheTest, TheNextSessionsChannelReusesTheRegionAndWorks) {
  auto cache = RegionCache::Make({.max_regions = 2});
  const auto deadline = [] { return Clock::now() + std::chrono::seconds(10); };
  ino_t first_inode = 0;
  for (int session = 0; session < 3; ++session) {
    auto created = HostChannel::Create(SmallGeometry(), cache.get());
    ASSERT_TRUE(created.ok()) << created.status();
    std::unique_ptr<HostChannel> host = std::move(created->first);
    if (session == 0) first_inode = Inode(*host->shared_region());
    else EXPECT_EQ(Inode(*host->shared_region()), first_inode) << "session " << session;
    auto backend = BackendChannel::Attach(std::move(created->second));
    ASSERT_TRUE(backend.ok()) << backend.status();
    for (uint64_t id = 1; id <= 3; ++id) {
      ASSERT_TRUE(host->Send({id, Ping{id * 10 + session}}, deadline()).ok());
      absl::StatusOr<Request> request = (*backend)->Receive(deadline());
      ASSERT_TRUE(request.ok()) << request.status();
      EXPECT_EQ(request->id, id);
      ASSERT_TRUE(std::holds_alternative<Ping>(request->body));
      EXPECT_EQ(std::get<Ping>(request->body).nonce, id * 10 + session);
      ASSERT_TRUE((*backend)->Send({id, Pong{id}}, deadline()).ok());
      absl::StatusOr<Incoming> reply = host->Receive(deadline());
      ASSERT_TRUE(reply.ok()) << reply.status();
      EXPECT_EQ(reply->response.id, id);
    }
    // Either side may let go first: the region waits in the cache for the
    // runner's mark either way.
    if (session % 2 == 0) {
      backend->reset();
      host.reset();
    } else {
      host.reset();
      backend->reset();
    }
    EXPECT_EQ(cache->size(), 1u);
  }
}

}  // namespace
}  // namespace codecvisor::ipc
