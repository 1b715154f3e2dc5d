// File: backends/cpu/cpu_backend_decode_times_test.cc
//
// H.264 and HEVC with B-frames whose container gives every packet its dts
// for a pts: an elementary stream muxed without presentation times (`ffmpeg
// -i raw.h264 -c copy out.mp4`, as camera and encoder dumps are). The
// decoder shows the pictures in picture order; each frame must be the one
// the CLI shows at its place, in any order, with times that increase, and
// such a file without B-frames keeps its own times. And a stream whose
// times do not follow its picture order at all.

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
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

// Times that do not follow picture order (x264 fed times that go back: a
// frame at 5.4 s, then frames at 5.36 s, 5.361 s and 5.4 s again): the
// decoder shows the 5.4 s frame before the 5.36 s one. Exact mode orders
// frames by time, as the index does; each must be found, in order, alone
// in a fresh session, and at random (frames 10 and 11 were "could not be
// decoded": the search stopped at the first later time).
TEST(TimesNotInPictureOrderTest, EveryFrameIsTheClisFrameWithItsTime) {
  struct Clip {
    const char* name;
    const char* args;
  };
  for (const Clip& clip : {
           Clip{"times_not_in_picture_order.mp4",
                "-f lavfi -i testsrc2=size=96x64:rate=25:duration=3 -vf "
                "setpts='if(lt(N,10),N*0.04,if(lt(N,11),5+N*0.04,5+N*0.033))/TB' -fps_mode passthrough -c:v "
                "libx264 -bf 2 -pix_fmt yuv420p -video_track_timescale 1000"},
           // Three B-frames in a pyramid: a P-frame timed before the B-frames
           // shown ahead of it comes out six packets after its own.
           Clip{"times_not_in_picture_order_pyramid.mp4",
                "-f lavfi -i testsrc2=size=96x64:rate=25:duration=2 -vf "
                "setpts='if(lt(N,10),N*0.04,if(lt(N,12),5.5+N*0.04,5+N*0.04))/TB' -fps_mode passthrough -c:v "
                "libx264 -bf 3 -x264-params b-pyramid=2:scenecut=0 -g 50 -pix_fmt yuv420p -video_track_timescale "
                "1000"},
       }) {
    SCOPED_TRACE(clip.name);
    const std::string path = MakeVideo(clip.name, clip.args);
    // The pts of each frame the CLI shows, in the order it shows them (not
    // its best-effort times, which take decode times where these go back).
    std::vector<int64_t> shown;
    for (absl::string_view line : absl::StrSplit(
             testing::Run("/usr/bin/ffprobe -v error -select_streams v:0 -show_entries frame=pts -of csv=p=0 '" + path +
                          "'"),
             '\n', absl::SkipWhitespace())) {
      int64_t pts = 0;
      // ("0," where a frame carries side data: its first field.)
      ASSERT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(line.substr(0, line.find(','))), &pts)) << line;
      shown.push_back(pts);
    }
    const int64_t n = static_cast<int64_t>(shown.size());
    ASSERT_GE(n, 50);
    ASSERT_FALSE(std::is_sorted(shown.begin(), shown.end())) << "the CLI shows frames in time order: nothing to test";
    // The CLI's frame of each index: its frames ordered by time, ties in the
    // order it shows them.
    std::vector<int64_t> cli_of_index(shown.size());
    std::iota(cli_of_index.begin(), cli_of_index.end(), 0);
    std::stable_sort(cli_of_index.begin(), cli_of_index.end(),
                     [&](int64_t a, int64_t b) { return shown[a] < shown[b]; });
    // Each frame's time is its pts, as the index orders them.
    std::vector<int64_t> times = shown;
    std::sort(times.begin(), times.end());
    const std::string cli = CliAllFrames(path, 0, "format=rgb24");
    // One decoder thread (the Python default): no frame threads lengthen
    // the decoder's delay.
    TestSession::Options one_thread;
    one_thread.decoder_threads = 1;
    TestSession in_order(path, one_thread);
    ASSERT_TRUE(in_order.ok()) << in_order.open_message();
    ASSERT_EQ(in_order.Metadata().num_frames_from_scan, n);
    const size_t bytes = RgbBytes(in_order.Layout());
    ASSERT_EQ(cli.size(), bytes * n);
    for (int64_t i = 0; i < n; ++i) {
      std::string pixels, message;
      cv_frame_info info{};
      ASSERT_EQ(in_order.Decode(i, &pixels, &info, &message), CV_OK) << "frame " << i << " in order: " << message;
      EXPECT_TRUE(pixels == cli.substr(cli_of_index[i] * bytes, bytes)) << "frame " << i << " in order";
      EXPECT_EQ(info.pts, times[i]) << "frame " << i;
    }
    for (int64_t i = 8; i < 16; ++i) {
      TestSession fresh(path, one_thread);
      EXPECT_TRUE(fresh.DecodeOrFail(i) == cli.substr(cli_of_index[i] * bytes, bytes)) << "frame " << i << " alone";
    }
    TestSession random_access(path, one_thread);
    for (int64_t i : Shuffled(n, 3)) {
      EXPECT_TRUE(random_access.DecodeOrFail(i) == cli.substr(cli_of_index[i] * bytes, bytes))
          << "frame " << i << " at random";
    }
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
