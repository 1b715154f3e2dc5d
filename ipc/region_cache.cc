#include "ipc/region_cache.h"

#include <utility>

namespace codecvisor::ipc {
namespace {

bool SameGeometry(const Geometry& a, const Geometry& b) {
  return a.request_ring_bytes == b.request_ring_bytes && a.response_ring_bytes == b.response_ring_bytes &&
         a.slot_count == b.slot_count && a.slot_bytes == b.slot_bytes;
}

}  // namespace

std::shared_ptr<Region> RegionCache::Take(const Geometry& geometry) {
  std::unique_ptr<Region> found;
  {
    MutexLock lock(&mu_);
    for (auto it = kept_.rbegin(); it != kept_.rend(); ++it) {
      if (SameGeometry((*it)->geometry(), geometry) &&
          (*it)->header()->backend_detached.load(std::memory_order_acquire) != 0) {
        found = std::move(*it);
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
  return std::shared_ptr<Region>(region.release(), [weak = weak_from_this()](Region* r) {
    std::unique_ptr<Region> owned(r);
    if (std::shared_ptr<RegionCache> cache = weak.lock()) cache->Return(std::move(owned));
  });
}

void RegionCache::Return(std::unique_ptr<Region> region) {
  std::unique_ptr<Region> dropped;  // unmapped outside the lock
  MutexLock lock(&mu_);
  if (max_regions_ == 0) return;  // `region` is unmapped on the way out
  if (kept_.size() >= max_regions_) {
    dropped = std::move(kept_.front());
    kept_.pop_front();
  }
  kept_.push_back(std::move(region));
}

}  // namespace codecvisor::ipc
