#include "base/address_space.h"

#include <sys/mman.h>

namespace codecvisor {

bool CanReserveAddressSpace(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return false;
  munmap(p, bytes);
  return true;
}

}  // namespace codecvisor
