#include "backends/sdk/runner/abi_convert.h"

#include <cstring>
#include <string>

#include "absl/strings/str_join.h"
#include "backends/sdk/runner/backend_library.h"

namespace codecvisor::runner {
namespace {

template <size_t N>
std::string Text(const char (&field)[N]) {
  return std::string(field, strnlen(field, N));
}

}  // namespace

ipc::StreamMetadata FromAbi(const cv_stream_metadata& m) {
  ipc::StreamMetadata out;
  out.stream_index = m.stream_index;
  out.num_video_streams = m.num_video_streams;
  out.codec = Text(m.codec);
  out.pixel_format = Text(m.pixel_format);
  out.width = m.width;
  out.height = m.height;
  out.num_frames_from_header = m.num_frames_from_header;
  out.num_frames_from_scan = m.num_frames_from_scan;
  out.average_fps = m.average_fps;
  out.duration_seconds = m.duration_seconds;
  out.begin_stream_seconds = m.begin_stream_seconds;
  out.end_stream_seconds = m.end_stream_seconds;
  out.bit_rate = m.bit_rate;
  out.rotation_degrees = m.rotation_degrees;
  out.color_space = Text(m.color_space);
  out.color_range = Text(m.color_range);
  out.color_primaries = Text(m.color_primaries);
  out.color_transfer = Text(m.color_transfer);
  out.time_base = {m.time_base_num, m.time_base_den};
  return out;
}

ipc::FrameLayout FromAbi(const cv_frame_layout& l) {
  ipc::FrameLayout out;
  out.width = l.width;
  out.height = l.height;
  out.format = static_cast<ipc::OutputFormat>(l.format);
  out.pixel_format = Text(l.pixel_format);
  for (uint32_t i = 0; i < l.num_planes && i < CV_MAX_PLANES; ++i) {
    out.planes.push_back({l.plane_offset[i], l.plane_stride[i], l.plane_rows[i]});
  }
  out.size = l.size;
  return out;
}

cv_open_options ToAbi(const ipc::OpenSession& open, std::string& native_formats) {
  cv_open_options o{};
  o.struct_size = sizeof(o);
  o.stream_index = open.stream_index;
  o.seek_mode = static_cast<cv_seek_mode>(open.seek_mode);
  o.output_format = static_cast<cv_output_format>(open.output_format);
  o.decoder_threads = open.decoder_threads;
  o.output_width = open.output_width;
  o.output_height = open.output_height;
  // device and file_label point into `open`, which outlives the call.
  o.device = open.device.c_str();
  o.file_label = open.file_label.c_str();
  native_formats = absl::StrJoin(open.native_formats, ",");
  o.native_formats = native_formats.c_str();
  return o;
}

absl::Status VendorError(cv_status status, const cv_error& error) {
  std::string message = Text(error.message);
  if (message.empty()) message = ipc::kVendorErrorWithoutMessage;
  absl::StatusCode code = ToStatusCode(status);
  if (code == absl::StatusCode::kOk) code = absl::StatusCode::kUnknown;
  // A number no cv_status has (a plugin's own code, an uninitialised
  // variable): the vendor must hear which, not only its message.
  if (code == absl::StatusCode::kUnknown) {
    message = absl::StrCat("backend returned ", status, ", which is no cv_status of codecvisor_backend.h (",
                           message, ")");
  }
  return absl::Status(code, message);
}

ipc::Error ToWireError(const absl::Status& status) {
  ipc::ErrorCode code = ipc::ErrorCode::kUnknown;
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
      code = ipc::ErrorCode::kInvalidArgument;
      break;
    case absl::StatusCode::kOutOfRange:
      code = ipc::ErrorCode::kOutOfRange;
      break;
    case absl::StatusCode::kNotFound:
      code = ipc::ErrorCode::kNotFound;
      break;
    case absl::StatusCode::kDataLoss:
      code = ipc::ErrorCode::kCorruptData;
      break;
    case absl::StatusCode::kUnimplemented:
      code = ipc::ErrorCode::kUnsupported;
      break;
    case absl::StatusCode::kResourceExhausted:
      code = ipc::ErrorCode::kResourceExhausted;
      break;
    case absl::StatusCode::kFailedPrecondition:
      code = ipc::ErrorCode::kProtocolMismatch;
      break;
    case absl::StatusCode::kInternal:
      code = ipc::ErrorCode::kInternal;
      break;
    case absl::StatusCode::kAborted:  // CV_ERROR_NATIVE_CHANGED
      code = ipc::ErrorCode::kNativeChanged;
      break;
    default:
      break;
  }
  std::string message(status.message());
  if (message.size() > ipc::kMaxTextBytes) message.resize(ipc::kMaxTextBytes);
  return ipc::Error{code, std::move(message)};
}

}  // namespace codecvisor::runner
