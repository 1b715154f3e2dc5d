#include "core/supervisor_env.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace codecvisor {
namespace {

constexpr char kHostShortageUrl[] = "codecvisor/host-shortage";
constexpr char kUsersThreadShortageUrl[] = "codecvisor/users-thread-shortage";
constexpr char kBackendDescriptorShortageUrl[] = "codecvisor/backend-descriptor-shortage";

}  // namespace

ProcessLimits CurrentProcessLimits() {
  auto current = [](int resource) -> uint64_t {
    rlimit r{};
    return getrlimit(resource, &r) == 0 ? r.rlim_cur : RLIM_INFINITY;
  };
  return {current(RLIMIT_NPROC), current(RLIMIT_NOFILE), current(RLIMIT_AS), current(RLIMIT_DATA)};
}

std::string WhoseLimit(absl::string_view cause, const ProcessLimits& limits) {
  // Memory limits, where set: "its address space to 200 MiB (`ulimit -v`)".
  std::vector<std::string> memory;
  if (limits.address_space != RLIM_INFINITY) {
    memory.push_back(absl::StrCat("its address space to ", limits.address_space >> 20, " MiB (`ulimit -v`)"));
  }
  if (limits.data != RLIM_INFINITY) {
    memory.push_back(absl::StrCat("its data to ", limits.data >> 20, " MiB (`ulimit -d`)"));
  }
  const std::string memory_text = absl::StrJoin(memory, " and ");
  if (absl::StrContains(cause, std::strerror(EAGAIN))) {
    std::string text =
        limits.processes == RLIM_INFINITY
            ? " (the machine's processes and threads: kernel.threads-max, kernel.pid_max"
            : absl::StrCat(" (this process's user may run ", limits.processes, " processes and threads: `ulimit -u`");
    if (!memory.empty())
      absl::StrAppend(&text, "; a thread's stack also needs room: this process limits ", memory_text);
    return text + ")";
  }
  if (absl::StrContains(cause, std::strerror(ENOMEM))) {
    return memory.empty() ? "" : absl::StrCat(" (this process limits ", memory_text, ")");
  }
  // Before EMFILE's text, which it begins with.
  if (absl::StrContains(cause, std::strerror(ENFILE))) return " (the machine's open files: fs.file-max)";
  if (absl::StrContains(cause, std::strerror(EMFILE))) {
    return absl::StrCat(" (this process may hold ", limits.descriptors, " descriptors: `ulimit -n`)");
  }
  return "";
}

absl::Status HostShortage(const absl::Status& cause) {
  // The file-size limit is per file: closing decoders does not help.
  const bool file_size = absl::StrContains(cause.message(), "`ulimit -f`");
  absl::Status status = absl::ResourceExhaustedError(
      file_size ? absl::StrCat("this process's limits leave no decoder room: ", cause.message())
                : absl::StrCat("this process is short of what another decoder needs: ", cause.message(),
                               "; close a decoder, or raise the process's limits",
                               WhoseLimit(cause.message(), CurrentProcessLimits())));
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

absl::Status BackendDescriptorShortage(const absl::Status& cause) {
  absl::Status status = cause;
  status.SetPayload(kBackendDescriptorShortageUrl, absl::Cord());
  return status;
}

bool IsBackendDescriptorShortage(const absl::Status& status) {
  return status.GetPayload(kBackendDescriptorShortageUrl).has_value();
}

absl::Status ThreadNotStarted(absl::string_view what, const std::system_error& e) {
  const std::string said = absl::StrCat("cannot start ", what, ": ", e.what());
  if (e.code().value() != EPERM) return HostShortage(absl::ResourceExhaustedError(said));
  return absl::FailedPreconditionError(absl::StrCat(
      said,
      ": this process may start no thread; no limit answers so, but a seccomp profile that refuses clone3, with "
      "which glibc 2.34 and later start every thread, does (the default profiles of Docker before 20.10.10 and "
      "of older containerd): update the container runtime, or run with a profile that allows clone3 or answers "
      "it ENOSYS"));
}

absl::Status MaybeHostShortage(const absl::Status& status) {
  return absl::IsResourceExhausted(status) ? HostShortage(status) : status;
}

}  // namespace codecvisor
