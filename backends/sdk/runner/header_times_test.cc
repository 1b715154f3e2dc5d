#include "backends/sdk/runner/header_times.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdio>

namespace codecvisor::runner {
namespace {

cv_status g_status = CV_OK;
int g_calls = 0;

cv_status GetHeaderTimes(cv_session*, cv_header_times* out, cv_error* error) {
  ++g_calls;
  if (g_status != CV_OK) {
    std::snprintf(error->message, sizeof(error->message), "the header is unreadable");
    return g_status;
  }
  out->duration_seconds = 10.5;
  out->begin_stream_seconds = -0.5;
  return CV_OK;
}

class HeaderTimesTest : public ::testing::Test {
 protected:
  HeaderTimesTest() {
    table_.struct_size = sizeof(table_);
    table_.get_header_times = &GetHeaderTimes;
    g_status = CV_OK;
    g_calls = 0;
    scanned_.num_frames_from_scan = 250;
    scanned_.duration_seconds = 10;
    scanned_.begin_stream_seconds = 0;
    approximate_.duration_seconds = 9.96;
    approximate_.begin_stream_seconds = 0.04;
  }
  cv_backend_v1 table_{};
  ipc::StreamMetadata scanned_;
  ipc::StreamMetadata approximate_;
};

TEST_F(HeaderTimesTest, TheVendorsAnswerInEitherMode) {
  for (const ipc::StreamMetadata* m : {&scanned_, &approximate_}) {
    absl::StatusOr<std::optional<ipc::HeaderTimes>> times = HeaderTimesOf(table_, nullptr, *m);
    ASSERT_TRUE(times.ok()) << times.status();
    EXPECT_EQ(*times, (ipc::HeaderTimes{10.5, -0.5}));
  }
  EXPECT_EQ(g_calls, 2);
}

TEST_F(HeaderTimesTest, WithoutTheFunctionApproximateModesTimesAreTheHeaders) {
  table_.get_header_times = nullptr;
  absl::StatusOr<std::optional<ipc::HeaderTimes>> times = HeaderTimesOf(table_, nullptr, approximate_);
  ASSERT_TRUE(times.ok()) << times.status();
  EXPECT_EQ(*times, (ipc::HeaderTimes{9.96, 0.04}));
  times = HeaderTimesOf(table_, nullptr, scanned_);
  ASSERT_TRUE(times.ok()) << times.status();
  EXPECT_FALSE(times->has_value()) << "exact mode's times are the scan's, not the header's";
}

TEST_F(HeaderTimesTest, AnOlderTableIsNotReadPastItsSize) {
  table_.struct_size = offsetof(cv_backend_v1, get_header_times);
  EXPECT_FALSE(GivesHeaderTimes(table_));
  absl::StatusOr<std::optional<ipc::HeaderTimes>> times = HeaderTimesOf(table_, nullptr, scanned_);
  ASSERT_TRUE(times.ok()) << times.status();
  EXPECT_FALSE(times->has_value());
  EXPECT_EQ(g_calls, 0);
}

TEST_F(HeaderTimesTest, TheVendorsFailureKeepsItsStatusAndMessage) {
  g_status = CV_ERROR_CORRUPT_DATA;
  absl::StatusOr<std::optional<ipc::HeaderTimes>> times = HeaderTimesOf(table_, nullptr, scanned_);
  ASSERT_FALSE(times.ok());
  EXPECT_EQ(times.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(times.status().message().find("the header is unreadable"), std::string::npos) << times.status();
}

cv_aspect_ratio g_ratio{};

cv_status GetPixelAspectRatio(cv_session*, cv_aspect_ratio* out, cv_error*) {
  ++g_calls;
  *out = g_ratio;
  return CV_OK;
}

TEST_F(HeaderTimesTest, APixelAspectRatioIsTheVendorsWhereItKnowsOne) {
  table_.get_pixel_aspect_ratio = &GetPixelAspectRatio;
  g_ratio = {8, 9};
  absl::StatusOr<std::optional<ipc::Rational>> ratio = PixelAspectRatioOf(table_, nullptr, "acme");
  ASSERT_TRUE(ratio.ok()) << ratio.status();
  EXPECT_EQ(*ratio, (ipc::Rational{8, 9}));
  g_ratio = {0, 1};  // the file does not say
  ratio = PixelAspectRatioOf(table_, nullptr, "acme");
  ASSERT_TRUE(ratio.ok()) << ratio.status();
  EXPECT_FALSE(ratio->has_value());
  for (cv_aspect_ratio lie : {cv_aspect_ratio{-4, 3}, cv_aspect_ratio{4, 0}, cv_aspect_ratio{4, -3}}) {
    g_ratio = lie;
    ratio = PixelAspectRatioOf(table_, nullptr, "acme");
    EXPECT_EQ(ratio.status().code(), absl::StatusCode::kInternal) << lie.num << "/" << lie.den;
    EXPECT_NE(ratio.status().message().find("backend 'acme' reported a pixel aspect ratio of"), std::string::npos)
        << ratio.status();
  }
  // An older table, or none given: unknown, and nothing is called.
  g_calls = 0;
  table_.struct_size = offsetof(cv_backend_v1, get_pixel_aspect_ratio);
  ratio = PixelAspectRatioOf(table_, nullptr, "acme");
  ASSERT_TRUE(ratio.ok() && !ratio->has_value());
  table_.struct_size = sizeof(table_);
  table_.get_pixel_aspect_ratio = nullptr;
  ratio = PixelAspectRatioOf(table_, nullptr, "acme");
  ASSERT_TRUE(ratio.ok() && !ratio->has_value());
  EXPECT_EQ(g_calls, 0);
}

}  // namespace
}  // namespace codecvisor::runner
