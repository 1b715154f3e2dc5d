#include "api/absl_interop.h"

#include <string>

namespace codecvisor {

// The public codes carry absl's numbers (status.h says so).
static_assert(static_cast<int>(StatusCode::kDataLoss) == static_cast<int>(absl::StatusCode::kDataLoss));
static_assert(static_cast<int>(StatusCode::kUnauthenticated) ==
              static_cast<int>(absl::StatusCode::kUnauthenticated));

Status FromAbsl(const absl::Status& status) {
  if (status.ok()) return Status();
  return Status(static_cast<StatusCode>(status.code()), std::string(status.message()));
}

absl::Status ToAbsl(const Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.code()), status.message());
}

}  // namespace codecvisor
