// File: core/frame_selection.h
//
// What one request for frames selects (by index or by time), described for
// messages and resolved before it is sent. Pure functions; thread-safe.

#ifndef CODECVISOR_CORE_FRAME_SELECTION_H_
#define CODECVISOR_CORE_FRAME_SELECTION_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "ipc/messages.h"

namespace codecvisor::internal {

// Frames selected by index or by time, for VideoDecoder::ForEachFrame().
using FrameSelection = ipc::FrameRequest;

// "frame indices [3, 9]", "frames played in [1, 2) s": for error messages.
std::string DescribeSelection(const FrameSelection& selection);

// `range` with its negative bounds counted from the end of a stream of
// `count` frames, as in Python (-3 is count - 3). OutOfRange where a bound
// is negative and the count unknown (`count` < 0), or a bound still
// reaches before the first frame. A range without negative bounds comes
// back as it is.
absl::StatusOr<ipc::IndexRange> CountFromEnd(const ipc::IndexRange& range, int64_t count);

}  // namespace codecvisor::internal

#endif  // CODECVISOR_CORE_FRAME_SELECTION_H_
