#include "base/batch_memory.h"

#include <pthread.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <new>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/time/clock.h"
#include "base/batch_memory_cache.h"
#include "base/cgroup_paths.h"
#include "base/mutex.h"

namespace codecvisor {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kPage = 4096;

// Whole huge pages for large batches, whole pages for small ones.
size_t RoundUp(size_t n) {
  const size_t unit = n >= kHugePage / 2 ? kHugePage : kPage;
  return (n + unit - 1) / unit * unit;
}

// CODECVISOR_BATCH_CACHE_MIB, else an eighth of the usable memory, at most
// 2 GiB.
size_t DefaultCacheBytes() {
  constexpr size_t kMostMiB = size_t{1} << 30;  // no overflow below
  if (const char* v = std::getenv("CODECVISOR_BATCH_CACHE_MIB"); v != nullptr) {
    size_t mib = 0;
    if (absl::SimpleAtoi(v, &mib)) return std::min(mib, kMostMiB) << 20;
  }
  return std::min(UsableMemoryBytes() / 8, size_t{2} << 30);
}

// A monotonic time for the cache's idle limit (only differences matter).
absl::Time MonotonicNow() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return absl::TimeFromTimespec(ts);
}

void Unmap(const std::vector<BatchMemoryCache::Mapping>& mappings) {
  for (const BatchMemoryCache::Mapping& m : mappings) munmap(m.data, m.size);
}

// The process's cache. Leaked on purpose: batches may be freed during
// static destruction.
class GlobalCache {
 public:
  static GlobalCache& Get() {
    static GlobalCache* cache = [] {
      auto* c = new GlobalCache(DefaultCacheBytes());
      pthread_atfork(&Prepare, &Parent, &Child);
      return c;
    }();
    return *cache;
  }

  std::optional<BatchMemoryCache::Mapping> Take(size_t bytes) {
    std::vector<BatchMemoryCache::Mapping> release;
    std::optional<BatchMemoryCache::Mapping> m;
    {
      MutexLock lock(&mu_);
      m = cache_->Take(bytes, MonotonicNow(), &release);
      // Memory in use forks as any other; under the lock, so that no fork
      // (which takes it) sees the mapping out of the cache but unforkable.
      if (m.has_value()) (void)madvise(m->data, m->size, MADV_DOFORK);
    }
    Unmap(release);
    return m;
  }

  // Keeps the mapping or unmaps it. Never throws: it runs in destructors.
  void Give(BatchMemoryCache::Mapping m) noexcept {
    std::vector<BatchMemoryCache::Mapping> release;
    try {
      release.reserve(kMostMappings + 1);
    } catch (const std::bad_alloc&) {
      munmap(m.data, m.size);
      return;
    }
    {
      MutexLock lock(&mu_);
      if (cache_->Fits(m.size)) {
        (void)madvise(m.data, m.size, MADV_DONTFORK);
        (void)madvise(m.data, m.size, MADV_FREE);
        // Cannot throw: `release` has room for every kept mapping and `m`,
        // and the cache reserved room for its limit.
        cache_->Keep(m, MonotonicNow(), &release);
      } else {
        release.push_back(m);
      }
    }
    Unmap(release);
  }

  void SetLimitBytes(size_t bytes) {
    std::vector<BatchMemoryCache::Mapping> release;
    {
      MutexLock lock(&mu_);
      release = cache_->Clear();
      Reset(bytes);
    }
    Unmap(release);
  }

  size_t bytes() {
    MutexLock lock(&mu_);
    return cache_->bytes();
  }

  size_t limit_bytes() {
    MutexLock lock(&mu_);
    return cache_->limits().bytes;
  }

  // Gives back every kept mapping; the limit stays.
  void Drop() {
    std::vector<BatchMemoryCache::Mapping> release;
    {
      MutexLock lock(&mu_);
      release = cache_->Clear();
    }
    Unmap(release);
  }

 private:
  // No other thread can see the cache yet.
  explicit GlobalCache(size_t bytes) ABSL_NO_THREAD_SAFETY_ANALYSIS { Reset(bytes); }

