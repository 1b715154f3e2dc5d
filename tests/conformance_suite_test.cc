// The conformance suite must be able to fail. Run against the synthetic
// test backend, which speaks the protocol and is sandboxed but decodes only
// its own text descriptions, it passes the handshake, sandbox and shutdown
// checks and fails every check that decodes the sample, naming the file.

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "tests/test_paths.h"
#include "tools/conformance/conformance.h"

namespace codecvisor::conformance {
namespace {

using ::codecvisor::testing::Runfile;

ConformanceOptions Options() {
  ConformanceOptions options;
  options.scratch_dir = std::getenv("TEST_TMPDIR");
  options.host.layout = InstallLayout{Runfile("backends/sdk/runner/codecvisor-backend"), Runfile("backends/cpu")};
  options.host.discovery = DiscoveryOptions{{}, Runfile("backends/cpu"), false};
  options.timeout = std::chrono::seconds(20);
  return options;
}

TEST(ConformanceSuiteTest, FailsABackendThatCannotDecodeTheSamples) {
  int callbacks = 0;
  ConformanceOptions options = Options();
  options.on_check = [&](const CheckResult&) { ++callbacks; };
  absl::StatusOr<ConformanceReport> report =
      RunConformance({.backend = "", .manifest_path = Runfile("backends/testing/synthetic.toml")}, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->backend, "synthetic");
  EXPECT_EQ(callbacks, static_cast<int>(report->checks.size()));
  std::map<std::string, CheckResult> by_name;
  for (const CheckResult& c : report->checks) by_name[c.name] = c;

  for (const char* passes : {"handshake", "sandbox", "shutdown"}) {
    ASSERT_TRUE(by_name.count(passes)) << passes;
    EXPECT_TRUE(by_name[passes].passed) << passes << ": " << by_name[passes].detail;
  }
  for (const char* fails : {"metadata_h264", "frames_h264", "access_h264", "approximate_h264", "planar_h264",
                            "concurrency", "crash_recovery"}) {
    ASSERT_TRUE(by_name.count(fails)) << fails;
    EXPECT_FALSE(by_name[fails].passed) << fails;
    EXPECT_NE(by_name[fails].detail.find("sample_h264.mkv"), std::string::npos) << by_name[fails].detail;
  }
  EXPECT_FALSE(report->ok());
  EXPECT_GE(report->failed(), 7);
}

TEST(ConformanceSuiteTest, UnknownBackendIsAnErrorNotAReport) {
  absl::StatusOr<ConformanceReport> report = RunConformance({.backend = "no_such_backend", .manifest_path = ""}, Options());
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(report.status().message().find("cpu"), std::string::npos) << "lists what is installed";
}

}  // namespace
}  // namespace codecvisor::conformance
