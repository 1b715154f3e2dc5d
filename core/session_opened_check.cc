// File: core/session_opened_check.cc

#include "core/session_opened_check.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/backend_output.h"
#include "ipc/frame_arena.h"
#include "ipc/plane_shapes.h"

namespace codecvisor {
namespace {

absl::Status BadLayout(const ipc::FrameLayout& l, absl::string_view what) {
  return absl::DataLossError(
      absl::StrCat("the backend's frame layout (", l.width, "x", l.height, ", ", l.size, " bytes) is invalid: ", what));
}

absl::Status BadNumber(absl::string_view field, double value, absl::string_view rule) {
  return absl::DataLossError(absl::StrCat("the backend's stream metadata is invalid: ", field, " ", value, " ", rule));
}

}  // namespace

absl::Status CheckLayout(const ipc::FrameLayout& l) {
  if (l.width == 0 || l.height == 0 || l.width > ipc::kMaxFrameSide || l.height > ipc::kMaxFrameSide) {
    return BadLayout(l, absl::StrCat("a frame is 1 to ", ipc::kMaxFrameSide, " pixels each way"));
  }
  const size_t want_planes = ipc::PlanesOf(l.format);
  if (l.planes.empty() || l.planes.size() > ipc::kMaxPlanes || (want_planes != 0 && l.planes.size() != want_planes)) {
    return BadLayout(l, absl::StrCat(l.planes.size(), " planes for its format"));
  }
  const bool rgb = want_planes != 0;
  if (rgb && !l.pixel_format.empty() && l.pixel_format != ipc::RgbPixelFormatName(l.format)) {
    return BadLayout(l, absl::StrCat(ipc::OutputFormatName(l.format), " frames named '",
                                     ReplaceUnsafeForTerminal(l.pixel_format), "'"));
  }
  // A format the host knows has planes of known rows and row lengths.
  const std::optional<std::vector<ipc::PlaneShape>> shapes =
      rgb ? std::nullopt : ipc::PlaneShapesOf(l.pixel_format, l.width, l.height);
  if (shapes.has_value() && shapes->size() != l.planes.size()) {
    return BadLayout(l, absl::StrCat(l.planes.size(), " planes for ", l.pixel_format, ", which has ", shapes->size()));
  }
  const uint64_t min_stride = std::max<uint64_t>(ipc::MinPlaneStride(l.format, l.width), 1);
  const uint64_t max_stride = uint64_t{l.width} * kMaxBytesPerPixel + kMaxRowPadding;
  uint64_t room = kMaxLayoutSlack;
  for (size_t i = 0; i < l.planes.size(); ++i) {
    const ipc::Plane& p = l.planes[i];
    const std::string plane = absl::StrCat("plane ", i, " of ", p.rows, " rows of ", p.stride, " bytes");
    if (p.rows == 0 || p.rows > l.height || (rgb && p.rows != l.height)) {
      return BadLayout(l, absl::StrCat(plane, ": ",
                                       rgb ? absl::StrCat("RGB has ", l.height, " rows")
                                           : absl::StrCat("1 to ", l.height, " rows")));
    }
    if (p.stride < min_stride) {
      return BadLayout(l, absl::StrCat(plane, ": a row of ", l.width, " pixels takes at least ", min_stride, " bytes"));
    }
    if (shapes.has_value() && (p.stride < (*shapes)[i].row_bytes || p.rows < (*shapes)[i].rows)) {
      return BadLayout(l, absl::StrCat(plane, ": ", l.pixel_format, " has ", (*shapes)[i].rows, " rows of at least ",
                                       (*shapes)[i].row_bytes, " bytes there"));
    }
    if (p.stride > max_stride) {
      return BadLayout(l, absl::StrCat(plane, ": rows of ", l.width, " pixels take at most ", max_stride,
                                       " bytes, padding included"));
    }
    // stride * rows fits in 64 bits: both are 32-bit.
    const uint64_t bytes = uint64_t{p.stride} * p.rows;
    if (p.offset > l.size || bytes > l.size - p.offset) {
      return BadLayout(l, absl::StrCat("a plane at ", p.offset, " of ", bytes, " bytes ends past the frame"));
    }
    room += uint64_t{p.stride} * (2 * uint64_t{p.rows} + kMaxPaddingRows);  // < 2^49 a plane
  }
  if (l.size > room) {
    return BadLayout(l, absl::StrCat("its planes, with their rows padded, need at most ", room, " bytes"));
  }
  return absl::OkStatus();
}

absl::Status CheckStreamNumbers(const ipc::StreamMetadata& m) {
  const ipc::HeaderTimes header = m.header_times.value_or(ipc::HeaderTimes{});
  const struct {
    const char* name;
    double value;
    bool non_negative;
    bool nan_is_unknown;
  } reals[] = {{"average_fps", m.average_fps, true, true},
               {"duration_seconds", m.duration_seconds, true, false},
               {"begin_stream_seconds", m.begin_stream_seconds, false, false},
               {"end_stream_seconds", m.end_stream_seconds, false, false},
               {"rotation_degrees", m.rotation_degrees, false, false},
               {"the header's duration_seconds", header.duration_seconds, true, false},
               {"the header's begin_stream_seconds", header.begin_stream_seconds, false, false}};
  for (const auto& r : reals) {
    if (r.nan_is_unknown && std::isnan(r.value)) continue;
    if (!std::isfinite(r.value)) return BadNumber(r.name, r.value, "is not a finite number");
    if (r.non_negative && r.value < 0) return BadNumber(r.name, r.value, "is negative");
  }
  // A span between two finite times may still overflow (begin -1e308, end
  // 1e308): a caller's duration, frame count or sampler would be infinite.
  for (const auto& r : reals) {
    if (absl::string_view(r.name).find("seconds") == absl::string_view::npos) continue;
    if (std::fabs(r.value) > kMaxStreamSeconds) {
      return BadNumber(r.name, r.value, absl::StrCat("is more than ", kMaxStreamSeconds, " s either way"));
    }
  }
  if (m.average_fps > 0 && m.average_fps < kMinKnownFps) {
    return BadNumber("average_fps", m.average_fps, absl::StrCat("is neither 0 (unknown) nor ", kMinKnownFps, " or more"));
  }
  if (m.end_stream_seconds < m.begin_stream_seconds) {
    return BadNumber("end_stream_seconds", m.end_stream_seconds,
                     absl::StrCat("is before begin_stream_seconds ", m.begin_stream_seconds));
  }
  if (std::fabs(m.rotation_degrees) > 360) return BadNumber("rotation_degrees", m.rotation_degrees, "is past a turn");
  if (m.bit_rate < 0) return BadNumber("bit_rate", static_cast<double>(m.bit_rate), "is negative");
  for (const auto& [name, count] : {std::pair{"num_frames_from_header", m.num_frames_from_header},
                                    std::pair{"num_frames_from_scan", m.num_frames_from_scan}}) {
    if (count < -1 || count > kMaxStreamFrames) {
      return BadNumber(name, static_cast<double>(count),
                       absl::StrCat("is not -1 (unknown) or 0 to ", kMaxStreamFrames));
    }
  }
  if (const auto& par = m.pixel_aspect_ratio;
      par && (par->num <= 0 || par->den <= 0 || par->num > INT32_MAX || par->den > INT32_MAX)) {
    return absl::DataLossError(absl::StrCat("the backend's stream metadata has a pixel_aspect_ratio of ", par->num,
                                            "/", par->den, ", which is not two positive 32-bit integers"));
  }
  return absl::OkStatus();
}

absl::Status CheckSessionLayout(const ipc::SessionOpened& opened, const ipc::OpenSession& asked) {
  if (absl::Status s = CheckLayout(opened.layout); !s.ok()) return s;
  const ipc::StreamMetadata& m = opened.metadata;
  if ((asked.output_width == 0 && opened.layout.width != m.width) ||
      (asked.output_height == 0 && opened.layout.height != m.height)) {
    return absl::DataLossError(absl::StrCat("the backend describes a ", m.width, "x", m.height,
                                            " stream but lays its frames out at ", opened.layout.width, "x",
                                            opened.layout.height, " with no output size asked for"));
  }
  // Native frames asked for are the caller's to take as they come.
  if (opened.layout.format != ipc::OutputFormat::kNative || asked.output_format == ipc::OutputFormat::kNative) {
    return absl::OkStatus();
  }
  // Native frames in place of the RGB asked for are the decoder's
  // pictures, which the host converts as the stream's metadata describes
  // them (api/rgb_converter.h).
  if (opened.layout.pixel_format != m.pixel_format) {
    return absl::DataLossError(absl::StrCat("the backend describes a ", ReplaceUnsafeForTerminal(m.pixel_format),
                                            " stream but lays its frames out natively as ",
                                            ReplaceUnsafeForTerminal(opened.layout.pixel_format),
                                            " in place of the RGB asked for"));
  }
  // Only where the host offered to convert them and a conversion is all
  // there is to do (cv_open_options).
  const bool offered = std::find(asked.native_formats.begin(), asked.native_formats.end(),
                                 opened.layout.pixel_format) != asked.native_formats.end();
  const char* refused = nullptr;
  if (!offered) {
    refused = "that format was not offered";
  } else if (m.rotation_degrees != 0) {
    refused = "the stream is rotated";
  } else if (asked.output_width != 0 || asked.output_height != 0) {
    refused = "an output size was asked for";
  }
  if (refused == nullptr) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat("the backend lays frames out natively as ",
                                          ReplaceUnsafeForTerminal(opened.layout.pixel_format),
                                          " where RGB was asked for and ", refused));
}

absl::Status AcceptStreamNumbers(ipc::StreamMetadata* metadata) {
  if (absl::Status s = CheckStreamNumbers(*metadata); !s.ok()) return s;
  if (std::isnan(metadata->average_fps)) metadata->average_fps = 0;
  // A time base is two positive 32-bit integers, as an AVRational and every
  // container's are; any other (0/25, INT64_MAX/1, 1/0) is shown as
  // unknown, 0/1, and fails nothing: no time the host gives is in its units.
  if (const ipc::Rational& tb = metadata->time_base;
      tb.num <= 0 || tb.den <= 0 || tb.num > INT32_MAX || tb.den > INT32_MAX) {
    metadata->time_base = ipc::Rational{0, 1};
  }
  return absl::OkStatus();
}

}  // namespace codecvisor
