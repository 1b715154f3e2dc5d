#include "tools/conformance/metadata_checks.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace codecvisor::conformance {
namespace {

double Seconds(const Sample& sample, int64_t ticks) {
  return static_cast<double>(ticks) * static_cast<double>(sample.time_base_num) /
         static_cast<double>(sample.time_base_den);
}

// From the first frame's start to the last frame's end.
double FramesSpan(const Sample& sample) {
  return Seconds(sample, sample.pts.back() + sample.durations.back()) - Seconds(sample, sample.pts.front());
}

// Every duration the stream may rightly be said to last: its frames' span,
// and what ffprobe reads in the headers: the stream's duration, else the
// container's, with and without the stream's start (a Matroska segment's
// duration runs from 0, so a stream starting at 0.5 s "lasts" 0.5 s more;
// torchcodec and the dav1d example report the container's figure as it is).
std::vector<double> Durations(const Sample& sample) {
  std::vector<double> durations = {FramesSpan(sample)};
  if (!sample.header.has_value()) return durations;
  const ProbedHeader& h = *sample.header;
  if (h.duration_seconds > 0) {
    durations.push_back(h.duration_seconds);
  } else if (h.format_duration_seconds > 0) {
    durations.push_back(h.format_duration_seconds);
    if (h.start_seconds > 0 && h.format_duration_seconds > h.start_seconds) {
      durations.push_back(h.format_duration_seconds - h.start_seconds);
    }
  }
  return durations;
}

bool NearAny(double value, const std::vector<double>& candidates, double tolerance) {
  return std::any_of(candidates.begin(), candidates.end(),
                     [&](double c) { return std::abs(value - c) <= tolerance; });
}

std::string Joined(const std::vector<double>& values) {
  return absl::StrJoin(values, " or ", [](std::string* out, double v) { absl::StrAppendFormat(out, "%.6g", v); });
}

absl::Status CheckDuration(const ipc::StreamMetadata& m, const Sample& sample) {
  const std::vector<double> durations = Durations(sample);
  const double tolerance = DurationTolerance(sample);
  if (std::isfinite(m.duration_seconds) && NearAny(m.duration_seconds, durations, tolerance)) return absl::OkStatus();
  return absl::InternalError(absl::StrFormat(
      "%s: duration_seconds %.6g, but its frames span %.6g s and %s (within %.3g s)", sample.path,
      m.duration_seconds, durations.front(),
      durations.size() > 1
          ? absl::StrCat("ffprobe's headers say ", Joined(std::vector<double>(durations.begin() + 1, durations.end())),
                         " s")
                           : std::string("no header says otherwise"),
      tolerance));
}

bool Untagged(const std::string& tag) { return tag.empty() || tag == "unknown" || tag == "unspecified"; }

}  // namespace

double DurationTolerance(const Sample& sample) {
  double frame = 0;
  if (sample.stream.average_fps > 0) {
    frame = 1 / sample.stream.average_fps;
  } else {
    for (int64_t d : sample.durations) frame = std::max(frame, Seconds(sample, d));
  }
  return frame + 1e-3;
}

