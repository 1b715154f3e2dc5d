#include "ipc/unique_fd.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace codecvisor::ipc {

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) {
    // close() is not retried on EINTR: on Linux the descriptor is gone anyway.
    ::close(fd_);
  }
  fd_ = fd;
}

absl::Status ErrnoStatus(absl::string_view what, int err) {
  std::string message = absl::StrCat(what, ": ", std::strerror(err));
  switch (err) {
    case ENOENT:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(message);
    case ENOMEM:
    case EMFILE:
    case ENFILE:
    case ENOSPC:
      return absl::ResourceExhaustedError(message);
    case ENOTDIR:  // a path through a file: nothing is there
      return absl::NotFoundError(message);
    case EINVAL:
    case ELOOP:
    case ENAMETOOLONG:
      return absl::InvalidArgumentError(message);
    case EPIPE:
    case ECONNRESET:
      return absl::UnavailableError(message);
    default:
      return absl::InternalError(message);
  }
}

namespace {

absl::Status OverFileSizeLimit(absl::string_view what, uint64_t bytes, uint64_t limit) {
  return absl::ResourceExhaustedError(
      absl::StrCat(what, ": ", bytes, " bytes of shared memory, above this process's file-size limit of ", limit,
                   " bytes (`ulimit -f`), which memfds count against: raise or remove the limit"));
}

}  // namespace

absl::Status SetMemfdSize(int fd, uint64_t bytes, absl::string_view what) {
  rlimit limit{};
  const bool limited = getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY;
  if (limited && bytes > limit.rlim_cur) return OverFileSizeLimit(what, bytes, limit.rlim_cur);
  if (RetryEintr([&] { return ftruncate(fd, static_cast<off_t>(bytes)); }) != 0) {
    const int err = errno;
    // Lowered by another thread since the check: the call raised SIGXFSZ,
    // which only a process that ignores it (the CLI, Python) survives.
    if (err == EFBIG && getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
      return OverFileSizeLimit(what, bytes, limit.rlim_cur);
    }
    return ErrnoStatus(absl::StrCat("ftruncate(", what, ", ", bytes, ")"), err);
  }
  return absl::OkStatus();
}

absl::StatusOr<UniqueFd> SealedMemfd(const char* name, absl::string_view bytes, absl::string_view what) {
  UniqueFd fd(memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.valid()) return ErrnoStatus(absl::StrCat("memfd_create(", name, ")"));
  if (absl::Status s = SetMemfdSize(fd.get(), bytes.size(), absl::StrCat("the memfd of ", what)); !s.ok()) return s;
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = pwrite(fd.get(), bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ErrnoStatus(absl::StrCat("writing ", what, " to a memfd"));
    done += static_cast<size_t>(n);
  }
  if (fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
    return ErrnoStatus(absl::StrCat("sealing the memfd of ", what));
  }
  return fd;
}

}  // namespace codecvisor::ipc
