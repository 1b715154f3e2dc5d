// File: ipc/unique_fd.h
//
// UniqueFd owns one file descriptor and closes it exactly once. Not
// thread-safe: like std::unique_ptr, one owner at a time. Also home to the
// small syscall helpers every ipc/ file uses.

#ifndef CODECVISOR_IPC_UNIQUE_FD_H_
#define CODECVISOR_IPC_UNIQUE_FD_H_

#include <cerrno>
#include <chrono>
#include "absl/strings/string_view.h"
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace codecvisor::ipc {

// Every wait in ipc/ is bounded by one of these, on the monotonic clock.
using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Gives up ownership without closing.
  [[nodiscard]] int release() { return std::exchange(fd_, -1); }
  // Closes the current descriptor (if any) and takes `fd`.
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// An error Status for a failed syscall: "`what`: strerror(errno)".
absl::Status ErrnoStatus(absl::string_view what, int err = errno);

// Sets the size of memfd `fd` to `bytes` (ftruncate). A memfd counts
// against the file-size limit (RLIMIT_FSIZE, `ulimit -f`) as any file does,
// and growing one past it raises SIGXFSZ, which kills a process that has not
// ignored it: a size above the limit is refused here, before the call, with
// kResourceExhausted naming the limit. Errors name `what`.
absl::Status SetMemfdSize(int fd, uint64_t bytes, absl::string_view what);

// A memfd named `name` holding `bytes`, sealed (no write, shrink or grow,
// no further seals): whoever it is passed to reads exactly these bytes.
// Errors name `what` (ErrnoStatus's codes: kResourceExhausted when out of
// descriptors or memory).
absl::StatusOr<UniqueFd> SealedMemfd(const char* name, absl::string_view bytes, absl::string_view what);

// Retries `fn` while it fails with EINTR, as KJ_SYSCALL does.
template <typename Fn>
auto RetryEintr(Fn fn) {
  decltype(fn()) r;
  do {
    r = fn();
  } while (r == -1 && errno == EINTR);
  return r;
}

}  // namespace codecvisor::ipc

#endif  // CODECVISOR_IPC_UNIQUE_FD_H_
