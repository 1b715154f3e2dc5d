#include "base/stream_copy.h"

#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace codecvisor {

void CopyStreaming(uint8_t* dst, const uint8_t* src, size_t bytes) {
#if defined(__x86_64__)
  if (bytes < kMinStreamingCopy) {
    std::memcpy(dst, src, bytes);
    return;
  }
  // Up to the destination's first 64-byte line with memcpy; whole lines
  // streamed (four 16-byte stores each, SSE2 being in every x86-64); the
  // rest with memcpy.
  const size_t head = (64 - reinterpret_cast<uintptr_t>(dst) % 64) % 64;
  std::memcpy(dst, src, head);
  dst += head;
  src += head;
  bytes -= head;
  const size_t lines = bytes / 64;
  for (size_t i = 0; i < lines; ++i, dst += 64, src += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 48), d);
  }
  std::memcpy(dst, src, bytes % 64);
  _mm_sfence();
#else
  std::memcpy(dst, src, bytes);
#endif
}

}  // namespace codecvisor
