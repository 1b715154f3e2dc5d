// File: backends/cpu/stream_splices.cc

#include "backends/cpu/stream_splices.h"

#include <algorithm>
#include <iterator>

#include "backends/cpu/av_util.h"

extern "C" {
#include <libavutil/avutil.h>
}

namespace codecvisor::cpu {

int64_t StreamSplices::Place(int64_t pos, int64_t pts, int64_t dts, int64_t duration) {
  if (segments_.empty()) segments_.push_back({std::max<int64_t>(pos, 0), 0});
  int64_t offset = segments_.back().offset;
  if (dts != AV_NOPTS_VALUE && have_dts_ && SaturatingAdd(SaturatingAdd(dts, offset), min_jump_) < last_dts_ &&
      pos >= 0 && pos > segments_.back().pos) {
    // Placed after every frame so far, by its first decode time: every frame
    // of the recording shows at or after it (an open GOP's leading pictures
    // too, whose times are below the key frame's), so none lands among the
    // frames before the join. The decode time also follows the previous
    // packet's.
    offset = std::max(SaturatingSub(have_end_ ? end_ : last_dts_, dts),
                      SaturatingSub(SaturatingAdd(last_dts_, 1), dts));
    segments_.push_back({pos, offset});
  }
  if (dts != AV_NOPTS_VALUE) {
    last_dts_ = SaturatingAdd(dts, offset);
    have_dts_ = true;
  }
  if (pts != AV_NOPTS_VALUE) {
    const int64_t end = SaturatingAdd(SaturatingAdd(pts, offset), std::max<int64_t>(duration, 0));
    end_ = have_end_ ? std::max(end_, end) : end;
    have_end_ = true;
  }
  return offset;
}

int64_t StreamSplices::OffsetAt(int64_t pos, int64_t previous) const {
  if (pos < 0) return previous;
  if (segments_.empty()) return 0;
  auto it = std::upper_bound(segments_.begin(), segments_.end(), pos,
                             [](int64_t p, const Segment& s) { return p < s.pos; });
  return it == segments_.begin() ? segments_.front().offset : std::prev(it)->offset;
}

int64_t StreamSplices::KeyPositionAtOrBefore(int64_t pts) const {
  auto it = std::upper_bound(keys_.begin(), keys_.end(), std::make_pair(pts, INT64_MAX));
  return it == keys_.begin() ? -1 : std::prev(it)->second;
}

}  // namespace codecvisor::cpu
