// File: tests/fault_test_support.h
//
// Shared set-up for the supervision suites: a Host with the synthetic and
// faulty test backends registered, synthetic videos written on demand, and
// the leak checks (descriptors, channel mappings, child processes) each
// test ends with.

#ifndef CODECVISOR_TESTS_FAULT_TEST_SUPPORT_H_
#define CODECVISOR_TESTS_FAULT_TEST_SUPPORT_H_

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "core/host.h"

namespace codecvisor::testing {

std::string Runfile(const std::string& path);
// Writes `text` to a file in TEST_TMPDIR and returns its path.
std::string WriteFile(const std::string& name, const std::string& text);
// A synthetic video description with 40 frames of 32x24 at 10 fps.
std::string WriteSyntheticVideo(const std::string& name, const std::string& extra = "");

// Entries in /proc/self/fd, and /proc/self/maps lines of channel memfds.
int CountOpenFds();
int CountChannelMappings();
// Child processes of this process that still exist (zombies included).
int CountChildren();

// True if `frame` is synthetic frame `index` (32x24 RGB24), byte for byte.
bool IsSyntheticFrame(const Frame& frame, int64_t index);

class FaultTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  // Creates the host (call again after changing options_).
  void StartHost();
  absl::StatusOr<std::unique_ptr<VideoDecoder>> Open(const std::string& path, const std::string& device,
                                                     DecoderOptions options = {});
  BackendStatus StatusOf(const std::string& name);

  HostOptions options_;
  std::unique_ptr<Host> host_;
  int fds_before_ = 0;
};

}  // namespace codecvisor::testing

#endif  // CODECVISOR_TESTS_FAULT_TEST_SUPPORT_H_
