// CopyStreaming: memcpy for large copies whose destination is not read
// again soon (a frame copied into a batch). Its stores bypass the cache
// (non-temporal), so the copy neither reads each destination line in
// before overwriting it nor evicts the working set of whatever runs
// beside it (a decoder on the other core). Small copies and other
// architectures use memcpy. Ordered like memcpy for the calling thread;
// ends with a store fence, so another thread that synchronizes with the
// caller afterwards sees every byte.

#ifndef CODECVISOR_BASE_STREAM_COPY_H_
#define CODECVISOR_BASE_STREAM_COPY_H_

#include <cstddef>
#include <cstdint>

namespace codecvisor {

// Below this, CopyStreaming is memcpy: the fence and the cache miss a
// later reader would pay are not worth it.
inline constexpr size_t kMinStreamingCopy = 64 << 10;

// Copies `bytes` from `src` to `dst` (not overlapping).
void CopyStreaming(uint8_t* dst, const uint8_t* src, size_t bytes);

}  // namespace codecvisor

#endif  // CODECVISOR_BASE_STREAM_COPY_H_
