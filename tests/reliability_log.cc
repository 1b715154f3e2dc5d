#include "tests/reliability_log.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace codecvisor::testing {
namespace {

// Tabs and newlines would break the row.
std::string Cell(absl::string_view text) { return absl::StrReplaceAll(text, {{"\t", " "}, {"\n", " "}}); }

}  // namespace

void RecordFault(absl::string_view suite, absl::string_view fault, int64_t times, absl::string_view outcome,
                 bool passed) {
  const char* dir = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR");
  if (dir == nullptr || *dir == '\0') return;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  FILE* f = std::fopen(absl::StrCat(dir, "/reliability.tsv").c_str(), "a");
  if (f == nullptr) return;
  const std::string row = absl::StrCat(Cell(suite), "\t", Cell(fault), "\t", times, "\t", Cell(outcome), "\t",
                                       passed ? "pass" : "FAIL", "\n");
  std::fputs(row.c_str(), f);
  std::fclose(f);
}

}  // namespace codecvisor::testing
