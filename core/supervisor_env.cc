#include "core/supervisor_env.h"

#include <sys/resource.h>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace codecvisor {
namespace {

constexpr char kHostShortageUrl[] = "codecvisor/host-shortage";

}  // namespace

absl::Status HostShortage(const absl::Status& cause) {
  rlimit files{};
  const std::string limit = getrlimit(RLIMIT_NOFILE, &files) == 0
                                ? absl::StrCat(" (this process may hold ", files.rlim_cur, " descriptors: `ulimit -n`)")
                                : "";
  absl::Status status = absl::ResourceExhaustedError(
      absl::StrCat("this process is short of what another decoder needs: ", cause.message(),
                   "; close a decoder, or raise the process's limits", limit));
  status.SetPayload(kHostShortageUrl, absl::Cord());
  return status;
}

bool IsHostShortage(const absl::Status& status) { return status.GetPayload(kHostShortageUrl).has_value(); }

absl::Status MaybeHostShortage(const absl::Status& status) {
  return absl::IsResourceExhausted(status) ? HostShortage(status) : status;
}

}  // namespace codecvisor
