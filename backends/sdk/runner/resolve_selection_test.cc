#include "backends/sdk/runner/resolve_selection.h"

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace codecvisor::runner {
namespace {

// A vendor whose stream has kFrames frames, one every 0.1 s.
constexpr int64_t kFrames = 10;
ipc::RegionHeader* g_hints = nullptr;
int g_calls_outside_vendor_call = 0;

void CheckMarked() {
  if (g_hints->backend_in_call.load() != 1) ++g_calls_outside_vendor_call;
}

cv_status IndexAtSeconds(cv_session*, double seconds, int64_t* index, cv_error*) {
  CheckMarked();
  if (!(seconds >= 0) || seconds >= kFrames / 10.0) return CV_ERROR_OUT_OF_RANGE;
  *index = static_cast<int64_t>(std::floor(seconds * 10 + 1e-9));
  return CV_OK;
}

cv_status GetFrameInfo(cv_session*, int64_t index, cv_frame_info* out, cv_error*) {
  CheckMarked();
  if (index < 0 || index >= kFrames) return CV_ERROR_OUT_OF_RANGE;
  out->index = index;
  out->pts_seconds = index / 10.0;
  return CV_OK;
}

class ResolveSelectionTest : public ::testing::Test {
 protected:
  ResolveSelectionTest() {
    vtable_.struct_size = sizeof(vtable_);
    vtable_.index_at_seconds = IndexAtSeconds;
    vtable_.get_frame_info = GetFrameInfo;
    session_.vtable = &vtable_;
    session_.hints = hints_.get();
    session_.opened.metadata.num_frames_from_scan = kFrames;
    g_hints = hints_.get();
    g_calls_outside_vendor_call = 0;
  }

  std::unique_ptr<ipc::RegionHeader> hints_ = std::make_unique<ipc::RegionHeader>();
  cv_backend_v1 vtable_{};
  VendorSession session_;
};

std::vector<int64_t> Expand(const ResolvedFrames& r) {
  std::vector<int64_t> v;
  for (uint64_t i = 0; i < r.size(); ++i) v.push_back(r[i]);
  return v;
}

struct Case {
  std::string name;
  ipc::FrameRequest request;
  std::vector<int64_t> want;             // when ok
  absl::StatusCode code = absl::StatusCode::kOk;
  std::string message;                   // a prefix of the error, when not ok
};

TEST_F(ResolveSelectionTest, Table) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<Case> cases = {
      {"indices, negative from the end", {ipc::IndexList{{0, 3, -1, 3}}}, {0, 3, 9, 3}},
      {"index past the end", {ipc::IndexList{{2, 10}}}, {}, absl::StatusCode::kOutOfRange,
       "frame index 10 is out of range: the stream has 10 frames"},
      {"negative past the start", {ipc::IndexList{{-11}}}, {}, absl::StatusCode::kOutOfRange, "frame index -11"},
      {"no indices", {ipc::IndexList{{}}}, {}},
      {"range by step", {ipc::IndexRange{2, 8, 3}}, {2, 5}},
      {"range to the end", {ipc::IndexRange{7, 10, 1}}, {7, 8, 9}},
      {"empty range", {ipc::IndexRange{4, 4, 1}}, {}},
      {"range step zero", {ipc::IndexRange{0, 5, 0}}, {}, absl::StatusCode::kInvalidArgument,
       "frame range step must be positive, got 0"},
      {"range reversed", {ipc::IndexRange{5, 2, 1}}, {}, absl::StatusCode::kInvalidArgument,
       "frame range [5, 2) starts after its stop"},
      {"range negative", {ipc::IndexRange{-1, 2, 1}}, {}, absl::StatusCode::kInvalidArgument,
       "frame range [-1, 2) starts before frame 0"},
      // Named by its stop, not by an index the step may never reach.
      {"range past the end", {ipc::IndexRange{0, 14, 4}}, {}, absl::StatusCode::kOutOfRange,
       "frame range [0, 14) stops past the stream's end: the stream has 10 frames"},
      {"times", {ipc::PtsList{{0.0, 0.25, 0.99}}}, {0, 2, 9}},
      {"time past the end", {ipc::PtsList{{0.1, 1.5}}}, {}, absl::StatusCode::kOutOfRange},
      {"time span", {ipc::PtsRange{0.2, 0.5}}, {2, 3, 4}},
      {"time span past the end", {ipc::PtsRange{0.85, 5.0}}, {8, 9}},
      {"empty time span", {ipc::PtsRange{0.5, 0.5}}, {}},
      {"reversed time span", {ipc::PtsRange{0.5, 0.2}}, {}, absl::StatusCode::kInvalidArgument,
       "time range [0.5, 0.2) is reversed or not a number"},
      {"time span NaN", {ipc::PtsRange{nan, 0.2}}, {}, absl::StatusCode::kInvalidArgument, "time range [nan"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<ResolvedFrames> got = ResolveSelection(c.request, session_);
    ASSERT_EQ(got.status().code(), c.code) << c.name << ": " << got.status();
    if (got.ok()) {
      EXPECT_EQ(Expand(*got), c.want) << c.name;
    } else {
      EXPECT_EQ(got.status().message().substr(0, c.message.size()), c.message) << c.name;
    }
  }
  // Every vendor call was marked as one, for the crash hints.
  EXPECT_EQ(g_calls_outside_vendor_call, 0);
  EXPECT_EQ(hints_->backend_in_call.load(), 0u);
}

// A vendor whose every frame starts at 0 s, and one whose frames are a
// nanosecond apart, each claiming 4e9 frames: a time range from them ran
// until this process's memory was gone (std::bad_alloc, then SIGABRT).
cv_status AllAtZero(cv_session*, int64_t index, cv_frame_info* out, cv_error*) {
  out->index = index;
  out->pts_seconds = 0;
  return CV_OK;
}

cv_status NanosecondApart(cv_session*, int64_t index, cv_frame_info* out, cv_error*) {
  out->index = index;
  out->pts_seconds = static_cast<double>(index) * 1e-9;
  return CV_OK;
}

TEST_F(ResolveSelectionTest, ATimeRangeWhoseFramesNeverReachItsStopIsAnError) {
  session_.opened.metadata.num_frames_from_scan = 4'000'000'000;
  vtable_.get_frame_info = AllAtZero;
  absl::StatusOr<ResolvedFrames> got = ResolveSelection({ipc::PtsRange{0.0, 1.0}}, session_);
  ASSERT_EQ(got.status().code(), absl::StatusCode::kInternal) << got.status();
  EXPECT_EQ(got.status().message(),
            "the backend's frame times do not advance: frames 0 to 64 all start at or before 0 s (at most 64 frames in "
            "a row may share a time)");
  // However long the range: the bound is the time the frames cover.
  vtable_.get_frame_info = NanosecondApart;
  for (double stop : {0.5, 1e6, std::numeric_limits<double>::infinity()}) {
    got = ResolveSelection({ipc::PtsRange{0.0, stop}}, session_);
    ASSERT_EQ(got.status().code(), absl::StatusCode::kInternal) << got.status();
    EXPECT_EQ(got.status().message(),
              "the backend's frame times put 66 frames in 6.5e-08 s (at most 10000 a second, and 64 more)");
  }
  // A first frame long before the start (or at no finite time) lends the
  // frames after it no room.
  vtable_.get_frame_info = [](cv_session*, int64_t index, cv_frame_info* out, cv_error*) {
    out->index = index;
    out->pts_seconds = index == 0 ? -1000.0 : static_cast<double>(index) * 1e-9;
    return CV_OK;
  };
  got = ResolveSelection({ipc::PtsRange{0.0, 1e6}}, session_);
  ASSERT_EQ(got.status().code(), absl::StatusCode::kInternal) << got.status();
  EXPECT_EQ(std::string(got.status().message()),
            "the backend's frame times put 66 frames in 6.5e-08 s (at most 10000 a second, and 64 more)");
  vtable_.get_frame_info = [](cv_session*, int64_t index, cv_frame_info* out, cv_error*) {
    out->index = index;
    out->pts_seconds = index == 0 ? -std::numeric_limits<double>::infinity() : static_cast<double>(index) * 1e-9;
    return CV_OK;
  };
  got = ResolveSelection({ipc::PtsRange{0.0, 1e6}}, session_);
  ASSERT_EQ(got.status().code(), absl::StatusCode::kInternal) << got.status();
  EXPECT_EQ(std::string(got.status().message()), "the backend's frame 0 starts at -inf s (a time is finite)");
  // 64 frames sharing a time, then on: a range as long as it has frames.
  vtable_.get_frame_info = [](cv_session*, int64_t index, cv_frame_info* out, cv_error*) {
    out->index = index;
    out->pts_seconds = index < 64 ? 0.0 : (index - 63) / 10.0;
    return CV_OK;
  };
  got = ResolveSelection({ipc::PtsRange{0.0, 0.3}}, session_);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->size(), 66u);
}

TEST_F(ResolveSelectionTest, WithNoFrameCountIndicesAreTakenAsGiven) {
  session_.opened.metadata.num_frames_from_scan = -1;
  session_.opened.metadata.num_frames_from_header = -1;
  absl::StatusOr<ResolvedFrames> got = ResolveSelection({ipc::IndexList{{100, 0}}}, session_);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(Expand(*got), (std::vector<int64_t>{100, 0}));
  // A negative index cannot be resolved without an end.
  absl::Status negative = ResolveSelection({ipc::IndexList{{-1}}}, session_).status();
  EXPECT_EQ(negative.code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(negative.message(),
            "frame index -1 cannot be resolved: the stream's frame count is unknown (no scan, no count in its "
            "header, no duration and rate to estimate it from)");
  // A range is kept unexpanded: its stop may lie past the end.
  got = ResolveSelection({ipc::IndexRange{0, 1'000'000'000'000, 1}}, session_);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->size(), 1'000'000'000'000u);
  EXPECT_EQ((*got)[999'999'999'999], 999'999'999'999);
}

TEST_F(ResolveSelectionTest, WithoutAHeaderCountTheDurationGivesAnEstimate) {
  session_.opened.metadata.num_frames_from_scan = -1;
  session_.opened.metadata.num_frames_from_header = -1;
  session_.opened.metadata.duration_seconds = 0.96;  // x 10 fps: about 10 frames
  session_.opened.metadata.average_fps = 10;
  absl::StatusOr<ResolvedFrames> got = ResolveSelection({ipc::IndexList{{-1, -10, 12}}}, session_);
  ASSERT_TRUE(got.ok()) << got.status();
  // Past the estimate, an index is the backend's to judge: it may be there.
  EXPECT_EQ(Expand(*got), (std::vector<int64_t>{9, 0, 12}));
  absl::Status before = ResolveSelection({ipc::IndexList{{-11}}}, session_).status();
  EXPECT_EQ(before.code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(before.message(),
            "frame index -11 is out of range: the stream has about 10 frames (estimated from its duration and frame "
            "rate: its header has no count)");
}

TEST_F(ResolveSelectionTest, TheHeadersCountServesWhenThereWasNoScan) {
  session_.opened.metadata.num_frames_from_scan = -1;
  session_.opened.metadata.num_frames_from_header = 5;
  EXPECT_EQ(ResolveSelection({ipc::IndexList{{5}}}, session_).status().code(), absl::StatusCode::kOutOfRange);
  absl::StatusOr<ResolvedFrames> got = ResolveSelection({ipc::IndexList{{-1}}}, session_);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(Expand(*got), (std::vector<int64_t>{4}));
}

}  // namespace
}  // namespace codecvisor::runner
