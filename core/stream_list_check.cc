#include "core/stream_list_check.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace codecvisor {
namespace {

absl::Status Lie(const std::string& what) {
  return absl::DataLossError(absl::StrCat("the backend's list of the file's streams is invalid: ", what));
}

}  // namespace

absl::Status CheckStreamList(const ipc::StreamMetadata& metadata) {
  const std::vector<ipc::StreamInfo>& streams = metadata.streams;
  if (streams.empty()) return absl::OkStatus();
  if (streams.size() > ipc::kMaxStreams) {
    return Lie(absl::StrCat(streams.size(), " entries; at most ", ipc::kMaxStreams));
  }
  int64_t previous = -1;
  bool opened_listed = false;
  for (size_t i = 0; i < streams.size(); ++i) {
    const ipc::StreamInfo& s = streams[i];
    if (s.index < 0 || s.index >= static_cast<int64_t>(ipc::kMaxStreams)) {
      return Lie(absl::StrCat("entry ", i, " has stream index ", s.index, ", outside [0, ", ipc::kMaxStreams, ")"));
    }
    if (s.index <= previous) {
      return Lie(absl::StrCat("entry ", i, " has stream index ", s.index, " after ", previous,
                              " (indices must ascend, each listed once)"));
    }
    const auto type = static_cast<int>(s.type);
    if (type < static_cast<int>(ipc::StreamType::kUnknown) || type > static_cast<int>(ipc::StreamType::kAttachment)) {
      return Lie(absl::StrCat("stream ", s.index, " has type ", type, ", which is not a stream type"));
    }
    if (s.index == metadata.stream_index) {
      if (s.type != ipc::StreamType::kVideo) {
        return Lie(absl::StrCat("the opened stream ", s.index, " is not listed as a video stream"));
      }
      opened_listed = true;
    }
    previous = s.index;
  }
  if (!opened_listed) return Lie(absl::StrCat("the opened stream ", metadata.stream_index, " is not listed"));
  return absl::OkStatus();
}

}  // namespace codecvisor
