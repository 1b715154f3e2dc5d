#include "base/stream_copy.h"

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

namespace codecvisor {
namespace {

std::vector<uint8_t> Pattern(size_t n) {
  std::vector<uint8_t> v(n);
  uint32_t x = 12345;
  for (uint8_t& b : v) {
    x = x * 1103515245 + 12345;
    b = static_cast<uint8_t>(x >> 16);
  }
  return v;
}

// Every byte of [at, at + n) of the destination equals the source's, and
// the guard bytes on both sides are untouched.
void CheckCopy(size_t n, size_t dst_at, size_t src_at) {
  const std::vector<uint8_t> src = Pattern(n + src_at);
  std::vector<uint8_t> dst(n + dst_at + 64, 0xAB);
  CopyStreaming(dst.data() + dst_at, src.data() + src_at, n);
  for (size_t i = 0; i < dst_at; ++i) ASSERT_EQ(dst[i], 0xAB) << "before, at " << i;
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(dst[dst_at + i], src[src_at + i]) << "n " << n << " at " << i;
  for (size_t i = dst_at + n; i < dst.size(); ++i) ASSERT_EQ(dst[i], 0xAB) << "after, at " << i;
}

TEST(CopyStreamingTest, SmallCopiesAreExact) {
  for (size_t n : std::vector<size_t>{0, 1, 63, 64, 65, 4096}) CheckCopy(n, 3, 5);
}

TEST(CopyStreamingTest, LargeCopiesAreExactWhateverTheAlignment) {
  const size_t frame = 1920 * 1080 * 3;
  for (size_t dst_at : std::vector<size_t>{0, 1, 17, 63}) {
    for (size_t src_at : std::vector<size_t>{0, 5, 32}) CheckCopy(frame + 7, dst_at, src_at);
  }
}

TEST(CopyStreamingTest, SizesAroundTheThresholdAreExact) {
  for (size_t n : std::vector<size_t>{kMinStreamingCopy - 1, kMinStreamingCopy, kMinStreamingCopy + 1, kMinStreamingCopy + 63}) {
    CheckCopy(n, 9, 0);
  }
}

}  // namespace
}  // namespace codecvisor
