// File: backends/cpu/frame_timeline.cc

#include "backends/cpu/frame_timeline.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <vector>

#include "backends/cpu/av_util.h"
#include "backends/cpu/mpeg4_bitstream.h"

namespace codecvisor::cpu {

namespace {

// PlaceLeadingUntimed: with B-frames the last leading untimed packets may
// follow the first timed ones in decode order, by at most this many.
constexpr size_t kUntimedReorder = 16;

// Delays tried: the smallest known pts less each of the first sorted dts.
// Reordering delays a frame by a few frame times, so the right one is among
// the first few (one more than the packets without a pts before it).
constexpr size_t kDelaysTried = 64;

}  // namespace

int64_t ExpectedReorderDelay(const std::vector<FrameEntry>& frames, int video_delay) {
  if (video_delay < 0) return -1;
  std::vector<int64_t> gaps;
  for (size_t i = 1; i < frames.size(); ++i) {
    if (frames[i].dts != AV_NOPTS_VALUE && frames[i - 1].dts != AV_NOPTS_VALUE &&
        frames[i].dts > frames[i - 1].dts) {
      gaps.push_back(SaturatingSub(frames[i].dts, frames[i - 1].dts));
    }
  }
  if (gaps.empty()) return -1;
  std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
  const int64_t gap = gaps[gaps.size() / 2];
  return gap <= std::numeric_limits<int64_t>::max() / 16 ? gap * std::min(video_delay, 16) : -1;
}


bool InferMissingPts(std::vector<FrameEntry>& frames, const std::vector<size_t>& missing,
                     int64_t expected_delay) {
  if (missing.empty()) return true;
  std::vector<int64_t> dts;
  std::vector<int64_t> known;
  dts.reserve(frames.size());
  known.reserve(frames.size() - std::min(missing.size(), frames.size()));
  size_t next_missing = 0;
  for (size_t i = 0; i < frames.size(); ++i) {
    if (frames[i].dts == AV_NOPTS_VALUE) return false;
    dts.push_back(frames[i].dts);
    if (next_missing < missing.size() && missing[next_missing] == i) {
      ++next_missing;
    } else {
      known.push_back(frames[i].pts);
    }
  }
  if (next_missing != missing.size()) return false;
  std::sort(dts.begin(), dts.end());
  std::sort(known.begin(), known.end());
  // Fills the missing pts with the slots `delay` leaves free, if it fits.
  std::vector<int64_t> free_slots;
  const auto fill = [&](int64_t delay) {
    if (delay < 0) return false;
    free_slots.clear();
    size_t k = 0;  // the next known pts to place
    for (int64_t d : dts) {
      const int64_t slot = SaturatingAdd(d, delay);
      if (k < known.size() && known[k] == slot) {
        ++k;
      } else if (k < known.size() && known[k] < slot) {
        return false;  // a known pts between slots
      } else {
        free_slots.push_back(slot);
        if (free_slots.size() > missing.size()) return false;
      }
    }
    if (k != known.size() || free_slots.size() != missing.size()) return false;
    // No frame is shown before it is decoded.
    for (size_t m = 0; m < missing.size(); ++m) {
      if (free_slots[m] < frames[missing[m]].dts) return false;
    }
    for (size_t m = 0; m < missing.size(); ++m) frames[missing[m]].pts = free_slots[m];
    return true;
  };
  if (expected_delay >= 0 && fill(expected_delay)) return true;
  // No pts at all (H.264 in AVI): the codec's delay or nothing. Its slots
  // then go in decode order: the key frame of a closed GOP, first in both
  // orders, gets its own time; others may swap with their neighbours,
  // which only the seek planning reads (an open GOP's leading pictures,
  // which the decoder drops when it starts at their key frame, are then
  // found from an earlier start point).
  if (known.empty()) return false;
  // Else the smallest delay that fits: the decoder holds a frame back no
  // longer than it must.
  for (size_t j = std::min(dts.size(), kDelaysTried); j-- > 0;) {
    if (fill(SaturatingSub(known.front(), dts[j]))) return true;
  }
  return false;
}

bool PlaceMissingByAnchors(std::vector<FrameEntry>& frames, const std::vector<size_t>& missing,
                           int64_t fallback_duration) {
  if (missing.empty()) return false;
  const auto anchor = [](const FrameEntry& f) {
    return f.picture_type == AV_PICTURE_TYPE_I || f.picture_type == AV_PICTURE_TYPE_P;
  };
  for (const FrameEntry& f : frames) {
    if (!anchor(f) && f.picture_type != AV_PICTURE_TYPE_B) return false;
  }
  std::vector<bool> is_missing(frames.size(), false);
  for (size_t m : missing) {
    if (m >= frames.size() || frames[m].dts == AV_NOPTS_VALUE) return false;
    is_missing[m] = true;
  }
  std::vector<int64_t> taken;  // the times of the frames with a pts, then those given
  for (size_t i = 0; i < frames.size(); ++i) {
    if (!is_missing[i]) taken.push_back(frames[i].pts);
  }
  std::sort(taken.begin(), taken.end());
  std::vector<int64_t> given(missing.size());
  for (size_t k = 0; k < missing.size(); ++k) {
    const size_t m = missing[k];
    if (!anchor(frames[m])) {
      given[k] = frames[m].dts;
      continue;
    }
    size_t next = m + 1;
    int64_t last_dts = frames[m].dts;  // of the B pictures after it, shown before it
    for (; next < frames.size() && !anchor(frames[next]); ++next) {
      if (frames[next].dts == AV_NOPTS_VALUE) return false;
      last_dts = std::max(last_dts, frames[next].dts);
    }
    if (next < frames.size() && frames[next].dts == AV_NOPTS_VALUE) return false;
    // The last I or P picture is shown when the decoder is drained, after
    // the B pictures that follow it.
    given[k] = next < frames.size() ? frames[next].dts
                                    : SaturatingAdd(last_dts, std::max<int64_t>(fallback_duration, 1));
  }
  std::vector<int64_t> sorted = given;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return false;
  for (int64_t t : sorted) {
    if (std::binary_search(taken.begin(), taken.end(), t)) return false;
  }
  for (size_t k = 0; k < missing.size(); ++k) frames[missing[k]].pts = given[k];
  return true;
}

bool ApplyShownOrderTimeline(std::vector<FrameEntry>& frames, const std::vector<int8_t>& vop_types,
                             int64_t fallback_duration) {
  if (frames.empty() || vop_types.size() != frames.size()) return false;
  for (size_t i = 0; i < frames.size(); ++i) {
    if (frames[i].dts == AV_NOPTS_VALUE || (i > 0 && frames[i].dts <= frames[i - 1].dts)) return false;
  }
  for (size_t i = 0; i < frames.size(); ++i) {
    FrameEntry& f = frames[i];
    f.pts = i + 1 < frames.size()
                ? frames[i + 1].dts
                : SaturatingAdd(f.dts, f.duration > 0 ? f.duration : std::max<int64_t>(fallback_duration, 1));
    f.key = vop_types[i] == kIVop;
    f.untimed = false;
  }
  return true;
}

void PlaceLeadingUntimed(std::vector<FrameEntry>& frames, int64_t fallback_duration) {
  size_t first_timed = frames.size();
  int64_t earliest = std::numeric_limits<int64_t>::max();
  for (size_t i = 0; i < frames.size(); ++i) {
    if (frames[i].untimed) continue;
    first_timed = std::min(first_timed, i);
    earliest = std::min(earliest, frames[i].pts);
  }
  if (first_timed == 0 || first_timed == frames.size()) return;
  std::vector<size_t> leading;
  for (size_t i = 0; i < frames.size() && i < first_timed + kUntimedReorder; ++i) {
    if (frames[i].untimed) leading.push_back(i);
  }
  int64_t end = earliest;
  for (size_t k = leading.size(); k-- > 0;) {
    const FrameEntry& f = frames[leading[k]];
    end = SaturatingSub(end, f.duration > 0 ? f.duration : std::max<int64_t>(fallback_duration, 1));
    frames[leading[k]].pts = end;
  }
}

int64_t PacketsToProbe(const std::vector<FrameEntry>& frames, const std::vector<bool>& known_pts,
                       const std::vector<std::optional<int64_t>>& counts, bool pictures_timed) {
  const auto first_key = std::find_if(frames.begin(), frames.end(), [](const FrameEntry& f) { return f.key; });
  const size_t key = static_cast<size_t>(first_key - frames.begin());
  if (first_key == frames.end() || key >= kMaxProbedPackets || known_pts.size() != frames.size()) return 0;
  const bool counted = counts.size() == frames.size() && counts[key].has_value();
  const size_t end = std::min(frames.size(), key + kLeadingWindow + 1);
  bool leading = key > 0;
  for (size_t i = key + 1; i < end && !leading; ++i) {
    // Shown before the key frame by its time; or, where the key frame has a
    // time, a picture after it with none, or with the key frame's own: a
    // cut with -c copy to Matroska leaves an open GOP's leading pictures
    // without times (their times fell before the cut), or with the key
    // frame's time where the muxer clamped them to the start (MPEG-2).
    leading =
        (known_pts[key] && known_pts[i] && frames[i].pts < frames[key].pts) ||
        (pictures_timed && known_pts[key] && !frames[i].key && (!known_pts[i] || frames[i].pts == frames[key].pts)) ||
        (counted && !frames[i].key && counts[i].has_value() && *counts[i] < *counts[key]);
  }
  return leading ? static_cast<int64_t>(end) : 0;
}

}  // namespace codecvisor::cpu
