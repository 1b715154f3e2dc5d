#include "media/cli_scaler.h"

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

extern "C" {
#include <libavutil/pixfmt.h>
#include <libswscale/swscale.h>
}

namespace codecvisor::media {
namespace {

// One yuv420p picture of width x height with every sample set, converted to
// RGB24 by a CLI scaler with the given colour details.
std::vector<uint8_t> Rgb(int width, int height, uint8_t y, uint8_t u, uint8_t v, int colorspace,
                         int range) {
  const int cw = (width + 1) / 2, ch = (height + 1) / 2;
  std::vector<uint8_t> luma(width * height + 64, y), cb(cw * ch + 64, u), cr(cw * ch + 64, v);
  std::vector<uint8_t> rgb(width * height * 3 + 256);
  absl::StatusOr<SwsContext*> s = NewCliScaler(width, height, AV_PIX_FMT_YUV420P, width, height, AV_PIX_FMT_RGB24);
  EXPECT_TRUE(s.ok()) << s.status();
  if (!s.ok()) return {};
  SetCliColorDetails(*s, colorspace, range, InputFullRange(*s));
  const uint8_t* src[4] = {luma.data(), cb.data(), cr.data(), nullptr};
  const int src_stride[4] = {width, cw, cw, 0};
  uint8_t* dst[4] = {rgb.data(), nullptr, nullptr, nullptr};
  const int dst_stride[4] = {width * 3, 0, 0, 0};
  EXPECT_EQ(sws_scale(*s, src, src_stride, 0, height, dst, dst_stride), height);
  sws_freeContext(*s);
  rgb.resize(width * height * 3);
  return rgb;
}

TEST(CliScalerTest, LimitedRangeWhiteAndBlackAreFullScale) {
  std::vector<uint8_t> white = Rgb(16, 8, 235, 128, 128, AVCOL_SPC_BT709, AVCOL_RANGE_MPEG);
  std::vector<uint8_t> black = Rgb(16, 8, 16, 128, 128, AVCOL_SPC_BT709, AVCOL_RANGE_MPEG);
  ASSERT_EQ(white.size(), 16u * 8 * 3);
  for (uint8_t b : white) EXPECT_EQ(b, 255);
  for (uint8_t b : black) EXPECT_EQ(b, 0);
}

TEST(CliScalerTest, FullRangeKeepsLumaAsIs) {
  // Y = 16 is black only in limited range; full range ("pc", JPEG) keeps it.
  std::vector<uint8_t> full = Rgb(16, 8, 16, 128, 128, AVCOL_SPC_BT709, AVCOL_RANGE_JPEG);
  for (uint8_t b : full) EXPECT_EQ(b, 16);
}

TEST(CliScalerTest, UnspecifiedAndOutOfRangeColourSpacesAreBt601) {
  // A saturated colour, where BT.601 and BT.709 coefficients differ.
  const std::vector<uint8_t> bt601 = Rgb(16, 8, 81, 90, 240, AVCOL_SPC_BT470BG, AVCOL_RANGE_MPEG);
  const std::vector<uint8_t> bt709 = Rgb(16, 8, 81, 90, 240, AVCOL_SPC_BT709, AVCOL_RANGE_MPEG);
  EXPECT_NE(bt601, bt709);
  EXPECT_EQ(Rgb(16, 8, 81, 90, 240, AVCOL_SPC_UNSPECIFIED, AVCOL_RANGE_MPEG), bt601);
  EXPECT_EQ(Rgb(16, 8, 81, 90, 240, 8, AVCOL_RANGE_MPEG), bt601);  // YCgCo: not a matrix vf_scale takes
  EXPECT_EQ(Rgb(16, 8, 81, 90, 240, 9999, AVCOL_RANGE_MPEG), bt601);
  EXPECT_EQ(Rgb(16, 8, 81, 90, 240, -5, AVCOL_RANGE_MPEG), bt601);
  // An unspecified range leaves the scaler's own (limited for YUV input).
  EXPECT_EQ(Rgb(16, 8, 81, 90, 240, AVCOL_SPC_BT470BG, AVCOL_RANGE_UNSPECIFIED), bt601);
}

// A new scaler reads YUV as limited range and YUVJ as full.
TEST(CliScalerTest, ANewScalersRangeIsItsFormats) {
  for (const auto& [format, full] : {std::pair{AV_PIX_FMT_YUV420P, false}, std::pair{AV_PIX_FMT_YUVJ420P, true}}) {
    absl::StatusOr<SwsContext*> s = NewCliScaler(16, 8, format, 16, 8, AV_PIX_FMT_RGB24);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(InputFullRange(*s), full) << format;
    sws_freeContext(*s);
  }
}

// A frame without a range gets the one asked for, not the one the last
// frame set: after a full-range frame, a frame that says nothing converts
// as it would on a new scaler.
TEST(CliScalerTest, AFrameWithoutARangeDoesNotTakeTheLastFramesRange) {
  absl::StatusOr<SwsContext*> s = NewCliScaler(16, 8, AV_PIX_FMT_YUV420P, 16, 8, AV_PIX_FMT_RGB24);
  ASSERT_TRUE(s.ok()) << s.status();
  const bool new_full = InputFullRange(*s);
  SetCliColorDetails(*s, AVCOL_SPC_BT470BG, AVCOL_RANGE_JPEG, new_full);
  EXPECT_TRUE(InputFullRange(*s));
  SetCliColorDetails(*s, AVCOL_SPC_BT470BG, AVCOL_RANGE_UNSPECIFIED, new_full);
  EXPECT_FALSE(InputFullRange(*s));
  SetCliColorDetails(*s, AVCOL_SPC_BT470BG, AVCOL_RANGE_UNSPECIFIED, true);
  EXPECT_TRUE(InputFullRange(*s));
  sws_freeContext(*s);
}

TEST(CliScalerTest, RefusesSizesSwscaleCannotTake) {
  absl::StatusOr<SwsContext*> s = NewCliScaler(0, 0, AV_PIX_FMT_YUV420P, 0, 0, AV_PIX_FMT_RGB24);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.status().message().find("0x0 yuv420p to 0x0 rgb24"), absl::string_view::npos) << s.status();
}

TEST(CliScalerTest, SplitRgb24TransposesRowsWithPadding) {
  // 3 x 2 pixels, rows padded to 12 bytes.
  const std::vector<uint8_t> rgb = {1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0,
                                    10, 11, 12, 13, 14, 15, 16, 17, 18, 0, 0, 0};
  std::vector<uint8_t> r(6), g(6), b(6);
  SplitRgb24(rgb.data(), 12, 3, 2, r.data(), g.data(), b.data());
  EXPECT_EQ(r, (std::vector<uint8_t>{1, 4, 7, 10, 13, 16}));
  EXPECT_EQ(g, (std::vector<uint8_t>{2, 5, 8, 11, 14, 17}));
  EXPECT_EQ(b, (std::vector<uint8_t>{3, 6, 9, 12, 15, 18}));
}

TEST(CliScalerTest, SplitRgb24MatchesOneSampleAtATimeAcrossBlockEdges) {
  // Widths on both sides of the 16-pixel blocks a vector path may take,
  // rows padded with bytes that must not reach a plane, and planes guarded
  // on both sides.
  std::mt19937 random(19);
  for (uint32_t width : {1u, 2u, 15u, 16u, 17u, 31u, 32u, 33u, 47u, 64u, 100u}) {
    for (int pad : {0, 5, 48}) {
      const uint32_t height = 3;
      const int stride = static_cast<int>(width) * 3 + pad;
      std::vector<uint8_t> rgb(size_t(stride) * height);
      for (uint8_t& v : rgb) v = static_cast<uint8_t>(random());
      constexpr size_t kGuard = 32;
      const size_t plane = size_t{width} * height;
      std::vector<uint8_t> out(kGuard + 3 * plane + kGuard, 0xA5);
      uint8_t* r = out.data() + kGuard;
      SplitRgb24(rgb.data(), stride, width, height, r, r + plane, r + 2 * plane);
      for (uint32_t y = 0; y < height; ++y) {
        for (uint32_t x = 0; x < width; ++x) {
          for (int c = 0; c < 3; ++c) {
            ASSERT_EQ(r[c * plane + y * width + x], rgb[size_t(y) * stride + 3 * x + c])
                << "width " << width << " pad " << pad << " x " << x << " y " << y << " channel " << c;
          }
        }
      }
      for (size_t i = 0; i < kGuard; ++i) {
        ASSERT_EQ(out[i], 0xA5) << "wrote before the R plane, width " << width;
        ASSERT_EQ(out[kGuard + 3 * plane + i], 0xA5) << "wrote past the B plane, width " << width;
      }
    }
  }
}

}  // namespace
}  // namespace codecvisor::media
