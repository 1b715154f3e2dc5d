// File: tools/bench/stats.h
//
// The summary statistics the benchmarks report: medians of rounds and
// nearest-rank percentiles of samples. Header-only, pure functions.

#ifndef CODECVISOR_TOOLS_BENCH_STATS_H_
#define CODECVISOR_TOOLS_BENCH_STATS_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace codecvisor::bench {

// The median of `samples` (the upper one of the middle two for an even
// count, so that it is always a measured value); 0 when empty.
inline double Median(std::vector<double> samples) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

// The nearest-rank `p`-th percentile (0 < p <= 100) of `samples`: the
// smallest sample with at least p% of the samples at or below it; 0 when
// empty.
inline double Percentile(std::vector<double> samples, double p) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  const double rank = std::ceil(p / 100.0 * static_cast<double>(samples.size()));
  const size_t index = static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(samples.size()))) - 1;
  return samples[index];
}

// `value` rounded to `digits` decimals, for output that does not pretend
// to more precision than the measurement has.
inline double Rounded(double value, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::round(value * scale) / scale;
}

}  // namespace codecvisor::bench

#endif  // CODECVISOR_TOOLS_BENCH_STATS_H_