absl::Status MetadataColourTags(const ipc::StreamMetadata& m, const Sample& sample) {
  if (!sample.header.has_value()) return absl::OkStatus();
  const ProbedHeader& h = *sample.header;
  const struct {
    const char* name;
    const std::string& reported;
    const std::string& probed;
  } tags[] = {{"color_space", m.color_space, h.color_space},
              {"color_range", m.color_range, h.color_range},
              {"color_primaries", m.color_primaries, h.color_primaries},
              {"color_transfer", m.color_transfer, h.color_transfer}};
  for (const auto& tag : tags) {
    if (Untagged(tag.probed)) {
      if (Untagged(tag.reported)) continue;
      return absl::InternalError(absl::StrCat(sample.path, ": ", tag.name, " '", tag.reported,
                                              "', but the file carries no such tag (ffprobe: unknown); report "
                                              "'unknown' for an untagged stream"));
    }
    if (tag.reported != tag.probed) {
      return absl::InternalError(
          absl::StrCat(sample.path, ": ", tag.name, " '", tag.reported, "', ffprobe says '", tag.probed, "'"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckMetadata(const ipc::StreamMetadata& m, const Sample& sample, bool exact_output,
                           std::string* detail) {
  auto wrong = [&](auto&&... parts) { return absl::InternalError(absl::StrCat(sample.path, ": ", parts...)); };
  if (m.time_base.num <= 0 || m.time_base.den <= 0) {
    return wrong("time base ", m.time_base.num, "/", m.time_base.den);
  }
  if (m.time_base.num * sample.time_base_den != sample.time_base_num * m.time_base.den) {
    return wrong("time base ", m.time_base.num, "/", m.time_base.den, ", the reference says ", sample.time_base_num,
                 "/", sample.time_base_den);
  }
  if (!sample.stream.codec.empty() && m.codec != sample.stream.codec) {
    return wrong("codec '", m.codec, "', the reference says '", sample.stream.codec, "'");
  }
  if (m.width != sample.stream.width || m.height != sample.stream.height) {
    return wrong("size ", m.width, "x", m.height, ", the reference says ", sample.stream.width, "x", sample.stream.height);
  }
  if (m.num_frames_from_scan != sample.num_frames()) {
    return wrong("num_frames_from_scan ", m.num_frames_from_scan, ", the reference has ", sample.num_frames());
  }
  // The header's count is -1 where the header has none; one the backend
  // gives must be the header's (ffprobe's nb_frames), else the real count.
  const int64_t header_frames =
      sample.header.has_value() && sample.header->num_frames >= 0 ? sample.header->num_frames : sample.num_frames();
  if (m.num_frames_from_header >= 0 && m.num_frames_from_header != header_frames) {
    return wrong("num_frames_from_header ", m.num_frames_from_header, ", ",
                 sample.header.has_value() && sample.header->num_frames >= 0 ? "ffprobe's nb_frames is "
                                                                             : "the reference has ",
                 header_frames, " (report -1 where the header has no count)");
  }
  if (std::abs(m.average_fps - sample.stream.average_fps) > 1e-3 * sample.stream.average_fps) {
    return wrong("average_fps ", m.average_fps, ", the reference says ", sample.stream.average_fps);
  }
  const double begin = Seconds(sample, sample.pts.front());
  const double end = Seconds(sample, sample.pts.back() + sample.durations.back());
  if (std::abs(m.begin_stream_seconds - begin) > 1e-6) {
    return wrong("begin_stream_seconds ", m.begin_stream_seconds, ", the reference's first frame is at ", begin);
  }
  if (std::abs(m.end_stream_seconds - end) > 1e-6) {
    return wrong("end_stream_seconds ", m.end_stream_seconds, ", the reference's last frame ends at ", end);
  }
  if (absl::Status s = CheckDuration(m, sample); !s.ok()) return s;
  if (m.pixel_format.empty()) return wrong("no pixel_format");
  std::string checked = "time base, codec, size, frame counts, rate, times, duration";
  if (sample.header.has_value()) {
    const ProbedHeader& h = *sample.header;
    if (m.num_video_streams != static_cast<uint32_t>(h.num_video_streams)) {
      return wrong("num_video_streams ", m.num_video_streams, ", ffprobe finds ", h.num_video_streams,
                   " (cover art not counted)");
    }
    if (!m.streams.empty() && m.streams.size() != static_cast<size_t>(h.num_streams)) {
      return wrong("streams lists ", m.streams.size(), " streams, ffprobe finds ", h.num_streams);
    }
    if (exact_output && m.pixel_format != h.pixel_format) {
      return wrong("pixel_format '", m.pixel_format, "', ffprobe says '", h.pixel_format,
                   "' (a backend that claims bit-exact output decodes the file's own format)");
    }
    if (absl::Status s = MetadataColourTags(m, sample); !s.ok()) return s;
    absl::StrAppend(&checked, ", stream counts, ", exact_output ? "pixel format, " : "", "colour tags as ffprobe's");
  }
  *detail = absl::StrCat(m.codec, " ", m.width, "x", m.height, " ", m.pixel_format, ", ", m.num_frames_from_scan,
                         " frames at ", m.average_fps, " fps, [", m.begin_stream_seconds, ", ", m.end_stream_seconds,
                         ") s, ", m.duration_seconds, " s, colour ", m.color_space.empty() ? "''" : m.color_space, "/",
                         m.color_range.empty() ? "''" : m.color_range, " (", checked, ")");
  return absl::OkStatus();
}

absl::Status CheckApproximateMetadata(const ipc::StreamMetadata& m, const Sample& sample, std::string* detail) {
  auto wrong = [&](auto&&... parts) {
    return absl::InternalError(absl::StrCat(sample.path, ": approximate mode's ", parts...));
  };
  // The header's rate: avg_frame_rate, or r_frame_rate where that is
  // unknown (as the cpu backend falls back).
  std::vector<double> rates = {sample.stream.average_fps};
  if (sample.header.has_value() && sample.header->r_frame_rate > 0) rates.push_back(sample.header->r_frame_rate);
  const bool rate_ok = std::any_of(rates.begin(), rates.end(),
                                   [&](double r) { return r > 0 && std::abs(m.average_fps - r) <= 1e-3 * r; });
  if (!rate_ok) return wrong("average_fps ", m.average_fps, ", the header says ", Joined(rates));
  if (absl::Status s = CheckDuration(m, sample); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("approximate mode: ", s.message()));
  }
  // len() as the Python package counts it: the header's frame count, else
  // the header's duration (get_header_times, which approximate mode always
  // has: the metadata's times where a backend lacks it) times its rate.
  const double duration = m.header_times.has_value() ? m.header_times->duration_seconds : m.duration_seconds;
  int64_t estimate = m.known_frame_count();
  if (estimate < 0 && duration > 0 && m.average_fps > 0 && duration * m.average_fps < 9e18) {
    estimate = std::llround(duration * m.average_fps);
  }
  if (estimate < 0) {
    return wrong("metadata gives no frame count: no num_frames_from_header, and no header duration (",
                 m.header_times.has_value() ? "get_header_times says " : "the metadata says ", duration,
                 " s) and rate to estimate one from (len() is unknown)");
  }
  std::vector<double> counts;
  if (sample.header.has_value() && sample.header->num_frames >= 0) {
    counts.push_back(static_cast<double>(sample.header->num_frames));
  } else {
    counts.push_back(static_cast<double>(sample.num_frames()));
    for (double d : Durations(sample)) {
      for (double r : rates) counts.push_back(std::round(d * r));
    }
  }
  const double tolerance = std::max(1.0, std::round(0.02 * static_cast<double>(sample.num_frames())));
  if (!NearAny(static_cast<double>(estimate), counts, tolerance)) {
    return wrong(
        "frame count (len()) ", estimate, " (num_frames_from_header ", m.num_frames_from_header, ", header duration ",
        duration, " s, average_fps ", m.average_fps, "), but ",
        sample.header.has_value() && sample.header->num_frames >= 0 ? "ffprobe's nb_frames is " : "the header gives ",
        Joined(counts), " and the file has ", sample.num_frames(), " frames (within ", tolerance, ")");
  }
  *detail = absl::StrCat("header metadata: ", estimate, " frames at ", m.average_fps, " fps, ", duration, " s");
  return absl::OkStatus();
}

}  // namespace codecvisor::conformance
