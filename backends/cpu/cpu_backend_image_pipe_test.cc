// File: backends/cpu/cpu_backend_image_pipe_test.cc
//
// Pictures one after another in one file (what `ffmpeg -f image2pipe`
// writes: ppm_pipe, pgm_pipe, bmp_pipe, png_pipe, ...): every frame is the CLI's
// frame of its place, in order and at random. FFmpeg's generic index puts
// a PNM picture at the start of the read its first byte came in, so a seek
// there read the picture before's tail first and returned frame i + 1 for
// frame i (PNM, BMP); such streams read from their first picture instead.

#include <cstdint>
#include <string>
#include <vector>

#include "backends/cpu/test_media.h"
#include "gtest/gtest.h"

namespace codecvisor::cpu {
namespace {

using testing::CliAllFrames;
using testing::ExpectInOrderIsTheClis;
using testing::ExpectRandomAccessAgrees;
using testing::MakeVideo;
using testing::RgbBytes;
using testing::TestSession;

TEST(ImagePipeTest, EveryPictureIsTheClisFrameInOrderAndAtRandom) {
  // PPM and BMP pictures of over 9 KB, PGM of 3 KB: each straddles or
  // ends inside one of the demuxer's 4 KiB reads.
  const std::string source = "-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 42 ";
  const std::vector<std::string> formats = {"-c:v ppm -f image2pipe", "-c:v pgm -pix_fmt gray -f image2pipe",
                                            "-c:v bmp -f image2pipe", "-c:v png -f image2pipe"};
  for (size_t i = 0; i < formats.size(); ++i) {
    const std::string& args = formats[i];
    SCOPED_TRACE(args);
    const std::string name = "pipe_" + std::to_string(i) + ".img";
    const std::string path = MakeVideo(name, source + args);
    TestSession session(path);
    ASSERT_TRUE(session.ok()) << session.open_message();
    ASSERT_EQ(session.Metadata().num_frames_from_scan, 42);
    const size_t bytes = RgbBytes(session.Layout());
    const std::string cli = CliAllFrames(path, 0, "format=rgb24");
    const std::vector<int64_t> pts = ExpectInOrderIsTheClis(path, cli, bytes);
    ASSERT_EQ(pts.size(), 42u);
    ExpectRandomAccessAgrees(path, cli, bytes, pts, 5, 3);
  }
}

}  // namespace
}  // namespace codecvisor::cpu
