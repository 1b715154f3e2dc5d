#include "tools/conformance/first_seek.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "tools/common/test_video.h"

namespace codecvisor::conformance {
namespace {

// Three GOPs of four 100-byte packets (key frames 1000 bytes), in file
// order from byte 50, pts 0, 10, 20, ...
std::vector<PacketInfo> ThreeGops() {
  std::vector<PacketInfo> packets;
  int64_t position = 50;
  for (int64_t i = 0; i < 12; ++i) {
    const bool key = i % 4 == 0;
    packets.push_back({.pts = 10 * i, .position = position, .size = key ? 1000 : 100, .key = key});
    position += packets.back().size;
  }
  return packets;
}

TEST(SpanBeforeTest, TheLastKeyFrameAtOrBeforeTheTarget) {
  absl::StatusOr<KeyFrameSpan> span = SpanBefore(ThreeGops(), 110);
  ASSERT_TRUE(span.ok()) << span.status();
  EXPECT_EQ(span->key_pts, 80);
  EXPECT_EQ(span->key_size, 1000);
  EXPECT_EQ(span->key_position, 50 + 2 * 1300);
  EXPECT_EQ(span->bytes_before, 2 * 1300);
  // A target on the key frame itself starts there.
  span = SpanBefore(ThreeGops(), 40);
  ASSERT_TRUE(span.ok()) << span.status();
  EXPECT_EQ(span->key_pts, 40);
  EXPECT_EQ(span->bytes_before, 1300);
}

TEST(SpanBeforeTest, ATargetInTheFirstGopCannotTell) {
  EXPECT_EQ(SpanBefore(ThreeGops(), 30).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(SpanBefore(ThreeGops(), -5).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(JudgeFirstRequestTest, SeekingPassesDecodingFromTheStartFails) {
  const KeyFrameSpan span = *SpanBefore(ThreeGops(), 110);  // 2600 bytes before its key frame
  // Seeking: the key frame's GOP up to the target.
  EXPECT_TRUE(JudgeFirstRequest(span, 400, 1200, "frame 11 of clip").ok());
  // Decoding from the start: every packet, less what the open read ahead.
  absl::Status status = JudgeFirstRequest(span, 1400, 2500, "frame 11 of clip");
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_NE(status.message().find("frame 11 of clip: the first request read 2500 bytes"), std::string::npos)
      << status;
  EXPECT_NE(status.message().find("decoded from the start"), std::string::npos) << status;
  EXPECT_FALSE(JudgeFirstRequest(span, 0, 1300, "f").ok()) << "exactly half is not less than half";
}

TEST(JudgeFirstRequestTest, ReadsThatDoNotShowCannotPass) {
  const KeyFrameSpan span = *SpanBefore(ThreeGops(), 110);
  absl::Status status = JudgeFirstRequest(span, 200, 0, "frame 11 of clip");
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_NE(status.message().find("cannot be checked"), std::string::npos) << status;
}

// ffprobe on a real file: packets in file order, with their key frames.
TEST(ProbePacketsTest, KeyFramesEveryTwelveInAMatroskaFile) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/gops.mkv";
  ASSERT_TRUE(tools::MakeTestVideo("-f lavfi -i testsrc2=size=64x48:rate=24 -frames:v 36 -c:v libx264 -bf 2 -g 12 "
                                   "-pix_fmt yuv420p",
                                   path)
                  .ok());
  absl::StatusOr<std::vector<PacketInfo>> packets = ProbePackets(path);
  ASSERT_TRUE(packets.ok()) << packets.status();
  ASSERT_EQ(packets->size(), 36u);
  int keys = 0;
  for (size_t i = 0; i < packets->size(); ++i) {
    keys += (*packets)[i].key;
    EXPECT_GT((*packets)[i].size, 0);
    if (i > 0) EXPECT_GT((*packets)[i].position, (*packets)[i - 1].position) << "file order";
  }
  EXPECT_EQ(keys, 3);
  EXPECT_TRUE((*packets)[0].key);
  EXPECT_FALSE(ProbePackets(path + ".missing").ok());
}

}  // namespace
}  // namespace codecvisor::conformance
