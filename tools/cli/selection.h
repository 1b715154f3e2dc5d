// File: tools/cli/selection.h
//
// Which frames `codecvisor decode` asks for: the parsers of the selection
// flags (--frames, --indices, --times, --time-range) and their resolution,
// once the stream's metadata is known, into the FrameSelection that
// VideoDecoder::ForEachFrame takes. Parsers reject bad syntax with a
// message fit to print after the flag's name; they never guess.
//
// Thread-safety: pure functions.

#ifndef CODECVISOR_TOOLS_CLI_SELECTION_H_
#define CODECVISOR_TOOLS_CLI_SELECTION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "codecvisor/codecvisor.h"

namespace codecvisor::cli {


// The selection flags as typed; empty means not given. At most one may be
// set (the command line enforces it; BuildSelection checks it again).
struct SelectionFlags {
  std::string frames;      // --frames START:STOP[:STEP]
  std::string indices;     // --indices 1,5,-1
  std::string times;       // --times 1.5,2.0
  std::string time_range;  // --time-range START:STOP (seconds)
};

// --frames as parsed: Python slice syntax with a positive step. An omitted
// START is 0, an omitted STOP the end of the stream, and negative values
// count from the end, so both need the stream's frame count to resolve.
// As in Python, bounds past either end are clamped and a slice may select
// nothing (frames[30:40] of 25 frames is empty, not an error).
struct FrameRangeSpec {
  std::optional<int64_t> start;
  std::optional<int64_t> stop;
  int64_t step = 1;
};

// "START:STOP", "START:STOP:STEP", ":STOP", "START:", ":" ... STEP must be
// a positive integer. kInvalidArgument on anything else.
[[nodiscard]] absl::StatusOr<FrameRangeSpec> ParseFrameRange(absl::string_view text);

// "1,5,9": one or more integers (negative counts from the end), any order,
// duplicates allowed. Spaces around the numbers are ignored.
[[nodiscard]] absl::StatusOr<std::vector<int64_t>> ParseIndexList(absl::string_view text);

// "1.5,2.0": one or more finite numbers of seconds.
[[nodiscard]] absl::StatusOr<std::vector<double>> ParseTimeList(absl::string_view text);

// "START:STOP" in seconds, both finite, START < STOP: every frame played in
// [START, STOP).
[[nodiscard]] absl::StatusOr<FrameSelection::PlayedInRange> ParseTimeRange(absl::string_view text);

// The request for `flags` on a stream with `metadata`. With no flag set,
// every frame: indices [0, frame count) when the count is known, else every
// frame played between the stream's begin and end times. --frames
// resolves like a Python slice: bounds are clamped to a scanned stream's
// frame count (a header's count is only a hint, so a STOP past it is kept),
// and a slice that selects nothing is an empty range (SelectedFrameCount
// 0). kInvalidArgument for bad syntax, two flags at once, or a range that
// needs a frame count the stream does not have.
[[nodiscard]] absl::StatusOr<FrameSelection> BuildSelection(const SelectionFlags& flags,
                                                            const StreamMetadata& metadata);

// How many frames `selection` yields, when that is known before decoding
// (index and time lists, index ranges, a time range from a time to
// itself: 0); nullopt for other time ranges.
std::optional<int64_t> SelectedFrameCount(const FrameSelection& selection);

// Whether `selection` may yield the same frame more than once: an index
// list with a repeat (after counting negative indices from the end), or a
// list of more than one time (two times may fall in one frame, which is
// known only once decoded). Ranges never repeat a frame.
bool MayRepeatFrames(const FrameSelection& selection, const StreamMetadata& metadata);

// For an index list out of stream order, its indices counted against the
// frame count (negative ones from the end), in the order asked; the caller
// may decode them in stream order instead, one pass over the file rather
// than a seek back to a key frame for each, as the C++ GetFramesAt and
// Python's get_frames_at do. nullopt where the list is decoded as asked:
// in order already, with a repeat (files are then named by position in the
// request), without a frame count from a scan or the header (an estimate
// from the duration may be wrong), or with an index outside the count
// (which fails before any frame is written).
std::optional<std::vector<int64_t>> IndicesOutOfStreamOrder(const FrameSelection& selection,
                                                            const StreamMetadata& metadata);

}  // namespace codecvisor::cli

#endif  // CODECVISOR_TOOLS_CLI_SELECTION_H_
