// File: backends/sdk/runner/stream_list.h
//
// The vendor's list of the file's streams (cv_backend_v1::get_streams) as
// the protocol's StreamInfo values. Runs in the runner, next to vendor
// code: what it checks here gives an honest vendor's mistakes a clear
// message; the host checks the list again (core/stream_list_check.h).

#ifndef CODECVISOR_BACKENDS_SDK_RUNNER_STREAM_LIST_H_
#define CODECVISOR_BACKENDS_SDK_RUNNER_STREAM_LIST_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/sdk/codecvisor_backend.h"
#include "ipc/messages.h"

namespace codecvisor::runner {

// Whether `table` has get_streams: only if its struct_size covers the field
// and it is not NULL.
bool ListsStreams(const cv_backend_v1& table);

// Asks `table` for `session`'s streams. An empty list when the table has no
// get_streams (a backend built before it). The vendor's own failure keeps
// its status and message; a count above the capacity or a type no
// CV_STREAM_* names is kInternal, naming the backend `name`.
[[nodiscard]] absl::StatusOr<std::vector<ipc::StreamInfo>> ListStreams(const cv_backend_v1& table,
                                                                       cv_session* session,
                                                                       const std::string& name);

}  // namespace codecvisor::runner

#endif  // CODECVISOR_BACKENDS_SDK_RUNNER_STREAM_LIST_H_
