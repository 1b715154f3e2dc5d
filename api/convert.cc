#include "api/convert.h"

#include <string>
#include <type_traits>
#include <variant>

namespace codecvisor::api {

SeekMode FromIpc(ipc::SeekMode mode) {
  return mode == ipc::SeekMode::kApproximate ? SeekMode::kApproximate : SeekMode::kExact;
}

ipc::SeekMode ToIpc(SeekMode mode) {
  return mode == SeekMode::kApproximate ? ipc::SeekMode::kApproximate : ipc::SeekMode::kExact;
}

OutputFormat FromIpc(ipc::OutputFormat format) {
  switch (format) {
    case ipc::OutputFormat::kRgb24:
      return OutputFormat::kRgb24;
    case ipc::OutputFormat::kRgb24Planar:
      return OutputFormat::kRgb24Planar;
    case ipc::OutputFormat::kNative:
      return OutputFormat::kNative;
  }
  return OutputFormat::kRgb24;
}

ipc::OutputFormat ToIpc(OutputFormat format) {
  switch (format) {
    case OutputFormat::kRgb24:
      return ipc::OutputFormat::kRgb24;
    case OutputFormat::kRgb24Planar:
      return ipc::OutputFormat::kRgb24Planar;
    case OutputFormat::kNative:
      return ipc::OutputFormat::kNative;
  }
  return ipc::OutputFormat::kRgb24;
}

StreamType FromIpc(ipc::StreamType type) {
  switch (type) {
    case ipc::StreamType::kUnknown:
      return StreamType::kUnknown;
    case ipc::StreamType::kVideo:
      return StreamType::kVideo;
    case ipc::StreamType::kAudio:
      return StreamType::kAudio;
    case ipc::StreamType::kSubtitle:
      return StreamType::kSubtitle;
    case ipc::StreamType::kData:
      return StreamType::kData;
    case ipc::StreamType::kAttachment:
      return StreamType::kAttachment;
  }
  return StreamType::kUnknown;
}

StreamMetadata FromIpc(const ipc::StreamMetadata& m) {
  StreamMetadata out;
  out.stream_index = m.stream_index;
  out.codec = m.codec;
  out.width = m.width;
  out.height = m.height;
  out.pixel_format = m.pixel_format;
  out.num_frames_from_header = m.num_frames_from_header;
  out.num_frames_from_scan = m.num_frames_from_scan;
  out.average_fps = m.average_fps;
  out.duration_seconds = m.duration_seconds;
  out.begin_stream_seconds = m.begin_stream_seconds;
  out.end_stream_seconds = m.end_stream_seconds;
  out.bit_rate = m.bit_rate;
  out.rotation_degrees = m.rotation_degrees;
  out.color_space = m.color_space;
  out.color_range = m.color_range;
  out.color_primaries = m.color_primaries;
  out.color_transfer = m.color_transfer;
  out.time_base = {m.time_base.num, m.time_base.den};
  out.num_video_streams = m.num_video_streams;
  if (m.header_times)
    out.header_times = HeaderTimes{m.header_times->duration_seconds, m.header_times->begin_stream_seconds};
  if (m.pixel_aspect_ratio) out.pixel_aspect_ratio = Rational{m.pixel_aspect_ratio->num, m.pixel_aspect_ratio->den};
  out.streams.reserve(m.streams.size());
  for (const ipc::StreamInfo& s : m.streams) {
    out.streams.push_back({s.index, FromIpc(s.type), s.codec, s.width, s.height, s.sample_rate, s.channels});
  }
  return out;
}

ipc::FrameRequest ToIpc(const FrameSelection& selection) {
  return std::visit(
      [](const auto& s) -> ipc::FrameRequest {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<T, FrameSelection::Indices>) {
          return {ipc::IndexList{s.indices}};
        } else if constexpr (std::is_same_v<T, FrameSelection::Range>) {
          return {ipc::IndexRange{s.start, s.stop, s.step}};
        } else if constexpr (std::is_same_v<T, FrameSelection::PlayedAt>) {
          return {ipc::PtsList{s.seconds}};
        } else {
          return {ipc::PtsRange{s.start_seconds, s.stop_seconds}};
        }
      },
      selection.get());
}

Status CheckEnums(const DecoderOptions& o) {
  if (o.seek_mode != SeekMode::kExact && o.seek_mode != SeekMode::kApproximate) {
    return Status(StatusCode::kInvalidArgument,
                  "seek_mode " + std::to_string(static_cast<int>(o.seek_mode)) + " is not a SeekMode");
  }
  if (o.output_format != OutputFormat::kRgb24 && o.output_format != OutputFormat::kRgb24Planar &&
      o.output_format != OutputFormat::kNative) {
    return Status(StatusCode::kInvalidArgument,
                  "output_format " + std::to_string(static_cast<int>(o.output_format)) + " is not an OutputFormat");
  }
  return Status();
}

internal::DecoderOptions ToInternal(const DecoderOptions& o) {
  internal::DecoderOptions out;
  out.device = o.device;
  out.stream_index = o.stream_index;
  out.seek_mode = ToIpc(o.seek_mode);
  out.output_format = ToIpc(o.output_format);
  out.native_formats = o.native_formats;
  out.decoder_threads = o.decoder_threads;
  out.output_width = o.output_width;
  out.output_height = o.output_height;
  out.arena_slots = o.arena_slots;
  out.request_timeout = o.request_timeout;
  out.open_timeout = o.open_timeout;
  return out;
}

BackendInfo FromInternal(const internal::BackendStatus& s) {
  BackendInfo out;
  out.name = s.name;
  out.devices = s.devices;
  out.manifest_path = s.manifest_path;
  out.state = s.state;
  out.diagnostic = s.diagnostic;
  out.pid = s.pid;
  out.uptime_seconds = s.uptime_seconds;
  out.sessions = s.sessions;
  out.parked = s.parked;
  out.restarts = s.restarts;
  out.last_exit = s.last_exit;
  out.last_exit_time = s.last_exit_time;
  out.warm_spare = s.warm_spare;
  out.spare_stopped = s.spare_stopped;
  out.sandbox = s.sandbox;
  if (s.hello.has_value()) {
    out.version = s.hello->backend_version;
    const ipc::Capabilities& c = s.hello->capabilities;
    out.exact_cpu_output = c.exact_cpu_output;
    out.psnr_threshold_db = c.psnr_threshold_db;
    for (ipc::SeekMode m : c.seek_modes) out.seek_modes.push_back(FromIpc(m));
    for (ipc::OutputFormat f : c.output_formats) out.output_formats.push_back(FromIpc(f));
    out.max_sessions = c.max_sessions;
  }
  return out;
}

}  // namespace codecvisor::api
