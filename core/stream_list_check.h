// File: core/stream_list_check.h
//
// What the host accepts as the list of a file's streams in an open
// response (ipc::StreamMetadata::streams). The runner shares its address
// space with vendor code, so the list may be a lie: the decoder already
// bounded its length, its texts and its enum values; this checks the rest.
// Pure logic; thread-safe (no state).

#ifndef CODECVISOR_CORE_STREAM_LIST_CHECK_H_
#define CODECVISOR_CORE_STREAM_LIST_CHECK_H_

#include "absl/status/status.h"
#include "ipc/messages.h"

namespace codecvisor {

// OK for an empty list (a backend that does not list streams) or one whose
// indices ascend, each once, within [0, ipc::kMaxStreams), whose entries
// have known types and at most ipc::kMaxStreams of them, and which holds
// the opened stream (metadata.stream_index) as a video stream. Otherwise
// kDataLoss naming the first broken rule and the entry that breaks it.
[[nodiscard]] absl::Status CheckStreamList(const ipc::StreamMetadata& metadata);

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_STREAM_LIST_CHECK_H_
