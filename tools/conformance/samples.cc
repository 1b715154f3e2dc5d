#include "tools/conformance/samples.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/manifest.h"
#include "tools/common/subprocess.h"
#include "tools/common/test_video.h"

namespace codecvisor::conformance {
namespace {

constexpr int kWidth = 128, kHeight = 96, kFrames = 36;
constexpr int kLongWidth = 320, kLongHeight = 240, kLongFrames = 240;
constexpr double kStartSeconds = 0.5;

// The encoder arguments for each codec of kConformanceSampleCodecs: small
// and quick to encode, with B-frames (reordering) where the codec has them.
std::vector<std::string> ArgsFor(absl::string_view codec) {
  if (codec == "h264") return {"-c:v", "libx264", "-preset", "veryfast", "-bf", "2", "-g", "12"};
  if (codec == "hevc") {
    return {"-c:v", "libx265", "-preset", "ultrafast", "-x265-params",
            "keyint=12:min-keyint=12:bframes=2:log-level=error"};
  }
  if (codec == "vp9") return {"-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-g", "12"};
  if (codec == "av1") return {"-c:v", "libaom-av1", "-cpu-used", "8", "-g", "12"};
  if (codec == "mpeg4") return {"-c:v", "mpeg4", "-bf", "2", "-g", "12", "-q:v", "4"};
  return {};
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

// "NUM/DEN", both positive, into the sample's time base.
bool ParseTimeBase(absl::string_view text, Sample* sample) {
  std::pair<absl::string_view, absl::string_view> r = absl::StrSplit(text, '/');
  return absl::SimpleAtoi(r.first, &sample->time_base_num) && absl::SimpleAtoi(r.second, &sample->time_base_den) &&
         sample->time_base_num > 0 && sample->time_base_den > 0;
}

// The file's streams and the container's duration, into `header`.
absl::Status ProbeFile(const std::string& path, ProbedHeader* header) {
  absl::StatusOr<std::string> out =
      tools::RunForOutput({"ffprobe", "-v", "error", "-show_entries",
                           "stream=codec_type:stream_disposition=attached_pic:format=duration", "-of", "default",
                           path});
  if (!out.ok()) return out.status();
  bool video = false;  // the last stream's codec_type, until its disposition says whether it is cover art
  // A program (MPEG-TS) lists its streams again inside [PROGRAM]: only
  // the file's own list counts.
  bool in_program = false;
  for (absl::string_view line : absl::StrSplit(*out, '\n', absl::SkipEmpty())) {
    line = absl::StripAsciiWhitespace(line);
    if (line == "[PROGRAM]" || line == "[/PROGRAM]") {
      in_program = line == "[PROGRAM]";
      continue;
    }
    if (in_program) continue;
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(line, absl::MaxSplits('=', 1));
    const absl::string_view value = absl::StripAsciiWhitespace(kv.second);
    if (kv.first == "codec_type") {
      ++header->num_streams;
      video = value == "video";
      if (video) ++header->num_video_streams;
    } else if (kv.first == "DISPOSITION:attached_pic") {
      if (video && value == "1") --header->num_video_streams;
      video = false;
    } else if (kv.first == "duration") {
      if (!absl::SimpleAtod(value, &header->format_duration_seconds)) header->format_duration_seconds = -1;
    }
  }
  return absl::OkStatus();
}

absl::Status ProbeStream(Sample* sample) {
  absl::StatusOr<std::string> out =
      tools::RunForOutput({"ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                    "stream=codec_name,width,height,avg_frame_rate,time_base,pix_fmt,color_space,color_range,"
                    "color_primaries,color_transfer,r_frame_rate,nb_frames,duration,start_time"
                    ":stream_side_data=rotation", "-of",
                    "default=noprint_wrappers=1", sample->path});
  if (!out.ok()) return out.status();
  bool quarter_turn = false;
  ProbedHeader& header = sample->header.emplace();
  for (absl::string_view line : absl::StrSplit(*out, '\n', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(line, absl::MaxSplits('=', 1));
    const absl::string_view value = absl::StripAsciiWhitespace(kv.second);
    if (kv.first == "pix_fmt") {
      header.pixel_format = std::string(value);
    } else if (kv.first == "color_space") {
      header.color_space = std::string(value);
    } else if (kv.first == "color_range") {
      header.color_range = std::string(value);
    } else if (kv.first == "color_primaries") {
      header.color_primaries = std::string(value);
    } else if (kv.first == "color_transfer") {
      header.color_transfer = std::string(value);
    } else if (kv.first == "r_frame_rate") {
      absl::StatusOr<double> fps = ParseRate(value);
      header.r_frame_rate = fps.ok() ? *fps : 0;
    } else if (kv.first == "nb_frames") {
      if (!absl::SimpleAtoi(value, &header.num_frames)) header.num_frames = -1;  // N/A
    } else if (kv.first == "duration") {
      if (!absl::SimpleAtod(value, &header.duration_seconds)) header.duration_seconds = -1;
    } else if (kv.first == "start_time") {
      if (!absl::SimpleAtod(value, &header.start_seconds)) header.start_seconds = 0;
    } else if (kv.first == "codec_name") {
      sample->stream.codec = std::string(value);
    } else if (kv.first == "width") {
      if (!absl::SimpleAtoi(value, &sample->stream.width)) return absl::InternalError("ffprobe: bad width");
    } else if (kv.first == "height") {
      if (!absl::SimpleAtoi(value, &sample->stream.height)) return absl::InternalError("ffprobe: bad height");
    } else if (kv.first == "rotation") {
      quarter_turn = value == "90" || value == "-90";
    } else if (kv.first == "time_base") {
      // The pts ffprobe lists are in this time base, so a backend whose
      // frames are to match them must report the same one.
      if (!ParseTimeBase(value, sample)) {
        return absl::InternalError(absl::StrCat("ffprobe: unreadable time base '", value, "'"));
      }
    } else if (kv.first == "avg_frame_rate") {
      absl::StatusOr<double> fps = ParseRate(value);
      if (!fps.ok()) return fps.status();
      sample->stream.average_fps = *fps;
    }
  }
  if (sample->stream.width == 0 || sample->stream.height == 0) {
    return absl::InternalError(absl::StrCat("ffprobe found no video stream in ", sample->path));
  }
  if (sample->time_base_den == 0) return absl::InternalError(absl::StrCat("ffprobe gave no time base for ", sample->path));
  // The size frames come out at: the CLI rotates them.
  if (quarter_turn) std::swap(sample->stream.width, sample->stream.height);
  return ProbeFile(sample->path, &header);
}

absl::Status ProbeFrames(Sample* sample) {
  absl::StatusOr<std::string> out = tools::RunForOutput({"ffprobe", "-v", "error", "-select_streams", "v:0",
                                                  "-show_entries", "frame=pts,pkt_duration", "-of", "csv=p=0",
                                                  sample->path});
  if (!out.ok()) return out.status();
  for (absl::string_view line : absl::StrSplit(*out, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> fields = absl::StrSplit(absl::StripAsciiWhitespace(line), ',');
    int64_t pts = 0, duration = 0;
    if (!fields.empty() && fields[0] == "N/A") {
      // The checks compare every frame's time with the reference's.
      return absl::InvalidArgumentError(absl::StrCat(
          "ffprobe gives frame ", sample->pts.size(), " of ", sample->path,
          " no presentation time (a container that times only some packets, such as AVI with B-frames or an "
          "MPEG program stream), and the suite checks every frame's time: use a sample whose container times "
          "every frame (MP4, Matroska, MPEG-TS); remuxing an AVI with B-frames does not mend it, as the times "
          "FFmpeg generates for it (-fflags +genpts) do not follow the B-frames' order"));
    }
    if (fields.size() < 2 || !absl::SimpleAtoi(fields[0], &pts) || !absl::SimpleAtoi(fields[1], &duration)) {
      return absl::InternalError(absl::StrCat("ffprobe: unreadable frame line '", line, "' for ", sample->path));
    }
    sample->pts.push_back(pts);
    sample->durations.push_back(duration);
  }
  return absl::OkStatus();
}

// The stream and frames of `sample->path` from ffprobe, and its RGB24
// reference from the ffmpeg CLI (autorotated, as the CLI does by default;
// -pix_fmt, not a format filter, so that it rotates the decoder's pixels and
// converts after, as `ffmpeg -i FILE -pix_fmt rgb24` does).
absl::Status ProbeWithFfmpeg(Sample* sample) {
  if (absl::Status s = ProbeStream(sample); !s.ok()) return s;
  if (absl::Status s = ProbeFrames(sample); !s.ok()) return s;
  absl::StatusOr<std::string> frames =
      tools::RunForOutput({"ffmpeg", "-nostdin", "-v", "error", "-i", sample->path, "-map", "0:v:0", "-pix_fmt",
                           "rgb24", "-fps_mode", "passthrough", "-f", "rawvideo", "-"});
  if (!frames.ok()) return frames.status();
  sample->rgb24 = *std::move(frames);
  sample->reference = "ffmpeg's RGB24";
  if (sample->pts.empty() || sample->rgb24.size() != sample->pts.size() * sample->frame_bytes()) {
    return absl::InternalError(absl::StrCat("ffmpeg gave ", sample->rgb24.size(), " bytes of RGB24 for ",
                                            sample->pts.size(), " frames of ", sample->stream.width, "x",
                                            sample->stream.height, " in ", sample->path));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFile(const std::string& path, absl::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(what, " ", path, ": cannot be read"));
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

std::span<const uint8_t> Sample::Frame(int64_t index) const {
  const size_t size = frame_bytes();
  return {reinterpret_cast<const uint8_t*>(rgb24.data()) + static_cast<size_t>(index) * size, size};
}

absl::StatusOr<std::vector<std::string>> EncoderArgs(absl::string_view codec) {
  for (const char* known : kConformanceSampleCodecs) {
    if (codec == known) {
      std::vector<std::string> args = ArgsFor(codec);
      if (args.empty()) return absl::InternalError(absl::StrCat("no encoder settings for sample codec '", codec, "'"));
      return args;
    }
  }
  return absl::InvalidArgumentError(absl::StrCat("the sample generator cannot make '", codec, "' (it makes ",
                                                 absl::StrJoin(kConformanceSampleCodecs, ", "),
                                                 "); give your own file with --sample FILE or [conformance] samples"));
}

absl::Status EncodeVideo(absl::string_view codec, int width, int height, int frames, double start_seconds,
                         const std::string& path) {
  absl::StatusOr<std::vector<std::string>> encoder = EncoderArgs(codec);
  if (!encoder.ok()) return encoder.status();
  std::vector<std::string> args = tools::TestPatternInput(width, height, 24);
  args.insert(args.end(), {"-frames:v", absl::StrCat(frames), "-pix_fmt", "yuv420p"});
  args.insert(args.end(), encoder->begin(), encoder->end());
  if (start_seconds != 0) args.insert(args.end(), {"-output_ts_offset", absl::StrCat(start_seconds)});
  return tools::MakeTestVideo(args, path);
}

namespace {

// Encodes `frames` frames of `codec` at `width`x`height` into `path` (see
// EncodeVideo) and probes its reference.
absl::StatusOr<Sample> MakeSampleFile(absl::string_view codec, int width, int height, int frames, std::string path) {
  Sample sample;
  sample.codec = std::string(codec);
  sample.path = std::move(path);
  if (absl::Status s = EncodeVideo(codec, width, height, frames, kStartSeconds, sample.path); !s.ok()) return s;
  if (absl::Status s = ProbeWithFfmpeg(&sample); !s.ok()) return s;
  return sample;
}

}  // namespace

absl::StatusOr<Sample> MakeSample(absl::string_view codec, absl::string_view folder) {
  return MakeSampleFile(codec, kWidth, kHeight, kFrames, absl::StrCat(folder, "/sample_", codec, ".mkv"));
}

absl::StatusOr<Sample> MakeLongSample(absl::string_view codec, absl::string_view folder) {
  return MakeSampleFile(codec, kLongWidth, kLongHeight, kLongFrames, absl::StrCat(folder, "/long_", codec, ".mkv"));
}

absl::Status ParseTimestamps(absl::string_view text, absl::string_view file, Sample* sample) {
  int line_number = 0;
  bool has_time_base = false, has_rate = false;
  int64_t total_duration = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat("reference timestamps ", file, " line ", line_number, ": ", why));
    };
    std::vector<absl::string_view> fields = absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (fields.size() != 2) return bad(absl::StrCat("expected 'KEY VALUE' or 'PTS DURATION', got '", line, "'"));
    int64_t pts = 0, duration = 0;
    if (absl::SimpleAtoi(fields[0], &pts)) {
      if (!absl::SimpleAtoi(fields[1], &duration) || duration <= 0) return bad("a frame's duration must be a positive integer");
      if (!sample->pts.empty() && pts <= sample->pts.back()) return bad("pts must increase (presentation order)");
      sample->pts.push_back(pts);
      sample->durations.push_back(duration);
      total_duration += duration;
    } else if (fields[0] == "width" || fields[0] == "height") {
      uint32_t& v = fields[0] == "width" ? sample->stream.width : sample->stream.height;
      if (!absl::SimpleAtoi(fields[1], &v) || v == 0 || v > 16384) return bad(absl::StrCat(fields[0], ": 1 to 16384"));
    } else if (fields[0] == "time_base") {
      if (!ParseTimeBase(fields[1], sample)) return bad("time_base: NUM/DEN, both positive, e.g. 1/24");
      has_time_base = true;
    } else if (fields[0] == "codec") {
      sample->stream.codec = std::string(fields[1]);
    } else if (fields[0] == "average_fps") {
      if (!absl::SimpleAtod(fields[1], &sample->stream.average_fps) || !(sample->stream.average_fps > 0)) {
        return bad("average_fps: a positive number");
      }
      has_rate = true;
    } else {
      return bad(absl::StrCat("unknown key '", fields[0], "' (width, height, time_base, codec, average_fps)"));
    }
  }
  auto missing = [&](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("reference timestamps ", file, ": no ", what));
  };
  if (sample->stream.width == 0 || sample->stream.height == 0) return missing("'width' and 'height'");
  if (!has_time_base) return missing("'time_base'");
  if (sample->pts.empty()) return missing("frame line ('PTS DURATION')");
  if (!has_rate) {
    sample->stream.average_fps = static_cast<double>(sample->pts.size()) * static_cast<double>(sample->time_base_den) /
                                 (static_cast<double>(total_duration) * static_cast<double>(sample->time_base_num));
  }
  return absl::OkStatus();
}

VendorReference ReferenceBeside(const std::string& path) {
  VendorReference beside{absl::StrCat(path, ".rgb24"), absl::StrCat(path, ".timestamps")};
  if (access(beside.frames.c_str(), F_OK) != 0 && access(beside.timestamps.c_str(), F_OK) != 0) return {};
  return beside;
}

absl::StatusOr<Sample> LoadSample(const std::string& path, VendorReference reference) {
  Sample sample;
  sample.path = path;
  sample.codec = path.substr(path.rfind('/') + 1);
  if (access(path.c_str(), R_OK) != 0) {
    const int err = errno;
    // Most often a manifest's sample that its wheel does not install.
    return absl::NotFoundError(absl::StrCat("sample ", path, ": cannot be read (", std::strerror(err), ")",
                                            err == ENOENT ? "; a sample a package ships must be in its package data "
                                                            "(setuptools: [tool.setuptools.package-data])"
                                                          : ""));
  }
  if (reference.frames.empty()) reference = ReferenceBeside(path);
  if (reference.frames.empty()) {
    if (absl::Status s = ProbeWithFfmpeg(&sample); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat(s.message(), " (if FFmpeg cannot read ", path,
                                                 ", give your own reference: ", path, ".rgb24 and ", path,
                                                 ".timestamps beside it, or --reference FRAMES.rgb24 "
                                                 "--reference-timestamps FILE)"));
    }
  } else {
    absl::StatusOr<std::string> text = ReadFile(reference.timestamps, "reference timestamps");
    if (!text.ok()) return text.status();
    if (absl::Status s = ParseTimestamps(*text, reference.timestamps, &sample); !s.ok()) return s;
    absl::StatusOr<std::string> frames = ReadFile(reference.frames, "reference frames");
    if (!frames.ok()) return frames.status();
    sample.rgb24 = *std::move(frames);
    sample.reference = absl::StrCat("the reference ", reference.frames);
    if (sample.rgb24.size() != sample.pts.size() * sample.frame_bytes()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "reference frames ", reference.frames, ": ", sample.rgb24.size(), " bytes, but ", reference.timestamps,
          " lists ", sample.pts.size(), " frames of ", sample.stream.width, "x", sample.stream.height,
          " RGB24 (", sample.pts.size() * sample.frame_bytes(), " bytes)"));
    }
  }
  if (sample.num_frames() < kMinSampleFrames) {
    // With a reference, the count is the reference's, whatever the sample holds.
    return absl::InvalidArgumentError(reference.frames.empty()
                                          ? absl::StrCat("sample ", path, " has ", sample.num_frames(),
                                                         " frames; the suite needs at least ", kMinSampleFrames)
                                          : absl::StrCat("the reference for sample ", path, " (", reference.timestamps,
                                                         ") lists ", sample.num_frames(),
                                                         " frames; the suite needs at least ", kMinSampleFrames));
  }
  return sample;
}

