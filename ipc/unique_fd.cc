#include "ipc/unique_fd.h"

#include <unistd.h>

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

}  // namespace codecvisor::ipc
