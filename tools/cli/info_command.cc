// `codecvisor info`: the metadata of the stream codecvisor decodes, and
// every stream of the file with its index and type.

#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "api/absl_interop.h"
#include "core/backend_output.h"
#include "tools/cli/commands.h"
#include "tools/cli/host_setup.h"
#include "tools/cli/json.h"

namespace codecvisor::cli {

namespace {

// Frame counts and names the backend does not know: -1 and "" on the wire.
std::string CountText(int64_t count) { return count >= 0 ? absl::StrCat(count) : "unknown"; }
std::string NameText(const std::string& name) { return name.empty() ? "unknown" : name; }
std::string NumberText(double value) { return absl::StrFormat("%.10g", value); }

// The header's duration; none where it says none (0, as a raw H.264
// stream's), as Python's duration_seconds_from_header is None.
std::optional<double> HeaderDuration(const StreamMetadata& m) {
  if (!m.header_times || m.header_times->duration_seconds <= 0) return std::nullopt;
  return m.header_times->duration_seconds;
}

// Frames per second as the Python package reports `average_fps`: from the
// scan (its frames over its span) in exact mode, else the header's rate. A
// variable-rate stream's header states a nominal rate its frames need not
// keep (every third frame of a 25 fps clip dropped: 25 in the header, 25/3
// in fact).
double AverageFps(const StreamMetadata& m) {
  const double span = m.end_stream_seconds - m.begin_stream_seconds;
  return m.num_frames_from_scan > 0 && span > 0 ? m.num_frames_from_scan / span : m.average_fps;
}

// "video h264 1920x1080", "audio aac 48000 Hz 2 channels", "subtitle subrip".
std::string StreamText(const StreamInfo& s) {
  std::string text = absl::StrCat(StreamTypeName(s.type), " ", s.codec.empty() ? "(codec unknown)" : s.codec);
  if (s.type == StreamType::kVideo) absl::StrAppend(&text, " ", s.width, "x", s.height);
  if (s.type == StreamType::kAudio) {
    if (s.sample_rate > 0) absl::StrAppend(&text, " ", s.sample_rate, " Hz");
    if (s.channels > 0) absl::StrAppend(&text, " ", s.channels, s.channels == 1 ? " channel" : " channels");
  }
  return text;
}

// One row per stream of the file, after a row with their number; a backend
// that does not list them gets one row saying so.
void AppendStreamRows(const StreamMetadata& m, std::vector<std::pair<std::string, std::string>>* rows) {
  if (m.streams.empty()) {
    rows->emplace_back("streams", "unknown (the backend does not list the file's streams)");
    return;
  }
  rows->emplace_back("streams", absl::StrCat(m.streams.size()));
  for (const StreamInfo& s : m.streams) rows->emplace_back(absl::StrCat("stream ", s.index), StreamText(s));
}

// "streams": an array of {index, type, codec, ...}, or null when unknown.
void WriteStreams(const StreamMetadata& m, JsonWriter& w) {
  w.Key("streams");
  if (m.streams.empty()) {
    w.Null();
    return;
  }
  auto positive = [&](const char* key, uint32_t value) {
    w.Key(key);
    value > 0 ? w.Int(value) : w.Null();
  };
  w.BeginArray();
  for (const StreamInfo& s : m.streams) {
    w.BeginObject().Key("index").Int(s.index).Key("type").String(StreamTypeName(s.type)).Key("codec");
    s.codec.empty() ? w.Null() : w.String(s.codec);
    if (s.type == StreamType::kVideo) w.Key("width").Int(s.width).Key("height").Int(s.height);
    if (s.type == StreamType::kAudio) {
      positive("sample_rate", s.sample_rate);
      positive("channels", s.channels);
    }
    w.EndObject();
  }
  w.EndArray();
}

void PrintText(const InfoArgs& args, const Host& host, const VideoDecoder& decoder) {
  const StreamMetadata& m = decoder.metadata();
  std::vector<std::pair<std::string, std::string>> rows = {
      {"file", args.open.file},
      {"backend", decoder.backend_name()},
      {"device", DeviceFor(args.open, host)},
      {"seek_mode", SeekModeName(args.open.seek_mode)},
      {"stream_index", absl::StrCat(m.stream_index)},
      {"num_video_streams", absl::StrCat(m.num_video_streams)},
      {"codec", NameText(m.codec)},
      {"width", absl::StrCat(m.width)},
      {"height", absl::StrCat(m.height)},
      {"pixel_format", NameText(m.pixel_format)},
      {"num_frames_from_header", CountText(m.num_frames_from_header)},
      {"num_frames_from_scan", CountText(m.num_frames_from_scan)},
      {"average_fps", NumberText(AverageFps(m))},
      {"average_fps_from_header", NumberText(m.average_fps)},
      {"duration_seconds", NumberText(m.duration_seconds)},
      {"begin_stream_seconds", NumberText(m.begin_stream_seconds)},
      {"end_stream_seconds", NumberText(m.end_stream_seconds)},
      {"duration_seconds_from_header", HeaderDuration(m) ? NumberText(*HeaderDuration(m)) : "unknown"},
      {"begin_stream_seconds_from_header",
       m.header_times ? NumberText(m.header_times->begin_stream_seconds) : "unknown"},
      {"bit_rate", absl::StrCat(m.bit_rate)},
      {"rotation_degrees", NumberText(m.rotation_degrees)},
      {"color_space", NameText(m.color_space)},
      {"color_range", NameText(m.color_range)},
      {"color_primaries", NameText(m.color_primaries)},
      {"color_transfer", NameText(m.color_transfer)},
      {"time_base", absl::StrCat(m.time_base.num, "/", m.time_base.den)},
      {"pixel_aspect_ratio",
       m.pixel_aspect_ratio ? absl::StrCat(m.pixel_aspect_ratio->num, "/", m.pixel_aspect_ratio->den) : "unknown"},
  };
  AppendStreamRows(m, &rows);
  size_t width = 0;
  for (const auto& row : rows) width = std::max(width, row.first.size());
  std::string out;
  // Names come from the backend (and the file name from the user): a
  // newline or an escape sequence in them must not reach the terminal.
  for (const auto& [key, value] : rows) {
    absl::StrAppendFormat(&out, "%-*s  %s\n", width, key, EscapeForTerminal(value));
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
}

void PrintJson(const InfoArgs& args, const Host& host, const VideoDecoder& decoder) {
  const StreamMetadata& m = decoder.metadata();
  JsonWriter w;
  auto count = [&](const char* key, int64_t value) {
    w.Key(key);
    value >= 0 ? w.Int(value) : w.Null();
  };
  // FFmpeg names an unspecified colour property "unknown": null, as every
  // other unknown string is.
  auto name = [&](const char* key, const std::string& value) {
    w.Key(key);
    value.empty() || value == "unknown" ? w.Null() : w.String(value);
  };
  w.BeginObject();
  w.Key("schema_version").Int(kJsonSchemaVersion);
  w.Key("file").String(args.open.file);
  w.Key("backend").String(decoder.backend_name());
  w.Key("device").String(DeviceFor(args.open, host));
  w.Key("seek_mode").String(SeekModeName(args.open.seek_mode));
  w.Key("stream_index").Int(m.stream_index);
  w.Key("num_video_streams").Int(m.num_video_streams);
  name("codec", m.codec);
  w.Key("width").Int(m.width);
  w.Key("height").Int(m.height);
  name("pixel_format", m.pixel_format);
  count("num_frames_from_header", m.num_frames_from_header);
  count("num_frames_from_scan", m.num_frames_from_scan);
  w.Key("average_fps").Double(AverageFps(m));
  w.Key("average_fps_from_header").Double(m.average_fps);
  w.Key("duration_seconds").Double(m.duration_seconds);
  w.Key("begin_stream_seconds").Double(m.begin_stream_seconds);
  w.Key("end_stream_seconds").Double(m.end_stream_seconds);
  w.Key("duration_seconds_from_header");
  HeaderDuration(m) ? w.Double(*HeaderDuration(m)) : w.Null();
  w.Key("begin_stream_seconds_from_header");
  m.header_times ? w.Double(m.header_times->begin_stream_seconds) : w.Null();
  w.Key("bit_rate").Int(m.bit_rate);
  w.Key("rotation_degrees").Double(m.rotation_degrees);
  name("color_space", m.color_space);
  name("color_range", m.color_range);
  name("color_primaries", m.color_primaries);
  name("color_transfer", m.color_transfer);
  w.Key("time_base").BeginObject().Key("num").Int(m.time_base.num).Key("den").Int(m.time_base.den).EndObject();
  w.Key("pixel_aspect_ratio");
  if (m.pixel_aspect_ratio) {
    w.BeginObject().Key("num").Int(m.pixel_aspect_ratio->num).Key("den").Int(m.pixel_aspect_ratio->den).EndObject();
  } else {
    w.Null();
  }
  WriteStreams(m, w);
  w.EndObject();
  std::printf("%s\n", w.str().c_str());
}

}  // namespace

int RunInfo(const InfoArgs& args) {
  const std::string& file = args.open.file;
  if (absl::Status s = CheckReadableFile(file); !s.ok()) return ReportFailure("info", file, s);
  SetBackendLogLevel(args.open.log_level);
  absl::StatusOr<std::unique_ptr<Host>> host = CreateHost(args.open.backend_manifests);
  if (!host.ok()) return ReportFailure("info", "", host.status());
  PrintWarnings("info", **host);
  absl::StatusOr<std::unique_ptr<VideoDecoder>> decoder =
      ToAbsl((*host)->OpenDecoder(file, DecoderOptionsFor(args.open)));
  if (!decoder.ok()) return ReportFailure("info", file, decoder.status());
  if (args.json) {
    PrintJson(args, **host, **decoder);
  } else {
    PrintText(args, **host, **decoder);
  }
  return StdoutWritten() ? 0 : ReportFailure("info", file, absl::InternalError("cannot write stdout"));
}

}  // namespace codecvisor::cli
