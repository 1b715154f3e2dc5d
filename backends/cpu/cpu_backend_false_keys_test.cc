// File: backends/cpu/cpu_backend_false_keys_test.cc
//
// Containers that flag pictures a decoder cannot start at as key frames:
// an MP4 without a sync-sample table (every sample is then a key frame),
// and the Matroska and fragmented MP4 remuxed from it. HEVC's and
// MPEG-4's decoders make grey pictures from missing references where a
// seek lands on such a picture, so the scan checks the flags against the
// bitstream (an IRAP picture, an I-VOP) and approximate mode waits for a
// real HEVC key frame after a seek. Before, every frame read at random
// after a seek was grey (exact and approximate mode), while reading in
// order was right.

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
using testing::ReadFile;
using testing::RgbBytes;
using testing::TestSession;
using testing::WriteFile;

// `mp4` with its sync-sample table renamed to a free box: readers then
// take every sample for a key frame.
std::string WithoutSyncSamples(const std::string& name, const std::string& mp4) {
  std::string bytes = ReadFile(mp4);
  const size_t stss = bytes.find("stss");
  EXPECT_NE(stss, std::string::npos) << mp4;
  if (stss != std::string::npos) bytes.replace(stss, 4, "free");
  return WriteFile(name, bytes);
}

struct FalseKeys {
  std::string name;
  std::string path;
};

std::vector<FalseKeys> Videos() {
  const std::string source = "-f lavfi -i testsrc2=size=160x120:rate=25 -t 4 -threads 1 ";
  const std::string hevc = WithoutSyncSamples(
      "hevc_no_stss.mp4",
      MakeVideo("hevc_keys.mp4", source + "-c:v libx265 -x265-params log-level=error:keyint=25:bframes=2:"
                                          "frame-threads=1:pools=none"));
  const std::string mpeg4 =
      WithoutSyncSamples("mpeg4_no_stss.mp4", MakeVideo("mpeg4_keys.mp4", source + "-c:v mpeg4 -bf 2 -g 25"));
  return {
      {"HEVC, MP4 without sync samples", hevc},
      {"HEVC, Matroska remuxed from it", MakeVideo("hevc_all_keys.mkv", "-i " + hevc + " -c copy")},
      {"HEVC, fragmented MP4 remuxed from it",
       MakeVideo("hevc_all_keys_frag.mp4", "-i " + hevc + " -c copy -movflags frag_keyframe+empty_moov")},
      {"MPEG-4, MP4 without sync samples", mpeg4},
  };
}

TEST(FalseKeyFramesTest, FramesAtRandomAreTheClis) {
  for (const FalseKeys& v : Videos()) {
    SCOPED_TRACE(v.name);
    TestSession session(v.path);
    ASSERT_TRUE(session.ok()) << session.open_message();
    const size_t bytes = RgbBytes(session.Layout());
    const std::string cli = CliAllFrames(v.path, 0, "format=rgb24");
    const std::vector<int64_t> pts = ExpectInOrderIsTheClis(v.path, cli, bytes);
    ASSERT_EQ(pts.size(), 100u);
    ExpectRandomAccessAgrees(v.path, cli, bytes, pts, 7, 11);
  }
}

TEST(FalseKeyFramesTest, ApproximateModeWaitsForARealHevcKeyFrame) {
  for (const FalseKeys& v : Videos()) {
    SCOPED_TRACE(v.name);
    const std::string cli = CliAllFrames(v.path, 0, "format=rgb24");
    TestSession session(v.path, TestSession::Approximate());
    ASSERT_TRUE(session.ok()) << session.open_message();
    const size_t bytes = RgbBytes(session.Layout());
    const int64_t n = static_cast<int64_t>(cli.size() / bytes);
    ASSERT_EQ(n, 100);
    int64_t wrong = 0;
    // Backwards in steps of 7, so that every request seeks.
    for (int64_t i = n - 1; i >= 0; i -= 7) {
      std::string pixels, message;
      ASSERT_EQ(session.Decode(i, &pixels, nullptr, &message), CV_OK) << "frame " << i << ": " << message;
      wrong += pixels != cli.substr(i * bytes, bytes);
      EXPECT_TRUE(pixels == cli.substr(i * bytes, bytes)) << "frame " << i;
    }
    EXPECT_EQ(wrong, 0);
  }
}

}  // namespace
}  // namespace codecvisor::cpu
