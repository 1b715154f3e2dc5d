#include "tools/cli/selection.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <variant>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace codecvisor::cli {

namespace {

absl::Status Invalid(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("'", text, "': ", why));
}

// An optional integer field of a range: empty (after trimming) is nullopt.
absl::StatusOr<std::optional<int64_t>> ParseOptionalInt(absl::string_view whole, absl::string_view field,
                                                        absl::string_view what) {
  field = absl::StripAsciiWhitespace(field);
  if (field.empty()) return std::optional<int64_t>();
  int64_t value;
  if (!absl::SimpleAtoi(field, &value)) {
    // Digits that SimpleAtoi refuses are too many for an int64.
    absl::string_view digits = field;
    if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) digits.remove_prefix(1);
    const bool too_large = !digits.empty() && std::all_of(digits.begin(), digits.end(), absl::ascii_isdigit);
    return Invalid(whole, absl::StrCat(what, " '", field, "' ",
                                       too_large ? "is out of range (a 64-bit integer: at most 9223372036854775807)"
                                                 : "is not an integer"));
  }
  return std::optional<int64_t>(value);
}

absl::StatusOr<double> ParseSeconds(absl::string_view whole, absl::string_view field) {
  field = absl::StripAsciiWhitespace(field);
  double value;
  // SimpleAtod also takes "nan" and "inf": no frame is played at either.
  if (field.empty() || !absl::SimpleAtod(field, &value) || !std::isfinite(value)) {
    return Invalid(whole, absl::StrCat("'", field, "' is not a number of seconds"));
  }
  return value;
}

// A bound of a slice as Python's slice.indices() resolves it: negative
// values count from the end of `limit` frames, then the result is clamped
// to [0, limit]. `limit` is the frame count the decoder takes indices up
// to (the scanned count, else the header's or its estimate: the Python
// package's len()), or -1 when none is known: a bound is then left as given.
absl::StatusOr<int64_t> SliceBound(int64_t value, int64_t limit, absl::string_view text) {
  if (value < 0) {
    if (limit < 0) {
      return Invalid(text, "a negative index counts from the end, but the stream's frame count is unknown "
                           "(try --seek-mode exact, or give non-negative indices)");
    }
    value = std::max<int64_t>(limit + value, 0);
  }
  return limit >= 0 ? std::min(value, limit) : value;
}

// `count` is the best known frame count (-1: none). A Python slice: bounds
// past either end are clamped, and a slice that selects nothing is an
// empty range, not an error.
absl::StatusOr<FrameSelection> ResolveFrameRange(absl::string_view text, int64_t count) {
  absl::StatusOr<FrameRangeSpec> spec = ParseFrameRange(text);
  if (!spec.ok()) return spec.status();
  absl::StatusOr<int64_t> start = SliceBound(spec->start.value_or(0), count, text);
  if (!start.ok()) return start.status();
  int64_t stop;
  if (spec->stop.has_value()) {
    absl::StatusOr<int64_t> resolved = SliceBound(*spec->stop, count, text);
    if (!resolved.ok()) return resolved.status();
    stop = *resolved;
  } else if (count >= 0) {
    stop = count;
  } else {
    return Invalid(text, "an open STOP means the end of the stream, but its frame count is unknown "
                         "(try --seek-mode exact, or give STOP)");
  }
  // Empty: START == STOP, which SelectedFrameCount reports as 0 frames.
  return FrameSelection::InRange(*start, std::max(*start, stop), spec->step);
}

}  // namespace

