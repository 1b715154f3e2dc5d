#include "backends/sdk/runner/header_times.h"

#include <cstddef>

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

}  // namespace codecvisor::runner
