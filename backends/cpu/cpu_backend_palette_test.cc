// File: backends/cpu/cpu_backend_palette_test.cc
//
// Paletted video (pal8 raw video in AVI and MOV): the demuxer sends the
// palette once, as side data of the first packet it reads. Before, exact
// mode's scan read that packet before any frame was decoded, and a seek in
// approximate mode passed it, so every such frame came out black (all
// zeros) with no error; reading in order from a fresh approximate decoder
// was right.

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

std::vector<std::string> Videos() {
  const std::string source = "-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 20 -c:v rawvideo -pix_fmt pal8";
  return {MakeVideo("pal8.avi", source), MakeVideo("pal8.mov", source)};
}

TEST(PaletteTest, ExactModeFramesInOrderAndAtRandomAreTheClis) {
  for (const std::string& path : Videos()) {
    SCOPED_TRACE(path);
    TestSession session(path);
    ASSERT_TRUE(session.ok()) << session.open_message();
    const size_t bytes = RgbBytes(session.Layout());
    const std::string cli = CliAllFrames(path, 0, "format=rgb24");
    ASSERT_NE(cli.find_first_not_of('\0'), std::string::npos);  // not black
    const std::vector<int64_t> pts = ExpectInOrderIsTheClis(path, cli, bytes);
    ASSERT_EQ(pts.size(), 20u);
    ExpectRandomAccessAgrees(path, cli, bytes, pts, 3, 5);
  }
}

TEST(PaletteTest, ApproximateModeFramesAfterASeekAreTheClis) {
  for (const std::string& path : Videos()) {
    SCOPED_TRACE(path);
    const std::string cli = CliAllFrames(path, 0, "format=rgb24");
    TestSession session(path, TestSession::Approximate());
    ASSERT_TRUE(session.ok()) << session.open_message();
    const size_t bytes = RgbBytes(session.Layout());
    ASSERT_EQ(cli.size() / bytes, 20u);
    // The first request seeks past frame 0; then backwards, so that each seeks.
    for (int64_t i : {10, 19, 12, 5, 0}) {
      std::string pixels, message;
      ASSERT_EQ(session.Decode(i, &pixels, nullptr, &message), CV_OK) << "frame " << i << ": " << message;
      EXPECT_TRUE(pixels == cli.substr(i * bytes, bytes)) << "frame " << i;
    }
  }
}

}  // namespace
}  // namespace codecvisor::cpu
