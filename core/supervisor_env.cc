#include "core/supervisor_env.h"

#include <sys/resource.h>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace codecvisor {
namespace {

constexpr char kHostShortageUrl[] = "codecvisor/host-shortage";
constexpr char kUsersThreadShortageUrl[] = "codecvisor/users-thread-shortage";

}  // namespace

absl::Status HostShortage(const absl::Status& cause) {
  // EAGAIN from clone3 or pthread_create: the user's processes and threads
  // (RLIMIT_NPROC); otherwise descriptors, the usual shortage.
  const bool threads = absl::StrContains(cause.message(), "Resource temporarily unavailable");
  rlimit r{};
  std::string limit;
  if (threads && getrlimit(RLIMIT_NPROC, &r) == 0) {
    limit = absl::StrCat(" (this process's user may run ", r.rlim_cur, " processes and threads: `ulimit -u`)");
  } else if (!threads && getrlimit(RLIMIT_NOFILE, &r) == 0) {
    limit = absl::StrCat(" (this process may hold ", r.rlim_cur, " descriptors: `ulimit -n`)");
  }
  absl::Status status = absl::ResourceExhaustedError(
      absl::StrCat("this process is short of what another decoder needs: ", cause.message(),
                   "; close a decoder, or raise the process's limits", limit));
  status.SetPayload(kHostShortageUrl, absl::Cord());
  return status;
}

bool IsHostShortage(const absl::Status& status) { return status.GetPayload(kHostShortageUrl).has_value(); }

absl::Status UsersThreadShortage(const absl::Status& cause) {
  absl::Status status = HostShortage(cause);
  status.SetPayload(kUsersThreadShortageUrl, absl::Cord());
  return status;
}

bool IsUsersThreadShortage(const absl::Status& status) {
  return status.GetPayload(kUsersThreadShortageUrl).has_value();
}

absl::Status MaybeHostShortage(const absl::Status& status) {
  return absl::IsResourceExhausted(status) ? HostShortage(status) : status;
}

}  // namespace codecvisor
