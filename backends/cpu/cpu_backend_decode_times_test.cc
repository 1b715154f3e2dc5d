// File: backends/cpu/cpu_backend_decode_times_test.cc
//
// H.264 and HEVC with B-frames whose container gives every packet its dts
// for a pts: an elementary stream muxed without presentation times (`ffmpeg
// -i raw.h264 -c copy out.mp4`, as camera and encoder dumps are). The
// decoder shows the pictures in picture order; each frame must be the one
// the CLI shows at its place, in any order, with times that increase, and
// such a file without B-frames keeps its own times.

#include <cstdint>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/test_media.h"
#include "gtest/gtest.h"

namespace codecvisor::cpu {
namespace {

using testing::CliAllFrames;
using testing::ExpectInOrderIsTheClis;
using testing::ExpectRandomAccessAgrees;
using testing::MakeVideo;
using testing::RgbBytes;
using testing::Shuffled;
using testing::TestSession;

struct DecodeTimesCase {
  std::string name;
  std::string encode;  // ffmpeg arguments for the elementary stream
  std::string format;  // its muxer
};
void PrintTo(const DecodeTimesCase& c, std::ostream* os) { *os << c.name; }

class DecodeTimesTest : public ::testing::TestWithParam<DecodeTimesCase> {};

TEST_P(DecodeTimesTest, FramesAreTheOnesTheCliShows) {
  const DecodeTimesCase& c = GetParam();
  const std::string raw = MakeVideo(c.name + ".raw", c.encode + " -f " + c.format);
  const std::string path = MakeVideo(c.name + ".mp4", "-fflags +genpts -r 30 -i " + raw + " -c copy");
  TestSession exact(path, TestSession::Options{});
  ASSERT_TRUE(exact.ok()) << exact.open_message();
  const size_t bytes = RgbBytes(exact.Layout());
  const std::string all = CliAllFrames(path, 0, "format=rgb24");
  const std::vector<int64_t> pts = ExpectInOrderIsTheClis(path, all, bytes);
  const int64_t n = static_cast<int64_t>(pts.size());
  ASSERT_GT(n, 40);
  ExpectRandomAccessAgrees(path, all, bytes, pts, 7, 1);
  // Approximate mode cannot use such times: it scans the stream instead,
  // and finds the same frames.
  TestSession::Options approximate;
  approximate.seek_mode = CV_SEEK_APPROXIMATE;
  TestSession approx(path, approximate);
  ASSERT_TRUE(approx.ok()) << approx.open_message();
  for (int64_t i : Shuffled(n, 9)) {
    EXPECT_TRUE(approx.DecodeOrFail(i) == all.substr(i * bytes, bytes)) << "approximate, frame " << i;
  }
}

// A correctly muxed stream with B-frames still opens in approximate mode
// without a scan (its first packet's pts is not its dts), and its first
// request, after the packet read at the open, finds frame 0.
TEST(NominalTimelineTest, ACorrectStreamWithBFramesKeepsIt) {
  const std::string path = MakeVideo("h264_bframes_muxed.mp4",
                                     "-f lavfi -i testsrc2=size=96x64:rate=30 -frames:v 45 -c:v libx264 -g 15 -bf 3 "
                                     "-pix_fmt yuv420p");
  const std::string all = CliAllFrames(path, 0, "format=rgb24");
  TestSession::Options approximate;
  approximate.seek_mode = CV_SEEK_APPROXIMATE;
  TestSession approx(path, approximate);
  ASSERT_TRUE(approx.ok()) << approx.open_message();
  const size_t bytes = RgbBytes(approx.Layout());
  EXPECT_EQ(approx.Metadata().num_frames_from_scan, -1) << "not scanned";
  for (int64_t i = 0; i < 45; ++i) {
    ASSERT_TRUE(approx.DecodeOrFail(i) == all.substr(i * bytes, bytes)) << "frame " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    ElementaryStreamsMuxed, DecodeTimesTest,
    ::testing::Values(DecodeTimesCase{"h264_bframes_genpts",
                                      "-f lavfi -i testsrc2=size=96x64:rate=30 -frames:v 90 -c:v libx264 -g 15 -bf 3 "
                                      "-pix_fmt yuv420p",
                                      "h264"},
                      DecodeTimesCase{"hevc_bframes_genpts",
                                      "-f lavfi -i testsrc2=size=96x64:rate=30 -frames:v 60 -c:v libx265 -x265-params "
                                      "log-level=error:keyint=15:bframes=3 -pix_fmt yuv420p",
                                      "hevc"},
                      // One group of pictures (x264's and x265's default GOP is 250
                      // frames): the muxer drops the key frame's packet with the one
                      // after it, so no key frame keeps a time (review helper).
                      DecodeTimesCase{
                          "h264_one_gop_genpts",
                          "-f lavfi -i testsrc2=size=96x64:rate=30 -frames:v 120 -c:v libx264 -bf 3 -pix_fmt yuv420p",
                          "h264"},
                      DecodeTimesCase{"hevc_one_gop_genpts",
                                      "-f lavfi -i testsrc2=size=96x64:rate=30 -frames:v 60 -c:v libx265 -x265-params "
                                      "log-level=error:bframes=3 -pix_fmt yuv420p",
                                      "hevc"},
                      // No B-frames: the decode times are the display times.
                      DecodeTimesCase{"h264_no_bframes_genpts",
                                      "-f lavfi -i testsrc2=size=96x64:rate=30 -frames:v 60 -c:v libx264 -g 15 -bf 0 "
                                      "-pix_fmt yuv420p",
                                      "h264"}),
    [](const ::testing::TestParamInfo<DecodeTimesCase>& info) { return info.param.name; });

}  // namespace
}  // namespace codecvisor::cpu
