// File: tools/bench/seek_bench.h
//
// `codecvisor-bench seek`: the first access to a late frame by a fresh
// decoder, the case approximate mode exists for, against exact mode and
// against the ffmpeg CLI's input seeking, measured side by side in one run:
//
//   approximate_ms   OpenDecoder(approximate) + GetFrameAt(index), on a
//                    backend already running (the host made and the child
//                    started before the clock runs)
//   exact_ms         the same in exact mode (which scans the file first)
//   ffmpeg_ss_ms     `ffmpeg -ss T -i FILE -frames:v 1 -pix_fmt rgb24
//                    -f rawvideo -`, T just before the frame's start
//                    (process start and probing included)
//   approx_first_vs_ffmpeg_ss = approximate / ffmpeg -ss, time over time
//                    (target <= 1.2)
//   approx_first_vs_exact = approximate / exact
//
// On a file it makes unless given one: 1080p H.264, 20 s at 30 fps, a key
// frame every 250 frames, frame 590 (90 frames past the last key frame).
// Each round times the three sides once each, one after the other, the
// first place rotating from round to round (approximate, exact, CLI; then
// exact, CLI, approximate; ...), and takes the two ratios within the
// round; the figures are the medians over rounds, with the quartiles and
// each round's ratios beside them. One untimed round first brings the file
// into the page cache for every side. Decoder threads: FFmpeg's choice on
// every side, unless --threads.
//
// Thread-safety: RunSeekBench runs on the calling thread (the Host adds
// its own); call it once at a time.

#ifndef CODECVISOR_TOOLS_BENCH_SEEK_BENCH_H_
#define CODECVISOR_TOOLS_BENCH_SEEK_BENCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/bench/targets.h"

namespace codecvisor::bench {

struct SeekBenchOptions {
  // The video; empty: the generated 1080p one described above.
  std::string file;
  int64_t index = 590;  // the frame asked for; negative counts from the end
  int rounds = 11;
  uint32_t threads = 0;  // decoder threads on every side; 0: FFmpeg's choice
};

struct SeekBenchResult {
  std::string file;
  uint32_t width = 0;
  uint32_t height = 0;
  int64_t frames = 0;        // in the stream (exact mode's scan)
  int64_t index = 0;         // the frame asked for, from the start
  double seconds = 0;        // the time given to ffmpeg -ss
  uint32_t threads = 0;
  int rounds = 0;
  double approximate_ms = 0;  // medians over rounds
  double exact_ms = 0;
  double ffmpeg_ss_ms = 0;
  double approx_first_vs_ffmpeg_ss = 0;  // median of the per-round ratios
  double approx_first_vs_exact = 0;
  std::vector<double> approx_first_vs_ffmpeg_ss_quartiles;  // 25th, 50th, 75th
  std::vector<double> approx_first_vs_exact_quartiles;
  std::vector<double> round_approx_first_vs_ffmpeg_ss;  // each round's
  std::vector<double> round_approx_first_vs_exact;
  std::vector<TargetCheck> targets;

  std::string ToJson() const;  // one line, no newline
  std::string ToText() const;
};

[[nodiscard]] absl::StatusOr<SeekBenchResult> RunSeekBench(const SeekBenchOptions& options);

}  // namespace codecvisor::bench

#endif  // CODECVISOR_TOOLS_BENCH_SEEK_BENCH_H_