absl::StatusOr<FrameRangeSpec> ParseFrameRange(absl::string_view text) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  if (parts.size() < 2 || parts.size() > 3) {
    return Invalid(text, "expected START:STOP or START:STOP:STEP");
  }
  FrameRangeSpec spec;
  absl::StatusOr<std::optional<int64_t>> start = ParseOptionalInt(text, parts[0], "START");
  if (!start.ok()) return start.status();
  absl::StatusOr<std::optional<int64_t>> stop = ParseOptionalInt(text, parts[1], "STOP");
  if (!stop.ok()) return stop.status();
  spec.start = *start;
  spec.stop = *stop;
  if (parts.size() == 3) {
    absl::StatusOr<std::optional<int64_t>> step = ParseOptionalInt(text, parts[2], "STEP");
    if (!step.ok()) return step.status();
    if (step->has_value()) {
      if (**step <= 0) return Invalid(text, "STEP must be a positive integer");
      spec.step = **step;
    }
  }
  return spec;
}

absl::StatusOr<std::vector<int64_t>> ParseIndexList(absl::string_view text) {
  std::vector<int64_t> out;
  for (absl::string_view field : absl::StrSplit(text, ',')) {
    absl::StatusOr<std::optional<int64_t>> index = ParseOptionalInt(text, field, "index");
    if (!index.ok()) return index.status();
    if (!index->has_value()) return Invalid(text, "expected comma-separated frame indices, e.g. 0,5,-1");
    out.push_back(**index);
  }
  return out;
}

absl::StatusOr<std::vector<double>> ParseTimeList(absl::string_view text) {
  std::vector<double> out;
  for (absl::string_view field : absl::StrSplit(text, ',')) {
    absl::StatusOr<double> seconds = ParseSeconds(text, field);
    if (!seconds.ok()) return seconds.status();
    out.push_back(*seconds);
  }
  return out;
}

absl::StatusOr<FrameSelection::PlayedInRange> ParseTimeRange(absl::string_view text) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  if (parts.size() != 2) return Invalid(text, "expected START:STOP in seconds");
  absl::StatusOr<double> start = ParseSeconds(text, parts[0]);
  if (!start.ok()) return start.status();
  absl::StatusOr<double> stop = ParseSeconds(text, parts[1]);
  if (!stop.ok()) return stop.status();
  // As Python's get_frames_played_in_range: START == STOP selects no frames.
  if (!(*stop >= *start)) return Invalid(text, "STOP must not be less than START");
  return FrameSelection::PlayedInRange{*start, *stop};
}

absl::StatusOr<FrameSelection> BuildSelection(const SelectionFlags& flags, const StreamMetadata& metadata) {
  const int given = !flags.frames.empty() + !flags.indices.empty() + !flags.times.empty() +
                    !flags.time_range.empty();
  if (given > 1) {
    return absl::InvalidArgumentError("give at most one of --frames, --indices, --times and --time-range");
  }
  const int64_t count = metadata.num_frames();
  if (!flags.frames.empty()) {
    absl::StatusOr<FrameSelection> range = ResolveFrameRange(flags.frames, count);
    if (!range.ok()) return absl::Status(range.status().code(), absl::StrCat("--frames ", range.status().message()));
    return range;
  }
  if (!flags.indices.empty()) {
    absl::StatusOr<std::vector<int64_t>> indices = ParseIndexList(flags.indices);
    if (!indices.ok()) return indices.status();
    if (metadata.num_frames_from_scan < 0 && metadata.num_frames_from_header < 0) {
      // The decoder counts negative indices from a scanned or header count;
      // without either, from the estimate (duration x rate) here.
      for (int64_t& index : *indices) {
        if (index >= 0) continue;
        if (count < 0) {
          return absl::InvalidArgumentError(absl::StrCat(
              "--indices ", index, " counts from the end, but the stream's frame count is unknown "
              "(its header has neither a count nor a duration); try --seek-mode exact"));
        }
        if (index < -count) {
          return absl::OutOfRangeError(absl::StrCat(
              "--indices ", index, " is before the first frame: the stream has about ", count,
              " frames (estimated from its duration and frame rate; --seek-mode exact counts them)"));
        }
        index += count;
      }
    }
    return FrameSelection::AtIndices(*std::move(indices));
  }
  if (!flags.times.empty()) {
    absl::StatusOr<std::vector<double>> times = ParseTimeList(flags.times);
    if (!times.ok()) return times.status();
    return FrameSelection::PlayedAtSeconds(*std::move(times));
  }
  if (!flags.time_range.empty()) {
    absl::StatusOr<FrameSelection::PlayedInRange> range = ParseTimeRange(flags.time_range);
    if (!range.ok()) return range.status();
    return FrameSelection::PlayedInSeconds(range->start_seconds, range->stop_seconds);
  }
  // Every frame: by index when the stream says how many (an estimate from
  // the duration could overshoot), else by time.
  if (metadata.num_frames_from_scan >= 0 || metadata.num_frames_from_header >= 0) {
    return FrameSelection::InRange(0, count);
  }
  double end = metadata.end_stream_seconds;
  if (!(end > metadata.begin_stream_seconds)) end = metadata.begin_stream_seconds + metadata.duration_seconds;
  if (end > metadata.begin_stream_seconds) {
    return FrameSelection::PlayedInSeconds(metadata.begin_stream_seconds, end);
  }
  return absl::InvalidArgumentError(
      "the stream has neither a frame count nor a duration, so 'every frame' is unknown; "
      "try --seek-mode exact, or select frames with --frames START:STOP");
}

