// File: backends/cpu/cpu_backend_program_stream_test.cc
//
// H.264 and HEVC in MPEG program streams whose pictures are smaller than a
// PES packet, so that most packets carry no time, with B-frames: every
// frame is the CLI's frame of its position, in order and at random, and
// the times increase evenly (PlaceUntimedByPictureOrder). Before, exact
// mode put the untimed pictures in decode order and returned the wrong
// picture for most indices.

#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "backends/cpu/test_media.h"
#include "gtest/gtest.h"

namespace codecvisor::cpu {
namespace {

using testing::CliAllFrames;
using testing::ExpectRandomAccessAgrees;
using testing::MakeVideo;
using testing::ProbedPacket;
using testing::ProbePackets;
using testing::ReadFile;
using testing::RgbBytes;
using testing::TestSession;
using testing::WriteFile;

// Whether libavformat gives two of a file's packets one time.
enum class MisplacedTime { kNo, kYes, kSomeVersions };

struct ProgramStream {
  std::string name;
  std::string path;
  MisplacedTime misplaced_time;
  int64_t headers_only = 0;  // packets at the end with no picture (a cut inside its headers)
};

bool RepeatsATime(const std::vector<ProbedPacket>& packets) {
  std::map<int64_t, int> times;
  for (const ProbedPacket& p : packets) {
    if (p.pts >= 0 && ++times[p.pts] > 1) return true;
  }
  return false;
}

// `path` cut a few bytes into the last H.264 sequence parameter set.
std::string CutInLastSps(const std::string& name, const std::string& path) {
  const std::string bytes = ReadFile(path);
  const size_t sps = bytes.rfind(std::string("\0\0\1\x67", 4));
  EXPECT_NE(sps, std::string::npos);
  return WriteFile(name, bytes.substr(0, sps + 6));
}

std::vector<ProgramStream> ProgramStreams() {
  // One encoder thread: the same bytes on every machine.
  const std::string source = "-f lavfi -i testsrc2=size=160x120:rate=25 -threads 1 ";
  const std::string pyramid = MakeVideo("ps_pyramid.mpg", source + "-t 4 -c:v libx264 -g 25 -bf 2 -f vob");
  return {
      // x264's defaults: B-pyramids, two frames held back.
      {"H.264, B-pyramid", pyramid, MisplacedTime::kNo},
      // Tiny pictures, a key frame every 8: after a seek, the first packet
      // read is often the tail of the picture before, with the next
      // picture's time, and key frames share their PES time with the next.
      {"H.264, 64x48",
       MakeVideo("ps_tiny.mpg",
                 "-f lavfi -i testsrc2=size=64x48:rate=30 -threads 1 -t 30 -c:v libx264 -g 8 -bf 3 -f vob"),
       MisplacedTime::kYes},
      {"H.264, cut in a parameter set", CutInLastSps("ps_cut.mpg", pyramid), MisplacedTime::kNo, 1},
      {"H.264, one B-frame", MakeVideo("ps_one_b.mpg", source + "-t 4 -c:v libx264 -g 25 -bf 1 -f vob"),
       MisplacedTime::kNo},
      // Open GOPs (recovery points, not IDR pictures) at 30 fps over 20 s:
      // libavformat gave one PES packet's time to two pictures on the
      // machines this was written on; Debian 12's packages of FFmpeg 5.1.9
      // and x264 0.164.3095 give every timed picture its own.
      {"H.264, open GOPs",
       MakeVideo("ps_open_gop.mpg",
                 "-f lavfi -i testsrc2=size=160x120:rate=30 -threads 1 -t 20 -c:v libx264 -g 60 -bf 3 "
                 "-x264-params open-gop=1 -f vob"),
       MisplacedTime::kSomeVersions},
      {"HEVC", MakeVideo("ps_hevc.mpg", source + "-t 4 -c:v libx265 -x265-params log-level=error -g 30 -bf 2 -f vob"),
       MisplacedTime::kNo},
      // Field pictures, which the decoder shows one by one. A seek for the
      // last GOP lands on the tail of its key frame glued to the picture
      // after it: the landing is told by the first packet named.
      {"HEVC fields",
       MakeVideo("ps_hevc_fields.mpg",
                 "-f lavfi -i testsrc2=size=160x120:rate=50 -t 2 -vf interlace -c:v libx265 -x265-params "
                 "interlace=tff:bframes=3:keyint=20:log-level=error:frame-threads=1:pools=none -f vob"),
       MisplacedTime::kNo},
  };
}

TEST(ProgramStreamTest, UntimedPicturesAreTheClisFramesOfTheirPositions) {
  for (const ProgramStream& ps : ProgramStreams()) {
    SCOPED_TRACE(ps.name);
    // The case this is for: most packets without a time; and, where the
    // file is meant to have one, a time given to two packets.
    const std::vector<ProbedPacket> packets = ProbePackets(ps.path, 0);
    int untimed = 0;
    for (const ProbedPacket& p : packets) untimed += p.pts < 0;
    ASSERT_GT(untimed * 3, static_cast<int>(packets.size())) << "too few packets without a time";
    if (ps.misplaced_time != MisplacedTime::kSomeVersions) {
      ASSERT_EQ(RepeatsATime(packets), ps.misplaced_time == MisplacedTime::kYes);
    }

    TestSession in_order(ps.path);
    ASSERT_TRUE(in_order.ok()) << in_order.open_message();
    const int64_t n = in_order.Metadata().num_frames_from_scan;
    ASSERT_EQ(n, static_cast<int64_t>(packets.size()) - ps.headers_only);
    const size_t bytes = RgbBytes(in_order.Layout());
    const std::string cli = CliAllFrames(ps.path, 0, "format=rgb24");
    ASSERT_EQ(cli.size(), bytes * n) << "frames: ours " << n << ", the CLI's " << cli.size() / bytes;
    std::set<std::string> distinct;
    std::vector<int64_t> pts(n);
    std::set<int64_t> steps;
    for (int64_t i = 0; i < n; ++i) {
      cv_frame_info info{};
      std::string pixels, message;
      ASSERT_EQ(in_order.Decode(i, &pixels, &info, &message), CV_OK) << "frame " << i << ": " << message;
      EXPECT_TRUE(pixels == cli.substr(i * bytes, bytes)) << "frame " << i;
      pts[i] = info.pts;
      if (i > 0) steps.insert(pts[i] - pts[i - 1]);
      distinct.insert(pixels);
    }
    std::set<std::string> cli_distinct;
    for (int64_t i = 0; i < n; ++i) cli_distinct.insert(cli.substr(i * bytes, bytes));
    EXPECT_EQ(distinct.size(), cli_distinct.size()) << "a picture returned twice";
    // A constant frame rate: one step between frames (90 kHz ticks).
    EXPECT_EQ(steps.size(), 1u) << "first step " << *steps.begin() << ", last " << *steps.rbegin();
    ExpectRandomAccessAgrees(ps.path, cli, bytes, pts, 11, 9);
  }
}

// Approximate mode has no table: after a seek the frames that come out
// before the first with a time of its own are not on the timeline (a
// guess put them at the stream's start, so a seek that landed past the
// target passed for one that landed before it, and the frame a GOP later
// came back). Every frame asked for at random, by index and by time, is
// the CLI's frame of its time (a constant rate from the first frame).
TEST(ProgramStreamTest, ApproximateModeFindsEachFrameAtRandom) {
  for (const ProgramStream& ps : ProgramStreams()) {
    // Container times that are not the pictures'.
    if (ps.headers_only > 0 || RepeatsATime(ProbePackets(ps.path, 0))) continue;
    SCOPED_TRACE(ps.name);
    TestSession exact(ps.path);
    ASSERT_TRUE(exact.ok()) << exact.open_message();
    const size_t bytes = RgbBytes(exact.Layout());
    const std::string cli = CliAllFrames(ps.path, 0, "format=rgb24");
    // Without a count in the header, approximate mode estimates one from
    // the duration, which stops short of the last frame or two.
    const int64_t n = static_cast<int64_t>(cli.size() / bytes) - 2;
    const cv_stream_metadata meta = exact.Metadata();
    const double step = 1.0 / meta.average_fps;
    ASSERT_NE(n % 37, 0);  // so that steps of 37 visit every frame once, out of order
    TestSession by_index(ps.path, TestSession::Approximate());
    TestSession by_time(ps.path, TestSession::Approximate());
    ASSERT_TRUE(by_index.ok() && by_time.ok()) << by_index.open_message();
    int64_t wrong = 0;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = k * 37 % n;
      const std::string want = cli.substr(i * bytes, bytes);
      std::string pixels, message;
      ASSERT_EQ(by_index.Decode(i, &pixels, nullptr, &message), CV_OK) << "frame " << i << ": " << message;
      wrong += pixels != want;
      EXPECT_TRUE(pixels == want) << "frame " << i;
      const double t = meta.begin_stream_seconds + (static_cast<double>(i) + 0.5) * step;
      ASSERT_EQ(by_time.DecodeAt(t, &pixels, nullptr, &message), CV_OK) << "at " << t << " s: " << message;
      wrong += pixels != want;
      EXPECT_TRUE(pixels == want) << "at " << t << " s (frame " << i << ")";
      ASSERT_LE(wrong, 10) << "and more";
    }
  }
}

}  // namespace
}  // namespace codecvisor::cpu
