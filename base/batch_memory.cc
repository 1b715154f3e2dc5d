#include "base/batch_memory.h"

#include <sys/mman.h>

#include <algorithm>
#include <new>
#include <utility>

namespace codecvisor {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kPage = 4096;

// Whole huge pages for large batches, whole pages for small ones.
size_t RoundUp(size_t n) {
  const size_t unit = n >= kHugePage / 2 ? kHugePage : kPage;
  return (n + unit - 1) / unit * unit;
}

}  // namespace

BatchMemory::BatchMemory(size_t bytes, Pages pages) : size_(RoundUp(std::max<size_t>(bytes, 1))) {
  void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  data_ = static_cast<uint8_t*>(p);
  if (size_ >= kHugePage) (void)madvise(data_, size_, MADV_HUGEPAGE);  // best effort
  if (pages == Pages::kPopulated) Populate(0, size_);
}

void BatchMemory::Populate(size_t offset, size_t bytes) {
#ifdef MADV_POPULATE_WRITE
  const size_t first = offset / kPage * kPage;
  if (bytes == 0 || first >= size_) return;
  const size_t end = std::min(size_, (offset + bytes + kPage - 1) / kPage * kPage);
  (void)madvise(data_ + first, end - first, MADV_POPULATE_WRITE);  // best effort (Linux 5.14+)
#else
  (void)offset;
  (void)bytes;
#endif
}

BatchMemory::~BatchMemory() {
  if (data_ != nullptr) munmap(data_, size_);
}

BatchMemory::BatchMemory(BatchMemory&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}

BatchMemory& BatchMemory::operator=(BatchMemory&& o) noexcept {
  std::swap(data_, o.data_);
  std::swap(size_, o.size_);
  return *this;
}

}  // namespace codecvisor
