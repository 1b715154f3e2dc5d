// File: backends/cpu/cpu_backend_threads_test.cc
//
// A decoder whose threads the process may not start (its user at
// RLIMIT_NPROC) is a shortage, CV_ERROR_RESOURCE_EXHAUSTED with the
// refusal's reason, not a stream the backend cannot decode: the runner
// tells whose limit refused it (backends/sdk/runner/thread_shortage.h),
// and a caller must not skip a good file as unsupported. Root is not held
// to RLIMIT_NPROC, so a child's clone is refused as at that limit.

#include <cerrno>
#include <cstring>
#include <string>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/test_media.h"
#include "base/threads_refused_for_test.h"
#include "gtest/gtest.h"

namespace codecvisor::cpu {
namespace {

using testing::MakeVideo;
using testing::TestSession;

TEST(CpuBackendThreadsTest, ADecoderWhoseThreadsAreRefusedIsAShortage) {
  const std::string video = MakeVideo("threads.mp4",
                                      "-f lavfi -i testsrc2=size=64x48:rate=25 -frames:v 10 -c:v libx264 "
                                      "-preset veryfast -pix_fmt yuv420p");
  absl::StatusOr<std::string> said = ::codecvisor::testing::RunWithThreadsRefused([&] {
    TestSession::Options options;
    options.decoder_threads = 2;  // FFmpeg starts its frame threads as it opens
    TestSession session(video, options);
    return std::to_string(session.open_status()) + " " + session.open_message();
  });
  ASSERT_TRUE(said.ok()) << said.status();
  EXPECT_EQ(said->rfind(std::to_string(CV_ERROR_RESOURCE_EXHAUSTED) + " ", 0), 0u) << *said;
  EXPECT_NE(said->find(std::strerror(EAGAIN)), std::string::npos) << *said;
}

}  // namespace
}  // namespace codecvisor::cpu
