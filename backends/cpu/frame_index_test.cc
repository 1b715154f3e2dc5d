// File: backends/cpu/frame_index_test.cc
//
// InferMissingPts, PlaceMissingByAnchors and PacketsToProbe on decode-order tables; the whole scan against the ffmpeg
// CLI is in cpu_backend_test.cc (the catalogue's MPEG program stream).

#include "backends/cpu/frame_index.h"

#include <cstdint>
#include <optional>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"

extern "C" {
#include <libavutil/avutil.h>
}

namespace codecvisor::cpu {
namespace {

constexpr int64_t kNone = AV_NOPTS_VALUE;

// Frames in decode order from (pts, dts) pairs; a missing pts starts as the
// dts, as the scan leaves it.
std::vector<FrameEntry> Frames(const std::vector<std::pair<int64_t, int64_t>>& pts_dts) {
  std::vector<FrameEntry> out;
  for (const auto& [pts, dts] : pts_dts) {
    out.push_back(FrameEntry{pts != kNone ? pts : dts, dts, 1, static_cast<int64_t>(out.size()), false});
  }
  return out;
}

std::vector<int64_t> Pts(const std::vector<FrameEntry>& frames) {
  std::vector<int64_t> out;
  for (const FrameEntry& f : frames) out.push_back(f.pts);
  return out;
}

TEST(InferMissingPtsTest, GivesReferencePicturesTheSlotsTheBFramesLeave) {
  // I P B B P B B in decode order, one frame = 1, a reorder delay of 1 (the
  // layout mpeg2video -bf 2 writes); the second P has no pts.
  std::vector<FrameEntry> frames =
      Frames({{1, 0}, {4, 1}, {2, 2}, {3, 3}, {kNone, 4}, {5, 5}, {6, 6}});
  ASSERT_TRUE(InferMissingPts(frames, {4}, /*expected_delay=*/-1));
  EXPECT_EQ(Pts(frames), (std::vector<int64_t>{1, 4, 2, 3, 7, 5, 6}));
}

TEST(InferMissingPtsTest, FillsSeveralInDecodeOrder) {
  std::vector<FrameEntry> frames =
      Frames({{kNone, 0}, {4, 1}, {2, 2}, {3, 3}, {kNone, 4}, {5, 5}, {6, 6}, {kNone, 7}, {8, 8}, {9, 9}});
  ASSERT_TRUE(InferMissingPts(frames, {0, 4, 7}, -1));
  EXPECT_EQ(Pts(frames), (std::vector<int64_t>{1, 4, 2, 3, 7, 5, 6, 10, 8, 9}));
}

TEST(InferMissingPtsTest, WithoutReorderingAPtsIsItsDts) {
  std::vector<FrameEntry> frames = Frames({{10, 10}, {kNone, 20}, {30, 30}});
  ASSERT_TRUE(InferMissingPts(frames, {1}, -1));
  EXPECT_EQ(Pts(frames), (std::vector<int64_t>{10, 20, 30}));
}

TEST(InferMissingPtsTest, TakesTheCodecsDelayWhenEveryReferenceLacksAPts) {
  // AVI with B-frames: only the B-frames have a pts. Delays 0 and 1 both
  // fit; the decoder holds one frame back (video_delay 1), so the I frame
  // is shown at 1 and each P at the next P's dts.
  const std::vector<std::pair<int64_t, int64_t>> avi = {{kNone, 0}, {kNone, 1}, {2, 2}, {3, 3},
                                                        {kNone, 4}, {5, 5},    {6, 6}};
  std::vector<FrameEntry> frames = Frames(avi);
  ASSERT_TRUE(InferMissingPts(frames, {0, 1, 4}, /*expected_delay=*/1));
  EXPECT_EQ(Pts(frames), (std::vector<int64_t>{1, 4, 2, 3, 7, 5, 6}));
  // Unknown delay: the smallest that fits.
  frames = Frames(avi);
  ASSERT_TRUE(InferMissingPts(frames, {0, 1, 4}, -1));
  EXPECT_EQ(Pts(frames), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}));
  // An expected delay that does not fit gives way to one that does.
  frames = Frames({{1, 0}, {4, 1}, {2, 2}, {3, 3}, {kNone, 4}, {5, 5}, {6, 6}});
  ASSERT_TRUE(InferMissingPts(frames, {4}, /*expected_delay=*/3));
  EXPECT_EQ(Pts(frames), (std::vector<int64_t>{1, 4, 2, 3, 7, 5, 6}));
}

