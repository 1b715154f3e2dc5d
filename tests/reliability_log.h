// File: tests/reliability_log.h
//
// The record behind docs/RELIABILITY.md: each reliability suite notes every
// fault it tried, how many times, and what happened, as one tab-separated
// line in $TEST_UNDECLARED_OUTPUTS_DIR/reliability.tsv (Bazel keeps it in
// bazel-testlogs/<test>/test.outputs/). tools/reliability_report.sh runs the
// suites and renders the lines into the document. Outside Bazel (no such
// variable) nothing is written. Thread-safe.

#ifndef CODECVISOR_TESTS_RELIABILITY_LOG_H_
#define CODECVISOR_TESTS_RELIABILITY_LOG_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace codecvisor::testing {

// One row: in `suite`, `fault` was tried `times` times; `outcome` says
// what the caller saw and what the backend did (e.g. "poison: ABORTED
// naming the request; 2 restarts; other sessions unaffected"). `passed`:
// whether that outcome is the required one.
void RecordFault(absl::string_view suite, absl::string_view fault, int64_t times, absl::string_view outcome,
                 bool passed);

}  // namespace codecvisor::testing

#endif  // CODECVISOR_TESTS_RELIABILITY_LOG_H_
