// File: tools/bench/targets.h
//
// The targets a benchmark checks its figures against, and how they are
// printed: a `targets` array in the JSON output, "(target >= 0.97: met)"
// in the text. Pure values; thread-compatible.

#ifndef CODECVISOR_TOOLS_BENCH_TARGETS_H_
#define CODECVISOR_TOOLS_BENCH_TARGETS_H_

#include <string>
#include <vector>

#include "tools/cli/json.h"

namespace codecvisor::bench {

struct TargetCheck {
  std::string figure;  // the JSON key it judges, e.g. "ratio"
  std::string target;  // e.g. ">= 0.97"
  bool met = false;
};

// Writes key "targets": [{"figure": ..., "target": ..., "met": ...}, ...]
// into the object `w` is inside, and "targets_met": whether all are.
void WriteTargets(cli::JsonWriter& w, const std::vector<TargetCheck>& checks);

// "(target >= 0.97: met)" for the check on `figure`; empty if none.
std::string TargetNote(const std::vector<TargetCheck>& checks, const std::string& figure);

}  // namespace codecvisor::bench

#endif  // CODECVISOR_TOOLS_BENCH_TARGETS_H_
