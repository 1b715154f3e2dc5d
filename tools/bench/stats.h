// File: tools/bench/stats.h
//
// The summary statistics the benchmarks report: medians of rounds,
// nearest-rank percentiles of samples, and how frames spread over the
// buffers they arrived in. Header-only.

#ifndef CODECVISOR_TOOLS_BENCH_STATS_H_
#define CODECVISOR_TOOLS_BENCH_STATS_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <utility>
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

// The 25th, 50th and 75th nearest-rank percentiles of `samples`.
inline std::vector<double> Quartiles(const std::vector<double>& samples) {
  return {Percentile(samples, 25), Percentile(samples, 50), Percentile(samples, 75)};
}

// Paired ratios: baseline_seconds[i] / measured_seconds[i] for every i
// (the two spans of the same length, each pair the same work done by both
// sides back to back), i.e. the measured side's speed over the baseline's
// for that piece of work. Pairs in which either time is not positive are
// left out.
inline std::vector<double> PairedSpeedRatios(std::span<const double> baseline_seconds,
                                             std::span<const double> measured_seconds) {
  std::vector<double> ratios;
  const size_t n = std::min(baseline_seconds.size(), measured_seconds.size());
  for (size_t i = 0; i < n; ++i) {
    if (baseline_seconds[i] > 0 && measured_seconds[i] > 0) ratios.push_back(baseline_seconds[i] / measured_seconds[i]);
  }
  return ratios;
}

// `value` rounded to `digits` decimals, for output that does not pretend
// to more precision than the measurement has.
inline double Rounded(double value, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::round(value * scale) / scale;
}

// How many frames arrived in each distinct buffer (an arena slot, told
// apart by its address). Few buffers: a linear search is cheaper than a map
// on the measured path.
class BufferUse {
 public:
  void Add(const void* buffer, int64_t frames = 1) {
    for (auto& [b, n] : counts_) {
      if (b == buffer) {
        n += frames;
        return;
      }
    }
    counts_.emplace_back(buffer, frames);
  }
  void Merge(const BufferUse& other) {
    for (const auto& [b, n] : other.counts_) Add(b, n);
  }
  // The counts, most used buffer first.
  std::vector<int64_t> CountsByRank() const {
    std::vector<int64_t> out;
    for (const auto& [b, n] : counts_) out.push_back(n);
    std::sort(out.begin(), out.end(), std::greater<>());
    return out;
  }

 private:
  std::vector<std::pair<const void*, int64_t>> counts_;
};

// Element-wise sums of count lists (ranked buffers of several decoders,
// whose addresses differ), as shares of the total, most used rank first.
inline std::vector<double> SharesByRank(const std::vector<std::vector<int64_t>>& ranked) {
  std::vector<double> sums;
  double total = 0;
  for (const std::vector<int64_t>& counts : ranked) {
    if (counts.size() > sums.size()) sums.resize(counts.size());
    for (size_t i = 0; i < counts.size(); ++i) {
      sums[i] += static_cast<double>(counts[i]);
      total += static_cast<double>(counts[i]);
    }
  }
  for (double& s : sums) s = total > 0 ? s / total : 0;
  return sums;
}

}  // namespace codecvisor::bench

#endif  // CODECVISOR_TOOLS_BENCH_STATS_H_
