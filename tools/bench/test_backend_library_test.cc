#include "tools/bench/test_backend_library.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace codecvisor::bench {
namespace {

// The test's data dependency puts the synthetic backend in its runfiles,
// where the benchmarks' binary finds it too.
TEST(TestBackendLibraryTest, FindsTheLibraryNextToThisBinary) {
  auto found = FindTestBackendLibrary("libcodecvisor_synthetic.so", "", "--synthetic-library");
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_TRUE(found->ends_with("backends/testing/libcodecvisor_synthetic.so")) << *found;
  EXPECT_TRUE(std::filesystem::exists(*found)) << *found;
}

TEST(TestBackendLibraryTest, AGivenPathWinsAndMustBeReadable) {
  auto given = FindTestBackendLibrary("libcodecvisor_synthetic.so", "/dev/null", "--synthetic-library");
  ASSERT_TRUE(given.ok()) << given.status();
  EXPECT_EQ(*given, "/dev/null");
  auto missing = FindTestBackendLibrary("libcodecvisor_synthetic.so", "/nonexistent.so", "--synthetic-library");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

TEST(TestBackendLibraryTest, NotFoundSaysHowToBuildItOrWhichFlagGivesIt) {
  auto none = FindTestBackendLibrary("libcodecvisor_none.so", "", "--none-library");
  ASSERT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("//backends/testing:libcodecvisor_none.so"), std::string::npos)
      << none.status();
  EXPECT_NE(none.status().message().find("--none-library"), std::string::npos) << none.status();
}

}  // namespace
}  // namespace codecvisor::bench
