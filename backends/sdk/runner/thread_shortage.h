// File: backends/sdk/runner/thread_shortage.h
//
// Whose limit refused a thread. RLIMIT_NPROC is counted at each level of
// user namespaces: the backend's own threads against the limit it runs
// under, and every process and thread of the user who started the host
// against that user's limit (`ulimit -u`). A backend below its own limit,
// with room for a thread's stack, that still cannot start a thread was
// refused by a limit above its own: its user's (whose other processes,
// DataLoader workers, other backends, a shell, hold the rest) or a pids
// cgroup's. The runner answers kNoThreadFree; the host, which knows
// whether its user has such a limit (a root host's backends have none),
// then fails the open as the caller's shortage, blaming neither the file
// nor the plugin, or else takes it as the backend's own. A backend at its
// own limit (a plugin that leaks threads) is its own doing, and is
// replaced as before.
//
// Thread-safety: the functions keep no state.

#ifndef CODECVISOR_BACKENDS_SDK_RUNNER_THREAD_SHORTAGE_H_
#define CODECVISOR_BACKENDS_SDK_RUNNER_THREAD_SHORTAGE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "ipc/messages.h"

namespace codecvisor::runner {

// The thread count of a /proc/PID/stat line (its 20th field, counted after
// the command name, which may hold spaces and parentheses); nullopt when
// the line is not one.
std::optional<int64_t> ThreadsInStat(absl::string_view stat);

// Whether a thread refused with `own_threads` running under a soft limit
// of `limit` was refused by a limit above the process's own.
constexpr bool RefusedAboveOwnLimit(int64_t own_threads, uint64_t limit) {
  return own_threads >= 0 && static_cast<uint64_t>(own_threads) < limit;
}

// Whether `why` (a vendor's or the runner's message) says a thread could
// not be started: strerror(EAGAIN), as pthread_create's and FFmpeg's
// messages carry it.
bool SaysNoThread(absl::string_view why);

// The error to answer when this process, backend `name`, could not start
// a thread for the reason `why`: kNoThreadFree when its user's limit
// refused it (above); else kResourceExhausted, naming the manifest's
// `threads` when the process is at its own limit.
ipc::Error ThreadRefused(const std::string& name, absl::string_view why);

}  // namespace codecvisor::runner

#endif  // CODECVISOR_BACKENDS_SDK_RUNNER_THREAD_SHORTAGE_H_
