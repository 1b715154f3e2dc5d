// NativeRgb's checks of a frame's numbers, which a backend wrote, before
// swscale reads a byte: what api/rgb_converter_test cannot make through a
// real arena (strides past what an int holds, a qualifying stream's limits).

#include "media/native_rgb.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace codecvisor::media {
namespace {

NativeStream Stream(uint32_t width = 64, uint32_t height = 48) {
  return NativeStream{.pixel_format = "yuv420p", .width = width, .height = height};
}

TEST(NativeRgbTest, QualifyingStreams) {
  EXPECT_TRUE(NativeRgb::Accepts(Stream()));
  EXPECT_TRUE(NativeRgb::Accepts(Stream(16384, 1)));
  EXPECT_FALSE(NativeRgb::Accepts(Stream(16385, 1)));
  EXPECT_FALSE(NativeRgb::Accepts(Stream(0, 48)));
  NativeStream rotated = Stream();
  rotated.rotation_degrees = 45;
  EXPECT_FALSE(NativeRgb::Accepts(rotated));
  for (const char* f : {"yuvj420p", "yuv420p10le", "rgb24", "pal8", "no such format", ""}) {
    NativeStream s = Stream();
    s.pixel_format = f;
    EXPECT_FALSE(NativeRgb::Accepts(s)) << f;
  }
}

TEST(NativeRgbTest, StridesPastAnIntAreRefusedBeforeAnythingIsRead) {
  NativeRgb rgb(Stream());
  // The planes' bytes are never read: the checks fail first. A span this
  // long over a small buffer would crash a converter that read it.
  std::vector<uint8_t> small(64);
  const std::span<const uint8_t> huge(small.data(), size_t{1} << 40);
  std::vector<uint8_t> out(64 * 48 * 3, 7);
  const NativePlane planes[] = {{huge, uint64_t{1} << 32}, {huge, 32}, {huge, 32}};
  absl::Status s = rgb.Convert("yuv420p", 64, 48, planes, false, out);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  const NativePlane wide_chroma[] = {{huge, 64}, {huge, uint64_t{INT32_MAX} + 1}, {huge, 32}};
  s = rgb.Convert("yuv420p", 64, 48, wide_chroma, false, out);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_EQ(out, std::vector<uint8_t>(64 * 48 * 3, 7));
}

TEST(NativeRgbTest, TooSmallAnOutputIsTheCallersError) {
  NativeRgb rgb(Stream());
  std::vector<uint8_t> y(64 * 48 + 256), c(32 * 24 + 256);
  const NativePlane planes[] = {{y, 64}, {c, 32}, {c, 32}};
  std::vector<uint8_t> out(64 * 48 * 3 - 1);
  EXPECT_EQ(rgb.Convert("yuv420p", 64, 48, planes, false, out).code(), absl::StatusCode::kInvalidArgument);
  out.resize(64 * 48 * 3);
  EXPECT_TRUE(rgb.Convert("yuv420p", 64, 48, planes, false, out).ok());
}

}  // namespace
}  // namespace codecvisor::media
