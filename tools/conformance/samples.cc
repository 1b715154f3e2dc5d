#include "tools/conformance/samples.h"

#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tools/common/subprocess.h"
#include "tools/common/test_video.h"

namespace codecvisor::conformance {
namespace {

constexpr int kWidth = 128, kHeight = 96, kFrames = 36;
constexpr double kStartSeconds = 0.5;

// The encoder arguments for each sample codec: small and quick to encode,
// with B-frames (reordering) where the codec has them.
const std::map<std::string, std::vector<std::string>>& EncoderArgs() {
  static const auto* args = new std::map<std::string, std::vector<std::string>>{
      {"h264", {"-c:v", "libx264", "-preset", "veryfast", "-bf", "2", "-g", "12"}},
      {"hevc", {"-c:v", "libx265", "-preset", "ultrafast", "-x265-params",
                "keyint=12:min-keyint=12:bframes=2:log-level=error"}},
      {"vp9", {"-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-g", "12"}},
      {"av1", {"-c:v", "libaom-av1", "-cpu-used", "8", "-g", "12"}},
      {"mpeg4", {"-c:v", "mpeg4", "-bf", "2", "-g", "12", "-q:v", "4"}},
  };
  return *args;
}

absl::StatusOr<double> ParseRate(absl::string_view text) {
  std::pair<absl::string_view, absl::string_view> parts = absl::StrSplit(text, '/');
  double num = 0, den = 1;
  if (!absl::SimpleAtod(parts.first, &num) || (!parts.second.empty() && !absl::SimpleAtod(parts.second, &den)) ||
      den == 0) {
    return absl::InternalError(absl::StrCat("ffprobe: unreadable frame rate '", text, "'"));
  }
  return num / den;
}

absl::Status ProbeStream(Sample* sample) {
  absl::StatusOr<std::string> out =
      tools::RunForOutput({"ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                    "stream=codec_name,width,height,avg_frame_rate:stream_side_data=rotation", "-of",
                    "default=noprint_wrappers=1", sample->path});
  if (!out.ok()) return out.status();
  bool quarter_turn = false;
  for (absl::string_view line : absl::StrSplit(*out, '\n', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(line, absl::MaxSplits('=', 1));
    const absl::string_view value = absl::StripAsciiWhitespace(kv.second);
    if (kv.first == "codec_name") {
      sample->stream.codec = std::string(value);
    } else if (kv.first == "width") {
      if (!absl::SimpleAtoi(value, &sample->stream.width)) return absl::InternalError("ffprobe: bad width");
    } else if (kv.first == "height") {
      if (!absl::SimpleAtoi(value, &sample->stream.height)) return absl::InternalError("ffprobe: bad height");
    } else if (kv.first == "rotation") {
      quarter_turn = value == "90" || value == "-90";
    } else if (kv.first == "avg_frame_rate") {
      absl::StatusOr<double> fps = ParseRate(value);
      if (!fps.ok()) return fps.status();
      sample->stream.average_fps = *fps;
    }
  }
  if (sample->stream.width == 0 || sample->stream.height == 0) {
    return absl::InternalError(absl::StrCat("ffprobe found no video stream in ", sample->path));
  }
  // The size frames come out at: the CLI rotates them.
  if (quarter_turn) std::swap(sample->stream.width, sample->stream.height);
  return absl::OkStatus();
}

absl::Status ProbeFrames(Sample* sample) {
  absl::StatusOr<std::string> out = tools::RunForOutput({"ffprobe", "-v", "error", "-select_streams", "v:0",
                                                  "-show_entries", "frame=pts,pkt_duration", "-of", "csv=p=0",
                                                  sample->path});
  if (!out.ok()) return out.status();
  for (absl::string_view line : absl::StrSplit(*out, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> fields = absl::StrSplit(absl::StripAsciiWhitespace(line), ',');
    int64_t pts = 0, duration = 0;
    if (fields.size() < 2 || !absl::SimpleAtoi(fields[0], &pts) || !absl::SimpleAtoi(fields[1], &duration)) {
      return absl::InternalError(absl::StrCat("ffprobe: unreadable frame line '", line, "' for ", sample->path));
    }
    sample->pts.push_back(pts);
    sample->durations.push_back(duration);
  }
  return absl::OkStatus();
}

// Probes `sample->path`: its stream, every frame's pts and duration, and
// the ffmpeg CLI's RGB24 frames (autorotated, as the CLI does by default).
absl::Status ProbeReference(Sample* sample_ptr) {
  Sample& sample = *sample_ptr;
  if (absl::Status s = ProbeStream(&sample); !s.ok()) return s;
  if (absl::Status s = ProbeFrames(&sample); !s.ok()) return s;
  absl::StatusOr<std::string> frames =
      tools::RunForOutput({"ffmpeg", "-nostdin", "-v", "error", "-i", sample.path, "-map", "0:v:0", "-vf", "format=rgb24",
                    "-fps_mode", "passthrough", "-f", "rawvideo", "-"});
  if (!frames.ok()) return frames.status();
  sample.rgb24 = *std::move(frames);
  if (sample.pts.empty() || sample.rgb24.size() != sample.pts.size() * sample.frame_bytes()) {
    return absl::InternalError(absl::StrCat("ffmpeg gave ", sample.rgb24.size(), " bytes of RGB24 for ",
                                            sample.pts.size(), " frames of ", sample.stream.width, "x",
                                            sample.stream.height, " in ", sample.path));
  }
  return absl::OkStatus();
}

}  // namespace

std::span<const uint8_t> Sample::Frame(int64_t index) const {
  const size_t size = frame_bytes();
  return {reinterpret_cast<const uint8_t*>(rgb24.data()) + static_cast<size_t>(index) * size, size};
}

absl::Status EncodeVideo(absl::string_view codec, int width, int height, int frames, double start_seconds,
                         const std::string& path) {
  auto encoder = EncoderArgs().find(std::string(codec));
  if (encoder == EncoderArgs().end()) {
    return absl::InvalidArgumentError(absl::StrCat("no sample codec '", codec, "'"));
  }
  std::vector<std::string> args = tools::TestPatternInput(width, height, 24);
  args.insert(args.end(), {"-frames:v", absl::StrCat(frames), "-pix_fmt", "yuv420p"});
  args.insert(args.end(), encoder->second.begin(), encoder->second.end());
  if (start_seconds != 0) args.insert(args.end(), {"-output_ts_offset", absl::StrCat(start_seconds)});
  return tools::MakeTestVideo(args, path);
}

absl::StatusOr<Sample> MakeSample(absl::string_view codec, absl::string_view folder) {
  Sample sample;
  sample.codec = std::string(codec);
  sample.path = absl::StrCat(folder, "/sample_", codec, ".mkv");
  if (absl::Status s = EncodeVideo(codec, kWidth, kHeight, kFrames, kStartSeconds, sample.path); !s.ok()) return s;
  if (absl::Status s = ProbeReference(&sample); !s.ok()) return s;
  return sample;
}

absl::StatusOr<Sample> MakeRotatedSample(const Sample& source, absl::string_view folder) {
  Sample sample;
  sample.codec = source.codec;
  sample.path = absl::StrCat(folder, "/sample_", source.codec, "_rotated.mp4");
  // The mov muxer writes a display matrix for a "rotate" tag on stream copy.
  if (absl::Status s = tools::MakeTestVideo({"-i", source.path, "-map", "0:v:0", "-c", "copy", "-metadata:s:v:0",
                                             "rotate=-90"},
                                            sample.path);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ProbeReference(&sample); !s.ok()) return s;
  return sample;
}



double Psnr(std::span<const uint8_t> decoded, std::span<const uint8_t> reference) {
  if (decoded.size() != reference.size() || decoded.empty()) return 0;
  double squared = 0;
  for (size_t i = 0; i < decoded.size(); ++i) {
    const double d = static_cast<double>(decoded[i]) - reference[i];
    squared += d * d;
  }
  if (squared == 0) return std::numeric_limits<double>::infinity();
  const double mse = squared / static_cast<double>(decoded.size());
  return 10 * std::log10(255.0 * 255.0 / mse);
}

}  // namespace codecvisor::conformance
