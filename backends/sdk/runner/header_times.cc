#include "backends/sdk/runner/header_times.h"

#include <cstddef>
#include <string>

#include "absl/strings/str_cat.h"

#include "backends/sdk/runner/abi_convert.h"

namespace codecvisor::runner {

bool GivesHeaderTimes(const cv_backend_v1& table) {
  return table.struct_size >= offsetof(cv_backend_v1, get_header_times) + sizeof(table.get_header_times) &&
         table.get_header_times != nullptr;
}

absl::StatusOr<std::optional<ipc::HeaderTimes>> HeaderTimesOf(const cv_backend_v1& table, cv_session* session,
                                                              const ipc::StreamMetadata& metadata) {
  if (!GivesHeaderTimes(table)) {
    if (metadata.num_frames_from_scan >= 0) return std::nullopt;
    return ipc::HeaderTimes{metadata.duration_seconds, metadata.begin_stream_seconds};
  }
  cv_header_times times{};
  cv_error error{};
  if (cv_status st = table.get_header_times(session, &times, &error); st != CV_OK) return VendorError(st, error);
  return ipc::HeaderTimes{times.duration_seconds, times.begin_stream_seconds};
}

absl::StatusOr<std::optional<ipc::Rational>> PixelAspectRatioOf(const cv_backend_v1& table, cv_session* session,
                                                                const std::string& backend) {
  if (table.struct_size < offsetof(cv_backend_v1, get_pixel_aspect_ratio) + sizeof(table.get_pixel_aspect_ratio) ||
      table.get_pixel_aspect_ratio == nullptr) {
    return std::nullopt;
  }
  cv_aspect_ratio ratio{};
  cv_error error{};
  if (cv_status st = table.get_pixel_aspect_ratio(session, &ratio, &error); st != CV_OK) {
    return VendorError(st, error);
  }
  if (ratio.num == 0) return std::nullopt;
  if (ratio.num < 0 || ratio.den <= 0) {
    return absl::InternalError(absl::StrCat("backend '", backend, "' reported a pixel aspect ratio of ", ratio.num,
                                            "/", ratio.den));
  }
  return ipc::Rational{ratio.num, ratio.den};
}

}  // namespace codecvisor::runner
