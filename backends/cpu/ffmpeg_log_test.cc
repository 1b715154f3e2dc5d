// File: backends/cpu/ffmpeg_log_test.cc
//
// Log level names, and the quiet default applied when the backend is
// created.

#include "backends/cpu/ffmpeg_log.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

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

// The first error line logged on a thread while it is asked for, without
// its newline; not warnings, not another thread's, not after.
TEST(FfmpegLogTest, TheFirstErrorLoggedOnAThreadIsKept) {
  const cv_backend_v1* table = codecvisor_backend_v1();
  cv_backend* backend = nullptr;
  cv_error error{};
  ASSERT_EQ(table->create("", &backend, &error), CV_OK) << error.message;
  {
    FirstLoggedError logged;
    av_log(nullptr, AV_LOG_WARNING, "a warning\n");
    std::thread([] { av_log(nullptr, AV_LOG_ERROR, "another thread's\n"); }).join();
    EXPECT_EQ(logged.line(), "");
    av_log(nullptr, AV_LOG_ERROR, "%s atom not found\n", "moov");
    av_log(nullptr, AV_LOG_ERROR, "a second error\n");
    EXPECT_EQ(logged.line(), "moov atom not found");
  }
  {
    FirstLoggedError logged;
    av_log(nullptr, AV_LOG_ERROR, "%s\n", std::string(1000, 'x').c_str());
    EXPECT_EQ(logged.line(), std::string(255, 'x'));  // cut, never overrun
  }
  av_log(nullptr, AV_LOG_ERROR, "with nobody asking\n");  // kept nowhere
  table->destroy(backend);
}

// Under the backend's memory_mb (RLIMIT_AS) with less than the headroom
// left, any error line counts: FFmpeg reports most allocations it could not
// make as damaged data ("no frame!", then frames made without references:
// wrong frames returned as success before). In a child whose address space
// is limited.
TEST(FfmpegLogTest, AnErrorWithTheAddressSpaceUsedUpIsAnAllocationFailure) {
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "AddressSanitizer's shadow memory fits under no address-space limit (the plain run checks this)";
#endif
  const cv_backend_v1* table = codecvisor_backend_v1();
  cv_backend* backend = nullptr;
  cv_error error{};
  ASSERT_EQ(table->create("", &backend, &error), CV_OK) << error.message;
  ASSERT_TRUE(RoomForAllocations());
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::ifstream statm("/proc/self/statm");
    size_t pages = 0;
    if (!(statm >> pages)) _exit(10);
    const rlimit limit{pages * sysconf(_SC_PAGESIZE) + (size_t{4} << 20), RLIM_INFINITY};
    if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(11);
    int code = 0;
    if (RoomForAllocations()) code |= 1;
    const uint64_t before = AllocationFailures();
    av_log(nullptr, AV_LOG_ERROR, "no frame!\n");
    if (AllocationFailures() != before + 1) code |= 2;
    av_log(nullptr, AV_LOG_WARNING, "a warning\n");
    if (AllocationFailures() != before + 1) code |= 4;
    _exit(code);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: room reported, 2: the error not counted, 4: a warning counted, 10+: set-up";
  // With room, an error line is the file's.
  const uint64_t before = AllocationFailures();
  av_log(nullptr, AV_LOG_ERROR, "no frame!\n");
  EXPECT_EQ(AllocationFailures(), before);
  table->destroy(backend);
}

}  // namespace
}  // namespace codecvisor::cpu
