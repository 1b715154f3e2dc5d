// Which freed batch mappings to keep for the next batch, and which to give
// back to the kernel: the bookkeeping of BatchMemory's cache, with no
// system calls in it, so that every decision can be tested with made-up
// addresses and times.
//
// A process that decodes batch after batch (a DataLoader worker, a bench,
// a service) frees a batch's memory and asks for the same size again a few
// milliseconds later. Fresh anonymous memory costs a page fault and a
// zeroed page per 4 KiB or 2 MiB on first write, which on a VM can cost more
// than decoding the frames that fill it; a kept mapping is already
// resident. The cache is bounded three ways: total bytes, number of
// mappings, and idle time (a mapping nobody took for `max_idle` is given
// back at the next Take or Keep: an idle process keeps what it had).

#ifndef CODECVISOR_BASE_BATCH_MEMORY_CACHE_H_
#define CODECVISOR_BASE_BATCH_MEMORY_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/time/time.h"

namespace codecvisor {

class BatchMemoryCache {
 public:
  struct Mapping {
    uint8_t* data = nullptr;
    size_t size = 0;
    friend bool operator==(const Mapping&, const Mapping&) = default;
  };

  struct Limits {
    size_t bytes = 0;  // 0 keeps nothing
    size_t mappings = 16;
    absl::Duration max_idle = absl::Seconds(10);
  };

  // Reserves room for `limits.mappings`, so that Keep never allocates for
  // the cache itself.
  explicit BatchMemoryCache(Limits limits) : limits_(limits) { kept_.reserve(limits.mappings); }

  // The smallest kept mapping of at least `bytes` and at most a quarter
  // more (a small batch must not pin a large mapping), the most recently
  // kept among equals; removed from the cache. Mappings idle past
  // max_idle are appended to `*release`.
  std::optional<Mapping> Take(size_t bytes, absl::Time now, std::vector<Mapping>* release);

  // Whether a mapping of `bytes` may be kept at all (within the byte limit,
  // and the cache keeps any).
  bool Fits(size_t bytes) const { return bytes <= limits_.bytes && limits_.mappings > 0; }

  // Keeps `m` as the most recent. What no longer fits the limits (the
  // oldest first, or `m` itself when it alone is over the byte limit) and
  // what has been idle past max_idle is appended to `*release`.
  void Keep(Mapping m, absl::Time now, std::vector<Mapping>* release);

  // Forgets every mapping and returns them.
  std::vector<Mapping> Clear();

  size_t bytes() const { return bytes_; }
  size_t mappings() const { return kept_.size(); }
  const Limits& limits() const { return limits_; }

 private:
  struct Kept {
    Mapping mapping;
    absl::Time since;
  };
  void Expire(absl::Time now, std::vector<Mapping>* release);
  void DropOldest(std::vector<Mapping>* release);

  const Limits limits_;
  std::vector<Kept> kept_;  // oldest first
  size_t bytes_ = 0;
};

}  // namespace codecvisor

#endif  // CODECVISOR_BASE_BATCH_MEMORY_CACHE_H_
