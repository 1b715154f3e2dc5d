// File: backends/cpu/cpu_backend_rotation_test.cc
//
// Display-matrix rotation, through the C ABI in process, against the ffmpeg
// CLI (which autorotates: transpose or hflip+vflip before the -vf chain)
// and ffprobe: post-rotation metadata with the raw angle, and resized
// output in every format, rotated before it is scaled. Full-size frames in
// every format are compared on the catalogue's rotated videos by
// cpu_backend_test.cc.

#include <cstdint>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/test_media.h"
#include "gtest/gtest.h"

namespace codecvisor::cpu {
namespace {

using testing::CliFrame;
using testing::FindTestVideo;
using testing::MakeVideo;
using testing::Run;
using testing::TestSession;
using testing::TestVideoPath;

// ffprobe's width, height and display-matrix rotation of stream 0.
struct Probed {
  int64_t width = -1, height = -1;
  double rotation = 0;
};
Probed Probe(const std::string& path) {
  Probed p;
  for (absl::string_view line : absl::StrSplit(
           Run(absl::StrCat("/usr/bin/ffprobe -v error -select_streams 0 -show_entries "
                            "stream=width,height:stream_side_data=rotation -of default=nw=1 '",
                            path, "'")),
           '\n', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(line, '=');
    if (kv.first == "width") EXPECT_TRUE(absl::SimpleAtoi(kv.second, &p.width));
    if (kv.first == "height") EXPECT_TRUE(absl::SimpleAtoi(kv.second, &p.height));
    if (kv.first == "rotation") EXPECT_TRUE(absl::SimpleAtod(kv.second, &p.rotation));
  }
  return p;
}

class RotatedVideoTest : public ::testing::TestWithParam<const char*> {
 protected:
  std::string path() const { return TestVideoPath(FindTestVideo(GetParam())); }
};

TEST_P(RotatedVideoTest, MetadataIsPostRotationWithTheRawAngle) {
  const Probed probed = Probe(path());
  ASSERT_NE(probed.rotation, 0) << "the test video has no display matrix";
  const bool quarter = probed.rotation == 90 || probed.rotation == -90;
  for (cv_seek_mode mode : {CV_SEEK_EXACT, CV_SEEK_APPROXIMATE}) {
    TestSession::Options o;
    o.seek_mode = mode;
    TestSession s(path(), o);
    ASSERT_TRUE(s.ok()) << s.open_message();
    cv_stream_metadata m = s.Metadata();
    EXPECT_DOUBLE_EQ(m.rotation_degrees, probed.rotation);
    EXPECT_EQ(m.width, quarter ? probed.height : probed.width);
    EXPECT_EQ(m.height, quarter ? probed.width : probed.height);
    EXPECT_EQ(s.Layout().width, m.width);
    EXPECT_EQ(s.Layout().height, m.height);
  }
}

// The CLI rotates first, then scales to the size asked for: -vf
// "select,scale=W:H,format=F" runs after the inserted transpose/flips.
TEST_P(RotatedVideoTest, ResizedOutputIsRotatedThenScaled) {
  TestSession::Options o;
  o.output_width = 50;
  o.output_height = 33;
  TestSession rgb(path(), o);
  ASSERT_TRUE(rgb.ok()) << rgb.open_message();
  o.output_format = CV_OUTPUT_RGB24_PLANAR;
  TestSession planar(path(), o);
  o.output_format = CV_OUTPUT_NATIVE;
  TestSession native(path(), o);
  ASSERT_TRUE(planar.ok() && native.ok());
  const std::string format = native.Metadata().pixel_format;
  const size_t pixels = 50 * 33;
  for (int64_t i : {int64_t{7}, int64_t{0}}) {
    const std::string want = CliFrame(path(), 0, i, "scale=50:33,format=rgb24", pixels * 3);
    EXPECT_TRUE(rgb.DecodeOrFail(i) == want) << "rgb24 frame " << i;
    const std::string chw = planar.DecodeOrFail(i);
    ASSERT_EQ(chw.size(), want.size());
    size_t mismatches = 0;
    for (size_t px = 0; px < pixels; ++px) {
      for (int c = 0; c < 3; ++c) mismatches += chw[c * pixels + px] != want[3 * px + c];
    }
    EXPECT_EQ(mismatches, 0u) << "rgbp frame " << i;
    EXPECT_TRUE(native.DecodeOrFail(i) == CliFrame(path(), 0, i, "scale=50:33",
                                                   native.Layout().size, "-pix_fmt " + format))
        << format << " frame " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Rotations, RotatedVideoTest,
                         ::testing::Values("h264_rotation_90.mp4", "vp9_odd_rotation_-90.mp4",
                                           "hevc_10bit_rotation_180.mp4"),
                         [](const auto& info) { return std::to_string(info.index); });

// An angle that is not a multiple of 90 degrees would make the CLI
// interpolate (its "rotate" filter): frames keep their coded size and
// pixels, and the raw angle is reported.
TEST(CpuBackendRotationTest, OtherAnglesLeaveFramesAsDecoded) {
  const std::string source = TestVideoPath(FindTestVideo("h264.mp4"));
  const std::string path =
      MakeVideo("h264_rotation_45.mp4", absl::StrCat("-i ", source, " -c copy -metadata:s:v:0 rotate=45"));
  TestSession s(path);
  ASSERT_TRUE(s.ok()) << s.open_message();
  EXPECT_DOUBLE_EQ(s.Metadata().rotation_degrees, Probe(path).rotation);
  EXPECT_NE(s.Metadata().rotation_degrees, 0);
  EXPECT_EQ(s.Metadata().width, 160u);
  EXPECT_TRUE(s.DecodeOrFail(3) == CliFrame(source, 0, 3, "format=rgb24", 160 * 96 * 3));
}

// A copy of MP4 `source` whose video track header (its only track's tkhd,
// version 0) holds display matrix `matrix`, as a mirroring camera or newer
// FFmpeg's -display_hflip writes it (FFmpeg 5.1's CLI cannot).
std::string WithMatrix(const std::string& source, const std::string& name, const int32_t (&matrix)[9]) {
  std::string bytes = testing::ReadFile(source);
  const size_t tkhd = bytes.find("tkhd");
  EXPECT_NE(tkhd, std::string::npos);
  EXPECT_EQ(bytes[tkhd + 4], 0) << "a version 1 tkhd";
  // fourcc, version and flags, 5 x 32 bits of times and ids, 8 reserved
  // bytes, layer, group, volume and 2 reserved bytes: then the matrix.
  size_t at = tkhd + 4 + 4 + 20 + 8 + 8;
  for (int32_t v : matrix) {
    const uint32_t u = static_cast<uint32_t>(v);
    for (int shift = 24; shift >= 0; shift -= 8) bytes[at++] = static_cast<char>((u >> shift) & 0xFF);
  }
  return testing::WriteFile(name, bytes);
}

// Mirrored matrices as the CLI reads them (FrameRotator): a mirror alone is
// hflip or vflip, a mirror with a quarter turn a transpose. Every frame is
// the CLI's, in exact and approximate mode, with sides swapped by a
// transpose, and a host that converts native frames itself gets RGB (it
// would not mirror them).
TEST(CpuBackendRotationTest, MirroredMatricesAreTheClisFlipsAndTransposes) {
  const std::string source = MakeVideo(
      "mirror_source.mp4", "-f lavfi -i testsrc2=size=96x64:rate=25 -frames:v 12 -c:v libx264 -pix_fmt yuv420p");
  constexpr int32_t k1 = 1 << 16, kW = 1 << 30;
  const struct {
    const char* name;
    int32_t matrix[9];
    bool swap;
  } kCases[] = {
      {"mirror_h.mp4", {-k1, 0, 0, 0, k1, 0, 96 << 16, 0, kW}, false},
      {"mirror_v.mp4", {k1, 0, 0, 0, -k1, 0, 0, 64 << 16, kW}, false},
      {"mirror_transpose.mp4", {0, k1, 0, k1, 0, 0, 0, 0, kW}, true},
      {"mirror_anti_transpose.mp4", {0, -k1, 0, -k1, 0, 0, 64 << 16, 96 << 16, kW}, true},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    const std::string path = WithMatrix(source, c.name, c.matrix);
    const Probed probed = Probe(path);
    for (cv_seek_mode mode : {CV_SEEK_EXACT, CV_SEEK_APPROXIMATE}) {
      TestSession::Options o;
      o.seek_mode = mode;
      o.native_formats = "yuv420p";
      TestSession s(path, o);
      ASSERT_TRUE(s.ok()) << s.open_message();
      const cv_stream_metadata m = s.Metadata();
      EXPECT_DOUBLE_EQ(m.rotation_degrees, probed.rotation);
      EXPECT_EQ(m.width, c.swap ? 64u : 96u);
      EXPECT_EQ(m.height, c.swap ? 96u : 64u);
      EXPECT_EQ(s.Layout().format, CV_OUTPUT_RGB24) << "native frames the host would not mirror";
      const std::string cli = testing::CliAllFrames(path, 0, "format=rgb24");
      const size_t bytes = size_t{96} * 64 * 3;
      ASSERT_EQ(cli.size(), bytes * 12);
      for (int64_t i : {0, 5, 11, 3}) {
        EXPECT_TRUE(s.DecodeOrFail(i) == cli.substr(i * bytes, bytes)) << "frame " << i << ", mode " << mode;
      }
    }
  }
}

}  // namespace
}  // namespace codecvisor::cpu