TEST(InferMissingPtsTest, WithNoPtsAtAllTakesTheCodecsDelayInDecodeOrder) {
  // H.264 in AVI: decode times only. The decoder shows its k-th frame at
  // the k-th decode time plus its delay (two frames here).
  std::vector<FrameEntry> frames = Frames({{kNone, 0}, {kNone, 1}, {kNone, 2}, {kNone, 3}});
  ASSERT_TRUE(InferMissingPts(frames, {0, 1, 2, 3}, /*expected_delay=*/2));
  EXPECT_EQ(Pts(frames), (std::vector<int64_t>{2, 3, 4, 5}));
}

TEST(InferMissingPtsTest, ChangesNothingWhenTheTimesDoNotFit) {
  // A known pts off every slot (a timestamp jump): left as the scan had it.
  std::vector<FrameEntry> jump = Frames({{1, 0}, {kNone, 1}, {500, 2}});
  EXPECT_FALSE(InferMissingPts(jump, {1}, -1));
  EXPECT_EQ(Pts(jump), (std::vector<int64_t>{1, 1, 500}));
  // A packet without a dts.
  std::vector<FrameEntry> no_dts = Frames({{1, 0}, {kNone, 1}, {3, kNone}});
  EXPECT_FALSE(InferMissingPts(no_dts, {1}, 1));
  EXPECT_EQ(Pts(no_dts), (std::vector<int64_t>{1, 1, 3}));
  // Every pts missing and the codec's delay unknown: nothing to go by.
  std::vector<FrameEntry> none = Frames({{kNone, 0}, {kNone, 1}});
  EXPECT_FALSE(InferMissingPts(none, {0, 1}, -1));
  EXPECT_EQ(Pts(none), (std::vector<int64_t>{0, 1}));
  // Nothing missing: nothing to do.
  std::vector<FrameEntry> whole = Frames({{1, 0}, {2, 1}});
  EXPECT_TRUE(InferMissingPts(whole, {}, -1));
  EXPECT_EQ(Pts(whole), (std::vector<int64_t>{1, 2}));
}

std::vector<bool> Keys(const std::vector<FrameEntry>& frames) {
  std::vector<bool> out;
  for (const FrameEntry& f : frames) out.push_back(f.key);
  return out;
}

TEST(ApplyShownOrderTimelineTest, EachFrameTakesTheNextPacketsDtsAndTheLastItsOwnPlusItsDuration) {
  // A packed AVI's packets (dts 0, 3, 4, 5, 6; the AVI index flags the
  // placeholder at 5 as a key frame); VOP types I P B P(placeholder) P.
  std::vector<FrameEntry> frames = Frames({{kNone, 0}, {kNone, 3}, {4, 4}, {kNone, 5}, {kNone, 6}});
  frames[3].key = true;
  ASSERT_TRUE(ApplyShownOrderTimeline(frames, {0, 1, 2, 1, 1}, /*fallback_duration=*/7));
  EXPECT_EQ(Pts(frames), (std::vector<int64_t>{3, 4, 5, 6, 7}));  // the last: 6 + its duration 1
  // Keys are the packets whose first VOP is an I-VOP.
  EXPECT_EQ(Keys(frames), (std::vector<bool>{true, false, false, false, false}));
  // No duration on the last packet: the fallback.
  std::vector<FrameEntry> two = Frames({{kNone, 10}, {kNone, 20}});
  two[1].duration = 0;
  ASSERT_TRUE(ApplyShownOrderTimeline(two, {0, 1}, 7));
  EXPECT_EQ(Pts(two), (std::vector<int64_t>{20, 27}));
}

TEST(ApplyShownOrderTimelineTest, ChangesNothingUnlessEveryDtsIsKnownAndIncreasing) {
  const std::vector<FrameEntry> unknown = Frames({{0, 0}, {1, kNone}, {2, 2}});
  const std::vector<FrameEntry> back = Frames({{0, -1}, {2, 1}, {1, 0}});  // Matroska's guessed dts
  for (const std::vector<FrameEntry>& original : {unknown, back}) {
    std::vector<FrameEntry> frames = original;
    EXPECT_FALSE(ApplyShownOrderTimeline(frames, {0, 1, 2}, 1));
    EXPECT_EQ(Pts(frames), Pts(original));
  }
  std::vector<FrameEntry> frames = Frames({{0, 0}, {1, 1}});
  EXPECT_FALSE(ApplyShownOrderTimeline(frames, {0}, 1));  // a VOP type short
  std::vector<FrameEntry> none;
  EXPECT_FALSE(ApplyShownOrderTimeline(none, {}, 1));
}

