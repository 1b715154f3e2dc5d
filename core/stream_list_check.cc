#include "core/stream_list_check.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace codecvisor {
namespace {

absl::Status Lie(const std::string& what) {
  return absl::DataLossError(absl::StrCat("the backend's list of the file's streams is invalid: ", what));
}

absl::Status BadStream(const std::string& what) {
  return absl::DataLossError(absl::StrCat("the backend's opened stream is invalid: ", what));
}

}  // namespace

absl::Status CheckStreamList(const ipc::StreamMetadata& metadata, int32_t asked_stream_index) {
  // A file's stream indices and counts are bounded by its list's limit,
  // listed or not: FFmpeg's own is 1000 streams.
  if (metadata.stream_index < 0 || metadata.stream_index >= static_cast<int64_t>(ipc::kMaxStreams)) {
    return BadStream(absl::StrCat("its index ", metadata.stream_index, " is outside [0, ", ipc::kMaxStreams, ")"));
  }
  if (asked_stream_index >= 0 && metadata.stream_index != asked_stream_index) {
    return BadStream(absl::StrCat("stream ", metadata.stream_index, " was opened where stream ", asked_stream_index,
                                  " was asked for"));
  }
  // 0: a backend that does not count them.
  if (metadata.num_video_streams > ipc::kMaxStreams) {
    return BadStream(absl::StrCat("the file's count of video streams, ", metadata.num_video_streams,
                                  ", is more than a file has (", ipc::kMaxStreams, ")"));
  }
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
  // Cover art is listed as video but not counted (num_video_streams counts
  // streams one can decode as a video): the list holds at least the count.
  const auto video = std::count_if(streams.begin(), streams.end(),
                                   [](const ipc::StreamInfo& s) { return s.type == ipc::StreamType::kVideo; });
  if (video < static_cast<int64_t>(metadata.num_video_streams)) {
    return Lie(
        absl::StrCat("it lists ", video, " video stream(s) where num_video_streams says ", metadata.num_video_streams));
  }
  return absl::OkStatus();
}

}  // namespace codecvisor
