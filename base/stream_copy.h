// A copy whose destination is written with non-temporal stores (x86-64:
// SSE2 `movntdq`; elsewhere plain memcpy). For large copies whose
// destination nobody reads soon (frames landing in a batch of hundreds of
// MB): the stores go to memory without first reading the destination's
// cache lines, and without pushing other threads' working sets (a
// decoder's reference frames) out of the shared cache. A small copy that
// is read at once is faster with memcpy.

#ifndef CODECVISOR_BASE_STREAM_COPY_H_
#define CODECVISOR_BASE_STREAM_COPY_H_

#include <cstddef>
#include <cstdint>

namespace codecvisor {

// Copies `bytes` from `from` to `to` (not overlapping), as memcpy would;
// any alignment. Ends with a store fence: the bytes are ordered before any
// later store, as a memcpy's are.
void StreamCopy(uint8_t* to, const uint8_t* from, size_t bytes);

}  // namespace codecvisor

#endif  // CODECVISOR_BASE_STREAM_COPY_H_
