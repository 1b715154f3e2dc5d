// File: tools/bench/ffmpeg_cli.h
//
// What the benchmarks ask of the ffmpeg command-line program: make their
// test videos, and decode a file as the baseline codecvisor is compared
// with. Runs ffmpeg (found in PATH) as a child through
// tools/common/subprocess.h; thread-safe.

#ifndef CODECVISOR_TOOLS_BENCH_FFMPEG_CLI_H_
#define CODECVISOR_TOOLS_BENCH_FFMPEG_CLI_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace codecvisor::bench {

// Encodes `frames` frames of the testsrc2 pattern at `width`x`height`,
// 30 fps, as H.264 (libx264, yuv420p, its default settings) into `path`:
// the videos every figure of `bench decode` and `bench soak` is taken on.
// With `key_interval` > 0, a key frame every `key_interval` frames exactly
// (no scene-cut key frames): `bench seek`'s long GOPs.
[[nodiscard]] absl::Status MakeBenchVideo(const std::string& path, int width, int height, int frames,
                                          int key_interval = 0);

// Runs `ffmpeg -threads T -i FILE [-frames:v N] -pix_fmt rgb24 -f null -`
// (the first `frames` frames of the best video stream, converted to RGB24
// by swscale as the cpu backend does, then discarded) and returns its wall
// clock time in seconds, process start and probing included. `-frames:v`
// is given only when `frames` < `total_frames`.
[[nodiscard]] absl::StatusOr<double> TimeFfmpegDecode(const std::string& path, uint32_t threads, int64_t frames,
                                                      int64_t total_frames);

// Runs `ffmpeg -threads T -ss SECONDS -i FILE -frames:v 1 -pix_fmt rgb24
// -f rawvideo -` (input seeking: to the key frame before SECONDS, then
// decoding on to the first frame at or after it, converted to RGB24) and
// returns its wall clock time in seconds, process start and probing
// included. An error unless it wrote `frame_bytes` bytes: one frame.
[[nodiscard]] absl::StatusOr<double> TimeFfmpegSeek(const std::string& path, uint32_t threads, double seconds,
                                                    size_t frame_bytes);

}  // namespace codecvisor::bench

#endif  // CODECVISOR_TOOLS_BENCH_FFMPEG_CLI_H_