namespace {

// `source`'s video stream copied to `path` with `extra` ffmpeg arguments,
// probed for its own reference.
absl::StatusOr<Sample> RemuxSample(const Sample& source, std::string path, std::vector<std::string> extra) {
  Sample sample;
  sample.codec = source.codec;
  sample.path = std::move(path);
  std::vector<std::string> args = {"-i", source.path, "-map", "0:v:0", "-c", "copy"};
  args.insert(args.end(), extra.begin(), extra.end());
  if (absl::Status s = tools::MakeTestVideo(args, sample.path); !s.ok()) return s;
  if (absl::Status s = ProbeWithFfmpeg(&sample); !s.ok()) return s;
  return sample;
}

}  // namespace

absl::StatusOr<Sample> MakeRotatedSample(const Sample& source, absl::string_view folder) {
  // The mov muxer writes a display matrix for a "rotate" tag on stream copy.
  return RemuxSample(source, absl::StrCat(folder, "/sample_", source.codec, "_rotated.mp4"),
                     {"-metadata:s:v:0", "rotate=-90"});
}

absl::StatusOr<Sample> MakeMp4Sample(const Sample& source, absl::string_view folder) {
  return RemuxSample(source, absl::StrCat(folder, "/sample_", source.codec, ".mp4"), {});
}