// Packets in decode order: (pts, dts, picture type), a missing pts
// starting as the dts.
std::vector<FrameEntry> Typed(const std::vector<std::tuple<int64_t, int64_t, int>>& packets) {
  std::vector<FrameEntry> out;
  for (const auto& [pts, dts, type] : packets) {
    FrameEntry f{pts != kNone ? pts : dts, dts, 1, static_cast<int64_t>(out.size()), type == AV_PICTURE_TYPE_I};
    f.picture_type = static_cast<int8_t>(type);
    out.push_back(f);
  }
  return out;
}
constexpr int kI = AV_PICTURE_TYPE_I, kP = AV_PICTURE_TYPE_P, kB = AV_PICTURE_TYPE_B;

TEST(PlaceMissingByAnchorsTest, AnIOrPPictureIsShownAtTheNextOnesDtsAndTheLastAfterItsBPictures) {
  // A DVD stream cut inside a GOP, its first pictures left out: I B B P B
  // B P B B, one frame = 10, the P pictures without a pts; InferMissingPts
  // finds no single delay for this start.
  auto frames = Typed({{130, 100, kI}, {110, 110, kB}, {120, 120, kB}, {kNone, 130, kP}, {140, 140, kB},
                       {150, 150, kB}, {kNone, 160, kP}, {170, 170, kB}, {180, 180, kB}});
  const std::vector<size_t> missing = {3, 6};
  ASSERT_TRUE(PlaceMissingByAnchors(frames, missing, 10));
  // The first P is shown when the next P (dts 160) is decoded; the last
  // after the B pictures that follow it.
  EXPECT_EQ(Pts(frames), (std::vector<int64_t>{130, 110, 120, 160, 140, 150, 190, 170, 180}));
}

TEST(PlaceMissingByAnchorsTest, ABPictureIsShownAtItsDts) {
  auto frames = Typed({{10, 0, kI}, {30, 10, kP}, {kNone, 20, kB}, {40, 30, kP}});
  ASSERT_TRUE(PlaceMissingByAnchors(frames, {2}, 10));
  EXPECT_EQ(Pts(frames), (std::vector<int64_t>{10, 30, 20, 40}));
}

TEST(PlaceMissingByAnchorsTest, ChangesNothingWithoutEveryTypeOrWhereTimesWouldCollide) {
  auto untyped = Typed({{10, 0, kI}, {kNone, 10, kP}, {20, 20, 0}});
  EXPECT_FALSE(PlaceMissingByAnchors(untyped, {1}, 10));
  EXPECT_EQ(Pts(untyped), (std::vector<int64_t>{10, 10, 20}));
  // The P's time (the next I's dts, 20) is already the B's.
  auto collide = Typed({{40, 0, kI}, {kNone, 10, kP}, {20, 20, kB}, {50, 20, kI}});
  EXPECT_FALSE(PlaceMissingByAnchors(collide, {1}, 10));
  EXPECT_EQ(Pts(collide), (std::vector<int64_t>{40, 10, 20, 50}));
  auto none = Typed({{10, 0, kI}});
  EXPECT_FALSE(PlaceMissingByAnchors(none, {}, 10));
  // The next I or P packet has no dts to take.
  auto no_dts = Typed({{10, 0, kI}, {kNone, 10, kP}, {20, 20, kB}, {50, kNone, kP}});
  EXPECT_FALSE(PlaceMissingByAnchors(no_dts, {1}, 10));
  EXPECT_EQ(Pts(no_dts), (std::vector<int64_t>{10, 10, 20, 50}));
  // Two times given alike: a P and the B after it, both without a pts,
  // where the B's dts is the next P's.
  auto twice = Typed({{10, 0, kI}, {kNone, 10, kP}, {kNone, 20, kB}, {60, 20, kP}});
  EXPECT_FALSE(PlaceMissingByAnchors(twice, {1, 2}, 10));
  EXPECT_EQ(Pts(twice), (std::vector<int64_t>{10, 10, 20, 60}));
}

// Packets in decode order: (pts, key); all pts known unless listed.
std::vector<FrameEntry> Keyed(const std::vector<std::pair<int64_t, bool>>& packets) {
  std::vector<FrameEntry> out;
  for (const auto& [pts, key] : packets) {
    out.push_back(FrameEntry{pts, kNone, 1, static_cast<int64_t>(out.size()), key});
  }
  return out;
}

