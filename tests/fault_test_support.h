// File: tests/fault_test_support.h
//
// Shared set-up for the supervision suites: a Host with the synthetic and
// faulty test backends registered, synthetic videos written on demand, the
// leak checks (descriptors, channel mappings, child processes) each test
// ends with, and the rows of docs/RELIABILITY.md each test leaves behind.
// Not thread-safe: FaultRow is filled from the test's main thread.

#ifndef CODECVISOR_TESTS_FAULT_TEST_SUPPORT_H_
#define CODECVISOR_TESTS_FAULT_TEST_SUPPORT_H_

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/host.h"
#include "tests/test_paths.h"

namespace codecvisor::testing {

using ::codecvisor::internal::Host;
using ::codecvisor::internal::HostOptions;
using ::codecvisor::internal::BackendStatus;
using ::codecvisor::internal::VideoDecoder;
using ::codecvisor::internal::DecoderOptions;
using ::codecvisor::internal::Frame;

// How many times each fault is tried: a few in the regular suites, where
// core/supervisor_test.cc and core/blame_test.cc cover the state machine;
// 20 in their long variants, which tools/reliability_report.sh runs.
#ifndef CODECVISOR_FAULT_RUNS
#define CODECVISOR_FAULT_RUNS 3
#endif
inline constexpr int kRuns = CODECVISOR_FAULT_RUNS;

// A synthetic video description with 40 frames of 32x24 at 10 fps.
std::string WriteSyntheticVideo(const std::string& name, const std::string& extra = "");

// Entries in /proc/self/fd, and /proc/self/maps lines of channel memfds.
int CountOpenFds();
int CountChannelMappings();
// Child processes of this process that still exist (zombies included).
int CountChildren();

// True if `frame` is synthetic frame `index` (32x24 RGB24), byte for byte.
bool IsSyntheticFrame(const Frame& frame, int64_t index);

// One fault a test tries, as a row of docs/RELIABILITY.md
// (tests/reliability_log.h): the test counts its tries and what it saw, as
// it sees it, so that a row is recorded even when an assertion ends the
// test early. FaultTest::TearDown adds its leak checks to every row and
// records them; a row passes if its test did and, where the test gave the
// row a verdict of its own, that verdict holds.
class FaultRow {
 public:
  explicit FaultRow(std::string fault) : fault_(std::move(fault)) {}
  // Counts one more (or `n` more) of `what`: "poison request: ABORTED".
  void Saw(const std::string& what, int64_t n = 1);
  // A fact that is not counted: "40 restarts, backend ready".
  void Note(const std::string& fact);
  // Gives the row a verdict of its own (for a test that tries many faults):
  // it fails if any verdict was false.
  void Verdict(bool ok) { verdict_ = verdict_.value_or(true) && ok; }
  // "poison request: ABORTED ×20; 40 restarts, backend ready".
  std::string Outcome() const;
  const std::string& fault() const { return fault_; }
  const std::optional<bool>& verdict() const { return verdict_; }

  int64_t tries = 0;

 private:
  static constexpr int64_t kNote = -1;
  std::string fault_;
  std::optional<bool> verdict_;
  std::vector<std::pair<std::string, int64_t>> seen_;  // in the order first seen; kNote: a note
};

// The name of a status code as the outcome column shows it: "OK", "ABORTED".
std::string CodeName(const absl::Status& status);
// What a request for synthetic frame `index` got: "correct frame", "WRONG
// frame", or the error's code name.
std::string FrameOutcome(const absl::StatusOr<Frame>& frame, int64_t index);

// Checks `done` every `poll` until it holds or `limit` has passed; returns
// its last answer. For a state another process or thread reaches in its
// own time: the limit is for a machine so loaded that something is wrong.
bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds poll,
               std::chrono::seconds limit = std::chrono::seconds(20));

class FaultTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  // Creates the host (call again after changing options_).
  void StartHost();
  absl::StatusOr<std::unique_ptr<VideoDecoder>> Open(const std::string& path, const std::string& device,
                                                     DecoderOptions options = {});
  BackendStatus StatusOf(const std::string& name);
  // The row for `fault`, created on first use; recorded in TearDown under
  // the Bazel test's name.
  FaultRow& Row(const std::string& fault);

  HostOptions options_;
  std::unique_ptr<Host> host_;
  int fds_before_ = 0;

 private:
  std::deque<FaultRow> rows_;  // a deque: references from Row() stay valid
};

}  // namespace codecvisor::testing

#endif  // CODECVISOR_TESTS_FAULT_TEST_SUPPORT_H_
