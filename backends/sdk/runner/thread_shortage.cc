#include "backends/sdk/runner/thread_shortage.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/address_space.h"
#include "ipc/unique_fd.h"

namespace codecvisor::runner {

std::optional<int64_t> ThreadsInStat(absl::string_view stat) {
  // "PID (COMM) STATE PPID ...": fields from STATE on are plain numbers
  // and letters; num_threads is the 20th field, the 18th after COMM.
  const size_t comm_end = stat.rfind(')');
  if (comm_end == absl::string_view::npos) return std::nullopt;
  std::vector<absl::string_view> fields =
      absl::StrSplit(stat.substr(comm_end + 1), ' ', absl::SkipEmpty());
  int64_t threads = 0;
  if (fields.size() < 18 || !absl::SimpleAtoi(fields[17], &threads) || threads < 1) return std::nullopt;
  return threads;
}

bool SaysNoThread(absl::string_view why) { return absl::StrContains(why, std::strerror(EAGAIN)); }

namespace {

std::optional<int64_t> OwnThreads() {
  ipc::UniqueFd stat(open("/proc/self/stat", O_RDONLY | O_CLOEXEC));
  if (!stat.valid()) return std::nullopt;
  char buf[1024];
  const ssize_t n = read(stat.get(), buf, sizeof(buf) - 1);
  if (n <= 0) return std::nullopt;
  return ThreadsInStat(absl::string_view(buf, static_cast<size_t>(n)));
}

// Whether a thread's stack could be mapped now: pthread_create answers
// EAGAIN too when its stack cannot be (the address space at the backend's
// memory_mb), which is the process's own doing.
bool RoomForAStack() {
  constexpr size_t kStack = size_t{8} << 20;  // glibc's default
  return CanReserveAddressSpace(kStack);
}

}  // namespace

ipc::Error ThreadRefused(const std::string& name, absl::string_view why) {
  const std::optional<int64_t> threads = OwnThreads();
  rlimit limit{};
  if (!threads || getrlimit(RLIMIT_NPROC, &limit) != 0) {
    return {ipc::ErrorCode::kResourceExhausted, std::string(why)};
  }
  if (!RoomForAStack()) {
    // The address space used up (the stack's mmap failed with it): no
    // thread limit is near, and waiting for threads to end would not help.
    rlimit address{};
    std::string cap;
    if (getrlimit(RLIMIT_AS, &address) == 0 && address.rlim_cur != RLIM_INFINITY) {
      cap = absl::StrCat(", limited to ", address.rlim_cur >> 20,
                         " MiB: [sandbox] memory_mb in its manifest, or the host's own hard `ulimit -v` where "
                         "that is lower");
    }
    return {ipc::ErrorCode::kResourceExhausted,
            absl::StrCat(why, " (no room for a thread's stack: the backend runs ", *threads,
                         " threads and its address space is used up", cap, ")")};
  }
  if (RefusedAboveOwnLimit(*threads, limit.rlim_cur)) {
    return {ipc::ErrorCode::kNoThreadFree,
            absl::StrCat("backend '", name, "' could not start a thread (", why, ") with ", *threads,
                         " of its own running, below its own limit of ", limit.rlim_cur,
                         ": its user's processes and threads are at the user's limit")};
  }
  return {ipc::ErrorCode::kResourceExhausted,
          absl::StrCat(why, " (the backend runs ", *threads, " threads, its limit: [sandbox] threads = ",
                       limit.rlim_cur, " in its manifest, or the user's `ulimit -u` where that is lower)")};
}

}  // namespace codecvisor::runner
