// File: backends/cpu/cpu_backend_splice_test.cc
//
// Recordings concatenated byte for byte (MPEG-TS, MPEG-PS), whose times
// restart or overlap at the join: every frame is the CLI's frame of that
// position in the file, in order and at random, with times that increase
// (StreamSplices), and a file whose times only jump forward keeps them.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/test_media.h"
#include "gtest/gtest.h"

namespace codecvisor::cpu {
namespace {

using testing::CliAllFrames;
using testing::ExpectRandomAccessAgrees;
using testing::MakeVideo;
using testing::ReadFile;
using testing::RgbBytes;
using testing::Shuffled;
using testing::TestSession;
using testing::WriteFile;

// 2 s at 25 fps, B-frames, a key frame every second; `filter` tells the
// recordings apart, `extra` sets the codec or the container's times.
std::string Recording(const std::string& name, const std::string& filter, const std::string& extra) {
  return MakeVideo(name, "-f lavfi -i testsrc2=size=96x64:rate=25" + filter + " -t 2 -c:v libx264 -preset veryfast " +
                             "-bf 2 -g 25 -pix_fmt yuv420p " + extra);
}

struct Joined {
  std::string name;
  std::string path;
  bool spliced;  // its times jump back at the join
};

std::vector<Joined> JoinedFiles() {
  const std::string a = Recording("join_a.ts", "", "");
  const std::string b = Recording("join_b.ts", ",negate", "");
  const std::string c = Recording("join_c.ts", ",hue=H=2", "");
  const std::string late = Recording("join_late.ts", "", "-output_ts_offset 10");
  const std::string early = Recording("join_early.ts", ",negate", "-output_ts_offset 3");
  // MPEG-2 video, as DVD program streams hold it.
  const std::string a_ps = Recording("join_a.mpg", "", "-c:v mpeg2video -g 12 -f mpeg");
  const std::string b_ps = Recording("join_b.mpg", ",negate", "-c:v mpeg2video -g 12 -f mpeg");
  // MPEG-2 with open GOPs; the second cut where a later GOP starts, so its
  // first key frame's leading pictures (times below it) follow it.
  const std::string m2 = MakeVideo("join_m2.ts", "-f lavfi -i testsrc2=size=96x64:rate=25 -t 2 -c:v mpeg2video -bf 2 -g 12");
  const std::string m2_long =
      MakeVideo("join_m2_long.ts", "-f lavfi -i testsrc2=size=96x64:rate=25,negate -t 3 -c:v mpeg2video -bf 2 -g 12");
  const std::string m2_cut = MakeVideo("join_m2_cut.ts", "-ss 1.0 -i " + m2_long + " -c copy");
  return {
      // Two recordings with the same times, as `cat` of two captures makes.
      {"same times", WriteFile("join_same.ts", ReadFile(a) + ReadFile(b)), true},
      // The second recording's times are 7 s before the first's.
      {"earlier times", WriteFile("join_back.ts", ReadFile(late) + ReadFile(early)), true},
      {"program streams", WriteFile("join_same.mpg", ReadFile(a_ps) + ReadFile(b_ps)), true},
      {"second starts on an open GOP", WriteFile("join_open_gop.ts", ReadFile(m2) + ReadFile(m2_cut)), true},
      // Three in a row: two joins.
      {"three recordings", WriteFile("join_three.ts", ReadFile(a) + ReadFile(b) + ReadFile(c)), true},
      // The second recording's times are 7 s after the first's: a gap, not a
      // splice; its times stay the container's.
      {"later times", WriteFile("join_forward.ts", ReadFile(early) + ReadFile(late)), false},
  };
}

TEST(SplicedStreamTest, EveryFrameIsTheClisFrameOfItsPositionInTheFile) {
  for (const Joined& j : JoinedFiles()) {
    SCOPED_TRACE(j.name);
    TestSession in_order(j.path);
    ASSERT_TRUE(in_order.ok()) << in_order.open_message();
    const int64_t n = in_order.Metadata().num_frames_from_scan;
    const size_t bytes = RgbBytes(in_order.Layout());
    const std::string cli = CliAllFrames(j.path, 0, "format=rgb24");
    ASSERT_EQ(cli.size(), bytes * n) << "frames: ours " << n << ", the CLI's " << cli.size() / bytes;
    ASSERT_GE(n, 100);
    std::set<std::string> distinct;
    int64_t last_pts = std::numeric_limits<int64_t>::min();
    std::vector<int64_t> pts(n);
    for (int64_t i = 0; i < n; ++i) {
      cv_frame_info info{};
      std::string pixels, message;
      ASSERT_EQ(in_order.Decode(i, &pixels, &info, &message), CV_OK) << "frame " << i << ": " << message;
      EXPECT_TRUE(pixels == cli.substr(i * bytes, bytes)) << "frame " << i;
      EXPECT_GT(info.pts, last_pts) << "frame " << i;
      last_pts = pts[i] = info.pts;
      distinct.insert(pixels);
    }
    EXPECT_EQ(static_cast<int64_t>(distinct.size()), n) << "a picture returned twice";
    ExpectRandomAccessAgrees(j.path, cli, bytes, pts, 5, 7);
    if (!j.spliced) {
      // The container's own times: the first recording's from 4.4 s.
      EXPECT_NEAR(in_order.Metadata().begin_stream_seconds, 4.4, 0.05);
    }
  }
}

// Two recordings spliced by concatenation, the second's times overlapping
// the first's last two frames (2.40 and 2.44 s each twice, the second of
// each after the first's 2.44): every frame is its own picture, the CLI's
// in the order the index numbers ties (by time, then the file's order), in
// sequence and at random. The second frame of each time was the first's
// copy, and two pictures were never returned. With a key frame every 5
// frames, MPEG-TS's seek by decode time landed past the key frame asked
// for, the decoder dropped the first recording's 2.44, and its index gave
// the second's; at 64x48 the two 2.40 packets are side by side in decode
// order (the first's last B-frame, the second's key frame), and the second
// 2.40 gave the first.
TEST(SplicedStreamTest, FramesSharingATimeAcrossASpliceAreEachTheirOwn) {
  struct Shape {
    const char* size;
    const char* gop;
  };
  for (const Shape& shape : {Shape{"160x120", ""}, Shape{"160x120", " -g 5"}, Shape{"64x48", " -g 5"}}) {
    SCOPED_TRACE(std::string(shape.size) + shape.gop);
    const std::string name = std::string(shape.size) + (*shape.gop != 0 ? "_g5" : "");
    const std::string source = std::string("-f lavfi -i testsrc2=size=") + shape.size + ":rate=25";
    const std::string encode = std::string(" -t 1 -c:v libx264") + shape.gop;
    const std::string first = MakeVideo("splice_1_" + name + ".ts", source + encode);
    const std::string second =
        MakeVideo("splice_2_" + name + ".ts", source + ",hue=H=2" + encode + " -output_ts_offset 1");
    const std::string spliced = WriteFile("spliced_" + name + ".ts", ReadFile(first) + ReadFile(second));
    TestSession session(spliced);
    ASSERT_TRUE(session.ok()) << session.open_message();
    const cv_stream_metadata m = session.Metadata();
    ASSERT_EQ(m.num_frames_from_scan, 50);
    const size_t bytes = RgbBytes(session.Layout());
    // The CLI's frames, as the decoder gives them: 2.40 and 2.44 of the
    // first recording (23, 24), then of the second (25, 26).
    const std::string cli = CliAllFrames(spliced, 0, "format=rgb24");
    ASSERT_EQ(cli.size(), bytes * 50);
    std::vector<int64_t> cli_of_index(50);
    std::iota(cli_of_index.begin(), cli_of_index.end(), 0);
    std::swap(cli_of_index[24], cli_of_index[25]);  // the index: 2.40, 2.40, 2.44, 2.44
    std::vector<std::string> in_order(50);
    for (int64_t i = 0; i < 50; ++i) {
      std::string message;
      ASSERT_EQ(session.Decode(i, &in_order[i], nullptr, &message), CV_OK) << i << ": " << message;
      EXPECT_TRUE(in_order[i] == cli.substr(cli_of_index[i] * bytes, bytes)) << "frame " << i << " in sequence";
    }
    TestSession random_access(spliced);
    for (int64_t i : Shuffled(50, 7)) {
      std::string pixels;
      ASSERT_EQ(random_access.Decode(i, &pixels), CV_OK) << i;
      EXPECT_TRUE(pixels == in_order[i]) << "frame " << i << " at random differs from in sequence";
    }
    for (int64_t i : {23, 24, 25, 26}) {
      TestSession fresh(spliced);
      EXPECT_TRUE(fresh.DecodeOrFail(i) == in_order[i]) << "frame " << i << " first of a fresh session";
    }
  }
}

// MPEG-2 captures spliced from 4:2:0 and 4:2:2 parts: FFmpeg's decoder
// keeps the chroma format it last met through a flush, so once a frame of
// the 4:2:2 part had been read, frames of the 4:2:0 part read after a seek
// came out garbled (and the other way round). Each seek after a change of
// format opens the decoder afresh. (The 4:2:2 part itself is not the
// CLI's: decoding through the splice, FFmpeg keeps treating it as 4:2:0.)
TEST(SplicedStreamTest, AnMpeg2PartReadAfterAPartOfAnotherChromaFormatIsTheClis) {
  const std::string common = "-f lavfi -i testsrc2=size=96x64:rate=25 -t 2 -c:v mpeg2video -bf 2 -g 12 -q:v 4";
  const std::string part_420 = MakeVideo("chroma_420.ts", common);
  const std::string part_422 = MakeVideo("chroma_422.ts", common + " -pix_fmt yuv422p");
  const std::string joined = WriteFile("chroma_420_422.ts", ReadFile(part_420) + ReadFile(part_422));
  TestSession session(joined);
  ASSERT_TRUE(session.ok()) << session.open_message();
  ASSERT_EQ(session.Metadata().num_frames_from_scan, 100);
  const size_t bytes = RgbBytes(session.Layout());
  const std::string cli = CliAllFrames(joined, 0, "format=rgb24");
  ASSERT_EQ(cli.size(), 100 * bytes);
  for (int64_t i : {70, 30, 85, 0, 60, 49, 99, 10}) {
    const std::string frame = session.DecodeOrFail(i);
    if (i < 50) EXPECT_TRUE(frame == cli.substr(i * bytes, bytes)) << "frame " << i;
  }
}

// A capture spliced from a part whose H.264 headers describe no colours
// (BT.601, limited range) and one described as BT.709 full range, as an ad
// break makes: the decoder keeps the last described colours through a
// flush, so the first part read after the second came out in the second's
// colours (a mean difference of 17 of 255). Every frame read, in any
// order, is the CLI's; in approximate mode those of the first part (the
// second's nominal times are a frame off the CLI's, past the gap the
// offset leaves).
TEST(SplicedStreamTest, APartWithoutAColourDescriptionReadAfterAPartWithOneIsTheClis) {
  const std::string common = "-f lavfi -i testsrc2=size=96x64:rate=25 -t 1 -c:v libx264 -preset veryfast -bf 2 "
                             "-pix_fmt yuv420p -f mpegts -muxdelay 0";
  const std::string plain = MakeVideo("colour_plain.ts", common);
  const std::string tagged = MakeVideo("colour_tagged.ts", common +
                                           " -colorspace bt709 -color_primaries bt709 -color_trc bt709 "
                                           "-color_range pc -output_ts_offset 1.04");
  const std::string joined = WriteFile("colour_spliced.ts", ReadFile(plain) + ReadFile(tagged));
  const std::string cli = CliAllFrames(joined, 0, "format=rgb24");
  for (const TestSession::Options& options : {TestSession::Options(), TestSession::Approximate()}) {
    TestSession session(joined, options);
    ASSERT_TRUE(session.ok()) << session.open_message();
    const size_t bytes = RgbBytes(session.Layout());
    ASSERT_EQ(cli.size(), 50 * bytes);
    const bool exact = options.seek_mode == CV_SEEK_EXACT;
    for (int64_t i : {40, 0, 10, 45, 5}) {
      const std::string frame = session.DecodeOrFail(i);
      if (exact || i < 25) {
        EXPECT_TRUE(frame == cli.substr(i * bytes, bytes)) << "frame " << i << (exact ? ", exact" : ", approximate");
      }
    }
  }
}

// The same splice with the second part in full-range 4:2:0 (x264's
// yuvj420p, as a camera's or a screen recording's stream is): read through
// the change (24, then 25), the decoder keeps full range, and going back to
// the start (0, which reopens the file rather than seeking) must not bring
// it along: every frame is the CLI's.
TEST(SplicedStreamTest, TheStartReadAfterReadingThroughAChangeOfRangeIsTheClis) {
  const std::string common =
      "-f lavfi -i testsrc2=size=96x64:rate=25 -t 1 -c:v libx264 -preset veryfast -bf 2 "
      "-f mpegts -muxdelay 0";
  const std::string plain = MakeVideo("range_plain.ts", common + " -pix_fmt yuv420p");
  const std::string full = MakeVideo("range_full.ts", common + " -pix_fmt yuvj420p -output_ts_offset 1.04");
  const std::string joined = WriteFile("range_spliced.ts", ReadFile(plain) + ReadFile(full));
  const std::string cli = CliAllFrames(joined, 0, "format=rgb24");
  TestSession session(joined);
  ASSERT_TRUE(session.ok()) << session.open_message();
  const size_t bytes = RgbBytes(session.Layout());
  ASSERT_EQ(cli.size(), 50 * bytes);
  for (int64_t i : {24, 25, 0, 3, 30, 1}) {
    EXPECT_TRUE(session.DecodeOrFail(i) == cli.substr(i * bytes, bytes)) << "frame " << i;
  }
}

}  // namespace
}  // namespace codecvisor::cpu
