#include "tools/cli/selection.h"

#include <gtest/gtest.h>

namespace codecvisor::cli {

namespace {

StreamMetadata Stream(int64_t scanned, int64_t header = -1) {
  StreamMetadata m;
  m.num_frames_from_scan = scanned;
  m.num_frames_from_header = header;
  m.begin_stream_seconds = 0.5;
  m.end_stream_seconds = 4.5;
  m.duration_seconds = 4;
  return m;
}

FrameSelection Range(int64_t start, int64_t stop, int64_t step = 1) {
  return FrameSelection::InRange(start, stop, step);
}

TEST(ParseFrameRangeTest, GoodInputs) {
  auto full = ParseFrameRange("10:20:2");
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_EQ(full->start, 10);
  EXPECT_EQ(full->stop, 20);
  EXPECT_EQ(full->step, 2);

  auto two = ParseFrameRange("0:5");
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(two->step, 1);

  auto open = ParseFrameRange(":");
  ASSERT_TRUE(open.ok()) << open.status();
  EXPECT_FALSE(open->start.has_value());
  EXPECT_FALSE(open->stop.has_value());

  auto negative = ParseFrameRange("-10::3");
  ASSERT_TRUE(negative.ok()) << negative.status();
  EXPECT_EQ(negative->start, -10);
  EXPECT_FALSE(negative->stop.has_value());
  EXPECT_EQ(negative->step, 3);

  EXPECT_TRUE(ParseFrameRange(" 1 : 4 ").ok());
  EXPECT_TRUE(ParseFrameRange("1:4:").ok()) << "an empty STEP is 1, as in Python";
}

TEST(ParseFrameRangeTest, BadInputs) {
  for (const char* bad : {"", "5", "1:2:3:4", "a:5", "1:b", "1:5:0", "1:5:-1", "1.5:3", "1:5:x", "0x10:20"}) {
    auto parsed = ParseFrameRange(bad);
    EXPECT_FALSE(parsed.ok()) << "'" << bad << "' was accepted";
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_NE(ParseFrameRange("1:5:0").status().message().find("STEP"), std::string::npos);
  EXPECT_NE(ParseFrameRange("a:5").status().message().find("'a'"), std::string::npos);
}

TEST(ParseIndexListTest, GoodAndBad) {
  auto list = ParseIndexList("1,5,9,-1, 5");
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(*list, (std::vector<int64_t>{1, 5, 9, -1, 5}));
  EXPECT_EQ(*ParseIndexList("0"), std::vector<int64_t>{0});
  for (const char* bad : {"", ",", "1,", ",1", "1,,2", "1;2", "1.5", "one", "99999999999999999999"}) {
    EXPECT_FALSE(ParseIndexList(bad).ok()) << "'" << bad << "' was accepted";
  }
  EXPECT_NE(ParseIndexList("1,one").status().message().find("'one' is not an integer"), std::string::npos);
  EXPECT_NE(ParseIndexList("-+5").status().message().find("is not an integer"), std::string::npos);
  for (const char* huge : {"9223372036854775808", "-9223372036854775809", "+99999999999999999999"}) {
    const absl::Status status = ParseIndexList(huge).status();
    EXPECT_NE(status.message().find("is out of range"), std::string::npos) << status;
  }
  EXPECT_EQ(*ParseIndexList("9223372036854775807"), std::vector<int64_t>{INT64_MAX});
}

TEST(ParseTimeListTest, GoodAndBad) {
  auto list = ParseTimeList("1.5,2,0.04,3e1");
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(*list, (std::vector<double>{1.5, 2, 0.04, 30}));
  for (const char* bad : {"", "1.5,", "nan", "inf", "1.5s", "1,,2", "x"}) {
    EXPECT_FALSE(ParseTimeList(bad).ok()) << "'" << bad << "' was accepted";
  }
}

TEST(ParseTimeRangeTest, GoodAndBad) {
  auto range = ParseTimeRange("1.5:2.25");
  ASSERT_TRUE(range.ok()) << range.status();
  EXPECT_DOUBLE_EQ(range->start_seconds, 1.5);
  EXPECT_DOUBLE_EQ(range->stop_seconds, 2.25);
  for (const char* bad : {"", "1.5", "1:2:3", ":2", "1:", "2:1", "1:0.999", "a:b", "0:inf"}) {
    EXPECT_FALSE(ParseTimeRange(bad).ok()) << "'" << bad << "' was accepted";
  }
}

// As Python's get_frames_played_in_range(t, t): an empty answer, not an error.
TEST(ParseTimeRangeTest, AnEmptyRangeSelectsNoFrames) {
  auto empty = ParseTimeRange("1:1");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(SelectedFrameCount(FrameSelection::PlayedInSeconds(empty->start_seconds, empty->stop_seconds)), 0);
  EXPECT_EQ(SelectedFrameCount(FrameSelection::PlayedInSeconds(1, 1.5)), std::nullopt) << "known only once decoded";
}

// Empty wherever it is, as torchcodec's get_frames_played_in_range (which
// checks that before the stream's bounds): a sliding window's last.
TEST(BuildSelectionTest, AnEmptyTimeRangeIsEmptyWhereverItIs) {
  SelectionFlags flags;
  for (const char* empty : {"2:2", "4.5:4.5", "0.25:0.25", "999:999"}) {  // the stream plays 0.5 to 4.5 s
    flags.time_range = empty;
    auto selection = BuildSelection(flags, Stream(40));
    ASSERT_TRUE(selection.ok()) << empty << ": " << selection.status();
    EXPECT_EQ(SelectedFrameCount(*selection), 0) << empty;
  }
}

TEST(BuildSelectionTest, NoFlagMeansEveryFrame) {
  auto all = BuildSelection({}, Stream(40));
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(*all, Range(0, 40));

  auto header = BuildSelection({}, Stream(-1, 38));
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_EQ(*header, Range(0, 38)) << "the header count when there was no scan";

  auto by_time = BuildSelection({}, Stream(-1, -1));
  ASSERT_TRUE(by_time.ok()) << by_time.status();
  EXPECT_EQ(*by_time, FrameSelection::PlayedInSeconds(0.5, 4.5));

  StreamMetadata nothing;
  EXPECT_EQ(BuildSelection({}, nothing).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(BuildSelectionTest, FrameRangesResolveAgainstTheCount) {
  SelectionFlags flags;
  flags.frames = "2:30:3";
  EXPECT_EQ(*BuildSelection(flags, Stream(40)), Range(2, 30, 3));
  flags.frames = "::5";
  EXPECT_EQ(*BuildSelection(flags, Stream(40)), Range(0, 40, 5));
  flags.frames = "-10:";
  EXPECT_EQ(*BuildSelection(flags, Stream(40)), Range(30, 40));
  flags.frames = ":-1";
  EXPECT_EQ(*BuildSelection(flags, Stream(40)), Range(0, 39));
  flags.frames = "-100:5";
  EXPECT_EQ(*BuildSelection(flags, Stream(40)), Range(0, 5)) << "clamped like a Python slice";
}

// --frames is a real Python slice: range(40)[START:STOP:STEP].
TEST(BuildSelectionTest, FrameRangesAreClampedLikePythonSlices) {
  SelectionFlags flags;
  flags.frames = "0:41";
  EXPECT_EQ(*BuildSelection(flags, Stream(40)), Range(0, 40)) << "a STOP past the end is clamped";
  flags.frames = "-100:-90";
  EXPECT_EQ(SelectedFrameCount(*BuildSelection(flags, Stream(40))), 0) << "range(40)[-100:-90] is empty";
  flags.frames = "10:5";
  EXPECT_EQ(SelectedFrameCount(*BuildSelection(flags, Stream(40))), 0) << "an empty slice is no frames, not an error";
  flags.frames = "45:50";
  EXPECT_EQ(*BuildSelection(flags, Stream(40)), Range(40, 40)) << "past the end: empty";
  flags.frames = "-5:-1:2";
  EXPECT_EQ(*BuildSelection(flags, Stream(40)), Range(35, 39, 2));
  flags.frames = "0:41";
  // Approximate mode: the header's count bounds it too, as the decoder
  // (and the Python package's len()) takes indices up to it.
  EXPECT_EQ(*BuildSelection(flags, Stream(-1, 40)), Range(0, 40)) << "the header's count is the limit";
}

TEST(BuildSelectionTest, RangesThatNeedACount) {
  SelectionFlags flags;
  flags.frames = "5:";
  auto open = BuildSelection(flags, Stream(-1, -1));
  EXPECT_NE(open.status().message().find("frame count is unknown"), std::string::npos) << open.status();
  flags.frames = "-5:10";
  EXPECT_FALSE(BuildSelection(flags, Stream(-1, -1)).ok());
  flags.frames = "5:10";
  EXPECT_EQ(*BuildSelection(flags, Stream(-1, -1)), Range(5, 10)) << "explicit bounds need no count";
}

TEST(MayRepeatFramesTest, RepeatedIndicesAndTimeLists) {
  EXPECT_TRUE(MayRepeatFrames(FrameSelection::AtIndices({5, 3, 5}), Stream(40)));
  EXPECT_TRUE(MayRepeatFrames(FrameSelection::AtIndices({39, -1}), Stream(40))) << "-1 is 39";
  EXPECT_FALSE(MayRepeatFrames(FrameSelection::AtIndices({5, 3, -1}), Stream(40)));
  EXPECT_TRUE(MayRepeatFrames(FrameSelection::PlayedAtSeconds({1.0, 1.01}), Stream(40)));
  EXPECT_FALSE(MayRepeatFrames(FrameSelection::PlayedAtSeconds({1.0}), Stream(40)));
  EXPECT_FALSE(MayRepeatFrames(Range(0, 40), Stream(40)));
  EXPECT_FALSE(MayRepeatFrames(FrameSelection::PlayedInSeconds(0, 1), Stream(40)));
}

TEST(IndicesOutOfStreamOrderTest, OnlyDistinctCountedIndicesOutOfOrder) {
  using Indices = std::vector<int64_t>;
  EXPECT_EQ(IndicesOutOfStreamOrder(FrameSelection::AtIndices({30, 2, -1, 7}), Stream(40)), Indices({30, 2, 39, 7}));
  EXPECT_EQ(IndicesOutOfStreamOrder(FrameSelection::AtIndices({30, 2}), Stream(-1, 40)), Indices({30, 2}))
      << "a header's count counts too";
  EXPECT_EQ(IndicesOutOfStreamOrder(FrameSelection::AtIndices({2, 7, -1}), Stream(40)), std::nullopt) << "in order";
  EXPECT_EQ(IndicesOutOfStreamOrder(FrameSelection::AtIndices({7, 2, 7}), Stream(40)), std::nullopt) << "a repeat";
  EXPECT_EQ(IndicesOutOfStreamOrder(FrameSelection::AtIndices({7, 40}), Stream(40)), std::nullopt) << "out of range";
  EXPECT_EQ(IndicesOutOfStreamOrder(FrameSelection::AtIndices({7, -41}), Stream(40)), std::nullopt) << "out of range";
  EXPECT_EQ(IndicesOutOfStreamOrder(FrameSelection::AtIndices({7, 2}), Stream(-1)), std::nullopt) << "no count";
  StreamMetadata estimated = Stream(-1);
  estimated.average_fps = 10;  // 4 s: an estimate of 40 frames, no count
  ASSERT_EQ(estimated.num_frames(), 40);
  EXPECT_EQ(IndicesOutOfStreamOrder(FrameSelection::AtIndices({7, 2}), estimated), std::nullopt) << "an estimate";
  EXPECT_EQ(IndicesOutOfStreamOrder(Range(0, 40), Stream(40)), std::nullopt);
  EXPECT_EQ(IndicesOutOfStreamOrder(FrameSelection::PlayedAtSeconds({2.0, 1.0}), Stream(40)), std::nullopt);
}

TEST(BuildSelectionTest, ListsAndTimes) {
  SelectionFlags flags;
  flags.indices = "1,5,-1";
  EXPECT_EQ(*BuildSelection(flags, Stream(40)), FrameSelection::AtIndices({1, 5, -1}));
  flags = {};
  flags.times = "1.5,2.0";
  EXPECT_EQ(*BuildSelection(flags, Stream(40)), FrameSelection::PlayedAtSeconds({1.5, 2.0}));
  flags = {};
  flags.time_range = "1:2";
  EXPECT_EQ(*BuildSelection(flags, Stream(40)), FrameSelection::PlayedInSeconds(1, 2));
}

// Approximate mode on a stream whose header has no frame count: negative
// indices count from the estimate duration x rate, or fail saying why.
TEST(BuildSelectionTest, NegativeIndicesWithoutAFrameCount) {
  StreamMetadata m;
  m.average_fps = 25;
  m.duration_seconds = 5;
  SelectionFlags flags;
  flags.indices = "-1,3,-125";
  EXPECT_EQ(*BuildSelection(flags, m), FrameSelection::AtIndices({124, 3, 0}));
  flags.indices = "-126";
  absl::Status before = BuildSelection(flags, m).status();
  EXPECT_EQ(before.code(), absl::StatusCode::kOutOfRange);
  EXPECT_NE(before.message().find("about 125 frames"), absl::string_view::npos) << before;
  m.duration_seconds = 0;
  flags.indices = "-1";
  absl::Status unknown = BuildSelection(flags, m).status();
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.message().find("frame count is unknown"), absl::string_view::npos) << unknown;
  EXPECT_EQ(unknown.message().find("-1 frames"), absl::string_view::npos) << unknown;
}

TEST(BuildSelectionTest, TwoFlagsAreAnError) {
  SelectionFlags flags;
  flags.indices = "1";
  flags.times = "1.5";
  EXPECT_EQ(BuildSelection(flags, Stream(40)).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SelectedFrameCountTest, KnownForIndicesAndTimeLists) {
  EXPECT_EQ(SelectedFrameCount(Range(0, 40)), 40);
  EXPECT_EQ(SelectedFrameCount(Range(2, 30, 3)), 10);
  EXPECT_EQ(SelectedFrameCount(Range(0, 1, 100)), 1);
  EXPECT_EQ(SelectedFrameCount(Range(5, 5)), 0);
  EXPECT_EQ(SelectedFrameCount(Range(INT64_MIN, INT64_MAX, INT64_MAX)), 3) << "no overflow";
  EXPECT_EQ(SelectedFrameCount(FrameSelection::AtIndices({1, 1, 2})), 3);
  EXPECT_EQ(SelectedFrameCount(FrameSelection::PlayedAtSeconds({1.5})), 1);
  EXPECT_EQ(SelectedFrameCount(FrameSelection::PlayedInSeconds(0, 1)), std::nullopt);
}

}  // namespace
}  // namespace codecvisor::cli
