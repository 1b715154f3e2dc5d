// File: tests/host_test_support.h
//
// Shared set-up for the host suites that run the synthetic backend in a real
// child process (host_synthetic_test, host_runner_threads_test,
// host_late_buffer_test): a Host with the synthetic backend registered, a
// 40-frame clip, and byte-for-byte frame checks.

#ifndef CODECVISOR_TESTS_HOST_TEST_SUPPORT_H_
#define CODECVISOR_TESTS_HOST_TEST_SUPPORT_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "core/host.h"

namespace codecvisor::testing {

using ::codecvisor::internal::Host;
using ::codecvisor::internal::VideoDecoder;
using ::codecvisor::internal::DecoderOptions;
using ::codecvisor::internal::Frame;
using ::codecvisor::internal::OutputFormat;

// The pid of the backend named `name` (0 while it has no process).
// The runner and built-in manifests of this test's runfiles.
InstallLayout TestLayout();

pid_t BackendPid(const Host& host, const std::string& name);
inline pid_t SyntheticPid(const Host& host) { return BackendPid(host, "synthetic"); }

// A Host with the synthetic backend; video_ is a 40-frame 32x24 clip at
// 10 fps starting at 0.5 s.
class HostSyntheticTest : public ::testing::Test {
 protected:
  void SetUp() override;
  absl::StatusOr<std::unique_ptr<VideoDecoder>> Open(DecoderOptions options = {});
  // Two decoders that have each had a frame (so each has its session
  // thread), and the pid of their backend.
  void OpenTwoSessions(std::unique_ptr<VideoDecoder>* a, std::unique_ptr<VideoDecoder>* b, pid_t* pid);

  std::unique_ptr<Host> host_;
  std::string video_;
};

// Frame `index` of video_, in `format`, byte for byte, with its pts.
void ExpectFrame(const Frame& f, int64_t index, OutputFormat format = OutputFormat::kRgb24);

// With 2 slots, both held by the caller: the next frame is a clear error,
// and a slot given back lets it through.
void ExpectHoldingEverySlotIsAClearError(absl::StatusOr<std::unique_ptr<VideoDecoder>> decoder);

}  // namespace codecvisor::testing

#endif  // CODECVISOR_TESTS_HOST_TEST_SUPPORT_H_
