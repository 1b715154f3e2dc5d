// File: backends/cpu/frame_rotator_test.cc
//
// The CLI's choice of filter for a display matrix (angle and mirror), which formats can
// be rotated sample by sample, and the sample moves on a tiny frame. The
// bit-exact comparison with the CLI on real videos is in cpu_backend_test.cc
// (the catalogue's rotated videos) and cpu_backend_rotation_test.cc.

#include "backends/cpu/frame_rotator.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"

extern "C" {
#include <libavutil/display.h>
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
}

namespace codecvisor::cpu {
namespace {

// A display matrix whose av_display_rotation_get angle (counter-clockwise,
// as ffprobe prints it) is `degrees` (av_display_rotation_set takes it
// clockwise), then mirrored as av_display_matrix_flip does.
std::vector<int32_t> Matrix(double degrees, bool hflip = false, bool vflip = false) {
  std::vector<int32_t> m(9);
  av_display_rotation_set(m.data(), -degrees);
  av_display_matrix_flip(m.data(), hflip, vflip);
  return m;
}

TEST(RotationFromMatrixTest, FollowsTheClisAutorotation) {
  EXPECT_EQ(RotationFromMatrix(nullptr), Rotation::kNone);
  // The CLI negates ffprobe's angle.
  EXPECT_EQ(RotationFromMatrix(Matrix(0).data()), Rotation::kNone);
  EXPECT_EQ(RotationFromMatrix(Matrix(90).data()), Rotation::kCounterClockwise);
  EXPECT_EQ(RotationFromMatrix(Matrix(-90).data()), Rotation::kClockwise);
  EXPECT_EQ(RotationFromMatrix(Matrix(270).data()), Rotation::kClockwise);
  EXPECT_EQ(RotationFromMatrix(Matrix(-270).data()), Rotation::kCounterClockwise);
  EXPECT_EQ(RotationFromMatrix(Matrix(180).data()), Rotation::kHalfTurn);
  EXPECT_EQ(RotationFromMatrix(Matrix(-180).data()), Rotation::kHalfTurn);
  EXPECT_EQ(RotationFromMatrix(Matrix(89.6).data()), Rotation::kCounterClockwise);  // rounded first
  // The CLI would interpolate with its "rotate" filter: left as is.
  EXPECT_EQ(RotationFromMatrix(Matrix(45).data()), Rotation::kNone);
  EXPECT_EQ(RotationFromMatrix(Matrix(88.4).data()), Rotation::kNone);
  EXPECT_TRUE(SwapsSides(Rotation::kClockwise));
  EXPECT_FALSE(SwapsSides(Rotation::kHalfTurn));
}

// Mirrors, by the matrix's signs, as the CLI reads them: a mirror alone is
// hflip (its angle is 180) or vflip (0); a mirror and a quarter turn is a
// transpose.
TEST(RotationFromMatrixTest, MirrorsAreTheClisFlipsAndTransposes) {
  EXPECT_EQ(RotationFromMatrix(Matrix(0, /*hflip=*/true).data()), Rotation::kHorizontalFlip);
  EXPECT_EQ(RotationFromMatrix(Matrix(0, false, /*vflip=*/true).data()), Rotation::kVerticalFlip);
  EXPECT_EQ(RotationFromMatrix(Matrix(0, true, true).data()), Rotation::kHalfTurn);
  const int32_t transpose[9] = {0, 1 << 16, 0, 1 << 16, 0, 0, 0, 0, 1 << 30};
  EXPECT_EQ(RotationFromMatrix(transpose), Rotation::kTranspose);
  const int32_t anti_transpose[9] = {0, -(1 << 16), 0, -(1 << 16), 0, 0, 0, 0, 1 << 30};
  EXPECT_EQ(RotationFromMatrix(anti_transpose), Rotation::kAntiTranspose);
  EXPECT_TRUE(SwapsSides(Rotation::kTranspose));
  EXPECT_TRUE(SwapsSides(Rotation::kAntiTranspose));
  EXPECT_FALSE(SwapsSides(Rotation::kHorizontalFlip));
  EXPECT_FALSE(SwapsSides(Rotation::kVerticalFlip));
  // A degenerate matrix (no angle: NaN) moves nothing, as in the CLI, whose
  // vflip branch takes only an angle within a degree of 0.
  const int32_t degenerate[9] = {0, 0, 0, 0, -(1 << 16), 0, 0, 0, 1 << 30};
  EXPECT_EQ(RotationFromMatrix(degenerate), Rotation::kNone);
  const int32_t zero[9] = {};
  EXPECT_EQ(RotationFromMatrix(zero), Rotation::kNone);
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
      {Rotation::kHorizontalFlip, 3, 2, "2 1 0;12 11 10;"},
      {Rotation::kVerticalFlip, 3, 2, "10 11 12;0 1 2;"},
      {Rotation::kTranspose, 2, 3, "0 10;1 11;2 12;"},
      {Rotation::kAntiTranspose, 2, 3, "12 2;11 1;10 0;"},
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

// A frame of `format`, width x height, every byte from a fixed-seed
// generator, so that a misplaced sample shows.
FramePtr NoiseFrame(AVPixelFormat format, int width, int height) {
  FramePtr f = MakeFrame();
  f->width = width;
  f->height = height;
  f->format = format;
  EXPECT_GE(av_frame_get_buffer(f.get(), 0), 0);
  const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(format);
  uint32_t state = 12345;
  for (int p = 0; p < av_pix_fmt_count_planes(format); ++p) {
    const int rows = AV_CEIL_RSHIFT(height, p == 1 || p == 2 ? desc->log2_chroma_h : 0);
    for (int i = 0; i < f->linesize[p] * rows; ++i) {
      state = state * 1664525u + 1013904223u;
      f->data[p][i] = static_cast<uint8_t>(state >> 24);
    }
  }
  return f;
}

// The sample moves one sample at a time, as vf_transpose and the flips
// define them: the reference the tiled code must equal.
bool SameAsReference(const AVFrame* in, Rotation rotation, const uint8_t* const data[4], const int linesize[4]) {
  const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(static_cast<AVPixelFormat>(in->format));
  int steps[4] = {};
  av_image_fill_max_pixsteps(steps, nullptr, desc);
  for (int p = 0; p < av_pix_fmt_count_planes(static_cast<AVPixelFormat>(in->format)); ++p) {
    const bool chroma = p == 1 || p == 2;
    const int w = AV_CEIL_RSHIFT(in->width, chroma ? desc->log2_chroma_w : 0);
    const int h = AV_CEIL_RSHIFT(in->height, chroma ? desc->log2_chroma_h : 0);
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        int oy = y, ox = x;  // where in(y, x) lands
        if (rotation == Rotation::kClockwise) oy = x, ox = h - 1 - y;
        if (rotation == Rotation::kCounterClockwise) oy = w - 1 - x, ox = y;
        if (rotation == Rotation::kHalfTurn) oy = h - 1 - y, ox = w - 1 - x;
        if (rotation == Rotation::kHorizontalFlip) ox = w - 1 - x;
        if (rotation == Rotation::kVerticalFlip) oy = h - 1 - y;
        if (rotation == Rotation::kTranspose) oy = x, ox = y;
        if (rotation == Rotation::kAntiTranspose) oy = w - 1 - x, ox = h - 1 - y;
        if (std::memcmp(data[p] + ptrdiff_t{oy} * linesize[p] + ptrdiff_t{ox} * steps[p],
                        in->data[p] + ptrdiff_t{y} * in->linesize[p] + ptrdiff_t{x} * steps[p], steps[p]) != 0) {
          ADD_FAILURE() << desc->name << " plane " << p << " sample (" << y << ", " << x << ")";
          return false;
        }
      }
    }
  }
  return true;
}

constexpr Rotation kEveryMove[] = {Rotation::kClockwise,      Rotation::kCounterClockwise, Rotation::kHalfTurn,
                                   Rotation::kHorizontalFlip, Rotation::kVerticalFlip,     Rotation::kTranspose,
                                   Rotation::kAntiTranspose};

TEST(FrameRotatorTest, EveryTiledSampleSizeMatchesTheOneSampleReference) {
  // Sample sizes 1 (yuv420p), 2 (yuv420p10le, nv12's chroma), 3 (rgb24),
  // 4 (rgba), 6 (rgb48le), 8 (rgba64le); sizes across the 32-sample tiles'
  // edges, odd ones included.
  const AVPixelFormat kFormats[] = {AV_PIX_FMT_YUV420P, AV_PIX_FMT_YUV420P10LE, AV_PIX_FMT_NV12,
                                    AV_PIX_FMT_RGB24,   AV_PIX_FMT_RGBA,        AV_PIX_FMT_RGB48LE,
                                    AV_PIX_FMT_RGBA64LE};
  const int kSizes[][2] = {{1, 1}, {31, 33}, {64, 32}, {97, 45}};
  for (AVPixelFormat format : kFormats) {
    for (const auto& size : kSizes) {
      FramePtr in = NoiseFrame(format, size[0], size[1]);
      for (Rotation rotation : kEveryMove) {
        FrameRotator rotator(rotation);
        absl::StatusOr<const AVFrame*> out = rotator.Apply(in.get());
        ASSERT_TRUE(out.ok()) << out.status();
        EXPECT_TRUE(SameAsReference(in.get(), rotation, (*out)->data, (*out)->linesize))
            << av_get_pix_fmt_name(format) << " " << size[0] << "x" << size[1] << " rotation "
            << static_cast<int>(rotation);
      }
    }
  }
}

TEST(FrameRotatorTest, RotateIntoWritesTheCallersRowsAndNothingElse) {
  // Rows of 200 bytes in the middle of a guarded buffer: every turn, and
  // 1- and 3-byte samples, must fill exactly the rotated picture's bytes.
  constexpr int kStride = 200;
  constexpr size_t kGuard = 64;
  for (AVPixelFormat format : {AV_PIX_FMT_GRAY8, AV_PIX_FMT_RGB24}) {
    const int step = format == AV_PIX_FMT_RGB24 ? 3 : 1;
    FramePtr in = NoiseFrame(format, 45, 37);
    for (Rotation rotation : kEveryMove) {
      const int out_width = SwapsSides(rotation) ? 37 : 45;
      const int out_height = SwapsSides(rotation) ? 45 : 37;
      std::vector<uint8_t> out(kGuard + static_cast<size_t>(kStride) * out_height + kGuard, 0xAB);
      uint8_t* const data[4] = {out.data() + kGuard, nullptr, nullptr, nullptr};
      const int linesize[4] = {kStride, 0, 0, 0};
      FrameRotator rotator(rotation);
      ASSERT_TRUE(rotator.RotateInto(in.get(), data, linesize).ok());
      EXPECT_TRUE(SameAsReference(in.get(), rotation, data, linesize)) << static_cast<int>(rotation);
      for (size_t i = 0; i < out.size(); ++i) {
        const bool inside = i >= kGuard && i < out.size() - kGuard &&
                            static_cast<int>((i - kGuard) % kStride) < out_width * step;
        if (!inside) ASSERT_EQ(out[i], 0xAB) << "byte " << i << ", rotation " << static_cast<int>(rotation);
      }
    }
  }
  FrameRotator rotator(Rotation::kClockwise);
  // A format that cannot be turned a quarter: an error, nothing written.
  FramePtr uneven = NoiseFrame(AV_PIX_FMT_YUV422P, 8, 8);
  std::vector<uint8_t> untouched(256, 0xCD);
  uint8_t* const planes[4] = {untouched.data(), untouched.data() + 64, untouched.data() + 128, nullptr};
  const int strides[4] = {8, 4, 4, 0};
  EXPECT_EQ(rotator.RotateInto(uneven.get(), planes, strides).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(untouched, std::vector<uint8_t>(256, 0xCD));
}

}  // namespace
}  // namespace codecvisor::cpu
