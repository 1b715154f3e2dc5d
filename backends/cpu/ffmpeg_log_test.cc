// File: backends/cpu/ffmpeg_log_test.cc
//
// Log level names, and the quiet default applied when the backend is
// created.

#include "backends/cpu/ffmpeg_log.h"

#include <cstdlib>

#include "backends/cpu/cpu_backend.h"
#include "gtest/gtest.h"

extern "C" {
#include <libavutil/log.h>
}

namespace codecvisor::cpu {
namespace {

TEST(FfmpegLogTest, LevelNamesAreTheCliOnes) {
  EXPECT_EQ(ParseFfmpegLogLevel("quiet"), AV_LOG_QUIET);
  EXPECT_EQ(ParseFfmpegLogLevel("error"), AV_LOG_ERROR);
  EXPECT_EQ(ParseFfmpegLogLevel("info"), AV_LOG_INFO);
  EXPECT_EQ(ParseFfmpegLogLevel("trace"), AV_LOG_TRACE);
  EXPECT_EQ(ParseFfmpegLogLevel(""), std::nullopt);
  EXPECT_EQ(ParseFfmpegLogLevel("INFO"), std::nullopt);
  EXPECT_EQ(ParseFfmpegLogLevel("48"), std::nullopt);
}

TEST(FfmpegLogTest, AllocationFailuresAreToldFromOtherErrors) {
  EXPECT_TRUE(SaysOutOfMemory("guess_dc() is out of memory\n"));
  EXPECT_TRUE(SaysOutOfMemory("Out of memory"));
  EXPECT_TRUE(SaysOutOfMemory("Error submitting packet: Cannot allocate memory"));
  EXPECT_FALSE(SaysOutOfMemory("Invalid NAL unit size (1702 > 34)."));
  EXPECT_FALSE(SaysOutOfMemory("no frame!"));
}

TEST(FfmpegLogTest, CreatingTheBackendQuietsFfmpeg) {
  unsetenv(kLogLevelEnv);
  ASSERT_EQ(av_log_get_level(), AV_LOG_INFO);  // FFmpeg's own default
  const cv_backend_v1* table = codecvisor_backend_v1();
  cv_backend* backend = nullptr;
  cv_error error{};
  ASSERT_EQ(table->create("", &backend, &error), CV_OK) << error.message;
  EXPECT_EQ(av_log_get_level(), AV_LOG_QUIET);
  table->destroy(backend);
}

// Counted from FFmpeg's error lines once the backend is created, whatever
// the level shows; not from warnings.
TEST(FfmpegLogTest, TheLogCountsAllocationFailuresAtAnyLevel) {
  const cv_backend_v1* table = codecvisor_backend_v1();
  cv_backend* backend = nullptr;
  cv_error error{};
  ASSERT_EQ(table->create("", &backend, &error), CV_OK) << error.message;
  const uint64_t before = AllocationFailures();
  av_log(nullptr, AV_LOG_WARNING, "out of memory, a warning\n");
  av_log(nullptr, AV_LOG_ERROR, "concealing %d DC errors\n", 3);
  EXPECT_EQ(AllocationFailures(), before);
  av_log(nullptr, AV_LOG_ERROR, "%s() is out of memory\n", "guess_dc");
  EXPECT_EQ(AllocationFailures(), before + 1);
  NoteAllocationFailure();
  EXPECT_EQ(AllocationFailures(), before + 2);
  table->destroy(backend);
}

}  // namespace
}  // namespace codecvisor::cpu
