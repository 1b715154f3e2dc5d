#include "base/stream_copy.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace codecvisor {

void StreamCopy(uint8_t* to, const uint8_t* from, size_t bytes) {
#if defined(__x86_64__)
  constexpr size_t kVector = 16, kUnroll = 4 * kVector;
  // Plain copy up to a 16-byte aligned destination (movntdq needs one).
  const size_t head = std::min(bytes, (kVector - reinterpret_cast<uintptr_t>(to) % kVector) % kVector);
  std::memcpy(to, from, head);
  size_t i = head;
  for (; i + kUnroll <= bytes; i += kUnroll) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(to + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(to + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(to + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(to + i + 48), d);
  }
  std::memcpy(to + i, from + i, bytes - i);
  _mm_sfence();
#else
  std::memcpy(to, from, bytes);
#endif
}

}  // namespace codecvisor
