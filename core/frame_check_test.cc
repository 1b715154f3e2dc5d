// File: core/frame_check_test.cc

#include "core/frame_check.h"

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "core/session_opened_check.h"
#include "gtest/gtest.h"
#include "ipc/plane_shapes.h"

namespace codecvisor {
namespace {

ipc::FrameRef Ref(uint32_t position, int64_t index, double pts_seconds = 0) {
  ipc::FrameRef ref;
  ref.request_position = position;
  ref.index = index;
  ref.pts_seconds = pts_seconds;
  return ref;
}

// `ref` as a 64x48 frame of `format`, its planes tight.
ipc::FrameRef Shaped(ipc::FrameRef ref, ipc::OutputFormat format, const char* pixel_format) {
  ref.format = format;
  ref.pixel_format = pixel_format;
  ref.width = 64;
  ref.height = 48;
  ref.planes.clear();
  uint64_t offset = 0;
  const std::vector<ipc::PlaneShape> shapes = ipc::PlaneShapesOf(pixel_format, 64, 48).value_or(std::vector<ipc::PlaneShape>{});
  for (const ipc::PlaneShape& s : shapes) {
    ref.planes.push_back({offset, static_cast<uint32_t>(s.row_bytes), static_cast<uint32_t>(s.rows)});
    offset += s.row_bytes * s.rows;
  }
  return ref;
}

// Feeds `indices` (positions 0, 1, ...) and returns the first error, or
// Final()'s verdict.
absl::Status Answer(const ipc::FrameRequest& request, int64_t count, const std::vector<int64_t>& indices,
                    int64_t estimated = -1) {
  FrameCheck check(request, count, estimated);
  for (size_t i = 0; i < indices.size(); ++i) {
    if (absl::Status s = check.Next(Ref(static_cast<uint32_t>(i), indices[i])); !s.ok()) return s;
  }
  return check.Final();
}

TEST(FrameCheckTest, AnIndexListGetsExactlyItsFramesInOrder) {
  const ipc::FrameRequest request{ipc::IndexList{{4, 0, 4, -1}}};
  EXPECT_TRUE(Answer(request, 10, {4, 0, 4, 9}).ok());
  EXPECT_TRUE(absl::IsDataLoss(Answer(request, 10, {4, 0, 4})));         // one missing
  EXPECT_TRUE(absl::IsDataLoss(Answer(request, 10, {4, 0, 4, 9, 9})));   // one too many
  EXPECT_TRUE(absl::IsDataLoss(Answer(request, 10, {4, 0, 5, 9})));      // another frame
  EXPECT_TRUE(absl::IsDataLoss(Answer(request, 10, {4, 0, 4, -1})));     // -1 unresolved
}

TEST(FrameCheckTest, TheForgeryOfTheHostileSuiteIsRefused) {
  // 200 frames of the plugin's choosing for a one-frame request.
  FrameCheck check({ipc::IndexList{{0}}}, 300);
  ASSERT_TRUE(check.Next(Ref(0, 0)).ok());
  const absl::Status s = check.Next(Ref(1, 1000));
  EXPECT_TRUE(absl::IsDataLoss(s));
  EXPECT_NE(s.message().find("more frames than the request asked for (1)"), std::string::npos) << s;
}

TEST(FrameCheckTest, AWrongIndexIsNamed) {
  FrameCheck check({ipc::IndexList{{0, 1}}}, 300);
  ASSERT_TRUE(check.Next(Ref(0, 0)).ok());
  const absl::Status s = check.Next(Ref(1, 1000));
  EXPECT_EQ(s.message(), "backend sent frame 1000 at request position 1 where frame 1 was asked for");
}

TEST(FrameCheckTest, PositionsMustFollowEachOther) {
  FrameCheck check({ipc::IndexList{{0, 1, 2}}}, 300);
  ASSERT_TRUE(check.Next(Ref(0, 0)).ok());
  EXPECT_TRUE(absl::IsDataLoss(check.Next(Ref(2, 2))));
  FrameCheck again({ipc::IndexList{{0, 1, 2}}}, 300);
  ASSERT_TRUE(again.Next(Ref(0, 0)).ok());
  EXPECT_TRUE(absl::IsDataLoss(again.Next(Ref(0, 0))));  // a replayed record
}

TEST(FrameCheckTest, NegativeIndicesStayNegativeWithoutACount) {
  // The runner resolves -1 only when it knows the count; without one it
  // refuses it, so no frame may come back for it.
  EXPECT_TRUE(absl::IsDataLoss(Answer({ipc::IndexList{{-1}}}, -1, {7})));
  EXPECT_TRUE(Answer({ipc::IndexList{{3}}}, -1, {3}).ok());
}

TEST(FrameCheckTest, AnEstimatedCountPlacesNegativeIndicesAsTheRunnerDoes) {
  // No scan, no header count: the runner counts -1 back from round(duration
  // x rate), and so must the host.
  EXPECT_TRUE(Answer({ipc::IndexList{{-1, 2}}}, -1, {29, 2}, /*estimated=*/30).ok());
  EXPECT_TRUE(absl::IsDataLoss(Answer({ipc::IndexList{{-1}}}, -1, {28}, /*estimated=*/30)));
  EXPECT_TRUE(Answer({ipc::IndexList{{-1}}}, 10, {9}, /*estimated=*/30).ok());  // a known count wins
}

TEST(FrameCheckTest, ARangeGetsStartPlusStepTimesPosition) {
  const ipc::FrameRequest request{ipc::IndexRange{2, 11, 3}};  // 2, 5, 8
  EXPECT_TRUE(Answer(request, 20, {2, 5, 8}).ok());
  EXPECT_TRUE(Answer(request, -1, {2, 5, 8}).ok());
  EXPECT_TRUE(absl::IsDataLoss(Answer(request, 20, {2, 5, 8, 11})));
  EXPECT_TRUE(absl::IsDataLoss(Answer(request, 20, {2, 5})));
  EXPECT_TRUE(absl::IsDataLoss(Answer(request, 20, {2, 6, 8})));
  EXPECT_TRUE(Answer({ipc::IndexRange{5, 5, 1}}, 20, {}).ok());
  EXPECT_TRUE(absl::IsDataLoss(Answer({ipc::IndexRange{5, 5, 1}}, 20, {5})));
}

TEST(FrameCheckTest, AHugeRangeNeitherOverflowsNorExpandsAnything) {
  const int64_t max = std::numeric_limits<int64_t>::max();
  FrameCheck check({ipc::IndexRange{0, max, max / 2}}, -1);  // 0, max/2, max-1
  EXPECT_TRUE(check.Next(Ref(0, 0)).ok());
  EXPECT_TRUE(check.Next(Ref(1, max / 2)).ok());
  EXPECT_TRUE(check.Next(Ref(2, max - 1)).ok());
  EXPECT_TRUE(absl::IsDataLoss(check.Next(Ref(3, max))));
  EXPECT_TRUE(check.Final().ok());
}

TEST(FrameCheckTest, ATimeListGetsOneFramePerTimeOfAnyIndex) {
  const ipc::FrameRequest request{ipc::PtsList{{0.5, 0.1, 0.5}}};
  EXPECT_TRUE(Answer(request, 100, {12, 2, 12}).ok());
  EXPECT_TRUE(absl::IsDataLoss(Answer(request, 100, {12, 2})));
  EXPECT_TRUE(absl::IsDataLoss(Answer(request, 100, {12, 2, 12, 13})));
  EXPECT_TRUE(absl::IsDataLoss(Answer(request, 100, {12, -4, 12})));
}

// In exact mode the frame played at a time starts at or before it (to the
// rounding of a time computed as pts x time base), or is the stream's
// first: a hostile plugin answered every time with the stream's last frame.
TEST(FrameCheckTest, AFramePlayedAtATimeStartsAtOrBeforeItInExactMode) {
  const ipc::FrameRequest times{ipc::PtsList{{0.0, 0.36, 0.1}}};
  FrameCheck exact(times, 10);
  exact.ExpectScannedTimes(0.001);
  EXPECT_TRUE(exact.Next(Ref(0, 0, 0.04)).ok());      // the stream's first, shown from its start
  EXPECT_TRUE(exact.Next(Ref(1, 9, 9 * 0.04)).ok());  // 0.36 as pts x time base: 0.36000000000000004
  const absl::Status later = exact.Next(Ref(2, 9, 0.36));
  EXPECT_TRUE(absl::IsDataLoss(later)) << later;
  EXPECT_NE(later.message().find("backend sent frame 9 at 0.36 s as the frame played at 0.1 s"), std::string::npos)
      << later;
  FrameCheck approximate(times, 10);  // placed by the header's rate: not checked
  EXPECT_TRUE(approximate.Next(Ref(0, 3, 0.12)).ok());
  const ipc::FrameRequest range{ipc::PtsRange{1.0, 2.0}};
  FrameCheck range_check(range, 100);
  range_check.ExpectScannedTimes(0.001);
  EXPECT_TRUE(absl::IsDataLoss(range_check.Next(Ref(0, 30, 1.2))));  // its first frame is the one played at 1.0 s
  FrameCheck range_ok(range, 100);
  range_ok.ExpectScannedTimes(0.001);
  EXPECT_TRUE(range_ok.Next(Ref(0, 24, 0.96)).ok());
  EXPECT_TRUE(range_ok.Next(Ref(1, 25, 1.0)).ok());  // later frames start later
  // A time a hair before a frame's rounds up to it, within a thousandth of
  // a tick of the time base: at 1/25, 0.08 as float32 (0.0799999982)
  // finds frame 2.
  const ipc::FrameRequest hair{ipc::PtsList{{static_cast<double>(0.08f), 0.08 - 2e-8, 0.05}}};
  FrameCheck coarse(hair, 10);
  coarse.ExpectScannedTimes(1.0 / 25);
  EXPECT_TRUE(coarse.Next(Ref(0, 2, 0.08)).ok());
  EXPECT_TRUE(coarse.Next(Ref(1, 2, 0.08)).ok());
  // A backend's own time base does not switch the check off: a tick of
  // 2^31 s allows 10 ms.
  FrameCheck huge_tick(ipc::FrameRequest{ipc::PtsList{{0.0}}}, 10);
  huge_tick.ExpectScannedTimes(2147483647.0);
  EXPECT_TRUE(absl::IsDataLoss(huge_tick.Next(Ref(0, 9, 0.36))));
  EXPECT_TRUE(absl::IsDataLoss(coarse.Next(Ref(2, 2, 0.08))));  // more than a thousandth of a tick before it
}

TEST(FrameCheckTest, ATimeRangeGetsConsecutiveFramesBeforeItsStop) {
  const ipc::FrameRequest request{ipc::PtsRange{1.0, 2.0}};
  FrameCheck check(request, 10);
  EXPECT_TRUE(check.Next(Ref(0, 4, 0.96)).ok());  // the frame played at 1.0 s
  EXPECT_TRUE(check.Next(Ref(1, 5, 1.2)).ok());
  EXPECT_TRUE(absl::IsDataLoss(check.Next(Ref(2, 7, 1.4))));  // skips 6
  FrameCheck late(request, 10);
  EXPECT_TRUE(absl::IsDataLoss(late.Next(Ref(0, 9, 2.0))));  // at the stop
  // Fewer frames than the stream has is fine (the range ends), more is not.
  EXPECT_TRUE(Answer(request, 10, {}).ok());
  EXPECT_TRUE(Answer(request, 3, {0, 1, 2}).ok());
  EXPECT_TRUE(absl::IsDataLoss(Answer(request, 3, {0, 1, 2, 3})));
}

// A backend whose frames a time range never ends (each a nanosecond after
// the last) is stopped at what the range's length can hold, count known or
// not: before, an approximate-mode range took frames until the host's
// memory ran out, and the CLI wrote gigabytes for 0.8 s.
TEST(FrameCheckTest, ATimeRangeHoldsAtMostWhatItsLengthCan) {
  const ipc::FrameRequest request{ipc::PtsRange{0.5, 0.5 + 1.0 / 1024}};  // under 1 ms: 10 frames, and the slack
  for (int64_t count : {int64_t{-1}, int64_t{1} << 32}) {
    FrameCheck check(request, count);
    const uint64_t most = 10 + FrameCheck::kTimeRangeSlack;
    for (uint64_t i = 0; i < most; ++i) {
      ASSERT_TRUE(check.Next(Ref(i, static_cast<int64_t>(i), 0.5 + static_cast<double>(i) * 1e-9)).ok()) << i;
    }
    const absl::Status s = check.Next(Ref(most, static_cast<int64_t>(most), 0.5 + static_cast<double>(most) * 1e-9));
    EXPECT_TRUE(absl::IsDataLoss(s)) << s;
    EXPECT_NE(s.message().find("s of video can hold (74 at most: 10000 a second, and 64 more)"), std::string::npos) << s;
  }
  // A reversed range (the C++ API does not refuse one before sending it):
  // its bound used to be a negative double cast to an unsigned integer
  // (undefined; UBSan's float-cast-overflow).
  FrameCheck reversed(ipc::FrameRequest{ipc::PtsRange{1.0, 0.0}}, -1);
  EXPECT_TRUE(absl::IsDataLoss(reversed.Next(Ref(0, 0, 1.0))));  // no frame starts in it
  // A stream's own count stays the bound where it is the smaller.
  EXPECT_TRUE(absl::IsDataLoss(Answer(ipc::FrameRequest{ipc::PtsRange{0.0, 100.0}}, 3, {0, 1, 2, 3})));
}

// A NaN time, an infinite duration or an end that overflows would reach the
// caller's arithmetic (a sampler's clip times, a sort).
TEST(FrameCheckTest, TimesAreFiniteAndBoundedAndDurationsNotNegative) {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  for (const ipc::FrameRequest& request :
       {ipc::FrameRequest{ipc::IndexList{{3}}}, ipc::FrameRequest{ipc::PtsList{{0.5}}},
        ipc::FrameRequest{ipc::PtsRange{0.0, 1.0}}}) {
    for (auto [pts, duration] : {std::pair{nan, 0.04}, std::pair{inf, 0.04}, std::pair{-inf, 0.04},
                                 std::pair{0.12, inf}, std::pair{0.12, nan}, std::pair{0.12, -0.04},
                                 // finite, but their end is not (a plugin's forgery)
                                 std::pair{1.7e308, 1.7e308}, std::pair{-1.7e308, 0.04}, std::pair{0.12, 1e308},
                                 std::pair{kMaxStreamSeconds * 1.5, 0.0}, std::pair{0.0, kMaxStreamSeconds * 1.5}}) {
      FrameCheck check(request, 10);
      ipc::FrameRef ref = Ref(0, 3, pts);
      ref.duration_seconds = duration;
      const absl::Status s = check.Next(ref);
      EXPECT_TRUE(absl::IsDataLoss(s)) << pts << " " << duration << ": " << s;
    }
    FrameCheck honest(request, 10);
    ipc::FrameRef ref = Ref(0, 3, -0.5);  // a stream may start before 0
    ref.duration_seconds = 0;             // and a frame have no duration
    EXPECT_TRUE(honest.Next(ref).ok());
    FrameCheck at_the_bound(request, 10);
    ref = Ref(0, 3, -kMaxStreamSeconds);
    ref.duration_seconds = kMaxStreamSeconds;
    EXPECT_TRUE(at_the_bound.Next(ref).ok());
  }
}

TEST(FrameCheckTest, FramesComeInTheFormatAskedForOrTheSessionsNativeOne) {
  const ipc::FrameRequest request{ipc::IndexRange{0, 4, 1}};
  auto frame = [](uint32_t position, ipc::OutputFormat format, const char* pixel_format) {
    return Shaped(Ref(position, position), format, pixel_format);
  };
  FrameCheck check(request, 4);
  check.ExpectFormat(ipc::OutputFormat::kRgb24, "yuv420p");
  EXPECT_TRUE(check.Next(frame(0, ipc::OutputFormat::kRgb24, "rgb24")).ok());
  EXPECT_TRUE(check.Next(frame(1, ipc::OutputFormat::kNative, "yuv420p")).ok());
  const absl::Status other = check.Next(frame(2, ipc::OutputFormat::kNative, "nv12"));
  EXPECT_TRUE(absl::IsDataLoss(other)) << other;
  EXPECT_NE(other.message().find("frame 2 as native nv12 where rgb24 was asked for (or native yuv420p)"),
            std::string::npos)
      << other;
  EXPECT_TRUE(absl::IsDataLoss(check.Next(frame(2, ipc::OutputFormat::kRgb24Planar, "rgbp"))));

  FrameCheck plain(request, 4);  // no native layout: RGB24 only
  plain.ExpectFormat(ipc::OutputFormat::kRgb24, std::nullopt);
  EXPECT_TRUE(absl::IsDataLoss(plain.Next(frame(0, ipc::OutputFormat::kNative, "yuv420p"))));
  FrameCheck native(request, 4);  // native asked for: any native format
  native.ExpectFormat(ipc::OutputFormat::kNative, std::nullopt);
  EXPECT_TRUE(native.Next(frame(0, ipc::OutputFormat::kNative, "yuv444p")).ok());
}

// A frame's planes must hold a frame of the format it names (a QA plugin's
// 64x48 yuv420p frames with chroma rows of 8 bytes reached the converter,
// which called each a corrupt video), and an RGB frame is named as RGB (a
// plugin's rgb24 frames named yuv420p made the CLI refuse every frame).
TEST(FrameCheckTest, AFramesPlanesHoldItsFormatAndRgbIsNamedSo) {
  const ipc::FrameRequest request{ipc::IndexRange{0, 8, 1}};
  FrameCheck check(request, 8);
  ipc::FrameRef narrow = Shaped(Ref(0, 0), ipc::OutputFormat::kNative, "yuv420p");
  narrow.planes[1].stride = 8;
  absl::Status s = check.Next(narrow);
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_NE(s.message().find("backend sent frame 0 as 64x48 yuv420p in 3 planes that cannot hold it"),
            std::string::npos)
      << s;
  ipc::FrameRef short_rows = Shaped(Ref(0, 0), ipc::OutputFormat::kNative, "nv12");
  short_rows.planes[1].rows = 2;
  EXPECT_TRUE(absl::IsDataLoss(check.Next(short_rows)));
  ipc::FrameRef two_planes = Shaped(Ref(0, 0), ipc::OutputFormat::kNative, "yuv420p");
  two_planes.planes.pop_back();
  EXPECT_TRUE(absl::IsDataLoss(check.Next(two_planes)));
  ipc::FrameRef misnamed = Shaped(Ref(0, 0), ipc::OutputFormat::kRgb24, "rgb24");
  misnamed.pixel_format = "yuv420p";
  s = check.Next(misnamed);
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_NE(s.message().find("as rgb24 named 'yuv420p'"), std::string::npos) << s;
  // Honest frames pass: padded strides and rows, an unnamed RGB frame, a
  // native format the host does not know.
  ipc::FrameRef padded = Shaped(Ref(0, 0), ipc::OutputFormat::kNative, "yuv420p");
  for (ipc::Plane& p : padded.planes) {
    p.stride += 32;
    p.rows += 2;
  }
  EXPECT_TRUE(check.Next(padded).ok());
  EXPECT_TRUE(check.Next(Shaped(Ref(1, 1), ipc::OutputFormat::kRgb24, "")).ok());
  ipc::FrameRef vendor = Shaped(Ref(2, 2), ipc::OutputFormat::kNative, "vendor-tiled");
  vendor.planes = {{0, 64, 48}};
  EXPECT_TRUE(check.Next(vendor).ok());
}

}  // namespace
}  // namespace codecvisor
