// File: backends/sdk/runner/header_times.h
//
// What the container's header says of the session's stream's times
// (cv_backend_v1::get_header_times), as the protocol's HeaderTimes, and of
// its pixels' shape (get_pixel_aspect_ratio). Runs in the runner; the host
// checks the numbers (core/session_opened_check.h).

#ifndef CODECVISOR_BACKENDS_SDK_RUNNER_HEADER_TIMES_H_
#define CODECVISOR_BACKENDS_SDK_RUNNER_HEADER_TIMES_H_

#include <optional>

#include "absl/status/statusor.h"
#include "backends/sdk/codecvisor_backend.h"
#include "ipc/messages.h"

namespace codecvisor::runner {

// Whether `table` has get_header_times: only if its struct_size covers the
// field and it is not NULL.
bool GivesHeaderTimes(const cv_backend_v1& table);

// The header's times for `session`, whose get_metadata answer is
// `metadata`: the vendor's get_header_times where the table has it; without
// it, in approximate mode (no scan) the metadata's own times, which are the
// header's, and in exact mode none. The vendor's own failure keeps its
// status and message.
[[nodiscard]] absl::StatusOr<std::optional<ipc::HeaderTimes>> HeaderTimesOf(const cv_backend_v1& table,
                                                                            cv_session* session,
                                                                            const ipc::StreamMetadata& metadata);

// The pixel aspect ratio of `session`'s stream: the vendor's
// get_pixel_aspect_ratio where the table has it (and it knows one), else
// none. A ratio with a numerator or denominator below 0, or a denominator
// of 0, is the vendor's error (kInternal), as any malformed answer is.
[[nodiscard]] absl::StatusOr<std::optional<ipc::Rational>> PixelAspectRatioOf(const cv_backend_v1& table,
                                                                             cv_session* session,
                                                                             const std::string& backend);

}  // namespace codecvisor::runner

#endif  // CODECVISOR_BACKENDS_SDK_RUNNER_HEADER_TIMES_H_
