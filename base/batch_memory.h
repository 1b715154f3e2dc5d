// Memory for a batch of frames: anonymous pages backed by huge pages where
// the kernel gives them, populated in one call per range. Faulting a fresh
// 4 KiB page costs about 10 us on a VM, which at 360p would cost more than
// decoding the frame. The Python extension's batches and the benches'
// in-process baselines use it, so both sides of a comparison pay the same
// for memory.
//
// Freed memory is kept in a process-wide cache (base/batch_memory_cache)
// and handed to the next batch of about the same size, already resident.
// The cache holds at most an eighth of the memory this process may use
// (UsableMemoryBytes: the machine's, or its cgroup's or address-space limit
// where lower), 2 GiB at most, in 16 mappings, and gives them all back when
// the kernel refuses a mapping (they count against `ulimit -v`); one idle for more than 10 seconds is given back at
// the next allocation or free, so a process that stops decoding keeps what
// it had until then. CODECVISOR_BATCH_CACHE_MIB sets the byte limit (0
// turns the cache off). A kept mapping is marked MADV_FREE, so the kernel
// may reclaim it under memory pressure (the next batch then faults fresh
// pages in; on CPUs without a hardware dirty bit, such as some arm64, the
// first write to each reused page faults), and MADV_DONTFORK, so a fork
// neither copies it nor makes the parent's next write to it a
// copy-on-write fault; a forked child starts with an empty cache. Memory
// in use by a batch is never in the cache and forks as usual.

#ifndef CODECVISOR_BASE_BATCH_MEMORY_H_
#define CODECVISOR_BASE_BATCH_MEMORY_H_

#include <cstddef>
#include <cstdint>

namespace codecvisor {

// Makes the pages of [address, address + bytes) resident and writable in
// one call (MADV_POPULATE_WRITE, Linux 5.14+), instead of one fault per
// page as they are first written; false where the kernel cannot (the pages
// then fault in as before). The range is widened to whole pages.
bool PopulatePages(void* address, size_t bytes);

class BatchMemory {
 public:
  // When the pages are made resident: all at once by the constructor, or
  // range by range by Populate(), just before they are written (a batch
  // that fills as frames arrive then pays for each frame's pages as it
  // copies it, instead of for all of them before the first).
  enum class Pages { kPopulated, kOnDemand };

  BatchMemory() = default;
  // At least `bytes` (whole huge pages for large sizes), taken from the
  // cache when it holds a fitting mapping (its old contents are not
  // cleared); throws std::bad_alloc when the kernel refuses.
  explicit BatchMemory(size_t bytes, Pages pages = Pages::kPopulated);
  ~BatchMemory();
  BatchMemory(BatchMemory&& o) noexcept;
  BatchMemory& operator=(BatchMemory&& o) noexcept;
  BatchMemory(const BatchMemory&) = delete;
  BatchMemory& operator=(const BatchMemory&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

  // Makes the pages of [offset, offset + bytes) resident and writable in
  // one call (best effort: a page it misses faults in when written); the
  // part past size() is ignored.
  void Populate(size_t offset, size_t bytes);

  // At least `bytes` (rounded as the constructor rounds), keeping the
  // contents: the kernel moves the pages (mremap), so nothing is copied and
  // the memory never holds the contents twice; the new part's pages come
  // on demand. Throws std::bad_alloc when the kernel refuses, the memory
  // left as it was.
  void Grow(size_t bytes);

  // Sets the cache's byte limit, giving back what it holds (0: keep
  // nothing from now on). The environment sets it otherwise; a process
  // whose memory something other than the kernel watches (a Dask worker's
  // nanny) sets it to suit.
  static void SetCacheLimitBytes(size_t bytes);
  // The cache's byte limit.
  static size_t CacheLimitBytes();
  // The bytes the cache holds now.
  static size_t CachedBytes();

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace codecvisor

#endif  // CODECVISOR_BASE_BATCH_MEMORY_H_