TEST(PacketsToProbeTest, AStreamThatStartsOnAClosedGopNeedsNone) {
  // I P B B P B B: nothing before the key frame, nothing shown before it.
  const auto frames = Keyed({{0, true}, {3, false}, {1, false}, {2, false}, {6, false}, {4, false}, {5, false}});
  EXPECT_EQ(PacketsToProbe(frames, std::vector<bool>(frames.size(), true), {}), 0);
}

TEST(PacketsToProbeTest, PacketsBeforeTheFirstKeyFrameAreProbedWithTheWindowAfterIt) {
  std::vector<std::pair<int64_t, bool>> packets = {{10, false}, {8, false}, {9, false}, {14, true}};
  for (int64_t k = 0; k < 40; ++k) packets.emplace_back(15 + k, false);
  const auto frames = Keyed(packets);
  EXPECT_EQ(PacketsToProbe(frames, std::vector<bool>(frames.size(), true), {}),
            static_cast<int64_t>(3 + 1 + kLeadingWindow));
  // A short stream: all of it.
  const auto few = Keyed({{10, false}, {14, true}, {15, false}});
  EXPECT_EQ(PacketsToProbe(few, std::vector<bool>(few.size(), true), {}), 3);
}

TEST(PacketsToProbeTest, AnOpenGopsLeadingPicturesAreFoundByTimeOrByCount) {
  // A key frame first, then pictures shown before it (an HEVC CRA's RASL
  // pictures, an open GOP's B frames).
  const auto frames = Keyed({{20, true}, {18, false}, {19, false}, {23, false}});
  EXPECT_EQ(PacketsToProbe(frames, std::vector<bool>(frames.size(), true), {}), 4);
  // Untimed (a program stream): by picture order count.
  std::vector<bool> untimed(frames.size(), false);
  untimed[3] = true;
  EXPECT_EQ(PacketsToProbe(frames, untimed, {}), 0) << "no times to tell by";
  EXPECT_EQ(PacketsToProbe(frames, untimed, {40, 36, 38, 46}), 4);
  EXPECT_EQ(PacketsToProbe(frames, untimed, {40, 42, 44, 46}), 0);
}

// A clip cut with -c copy to Matroska: the open GOP's leading pictures
// lost their times (H.264, HEVC) or got the key frame's (MPEG-2, clamped
// to the start).
TEST(PacketsToProbeTest, LeadingPicturesWithoutTimesOrWithTheKeyFramesAreProbed) {
  const auto frames = Keyed({{0, true}, {0, false}, {0, false}, {3, false}, {1, false}, {2, false}});
  std::vector<bool> known(frames.size(), true);
  EXPECT_EQ(PacketsToProbe(frames, known, {}), 6) << "the key frame's own time";
  const auto timed = Keyed({{0, true}, {-1, false}, {-1, false}, {3, false}, {1, false}, {2, false}});
  known[1] = known[2] = false;
  EXPECT_EQ(PacketsToProbe(timed, known, {}), 6) << "no time";
  // Nor in MPEG-TS or -PS, which time PES packets, not pictures.
  EXPECT_EQ(PacketsToProbe(timed, known, {}, /*pictures_timed=*/false), 0);
  // A stream whose key frame has no time either (AVI) is not probed for it.
  EXPECT_EQ(PacketsToProbe(Keyed({{0, true}, {3, false}, {1, false}}), {false, false, false}, {}), 0);
  // Nor does a key frame with the first one's time count (it leads nothing).
  EXPECT_EQ(PacketsToProbe(Keyed({{0, true}, {1, false}, {0, true}}), {true, true, true}, {}), 0);
}

TEST(PacketsToProbeTest, NoneWithoutAKeyFrameNearTheStart) {
  std::vector<std::pair<int64_t, bool>> packets;
  for (int64_t k = 0; k < static_cast<int64_t>(kMaxProbedPackets) + 5; ++k) packets.emplace_back(k, false);
  packets.emplace_back(packets.size(), true);
  const auto frames = Keyed(packets);
  EXPECT_EQ(PacketsToProbe(frames, std::vector<bool>(frames.size(), true), {}), 0);
  const auto no_key = Keyed({{0, false}, {1, false}});
  EXPECT_EQ(PacketsToProbe(no_key, std::vector<bool>(no_key.size(), true), {}), 0);
}

}  // namespace
}  // namespace codecvisor::cpu
