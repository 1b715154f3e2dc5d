// The soak benchmark (tools/bench/soak_bench.h) as a test: 16 decoders on
// the cpu and faulty backends for --seconds (20 by default; the 60 s run is
// //tests:soak_60s_test, tagged manual), a child killed on average every
// 200 ms. Only poison requests may fail; no frame may be wrong; the host
// leaves no child process and no descriptor behind. The figures are rows
// of docs/RELIABILITY.md (tests/reliability_log.h).

#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "tests/reliability_log.h"
#include "tests/test_paths.h"
#include "tools/bench/soak_bench.h"

namespace codecvisor::bench {
namespace {

double g_seconds = 20;

using ::codecvisor::testing::Runfile;

// The soak's figures as rows of the reliability report, each passing on the
// same condition the test expects below.
// Host memory does not grow with the work. Not judged under ASan or TSan:
// their allocators keep freed memory in quarantine (ASan's grew the host by
// 180 MB in 20 s while the plain build stays flat).
bool RssFlat(const SoakBenchResult& r) {
#ifdef CODECVISOR_SANITIZER
  return true;
#else
  return r.rss_kb_end < r.rss_kb_start + 64 * 1024;
#endif
}

void RecordFigures(const SoakBenchResult& r) {
  const char* target = std::getenv("TEST_TARGET");
  const std::string suite(absl::StripPrefix(target == nullptr ? "soak_test" : target, "//tests:"));
  const auto record = [&](const std::string& fault, uint64_t times, const std::string& outcome, bool passed) {
    codecvisor::testing::RecordFault(suite, fault, static_cast<int64_t>(times), outcome, passed);
  };
  record(absl::StrCat("SIGKILL from outside at random, on average every ", r.crash_interval_ms, " ms, ",
                      r.decoders, " decoders on cpu and faulty for ", static_cast<int>(r.seconds), " s"),
         r.crashes_injected,
         absl::StrCat("restarts: cpu ", r.restarts_cpu, ", faulty ", r.restarts_faulty,
                      " (its random faults and the poison included); ", r.requests_retried,
                      " requests served after a re-issue"),
         r.crashes_injected >= static_cast<uint64_t>(g_seconds * 1000 / 200 / 3) &&
             r.restarts_cpu + r.restarts_faulty >= r.crashes_injected / 2 && r.requests_retried > 0);
  record("poison request (always crashes faulty), asked again and again by one decoder", r.failed_poison,
         absl::StrCat("failed as poison ×", r.failed_poison), r.failed_poison > 0);
  record("requests during the soak", r.requests_served + r.requests_failed,
         absl::StrCat("served ", r.requests_served, " (", r.requests_retried, " after a re-issue); failed ",
                      r.requests_failed, ": poison ", r.failed_poison, ", flaky request crashed twice ",
                      r.failed_flaky_twice, ", other ", r.failed_other,
                      r.unexpected.empty() ? "" : " (" + absl::StrJoin(r.unexpected, "; ") + ")"),
         r.failed_other == 0 && r.requests_served > 100);
  record("frames checked by checksum against a crash-free run", r.frames_checked,
         absl::StrCat(r.wrong_frames, " wrong"), r.wrong_frames == 0);
  record("the host after the soak", 1,
         absl::StrCat("RSS ", r.rss_kb_start, " -> ", r.rss_kb_end, " KiB; descriptors ", r.fds_start, " -> ",
                      r.fds_end, "; child processes left ", r.children_left),
         r.children_left == 0 && r.fds_end <= r.fds_start && RssFlat(r));
}

TEST(SoakTest, OnlyPoisonFailsAndNothingLeaks) {
  SoakBenchOptions options;
  options.seconds = g_seconds;
  options.decoders = 16;
  options.crash_interval_ms = 200;
  options.seed = 20261128;  // which decoder asks what, and which process is killed: the same every run
  options.faulty_library = Runfile("backends/testing/libcodecvisor_faulty.so");
  options.layout = InstallLayout{Runfile("backends/sdk/runner/codecvisor-backend"), Runfile("backends/cpu")};
  absl::StatusOr<SoakBenchResult> result = RunSoakBench(options);
  ASSERT_TRUE(result.ok()) << result.status();
  std::cout << result->ToText() << result->ToJson() << "\n";
  RecordFigures(*result);
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
  EXPECT_TRUE(RssFlat(*result)) << "host RSS grew by more than 64 MiB";
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
