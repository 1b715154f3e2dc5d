// File: core/stream_list_check.h
//
// What the host accepts as the list of a file's streams in an open
// response (ipc::StreamMetadata::streams). The runner shares its address
// space with vendor code, so the list may be a lie: the decoder already
// bounded its length, its texts and its enum values; this checks the rest.
// Pure logic; thread-safe (no state).

#ifndef CODECVISOR_CORE_STREAM_LIST_CHECK_H_
#define CODECVISOR_CORE_STREAM_LIST_CHECK_H_

#include <cstdint>

#include "absl/status/status.h"
#include "ipc/messages.h"

namespace codecvisor {

// OK when the opened stream's index is within [0, ipc::kMaxStreams) and is
// `asked_stream_index` where one was asked for (-1: the best stream), the
// count of video streams 0 (not said) to ipc::kMaxStreams, and the list
// empty (a backend that does not list streams) or one whose indices
// ascend, each once, within [0, ipc::kMaxStreams), whose entries have
// known types and at most ipc::kMaxStreams of them, which holds the opened
// stream as a video stream and at least as many video streams as the count
// says (cover art is listed as video, not counted). Otherwise
// kDataLoss naming the first broken rule and the entry that breaks it.
[[nodiscard]] absl::Status CheckStreamList(const ipc::StreamMetadata& metadata, int32_t asked_stream_index = -1);

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_STREAM_LIST_CHECK_H_
