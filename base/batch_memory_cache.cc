#include "base/batch_memory_cache.h"

#include <iterator>

namespace codecvisor {

std::optional<BatchMemoryCache::Mapping> BatchMemoryCache::Take(size_t bytes, absl::Time now,
                                                                std::vector<Mapping>* release) {
  Expire(now, release);
  const size_t most = bytes + bytes / 4;
  auto best = kept_.end();
  for (auto it = kept_.begin(); it != kept_.end(); ++it) {
    const size_t size = it->mapping.size;
    // `<=`: among equal sizes the later (more recently kept) one wins.
    if (size >= bytes && size <= most && (best == kept_.end() || size <= best->mapping.size)) best = it;
  }
  if (best == kept_.end()) return std::nullopt;
  const Mapping m = best->mapping;
  bytes_ -= m.size;
  kept_.erase(best);
  return m;
}

void BatchMemoryCache::Keep(Mapping m, absl::Time now, std::vector<Mapping>* release) {
  Expire(now, release);
  if (!Fits(m.size)) {
    release->push_back(m);
    return;
  }
  while (!kept_.empty() && (bytes_ + m.size > limits_.bytes || kept_.size() + 1 > limits_.mappings)) {
    DropOldest(release);
  }
  kept_.push_back(Kept{m, now});
  bytes_ += m.size;
}

std::vector<BatchMemoryCache::Mapping> BatchMemoryCache::Clear() {
  std::vector<Mapping> all;
  all.reserve(kept_.size());
  for (const Kept& k : kept_) all.push_back(k.mapping);
  kept_.clear();
  bytes_ = 0;
  return all;
}

void BatchMemoryCache::Expire(absl::Time now, std::vector<Mapping>* release) {
  while (!kept_.empty() && now - kept_.front().since > limits_.max_idle) DropOldest(release);
}

void BatchMemoryCache::DropOldest(std::vector<Mapping>* release) {
  release->push_back(kept_.front().mapping);
  bytes_ -= kept_.front().mapping.size;
  kept_.erase(kept_.begin());
}

}  // namespace codecvisor
