#include "backends/cpu/frame_cursor.h"

#include <cerrno>

#include "absl/status/status.h"
#include "gtest/gtest.h"

extern "C" {
#include <libavutil/error.h>
}

namespace codecvisor::cpu {
namespace {

// A decoder out of memory (many sessions in one backend) was reported as
// the file's damage, kDataLoss, which a batch job skips as a corrupt video.
TEST(DecodeFailureTest, OutOfMemoryIsTheBackendsShortageNotTheFilesDamage) {
  EXPECT_TRUE(absl::IsResourceExhausted(DecodeFailure(AVERROR(ENOMEM), "frame 3 could not be decoded")));
  EXPECT_TRUE(absl::IsDataLoss(DecodeFailure(AVERROR_INVALIDDATA, "frame 3 could not be decoded")));
  EXPECT_TRUE(absl::IsDataLoss(DecodeFailure(0, "frame 3 could not be decoded")));
  EXPECT_EQ(DecodeFailure(AVERROR(ENOMEM), "frame 3").message(), "frame 3");
}

}  // namespace
}  // namespace codecvisor::cpu
