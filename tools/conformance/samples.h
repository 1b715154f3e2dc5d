// File: tools/conformance/samples.h
//
// The conformance suite's sample videos and what they must decode to. Each
// sample is made by the ffmpeg CLI in one of the codecs a backend claims
// (its manifest's [conformance] codecs), and its reference comes from the
// same CLI: every frame converted to RGB24 by ffmpeg's own pipeline, and
// every frame's pts and duration from ffprobe. Thread-safe once made
// (immutable).

#ifndef CODECVISOR_TOOLS_CONFORMANCE_SAMPLES_H_
#define CODECVISOR_TOOLS_CONFORMANCE_SAMPLES_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace codecvisor::conformance {

// What ffprobe says of the sample's video stream.
struct ProbedStream {
  std::string codec;  // ffprobe's codec_name
  uint32_t width = 0;
  uint32_t height = 0;
  double average_fps = 0;
};

struct Sample {
  std::string codec;  // as named in the manifest: h264, hevc, vp9, av1, mpeg4
  std::string path;
  ProbedStream stream;
  // Per frame, in presentation order: pts and duration in the stream's time
  // base, as ffprobe -show_frames reports them.
  std::vector<int64_t> pts;
  std::vector<int64_t> durations;
  std::string rgb24;  // every frame, concatenated, as ffmpeg converts it

  int64_t num_frames() const { return static_cast<int64_t>(pts.size()); }
  size_t frame_bytes() const { return size_t{stream.width} * stream.height * 3; }
  std::span<const uint8_t> Frame(int64_t index) const;
};

// Encodes `frames` frames of ffmpeg's testsrc2 pattern at `width`x`height`,
// 24 fps, yuv420p, in `codec` (h264, hevc, vp9, av1, mpeg4: small and quick
// settings, a keyframe every 12, B-frames where the codec has them), into
// `path`, whose extension picks the container; the first frame at
// `start_seconds`.
[[nodiscard]] absl::Status EncodeVideo(absl::string_view codec, int width, int height, int frames,
                                       double start_seconds, const std::string& path);

// Makes the sample for `codec` in `folder` (36 frames of 128x96 at 24 fps,
// a keyframe every 12, B-frames where the codec has them, starting at
// 0.5 s, in Matroska) and probes its reference. Errors name the tool that
// failed, e.g. an ffmpeg without the needed encoder.
[[nodiscard]] absl::StatusOr<Sample> MakeSample(absl::string_view codec, absl::string_view folder);

// `source` copied (no re-encoding) into an MP4 whose display matrix turns
// it a quarter turn (ffprobe's rotation -90: the ffmpeg CLI autorotates it
// with transpose=clock), with its own reference: the CLI's autorotated
// frames, and stream.width/height those of the rotated frames.
[[nodiscard]] absl::StatusOr<Sample> MakeRotatedSample(const Sample& source, absl::string_view folder);

// Peak signal-to-noise ratio of `decoded` against `reference` (same size),
// over all bytes, in dB; +infinity when they are identical.
double Psnr(std::span<const uint8_t> decoded, std::span<const uint8_t> reference);

}  // namespace codecvisor::conformance

#endif  // CODECVISOR_TOOLS_CONFORMANCE_SAMPLES_H_
