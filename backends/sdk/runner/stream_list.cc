#include "backends/sdk/runner/stream_list.h"

#include <cstddef>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "backends/sdk/runner/abi_convert.h"

namespace codecvisor::runner {

bool ListsStreams(const cv_backend_v1& table) {
  return table.struct_size >= offsetof(cv_backend_v1, get_streams) + sizeof(table.get_streams) &&
         table.get_streams != nullptr;
}

absl::StatusOr<std::vector<ipc::StreamInfo>> ListStreams(const cv_backend_v1& table, cv_session* session,
                                                         const std::string& name) {
  std::vector<ipc::StreamInfo> out;
  if (!ListsStreams(table)) return out;
  std::vector<cv_stream_info> listed(CV_MAX_STREAMS);
  uint32_t count = 0;
  cv_error error{};
  if (cv_status st = table.get_streams(session, listed.data(), CV_MAX_STREAMS, &count, &error); st != CV_OK) {
    return VendorError(st, error);
  }
  if (count > CV_MAX_STREAMS) {
    return absl::InternalError(absl::StrCat("backend '", name, "' listed ", count, " streams in room for ",
                                            CV_MAX_STREAMS));
  }
  out.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    const cv_stream_info& s = listed[i];
    if (s.type < CV_STREAM_UNKNOWN || s.type > CV_STREAM_ATTACHMENT) {
      return absl::InternalError(absl::StrCat("backend '", name, "' listed stream ", s.index, " with type ", s.type,
                                              ", which no CV_STREAM_* names"));
    }
    out.push_back({s.index, static_cast<ipc::StreamType>(s.type), std::string(s.codec, strnlen(s.codec, CV_NAME_BYTES)),
                   s.width, s.height, s.sample_rate, s.channels});
  }
  return out;
}

}  // namespace codecvisor::runner
