// File: tools/conformance/samples.h
//
// The conformance suite's sample videos and what they must decode to. A
// sample is either made by the ffmpeg CLI in one of the codecs a backend
// claims (its manifest's [conformance] codecs), or the vendor's own file
// (`samples`, `--sample`). Its reference comes from the same CLI (every
// frame converted to RGB24 by ffmpeg's own pipeline, every frame's pts and
// duration from ffprobe) or, for a file FFmpeg cannot read, from the
// vendor: raw RGB24 frames plus a timestamps file (ParseTimestamps).
// Thread-safe once made (immutable).

#ifndef CODECVISOR_TOOLS_CONFORMANCE_SAMPLES_H_
#define CODECVISOR_TOOLS_CONFORMANCE_SAMPLES_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace codecvisor::conformance {

// What ffprobe says of the sample's video stream.
struct ProbedStream {
  std::string codec;  // ffprobe's codec_name; empty: not checked (a vendor reference without one)
  uint32_t width = 0;
  uint32_t height = 0;
  double average_fps = 0;
};

// What ffprobe's headers say beyond ProbedStream, which the metadata checks
// compare a backend's with (metadata_checks.h). Absent for a sample with a
// vendor's reference, which FFmpeg may not read.
struct ProbedHeader {
  std::string pixel_format;  // pix_fmt
  // ffprobe's names; "unknown" for an untagged stream.
  std::string color_space, color_range, color_primaries, color_transfer;
  double r_frame_rate = 0;            // 0: none
  int64_t num_frames = -1;            // the stream's nb_frames; -1: N/A (Matroska, YUV4MPEG2)
  double duration_seconds = -1;       // the stream's; -1: N/A (Matroska has none per stream)
  double start_seconds = 0;           // the stream's start_time
  double format_duration_seconds = -1;  // the container's; -1: N/A
  int num_streams = 0;                // every stream of the file
  int num_video_streams = 0;          // video streams but cover art (attached pictures)
};

struct Sample {
  // What the checks are called after: the codec of a generated sample (h264,
  // ...), else the file's name.
  std::string codec;
  std::string path;
  std::string reference;  // where the frames came from, for messages
  // The stream's time base, which the reference's pts are in: ffprobe's, or
  // what a vendor reference says.
  int64_t time_base_num = 0;
  int64_t time_base_den = 0;
  ProbedStream stream;
  std::optional<ProbedHeader> header;  // set when ffprobe read the file
  // Per frame, in presentation order: pts and duration in the stream's time
  // base, as ffprobe -show_frames reports them.
  std::vector<int64_t> pts;
  std::vector<int64_t> durations;
  std::string rgb24;  // every frame, concatenated, as ffmpeg converts it

  int64_t num_frames() const { return static_cast<int64_t>(pts.size()); }
  size_t frame_bytes() const { return size_t{stream.width} * stream.height * 3; }
  std::span<const uint8_t> Frame(int64_t index) const;
};

// The fewest frames a sample may have: the access checks pick frames at
// fixed fractions of the stream and need them distinct.
inline constexpr int64_t kMinSampleFrames = 12;

// The ffmpeg encoder arguments for a codec of kConformanceSampleCodecs
// (core/manifest.h); kInvalidArgument for any other.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> EncoderArgs(absl::string_view codec);

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

// Makes a long sample for `codec` in `folder`, as MakeSample but 240
// frames of 320x240 (20 key frames, 10 s), for the first-request seek
// check: its last key frame is far into the file.
[[nodiscard]] absl::StatusOr<Sample> MakeLongSample(absl::string_view codec, absl::string_view folder);

// A vendor's reference for a file of its own: `frames`, every frame as
// packed RGB24, concatenated in presentation order; `timestamps`, a text
// file (format in ParseTimestamps).
struct VendorReference {
  std::string frames;
  std::string timestamps;
};

// Parses a reference timestamps file into `sample` (stream and pts,
// durations). Lines: '#' starts a comment; "width W", "height H",
// "time_base NUM/DEN" (required), "codec NAME" and "average_fps F"
// (optional: an absent codec is not checked, an absent rate is frames over
// the summed durations); every other line is one frame, "PTS DURATION" in
// the time base, in presentation order. Errors name the file and line.
[[nodiscard]] absl::Status ParseTimestamps(absl::string_view text, absl::string_view file, Sample* sample);

// Loads the vendor's file `path` as a sample: with `reference` (frames
// empty: none), its stream and frames come from there; without, from
// ffprobe and the ffmpeg CLI, which must then read the file. At least
// kMinSampleFrames frames.
// A `reference` left empty is the one beside the file, where there is
// one: PATH.rgb24 and PATH.timestamps (how a manifest's `samples` and the
// Bazel macro's give theirs).
[[nodiscard]] absl::StatusOr<Sample> LoadSample(const std::string& path, VendorReference reference);

// `source` copied (no re-encoding) into an MP4 whose display matrix turns
// it a quarter turn (ffprobe's rotation -90: the ffmpeg CLI autorotates it
// with transpose=clock), with its own reference: the CLI's autorotated
// frames, and stream.width/height those of the rotated frames.
[[nodiscard]] absl::StatusOr<Sample> MakeRotatedSample(const Sample& source, absl::string_view folder);

// `source` copied (no re-encoding) into an MP4, with its own reference: the
// same frames in the container most files come in, whose seeking, times
// (an edit list for the start) and B-frame delay differ from Matroska's.
[[nodiscard]] absl::StatusOr<Sample> MakeMp4Sample(const Sample& source, absl::string_view folder);

// Peak signal-to-noise ratio of `decoded` against `reference` (same size),
// over all bytes, in dB; +infinity when they are identical.
double Psnr(std::span<const uint8_t> decoded, std::span<const uint8_t> reference);

// Where a decoded RGB24 frame differs from its reference: the PSNR of each
// channel, the largest difference of one byte and where, and the 16x16
// block with the lowest PSNR. Both frames `width`x`height` packed RGB24.
struct FrameDifference {
  double psnr = 0;
  double channel_psnr[3] = {0, 0, 0};  // R, G, B
  int max_difference = 0;
  uint32_t max_x = 0, max_y = 0;
  uint32_t worst_block_x = 0, worst_block_y = 0;  // the block's top-left pixel
  double worst_block_psnr = 0;
};
FrameDifference Difference(std::span<const uint8_t> decoded, std::span<const uint8_t> reference, uint32_t width,
                           uint32_t height);
// "PSNR 23.10 dB (R 22.00, G 25.00, B 21.00), largest difference 87 at
// x=3 y=4, worst 16x16 block at x=144 y=80 (12.00 dB)".
std::string Describe(const FrameDifference& difference);

}  // namespace codecvisor::conformance

#endif  // CODECVISOR_TOOLS_CONFORMANCE_SAMPLES_H_
