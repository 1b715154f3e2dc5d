#include "python/codecvisor/dicts.h"

#include "pybind11/stl.h"
#include "python/codecvisor/status_bridge.h"

namespace codecvisor::python {

namespace py = pybind11;

py::dict MetadataDict(const StreamMetadata& m) {
  py::dict d;
  d["stream_index"] = m.stream_index;
  d["codec"] = Text(m.codec);
  d["width"] = m.width;
  d["height"] = m.height;
  d["pixel_format"] = Text(m.pixel_format);
  d["num_frames_from_header"] = m.num_frames_from_header;
  d["num_frames_from_scan"] = m.num_frames_from_scan;
  d["average_fps"] = m.average_fps;
  d["duration_seconds"] = m.duration_seconds;
  d["begin_stream_seconds"] = m.begin_stream_seconds;
  d["end_stream_seconds"] = m.end_stream_seconds;
  d["bit_rate"] = m.bit_rate;
  d["rotation_degrees"] = m.rotation_degrees;
  d["color_space"] = Text(m.color_space);
  d["color_range"] = Text(m.color_range);
  d["color_primaries"] = Text(m.color_primaries);
  d["color_transfer"] = Text(m.color_transfer);
  d["time_base"] = py::make_tuple(m.time_base.num, m.time_base.den);
  d["num_video_streams"] = m.num_video_streams;
  // (duration, begin) as the header says them; None when the backend does not say.
  d["pixel_aspect_ratio"] = m.pixel_aspect_ratio
                                ? py::object(py::make_tuple(m.pixel_aspect_ratio->num, m.pixel_aspect_ratio->den))
                                : py::object(py::none());
  d["header_times"] =
      m.header_times
          ? py::object(py::make_tuple(m.header_times->duration_seconds, m.header_times->begin_stream_seconds))
          : py::object(py::none());
  py::list streams;  // empty: the backend does not list the file's streams
  for (const StreamInfo& s : m.streams) {
    py::dict entry;
    entry["index"] = s.index;
    entry["type"] = StreamTypeName(s.type);
    entry["codec"] = Text(s.codec);
    entry["width"] = s.width;
    entry["height"] = s.height;
    entry["sample_rate"] = s.sample_rate;
    entry["channels"] = s.channels;
    streams.append(entry);
  }
  d["streams"] = streams;
  return d;
}

py::dict BackendDict(const BackendInfo& b) {
  py::dict d;
  d["name"] = Text(b.name);
  py::list devices;
  for (const std::string& device : b.devices) devices.append(Text(device));
  d["devices"] = devices;
  d["manifest_path"] = Text(b.manifest_path);
  d["state"] = Text(b.state);
  d["diagnostic"] = Text(b.diagnostic);
  d["pid"] = b.pid;
  d["uptime_seconds"] = b.uptime_seconds;
  d["sessions"] = b.sessions;
  d["parked"] = b.parked;
  d["restarts"] = b.restarts;
  d["last_exit"] = Text(b.last_exit);
  d["last_exit_time"] = b.last_exit_time;
  d["warm_spare"] = b.warm_spare;
  d["sandbox"] = Text(b.sandbox);
  d["version"] = Text(b.version);
  return d;
}

}  // namespace codecvisor::python