  // An empty cache of `bytes`.
  void Reset(size_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    cache_.emplace(BatchMemoryCache::Limits{.bytes = bytes, .mappings = kMostMappings});
  }

  static constexpr size_t kMostMappings = 16;

  // fork: no other thread may hold the lock while the child is made; the
  // child's cache names mappings it did not inherit (MADV_DONTFORK), so it
  // forgets them.
  static void Prepare() ABSL_NO_THREAD_SAFETY_ANALYSIS { Get().mu_.Lock(); }
  static void Parent() ABSL_NO_THREAD_SAFETY_ANALYSIS { Get().mu_.Unlock(); }
  static void Child() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    Get().cache_->Clear();
    Get().mu_.Unlock();
  }

  Mutex mu_;
  std::optional<BatchMemoryCache> cache_ ABSL_GUARDED_BY(mu_);
};

// `map()`, and once more after giving back the cache's mappings when it
// fails: kept mappings count against RLIMIT_AS (`ulimit -v`) and the
// overcommit limit though the kernel may reclaim their pages, so under
// such a limit the cache would refuse the next batch, or a decoder's
// channel, memory it only keeps in reserve.
template <typename MapFn>
void* WithoutTheCache(MapFn map) {
  void* p = map();
  if (p != MAP_FAILED || GlobalCache::Get().bytes() == 0) return p;
  GlobalCache::Get().Drop();
  return map();
}

}  // namespace

BatchMemory::BatchMemory(size_t bytes, Pages pages) : size_(RoundUp(std::max<size_t>(bytes, 1))) {
  if (std::optional<BatchMemoryCache::Mapping> kept = GlobalCache::Get().Take(size_); kept.has_value()) {
    data_ = kept->data;
    size_ = kept->size;
  } else {
    void* p = WithoutTheCache([&] { return mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); });
    if (p == MAP_FAILED) throw std::bad_alloc();
    data_ = static_cast<uint8_t*>(p);
    if (size_ >= kHugePage) (void)madvise(data_, size_, MADV_HUGEPAGE);  // best effort
  }
  if (pages == Pages::kPopulated) Populate(0, size_);
}

void BatchMemory::Grow(size_t bytes) {
  const size_t wanted = RoundUp(std::max<size_t>(bytes, 1));
  if (wanted <= size_) return;
  if (data_ == nullptr) {
    *this = BatchMemory(wanted, Pages::kOnDemand);
    return;
  }
  void* p = WithoutTheCache([&] { return mremap(data_, size_, wanted, MREMAP_MAYMOVE); });
  if (p == MAP_FAILED) throw std::bad_alloc();
  data_ = static_cast<uint8_t*>(p);
  size_ = wanted;
  if (size_ >= kHugePage) (void)madvise(data_, size_, MADV_HUGEPAGE);  // best effort
}

bool PopulatePages(void* address, size_t bytes) {
  if (bytes == 0) return true;
#ifdef MADV_POPULATE_WRITE
  const uintptr_t start = reinterpret_cast<uintptr_t>(address);
  const uintptr_t first = start / kPage * kPage;
  return madvise(reinterpret_cast<void*>(first), start + bytes - first, MADV_POPULATE_WRITE) == 0;
#else
  (void)address;
  return false;
#endif
}

void BatchMemory::Populate(size_t offset, size_t bytes) {
  if (bytes == 0 || offset >= size_) return;
  (void)PopulatePages(data_ + offset, std::min(bytes, size_ - offset));  // best effort
}

void BatchMemory::SetCacheLimitBytes(size_t bytes) { GlobalCache::Get().SetLimitBytes(bytes); }

size_t BatchMemory::CachedBytes() { return GlobalCache::Get().bytes(); }

size_t BatchMemory::CacheLimitBytes() { return GlobalCache::Get().limit_bytes(); }

BatchMemory::~BatchMemory() {
  if (data_ != nullptr) GlobalCache::Get().Give({data_, size_});
}

BatchMemory::BatchMemory(BatchMemory&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}

BatchMemory& BatchMemory::operator=(BatchMemory&& o) noexcept {
  std::swap(data_, o.data_);
  std::swap(size_, o.size_);
  return *this;
}

}  // namespace codecvisor
