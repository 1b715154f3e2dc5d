// File: api/absl_interop.h
//
// codecvisor::Status <-> absl::Status, for code in this repository that uses
// Abseil and the public API together (the CLI, the Python bindings). The
// codes carry the same numbers, so nothing is lost either way.

#ifndef CODECVISOR_API_ABSL_INTEROP_H_
#define CODECVISOR_API_ABSL_INTEROP_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "codecvisor/status.h"

namespace codecvisor {

Status FromAbsl(const absl::Status& status);
absl::Status ToAbsl(const Status& status);

template <typename T>
absl::StatusOr<T> ToAbsl(Result<T> result) {
  if (!result.ok()) return ToAbsl(result.status());
  return *std::move(result);
}

}  // namespace codecvisor

#endif  // CODECVISOR_API_ABSL_INTEROP_H_
