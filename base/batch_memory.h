// Memory for a batch of frames: anonymous pages backed by huge pages where
// the kernel gives them, populated in one call per range. Faulting a fresh
// 4 KiB page costs about 10 us on a VM, which at 360p would cost more than
// decoding the frame. The Python extension's batches and the benches'
// in-process baselines use it, so both sides of a comparison pay the same
// for memory.

#ifndef CODECVISOR_BASE_BATCH_MEMORY_H_
#define CODECVISOR_BASE_BATCH_MEMORY_H_

#include <cstddef>
#include <cstdint>

namespace codecvisor {

class BatchMemory {
 public:
  // When the pages are made resident: all at once by the constructor, or
  // range by range by Populate(), just before they are written (a batch
  // that fills as frames arrive then pays for each frame's pages as it
  // copies it, instead of for all of them before the first).
  enum class Pages { kPopulated, kOnDemand };

  BatchMemory() = default;
  // At least `bytes` (whole huge pages for large sizes); throws
  // std::bad_alloc when the kernel refuses.
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

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace codecvisor

#endif  // CODECVISOR_BASE_BATCH_MEMORY_H_
