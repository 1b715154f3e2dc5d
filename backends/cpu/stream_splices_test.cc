// File: backends/cpu/stream_splices_test.cc

#include "backends/cpu/stream_splices.h"

#include <cstdint>
#include <utility>

#include "gtest/gtest.h"

extern "C" {
#include <libavutil/avutil.h>
}

namespace codecvisor::cpu {
namespace {

// Packets of a 10-tick frame rate with B-frames (pts = dts + 20 on
// average), at 100 bytes a packet; a jump back of more than 15 ticks is a
// splice.
struct Feed {
  StreamSplices splices{15};
  int64_t pos = 0;
  // Places a packet; returns its offset.
  int64_t Packet(int64_t pts, int64_t dts, int64_t duration = 10) {
    const int64_t offset = splices.Place(pos, pts, dts, duration);
    pos += 100;
    return offset;
  }
};

TEST(StreamSplicesTest, MonotonicTimesAreNoSplice) {
  Feed f;
  for (int64_t k = 0; k < 20; ++k) EXPECT_EQ(f.Packet(k * 10 + 20, k * 10), 0);
  EXPECT_FALSE(f.splices.active());
  EXPECT_EQ(f.splices.segments(), 1);
  EXPECT_EQ(f.splices.OffsetAt(1000, 0), 0);
}

TEST(StreamSplicesTest, AForwardJumpIsAGapNotASplice) {
  Feed f;
  for (int64_t k = 0; k < 5; ++k) f.Packet(k * 10 + 20, k * 10);
  for (int64_t k = 0; k < 5; ++k) EXPECT_EQ(f.Packet(100000 + k * 10 + 20, 100000 + k * 10), 0);
  EXPECT_FALSE(f.splices.active());
}

TEST(StreamSplicesTest, ASmallStepBackIsNoSplice) {
  Feed f;
  for (int64_t k = 0; k < 5; ++k) f.Packet(k * 10 + 20, k * 10);
  EXPECT_EQ(f.Packet(45, 25), 0) << "15 ticks back from 40";
  EXPECT_EQ(f.Packet(70, 50), 0);
  EXPECT_FALSE(f.splices.active());
  // 16 ticks back from 50: a splice, its dts 34 moved to the latest end, 80.
  EXPECT_EQ(f.Packet(60, 34), 46);
  EXPECT_TRUE(f.splices.active());
}

TEST(StreamSplicesTest, ABackwardJumpFollowsTheLatestFrameEnd) {
  Feed f;
  // Frames 0..4: pts 20, 50, 30, 40, 60 (B-frames), dts 0..40; the latest
  // end is 60 + 10 = 70.
  const int64_t pts[] = {20, 50, 30, 40, 60};
  for (int64_t k = 0; k < 5; ++k) EXPECT_EQ(f.Packet(pts[k], k * 10), 0);
  // The second recording starts again at dts 0, pts 20, at byte 500.
  const int64_t offset = f.Packet(20, 0);
  EXPECT_EQ(offset, 70) << "its first decode time goes to 70, where the first recording's last frame ends";
  EXPECT_TRUE(f.splices.active());
  EXPECT_EQ(f.splices.segments(), 2);
  // Its later packets keep the offset while their times increase.
  EXPECT_EQ(f.Packet(50, 10), 70);
  EXPECT_EQ(f.Packet(30, 20), 70);
  // Bytes before the join have no offset, from it on the segment's.
  EXPECT_EQ(f.splices.OffsetAt(0, 0), 0);
  EXPECT_EQ(f.splices.OffsetAt(499, 0), 0);
  EXPECT_EQ(f.splices.OffsetAt(500, 0), 70);
  EXPECT_EQ(f.splices.OffsetAt(700, 0), 70);
  // A packet of unknown position is in the previous packet's segment.
  EXPECT_EQ(f.splices.OffsetAt(-1, 70), 70);
  EXPECT_EQ(f.splices.OffsetAt(-1, 0), 0);
}

TEST(StreamSplicesTest, AnOpenGopsLeadingPicturesStayAfterTheJoin) {
  Feed f;
  for (int64_t k = 0; k < 5; ++k) f.Packet(k * 10 + 20, k * 10);  // the latest end: 70
  // The second recording starts on an open GOP's key frame (pts 40), whose
  // leading pictures (pts 20 and 30) come after it in decode order.
  const int64_t offset = f.Packet(40, 0);
  for (const auto& [pts, dts] : {std::pair<int64_t, int64_t>{20, 10}, {30, 20}}) {
    EXPECT_EQ(f.Packet(pts, dts), offset);
    EXPECT_GE(pts + offset, 70) << "a leading picture moved among the first recording's frames";
  }
}

TEST(StreamSplicesTest, TheMovedDecodeTimeStillFollowsThePreviousOne) {
  Feed f;
  // pts far below dts + reorder (a stream whose pts lag): the frame-end rule
  // alone would put the new segment's first dts before the last one.
  for (int64_t k = 0; k < 5; ++k) f.Packet(k * 10, k * 10 + 100);  // dts 100..140, ends 10..50
  EXPECT_EQ(f.Packet(0, 90), 51) << "the moved dts is just after the previous packet's (140)";
}

TEST(StreamSplicesTest, EachJoinStartsASegment) {
  Feed f;
  for (int round = 0; round < 3; ++round) {
    for (int64_t k = 0; k < 5; ++k) f.Packet(k * 10 + 20, k * 10);
  }
  EXPECT_EQ(f.splices.segments(), 3);
  EXPECT_EQ(f.splices.OffsetAt(0, 0), 0);
  EXPECT_EQ(f.splices.OffsetAt(500, 0), 70);    // dts 0 to the end 70
  EXPECT_EQ(f.splices.OffsetAt(1000, 0), 140);  // dts 0 to the end 60 + 70 + 10
}

TEST(StreamSplicesTest, PacketsWithoutADecodeTimeNeitherSpliceNorMove) {
  Feed f;
  for (int64_t k = 0; k < 5; ++k) f.Packet(k * 10 + 20, k * 10);
  EXPECT_EQ(f.Packet(AV_NOPTS_VALUE, AV_NOPTS_VALUE), 0);
  EXPECT_EQ(f.Packet(5, AV_NOPTS_VALUE), 0) << "a pts alone is no decode time to compare";
  EXPECT_FALSE(f.splices.active());
}

TEST(StreamSplicesTest, KeyPositionsAreFoundByMovedTime) {
  StreamSplices s(1);
  s.AddKey(75, -1);  // position unknown: not a seek target
  s.AddKey(100, 5000);
  s.AddKey(0, 0);
  s.AddKey(50, 2500);
  s.Finish();
  EXPECT_EQ(s.KeyPositionAtOrBefore(-1), -1);
  EXPECT_EQ(s.KeyPositionAtOrBefore(0), 0);
  EXPECT_EQ(s.KeyPositionAtOrBefore(49), 0);
  EXPECT_EQ(s.KeyPositionAtOrBefore(50), 2500);
  EXPECT_EQ(s.KeyPositionAtOrBefore(80), 2500);
  EXPECT_EQ(s.KeyPositionAtOrBefore(99), 2500);
  EXPECT_EQ(s.KeyPositionAtOrBefore(1000), 5000);
}

}  // namespace
}  // namespace codecvisor::cpu
