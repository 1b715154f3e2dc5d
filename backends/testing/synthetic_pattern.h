// File: backends/testing/synthetic_pattern.h
//
// The synthetic test video: its description format, its frame layout and
// the exact bytes of every frame. Shared by the synthetic backend (which
// writes frames) and the tests (which check them), so both agree on every
// byte. Header-only, C++ and the SDK header only.

#ifndef CODECVISOR_BACKENDS_TESTING_SYNTHETIC_PATTERN_H_
#define CODECVISOR_BACKENDS_TESTING_SYNTHETIC_PATTERN_H_

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>

#include "backends/sdk/codecvisor_backend.h"

namespace codecvisor::testing {

struct SyntheticVideo {
  int64_t frames = 10;
  uint32_t width = 64;
  uint32_t height = 48;
  double fps = 25;
  double start = 0;
  // Faults, honoured by the `faulty` build of the backend only: what to do
  // (segfault, segfault_thread, abort, exit, hang, hang_open, alloc, garbage,
  // oversized, scribble, badref, huge_layout, inf_duration, forge_index, forge_count, forge_empty, exhausted_open,
  // hang_close, spin_open, huge_duration), and at which frame (-1: every frame).
  std::string fault;
  int64_t fault_frame = -1;
  // With fault_rate in (0, 1): the fault strikes each decoded frame with
  // this probability instead, at random (a flaky plugin, not a poison
  // request: the replay after a crash most likely succeeds).
  double fault_rate = 0;
  // Every build sleeps this long in every decode_frame call, before any
  // fault: a slow plugin, whose calls are in progress when another session's
  // request kills the process, or whose host has time to free each frame.
  int64_t decode_ms = 0;
  // Every build keeps a core busy this long in every decode_frame call: a
  // slow decode (many frames before the one asked for), not a hang.
  int64_t busy_ms = 0;
  // Every build sleeps this long in open_session: an open still inside
  // vendor code when another session's request kills the process.
  int64_t open_ms = 0;
  // For the table with late frame buffers (entry synthetic_late_v1): the
  // frame whose decode returns without acquiring its buffer (a broken
  // plugin; -1: none), and whether every decode acquires twice.
  int64_t late_skip = -1;
  bool late_twice = false;
  // For the late table: before it acquires frame i's buffer, wait (up to
  // 10 s) until the video's file has grown by i bytes since the open, so
  // that a test can say when it has let go of frame i - 1 by appending a
  // byte, and the acquire comes after that whatever the machine's speed.
  bool late_gate = false;
  // Reports no frame count (-1 from header and scan), as a container with
  // no count in its header does; frames past the end are still out of range.
  bool count_unknown = false;
  // Reports its average rate as NaN (a vendor's "unknown"); frames keep fps.
  bool nan_rate = false;
  // get_streams lists this many video streams (0: none, as a backend without
  // get_streams), each with a 63-character codec name: the longest open
  // answer a backend may give.
  int64_t streams = 0;
  // The `hostile` build's escape attempt (see attacks.h), with the host's
  // pid and a 127.0.0.1 port to attack.
  std::string attack;
  int host_pid = 0;
  int port = 0;
};

// Parses "frames=N width=W height=H fps=F start=S" (any order, all optional
// but the magic word "synthetic" must come first).
inline std::optional<SyntheticVideo> ParseSyntheticVideo(const std::string& text) {
  std::istringstream in(text);
  std::string word;
  if (!(in >> word) || word != "synthetic") return std::nullopt;
  SyntheticVideo v;
  while (in >> word) {
    const size_t eq = word.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = word.substr(0, eq);
    if (key == "fault" || key == "attack") {
      (key == "fault" ? v.fault : v.attack) = word.substr(eq + 1);
      continue;
    }
    const double value = std::strtod(word.c_str() + eq + 1, nullptr);
    if (key == "frames") v.frames = static_cast<int64_t>(value);
    if (key == "width") v.width = static_cast<uint32_t>(value);
    if (key == "height") v.height = static_cast<uint32_t>(value);
    if (key == "fps") v.fps = value;
    if (key == "start") v.start = value;
    if (key == "fault_frame") v.fault_frame = static_cast<int64_t>(value);
    if (key == "fault_rate") v.fault_rate = value;
    if (key == "decode_ms") v.decode_ms = static_cast<int64_t>(value);
    if (key == "busy_ms") v.busy_ms = static_cast<int64_t>(value);
    if (key == "open_ms") v.open_ms = static_cast<int64_t>(value);
    if (key == "late_skip") v.late_skip = static_cast<int64_t>(value);
    if (key == "late_twice") v.late_twice = value != 0;
    if (key == "late_gate") v.late_gate = value != 0;
    if (key == "count_unknown") v.count_unknown = value != 0;
    if (key == "nan_rate") v.nan_rate = value != 0;
    if (key == "streams") v.streams = static_cast<int64_t>(value);
    if (key == "host_pid") v.host_pid = static_cast<int>(value);
    if (key == "port") v.port = static_cast<int>(value);
  }
  if (v.frames < 0 || v.width == 0 || v.height == 0 || v.width > 8192 || v.height > 8192 || !(v.fps > 0) ||
      !(v.fault_rate >= 0 && v.fault_rate < 1) || v.decode_ms < 0 || v.decode_ms > 60'000 || v.busy_ms < 0 ||
      v.busy_ms > 60'000 || v.open_ms < 0 || v.open_ms > 60'000 || v.streams < 0 || v.streams > 1024) {
    return std::nullopt;
  }
  return v;
}

// Byte c (0..2) of pixel (x, y) of frame `index`.
inline uint8_t SyntheticPixel(int64_t index, uint32_t x, uint32_t y, uint32_t c) {
  return static_cast<uint8_t>(index * 7 + x + 3 * y + 50 * c);
}

inline cv_frame_layout SyntheticLayout(const SyntheticVideo& v, cv_output_format format) {
  cv_frame_layout l{};
  l.width = v.width;
  l.height = v.height;
  const uint64_t plane = uint64_t{v.width} * v.height;
  if (format == CV_OUTPUT_RGB24_PLANAR) {
    l.format = CV_OUTPUT_RGB24_PLANAR;
    std::snprintf(l.pixel_format, sizeof(l.pixel_format), "rgbp");
    l.num_planes = 3;
    for (int p = 0; p < 3; ++p) {
      l.plane_offset[p] = p * plane;
      l.plane_stride[p] = v.width;
      l.plane_rows[p] = v.height;
    }
    l.size = 3 * plane;
  } else {
    l.format = format == CV_OUTPUT_NATIVE ? CV_OUTPUT_NATIVE : CV_OUTPUT_RGB24;
    std::snprintf(l.pixel_format, sizeof(l.pixel_format), "rgb24");
    l.num_planes = 1;
    l.plane_stride[0] = v.width * 3;
    l.plane_rows[0] = v.height;
    l.size = 3 * plane;
  }
  return l;
}

inline cv_frame_info SyntheticInfo(const SyntheticVideo& v, int64_t index) {
  cv_frame_info info{};
  info.index = index;
  info.pts_seconds = v.start + index / v.fps;
  info.pts = static_cast<int64_t>(info.pts_seconds * 1000 + 0.5);
  info.duration_seconds = 1 / v.fps;
  info.key_frame = index % 10 == 0;
  return info;
}

inline void FillSyntheticFrame(const SyntheticVideo& v, cv_output_format format, int64_t index, uint8_t* out) {
  const uint64_t plane = uint64_t{v.width} * v.height;
  for (uint32_t y = 0; y < v.height; ++y) {
    for (uint32_t x = 0; x < v.width; ++x) {
      for (uint32_t c = 0; c < 3; ++c) {
        const uint64_t at = format == CV_OUTPUT_RGB24_PLANAR ? c * plane + uint64_t{y} * v.width + x
                                                             : (uint64_t{y} * v.width + x) * 3 + c;
        out[at] = SyntheticPixel(index, x, y, c);
      }
    }
  }
}

}  // namespace codecvisor::testing

#endif  // CODECVISOR_BACKENDS_TESTING_SYNTHETIC_PATTERN_H_
