#include "base/stream_copy.h"

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

namespace codecvisor {
namespace {

// Every size around the vector and unroll widths, at every destination
// and source misalignment: the bytes copied equal the source, and the
// bytes around the destination are untouched.
TEST(StreamCopyTest, CopiesExactlyTheBytesAtAnyAlignment) {
  std::vector<uint8_t> source(4096 + 64);
  for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<uint8_t>(i * 131 + 7);
  for (size_t bytes : {0u, 1u, 15u, 16u, 17u, 63u, 64u, 65u, 127u, 128u, 129u, 1000u, 4096u}) {
    for (size_t to_offset = 0; to_offset < 16; ++to_offset) {
      for (size_t from_offset : {0u, 1u, 8u, 15u}) {
        std::vector<uint8_t> dest(bytes + 64, 0xEE);
        StreamCopy(dest.data() + 16 + to_offset, source.data() + from_offset, bytes);
        const size_t start = 16 + to_offset;
        for (size_t i = 0; i < dest.size(); ++i) {
          const bool inside = i >= start && i < start + bytes;
          const uint8_t want = inside ? source[from_offset + i - start] : 0xEE;
          ASSERT_EQ(dest[i], want) << "bytes " << bytes << " to+" << to_offset << " from+" << from_offset
                                   << " at " << i;
        }
      }
    }
  }
}

TEST(StreamCopyTest, CopiesAFrameSizedBuffer) {
  const size_t bytes = 1920 * 1080 * 3;
  std::vector<uint8_t> source(bytes), dest(bytes);
  for (size_t i = 0; i < bytes; ++i) source[i] = static_cast<uint8_t>(i ^ (i >> 11));
  StreamCopy(dest.data(), source.data(), bytes);
  EXPECT_EQ(dest, source);
}

}  // namespace
}  // namespace codecvisor
