// Memory for a batch of frames: anonymous pages backed by huge pages where
// the kernel gives them, populated in one call. Faulting a fresh 4 KiB page
// costs about 10 us on a VM, which at 360p would cost more than decoding the
// frame. The Python extension's batches and the benches' in-process
// baselines use it, so both sides of a comparison pay the same for memory.

#ifndef CODECVISOR_BASE_BATCH_MEMORY_H_
#define CODECVISOR_BASE_BATCH_MEMORY_H_

#include <cstddef>
#include <cstdint>

namespace codecvisor {

class BatchMemory {
 public:
  BatchMemory() = default;
  // At least `bytes` (whole huge pages for large sizes); throws
  // std::bad_alloc when the kernel refuses.
  explicit BatchMemory(size_t bytes);
  ~BatchMemory();
  BatchMemory(BatchMemory&& o) noexcept;
  BatchMemory& operator=(BatchMemory&& o) noexcept;
  BatchMemory(const BatchMemory&) = delete;
  BatchMemory& operator=(const BatchMemory&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace codecvisor

#endif  // CODECVISOR_BASE_BATCH_MEMORY_H_
