// The main of every backend_conformance_test target (tests/conformance.bzl):
// runs the conformance suite (tools/conformance) against the backend whose
// manifest is given as --manifest=PATH, through the host, runner and
// sandbox found in the test's runfiles, and reports each check as its own
// GoogleTest case (Conformance.handshake, Conformance.frames_h264, ...),
// failing with the check's reason.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "absl/strings/strip.h"
#include "core/discovery.h"
#include "core/install_layout.h"
#include "tools/conformance/conformance.h"

namespace {

using codecvisor::conformance::CheckResult;

class CheckTest : public testing::Test {
 public:
  explicit CheckTest(CheckResult result) : result_(std::move(result)) {}
  void TestBody() override {
    if (result_.skipped) GTEST_SKIP() << result_.detail;
    EXPECT_TRUE(result_.passed) << result_.detail;
    if (result_.passed) std::cout << "  " << result_.name << ": " << result_.detail << "\n";
  }

 private:
  CheckResult result_;
};

class SetupFailure : public testing::Test {
 public:
  explicit SetupFailure(std::string why) : why_(std::move(why)) {}
  void TestBody() override { ADD_FAILURE() << "the conformance suite could not run: " << why_; }

 private:
  std::string why_;
};

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  std::string manifest;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (absl::ConsumePrefix(&arg, "--manifest=")) manifest = std::string(arg);
  }
  if (manifest.empty()) {
    std::cerr << "usage: " << argv[0] << " --manifest=PATH [gtest flags]\n";
    return 2;
  }

  codecvisor::conformance::ConformanceOptions options;
  if (const char* tmp = std::getenv("TEST_TMPDIR")) options.scratch_dir = tmp;
  // Only the built-in backend and the one under test: nothing from the
  // machine's CODECVISOR_BACKEND_PATH.
  absl::StatusOr<codecvisor::InstallLayout> layout = codecvisor::InstallLayout::Discover();
  if (layout.ok()) {
    codecvisor::DiscoveryOptions discovery = codecvisor::DiscoveryOptionsFromEnvironment(layout->builtin_dir);
    discovery.search_path.clear();
    discovery.autoload = false;
    options.host.discovery = discovery;
  }
  options.on_check = [](const CheckResult& r) {
    std::fprintf(stderr, "%s %s (%.2f s): %s\n",
                 r.passed    ? "PASS"
                 : r.skipped ? "SKIP"
                             : "FAIL",
                 r.name.c_str(), r.seconds, r.detail.c_str());
  };
  absl::StatusOr<codecvisor::conformance::ConformanceReport> report =
      codecvisor::conformance::RunConformance({.backend = "", .manifest_path = manifest}, options);
  if (!report.ok()) {
    const std::string why(report.status().ToString());
    testing::RegisterTest("Conformance", "setup", nullptr, nullptr, __FILE__, __LINE__,
                          [why]() -> testing::Test* { return new SetupFailure(why); });
  } else {
    for (const CheckResult& check : report->checks) {
      testing::RegisterTest("Conformance", check.name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                            [check]() -> testing::Test* { return new CheckTest(check); });
    }
  }
  return RUN_ALL_TESTS();
}
