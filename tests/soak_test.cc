// The soak benchmark (tools/bench/soak_bench.h) as a test: 16 decoders on
// the cpu and faulty backends for --seconds (20 by default; the 60 s run is
// //tests:soak_60s_test, tagged manual), a child killed on average every
// 200 ms. Only poison requests may fail; no frame may be wrong; the host
// leaves no child process and no descriptor behind.

#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "tools/bench/soak_bench.h"

namespace codecvisor::bench {
namespace {

double g_seconds = 20;

std::string Runfile(const std::string& path) {
  return std::string(std::getenv("TEST_SRCDIR")) + "/codecvisor/" + path;
}

TEST(SoakTest, OnlyPoisonFailsAndNothingLeaks) {
  SoakBenchOptions options;
  options.seconds = g_seconds;
  options.decoders = 16;
  options.crash_interval_ms = 200;
  options.faulty_library = Runfile("backends/testing/libcodecvisor_faulty.so");
  options.layout = InstallLayout{Runfile("backends/sdk/runner/codecvisor-backend"), Runfile("backends/cpu")};
  absl::StatusOr<SoakBenchResult> result = RunSoakBench(options);
  ASSERT_TRUE(result.ok()) << result.status();
  std::cout << result->ToText() << result->ToJson() << "\n";
  EXPECT_EQ(result->failed_other, 0u);
  EXPECT_EQ(result->wrong_frames, 0u);
  EXPECT_EQ(result->children_left, 0);
  EXPECT_LE(result->fds_end, result->fds_start);
  // The chaos happened and was survived: kills at about the asked rate,
  // restarts, re-issued requests, and the poison requests failed.
  EXPECT_GE(result->crashes_injected, static_cast<uint64_t>(g_seconds * 1000 / 200 / 3));
  EXPECT_GE(result->restarts_cpu + result->restarts_faulty, result->crashes_injected / 2);
  EXPECT_GT(result->requests_retried, 0u);
  EXPECT_GT(result->failed_poison, 0u);
  EXPECT_GT(result->requests_served, 100u);
  EXPECT_LT(result->rss_kb_end, result->rss_kb_start + 64 * 1024) << "host RSS grew by more than 64 MiB";
}

}  // namespace
}  // namespace codecvisor::bench

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (absl::ConsumePrefix(&arg, "--seconds=") && !absl::SimpleAtod(arg, &codecvisor::bench::g_seconds)) return 2;
  }
  return RUN_ALL_TESTS();
}
