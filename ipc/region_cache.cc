#include "ipc/region_cache.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <iterator>
#include <mutex>
#include <utility>

namespace codecvisor::ipc {
namespace {

std::atomic<uint64_t> g_forks{0};

void CountFork() { g_forks.fetch_add(1, std::memory_order_relaxed); }

bool SameGeometry(const Geometry& a, const Geometry& b) {
  return a.request_ring_bytes == b.request_ring_bytes && a.response_ring_bytes == b.response_ring_bytes &&
         a.slot_count == b.slot_count && a.slot_bytes == b.slot_bytes && a.pool_slots == b.pool_slots;
}

}  // namespace

std::shared_ptr<RegionCache> RegionCache::Make(Limits limits) {
  static std::once_flag counting;
  // Both sides count: the parent's regions shared before the fork must not
  // be kept, and neither may the child's.
  std::call_once(counting, [] { pthread_atfork(nullptr, &CountFork, &CountFork); });
  return std::shared_ptr<RegionCache>(new RegionCache(limits));
}

uint64_t RegionCache::Forks() { return g_forks.load(std::memory_order_relaxed); }

std::shared_ptr<Region> RegionCache::Take(const Geometry& geometry) {
  std::unique_ptr<Region> found;
  std::deque<Kept> dropped;  // unmapped outside the lock
  {
    MutexLock lock(&mu_);
    Expire(std::chrono::steady_clock::now(), &dropped);
    for (auto it = kept_.rbegin(); it != kept_.rend(); ++it) {
      if (SameGeometry(it->region->geometry(), geometry) &&
          it->region->header()->backend_detached.load(std::memory_order_acquire) != 0) {
        found = std::move(it->region);
        kept_.erase(std::next(it).base());
        break;
      }
    }
  }
  if (found == nullptr) return nullptr;
  found->Reset();
  return Share(std::move(found));
}

std::shared_ptr<Region> RegionCache::Adopt(Region region) {
  return Share(std::make_unique<Region>(std::move(region)));
}

size_t RegionCache::size() const {
  MutexLock lock(&mu_);
  return kept_.size();
}

std::shared_ptr<Region> RegionCache::Share(std::unique_ptr<Region> region) {
  const uint64_t forks = Forks();
  return std::shared_ptr<Region>(region.release(), [weak = weak_from_this(), forks](Region* r) {
    std::unique_ptr<Region> owned(r);
    if (Forks() != forks) return;  // see the header: unmapped, never kept
    if (std::shared_ptr<RegionCache> cache = weak.lock()) cache->Return(std::move(owned), forks);
  });
}

void RegionCache::Return(std::unique_ptr<Region> region, uint64_t forks_when_shared) {
  std::deque<Kept> dropped;  // unmapped outside the lock, with `region` if not kept
  MutexLock lock(&mu_);
  const auto now = std::chrono::steady_clock::now();
  Expire(now, &dropped);
  if (limits_.max_regions == 0 || region->layout().total > limits_.max_region_bytes ||
      Forks() != forks_when_shared) {
    return;
  }
  if (kept_.size() >= limits_.max_regions) {
    dropped.push_back(std::move(kept_.front()));
    kept_.pop_front();
  }
  kept_.push_back(Kept{std::move(region), now});
}

void RegionCache::Expire(std::chrono::steady_clock::time_point now, std::deque<Kept>* dropped) {
  while (!kept_.empty() && now - kept_.front().since > limits_.max_idle) {
    dropped->push_back(std::move(kept_.front()));
    kept_.pop_front();
  }
}

}  // namespace codecvisor::ipc
