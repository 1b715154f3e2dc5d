#include "tools/conformance/samples.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>


namespace codecvisor::conformance {
namespace {

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

TEST(PsnrTest, IdenticalIsInfiniteAndNoiseIsFinite) {
  std::vector<uint8_t> a(300, 100), b = a;
  EXPECT_TRUE(std::isinf(Psnr(a, b)));
  b[0] = 110;  // MSE = 100 / 300
  EXPECT_NEAR(Psnr(a, b), 10 * std::log10(255.0 * 255.0 * 3), 1e-9);
  EXPECT_EQ(Psnr(a, std::vector<uint8_t>(10)), 0) << "different sizes never pass a threshold";
}

TEST(MakeSampleTest, H264SampleAndItsReference) {
  absl::StatusOr<Sample> sample = MakeSample("h264", TempDir());
  ASSERT_TRUE(sample.ok()) << sample.status();
  EXPECT_EQ(sample->stream.codec, "h264");
  EXPECT_EQ(sample->stream.width, 128u);
  EXPECT_EQ(sample->stream.height, 96u);
  EXPECT_NEAR(sample->stream.average_fps, 24, 1e-9);
  ASSERT_EQ(sample->num_frames(), 36);
  EXPECT_EQ(sample->rgb24.size(), 36u * 128 * 96 * 3);
  for (int64_t i = 1; i < sample->num_frames(); ++i) {
    EXPECT_GT(sample->pts[i], sample->pts[i - 1]) << "presentation order, frame " << i;
    EXPECT_GT(sample->durations[i], 0);
  }
  EXPECT_GT(sample->pts[0], 0) << "the sample starts at 0.5 s";
  // testsrc2 moves: consecutive frames differ.
  EXPECT_FALSE(std::equal(sample->Frame(0).begin(), sample->Frame(0).end(), sample->Frame(1).begin()));
}

TEST(MakeSampleTest, UnknownCodecIsAnError) {
  EXPECT_EQ(MakeSample("prores", TempDir()).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace codecvisor::conformance