namespace {

// PSNR in dB of a summed squared difference over `count` bytes; +infinity
// when there is no difference.
double PsnrOf(double squared, double count) {
  if (squared == 0) return std::numeric_limits<double>::infinity();
  return 10 * std::log10(255.0 * 255.0 * count / squared);
}

}  // namespace

double Psnr(std::span<const uint8_t> decoded, std::span<const uint8_t> reference) {
  if (decoded.size() != reference.size() || decoded.empty()) return 0;
  double squared = 0;
  for (size_t i = 0; i < decoded.size(); ++i) {
    const double d = static_cast<double>(decoded[i]) - reference[i];
    squared += d * d;
  }
  return PsnrOf(squared, static_cast<double>(decoded.size()));
}

FrameDifference Difference(std::span<const uint8_t> decoded, std::span<const uint8_t> reference, uint32_t width,
                           uint32_t height) {
  FrameDifference out;
  const size_t pixels = size_t{width} * height;
  if (decoded.size() != pixels * 3 || reference.size() != pixels * 3 || pixels == 0) return out;
  constexpr uint32_t kBlock = 16;
  const uint32_t blocks_x = (width + kBlock - 1) / kBlock, blocks_y = (height + kBlock - 1) / kBlock;
  std::vector<double> block_squared(size_t{blocks_x} * blocks_y, 0);
  double channel_squared[3] = {0, 0, 0};
  for (uint32_t y = 0; y < height; ++y) {
    for (uint32_t x = 0; x < width; ++x) {
      for (size_t c = 0; c < 3; ++c) {
        const size_t at = (size_t{y} * width + x) * 3 + c;
        const int d = int{decoded[at]} - int{reference[at]};
        const double d2 = static_cast<double>(d * d);
        channel_squared[c] += d2;
        block_squared[size_t{y / kBlock} * blocks_x + x / kBlock] += d2;
        if (std::abs(d) > out.max_difference) {
          out.max_difference = std::abs(d);
          out.max_x = x;
          out.max_y = y;
        }
      }
    }
  }
  for (size_t c = 0; c < 3; ++c) out.channel_psnr[c] = PsnrOf(channel_squared[c], static_cast<double>(pixels));
  out.psnr = PsnrOf(channel_squared[0] + channel_squared[1] + channel_squared[2], static_cast<double>(pixels) * 3);
  size_t worst = 0;
  for (size_t b = 1; b < block_squared.size(); ++b) {
    if (block_squared[b] > block_squared[worst]) worst = b;
  }
  out.worst_block_x = static_cast<uint32_t>(worst % blocks_x) * kBlock;
  out.worst_block_y = static_cast<uint32_t>(worst / blocks_x) * kBlock;
  const double block_w = std::min(kBlock, width - out.worst_block_x), block_h = std::min(kBlock, height - out.worst_block_y);
  out.worst_block_psnr = PsnrOf(block_squared[worst], block_w * block_h * 3);
  return out;
}

std::string Describe(const FrameDifference& d) {
  return absl::StrFormat(
      "PSNR %.2f dB (R %.2f, G %.2f, B %.2f), largest difference %d at x=%u y=%u, worst 16x16 block at x=%u y=%u "
      "(%.2f dB)",
      d.psnr, d.channel_psnr[0], d.channel_psnr[1], d.channel_psnr[2], d.max_difference, d.max_x, d.max_y,
      d.worst_block_x, d.worst_block_y, d.worst_block_psnr);
}

}  // namespace codecvisor::conformance
