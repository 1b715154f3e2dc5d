// File: backends/cpu/frame_rotator_test.cc
//
// The CLI's choice of filter for a display-matrix angle, which formats can
// be rotated sample by sample, and the sample moves on a tiny frame. The
// bit-exact comparison with the CLI on real videos is in cpu_backend_test.cc
// (the catalogue's rotated videos) and cpu_backend_rotation_test.cc.

#include "backends/cpu/frame_rotator.h"

#include <cmath>
#include <string>

#include "gtest/gtest.h"

namespace codecvisor::cpu {
namespace {

TEST(RotationFromDegreesTest, FollowsTheClisAutorotation) {
  // ffprobe's (counter-clockwise) angle; the CLI negates it.
  EXPECT_EQ(RotationFromDegrees(0), Rotation::kNone);
  EXPECT_EQ(RotationFromDegrees(90), Rotation::kCounterClockwise);
  EXPECT_EQ(RotationFromDegrees(-90), Rotation::kClockwise);
  EXPECT_EQ(RotationFromDegrees(270), Rotation::kClockwise);
  EXPECT_EQ(RotationFromDegrees(-270), Rotation::kCounterClockwise);
  EXPECT_EQ(RotationFromDegrees(180), Rotation::kHalfTurn);
  EXPECT_EQ(RotationFromDegrees(-180), Rotation::kHalfTurn);
  EXPECT_EQ(RotationFromDegrees(89.6), Rotation::kCounterClockwise);  // rounded first
  // The CLI would interpolate with its "rotate" filter: left as is.
  EXPECT_EQ(RotationFromDegrees(45), Rotation::kNone);
  EXPECT_EQ(RotationFromDegrees(88.4), Rotation::kNone);
  EXPECT_EQ(RotationFromDegrees(std::nan("")), Rotation::kNone);
  EXPECT_TRUE(SwapsSides(Rotation::kClockwise));
  EXPECT_FALSE(SwapsSides(Rotation::kHalfTurn));
}

TEST(CheckRotatableTest, RefusesFormatsTheFiltersWouldResample) {
  EXPECT_TRUE(CheckRotatable(Rotation::kClockwise, AV_PIX_FMT_YUV420P).ok());
  EXPECT_TRUE(CheckRotatable(Rotation::kClockwise, AV_PIX_FMT_YUV420P10LE).ok());
  EXPECT_TRUE(CheckRotatable(Rotation::kCounterClockwise, AV_PIX_FMT_NV12).ok());
  EXPECT_TRUE(CheckRotatable(Rotation::kHalfTurn, AV_PIX_FMT_YUV422P).ok());
  EXPECT_TRUE(CheckRotatable(Rotation::kNone, AV_PIX_FMT_PAL8).ok());
  absl::Status s = CheckRotatable(Rotation::kClockwise, AV_PIX_FMT_YUV422P);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(std::string(s.message()).find("yuv422p"), std::string::npos) << s;
  EXPECT_EQ(CheckRotatable(Rotation::kHalfTurn, AV_PIX_FMT_YUYV422).code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(CheckRotatable(Rotation::kHalfTurn, AV_PIX_FMT_PAL8).code(),
            absl::StatusCode::kUnimplemented);
}

// A 3x2 yuv444p frame whose samples are their own coordinates (10 * row +
// column), plus 100 per plane.
FramePtr CoordinateFrame() {
  FramePtr f = MakeFrame();
  f->width = 3;
  f->height = 2;
  f->format = AV_PIX_FMT_YUV444P;
  EXPECT_GE(av_frame_get_buffer(f.get(), 0), 0);
  for (int p = 0; p < 3; ++p) {
    for (int y = 0; y < 2; ++y) {
      for (int x = 0; x < 3; ++x) f->data[p][y * f->linesize[p] + x] = 100 * p + 10 * y + x;
    }
  }
  f->colorspace = AVCOL_SPC_BT709;
  f->color_range = AVCOL_RANGE_JPEG;
  f->pts = 42;
  return f;
}

// Plane `p` of `f`, row by row, each sample as its number.
std::string Samples(const AVFrame* f, int p) {
  std::string out;
  for (int y = 0; y < f->height; ++y) {
    for (int x = 0; x < f->width; ++x) {
      out += std::to_string(f->data[p][y * f->linesize[p] + x] - 100 * p);
      out += x + 1 < f->width ? " " : ";";
    }
  }
  return out;
}

TEST(FrameRotatorTest, MovesSamplesAsTransposeAndFlipDo) {
  FramePtr in = CoordinateFrame();
  // Input rows: "0 1 2;10 11 12;".
  const struct {
    Rotation rotation;
    int width, height;
    const char* samples;
  } kCases[] = {
      {Rotation::kClockwise, 2, 3, "10 0;11 1;12 2;"},
      {Rotation::kCounterClockwise, 2, 3, "2 12;1 11;0 10;"},
      {Rotation::kHalfTurn, 3, 2, "12 11 10;2 1 0;"},
  };
  for (const auto& c : kCases) {
    FrameRotator rotator(c.rotation);
    absl::StatusOr<const AVFrame*> out = rotator.Apply(in.get());
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)->width, c.width);
    EXPECT_EQ((*out)->height, c.height);
    for (int p = 0; p < 3; ++p) EXPECT_EQ(Samples(*out, p), c.samples) << "plane " << p;
    EXPECT_EQ((*out)->colorspace, AVCOL_SPC_BT709);
    EXPECT_EQ((*out)->color_range, AVCOL_RANGE_JPEG);
    EXPECT_EQ((*out)->pts, 42);
  }
  FrameRotator none(Rotation::kNone);
  EXPECT_EQ(*none.Apply(in.get()), in.get());
}

}  // namespace
}  // namespace codecvisor::cpu
