#include "backends/sdk/runner/sandbox.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace codecvisor::runner {
namespace {

// Each type byte is in exactly one allowed block, or in none when denied.
void ExpectExactCover(const std::vector<uint8_t>& denied) {
  const auto blocks = AllowedIoctlTypeBlocks(denied);
  for (unsigned t = 0; t < 256; ++t) {
    const int matches = static_cast<int>(std::count_if(
        blocks.begin(), blocks.end(), [t](const auto& b) { return (t & b.first) == b.second; }));
    const bool is_denied = std::find(denied.begin(), denied.end(), t) != denied.end();
    EXPECT_EQ(matches, is_denied ? 0 : 1) << "ioctl type " << t;
  }
}

TEST(AllowedIoctlTypeBlocksTest, CoverEveryTypeButTheDeniedOnes) {
  ExpectExactCover({kDeniedIoctlTypes, kDeniedIoctlTypes + std::size(kDeniedIoctlTypes)});
  ExpectExactCover({});
  ExpectExactCover({0x00, 0xff});
  // One type out of 256 leaves the eight aligned halves, quarters, ... around it.
  EXPECT_EQ(AllowedIoctlTypeBlocks(std::vector<uint8_t>{0x54}).size(), 8u);
  EXPECT_EQ(AllowedIoctlTypeBlocks(std::vector<uint8_t>{}),
            (std::vector<std::pair<uint8_t, uint8_t>>{{0x00, 0x00}}));
}

}  // namespace
}  // namespace codecvisor::runner
