#include "ipc/plane_shapes.h"

#include <gtest/gtest.h>

namespace codecvisor::ipc {
namespace {

std::vector<std::pair<uint64_t, uint64_t>> Pairs(absl::string_view format, uint32_t w, uint32_t h) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  const std::vector<PlaneShape> shapes = PlaneShapesOf(format, w, h).value();
  for (const PlaneShape& s : shapes) out.emplace_back(s.row_bytes, s.rows);
  return out;
}

TEST(PlaneShapesTest, ChromaIsSubsampledRoundingUp) {
  using P = std::vector<std::pair<uint64_t, uint64_t>>;
  EXPECT_EQ(Pairs("yuv420p", 65, 49), (P{{65, 49}, {33, 25}, {33, 25}}));
  EXPECT_EQ(Pairs("yuvj420p", 64, 48), (P{{64, 48}, {32, 24}, {32, 24}}));
  EXPECT_EQ(Pairs("yuv422p", 65, 49), (P{{65, 49}, {33, 49}, {33, 49}}));
  EXPECT_EQ(Pairs("yuv444p", 5, 3), (P{{5, 3}, {5, 3}, {5, 3}}));
  EXPECT_EQ(Pairs("nv12", 65, 49), (P{{65, 49}, {66, 25}}));
  EXPECT_EQ(Pairs("nv21", 64, 48), (P{{64, 48}, {64, 24}}));
  EXPECT_EQ(Pairs("gray", 7, 2), (P{{7, 2}}));
  EXPECT_EQ(Pairs("rgb24", 7, 2), (P{{21, 2}}));
  EXPECT_EQ(Pairs("rgbp", 7, 2), (P{{7, 2}, {7, 2}, {7, 2}}));
}

TEST(PlaneShapesTest, OtherFormatsAreUnknown) {
  EXPECT_FALSE(PlaneShapesOf("yuv420p10le", 64, 48).has_value());
  EXPECT_FALSE(PlaneShapesOf("", 64, 48).has_value());
  EXPECT_FALSE(PlaneShapesOf("vendor-tiled", 64, 48).has_value());
}

TEST(PlaneShapesTest, RgbFormatsHaveTheirNames) {
  EXPECT_EQ(RgbPixelFormatName(OutputFormat::kRgb24), "rgb24");
  EXPECT_EQ(RgbPixelFormatName(OutputFormat::kRgb24Planar), "rgbp");
  EXPECT_EQ(RgbPixelFormatName(OutputFormat::kNative), "");
}

}  // namespace
}  // namespace codecvisor::ipc
