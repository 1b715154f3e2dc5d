#include "core/frame_selection.h"

#include <algorithm>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace codecvisor::internal {
namespace {

template <typename T>
std::string ShortList(const std::vector<T>& v) {
  constexpr size_t kShown = 8;
  std::vector<T> head(v.begin(), v.begin() + std::min(v.size(), kShown));
  return absl::StrCat("[", absl::StrJoin(head, ", "), v.size() > kShown ? ", ...]" : "]");
}

}  // namespace

std::string DescribeSelection(const FrameSelection& selection) {
  if (auto* v = std::get_if<ipc::IndexList>(&selection.selection)) {
    return absl::StrCat("frame indices ", ShortList(v->indices));
  }
  if (auto* v = std::get_if<ipc::IndexRange>(&selection.selection)) {
    return absl::StrCat("frames [", v->start, ", ", v->stop, ") step ", v->step);
  }
  if (auto* v = std::get_if<ipc::PtsList>(&selection.selection)) {
    return absl::StrCat("frames played at ", ShortList(v->seconds), " s");
  }
  const auto& r = std::get<ipc::PtsRange>(selection.selection);
  return absl::StrCat("frames played in [", r.start_seconds, ", ", r.stop_seconds, ") s");
}

absl::StatusOr<ipc::IndexRange> CountFromEnd(const ipc::IndexRange& range, int64_t count) {
  if (range.start >= 0 && range.stop >= 0) return range;
  if (count < 0) {
    return absl::OutOfRangeError(absl::StrCat("frames [", range.start, ", ", range.stop,
                                              "): negative bounds count from the end, and the stream's frame "
                                              "count is unknown"));
  }
  ipc::IndexRange resolved = range;
  if (resolved.start < 0) resolved.start += count;
  if (resolved.stop < 0) resolved.stop += count;
  if (resolved.start < 0 || resolved.stop < 0) {
    return absl::OutOfRangeError(absl::StrCat("frames [", range.start, ", ", range.stop,
                                              ") reach before the stream's first frame: it has ", count,
                                              " frames"));
  }
  return resolved;
}

}  // namespace codecvisor::internal