bool MayRepeatFrames(const FrameSelection& selection, const StreamMetadata& metadata) {
  if (auto* list = std::get_if<FrameSelection::PlayedAt>(&selection.get())) return list->seconds.size() > 1;
  auto* list = std::get_if<FrameSelection::Indices>(&selection.get());
  if (list == nullptr) return false;  // ranges never repeat a frame
  const int64_t count = metadata.num_frames();
  std::set<int64_t> seen;
  for (int64_t index : list->indices) {
    // Negative indices count from the end; without a count the decoder
    // refuses them, so nothing is written either way.
    if (index < 0 && count >= 0) index += count;
    if (!seen.insert(index).second) return true;
  }
  return false;
}

std::optional<std::vector<int64_t>> IndicesOutOfStreamOrder(const FrameSelection& selection,
                                                            const StreamMetadata& metadata) {
  auto* list = std::get_if<FrameSelection::Indices>(&selection.get());
  // A count of the file's frames, not an estimate from its duration.
  const bool has_count = metadata.num_frames_from_scan >= 0 || metadata.num_frames_from_header >= 0;
  const int64_t count = metadata.num_frames();
  if (list == nullptr || !has_count || count < 0 || MayRepeatFrames(selection, metadata)) return std::nullopt;
  std::vector<int64_t> counted;
  counted.reserve(list->indices.size());
  for (int64_t index : list->indices) {
    if (index < 0) index += count;
    if (index < 0 || index >= count) return std::nullopt;
    counted.push_back(index);
  }
  if (std::is_sorted(counted.begin(), counted.end())) return std::nullopt;
  return counted;
}

std::optional<int64_t> SelectedFrameCount(const FrameSelection& selection) {
  if (auto* list = std::get_if<FrameSelection::Indices>(&selection.get())) {
    return static_cast<int64_t>(list->indices.size());
  }
  if (auto* list = std::get_if<FrameSelection::PlayedAt>(&selection.get())) {
    return static_cast<int64_t>(list->seconds.size());
  }
  if (auto* range = std::get_if<FrameSelection::Range>(&selection.get())) {
    if (range->stop <= range->start || range->step <= 0) return 0;
    // In unsigned arithmetic so that extreme values cannot overflow.
    const uint64_t span = static_cast<uint64_t>(range->stop) - static_cast<uint64_t>(range->start);
    return static_cast<int64_t>((span - 1) / static_cast<uint64_t>(range->step) + 1);
  }
  if (auto* span = std::get_if<FrameSelection::PlayedInRange>(&selection.get())) {
    if (span->start_seconds == span->stop_seconds) return 0;
  }
  return std::nullopt;
}

}  // namespace codecvisor::cli
