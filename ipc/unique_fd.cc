#include "ipc/unique_fd.h"

#include <fcntl.h>
#include <sys/mman.h>
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

absl::StatusOr<UniqueFd> SealedMemfd(const char* name, absl::string_view bytes, absl::string_view what) {
  UniqueFd fd(memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.valid()) return ErrnoStatus(absl::StrCat("memfd_create(", name, ")"));
  if (ftruncate(fd.get(), static_cast<off_t>(bytes.size())) != 0) {
    return ErrnoStatus(absl::StrCat("ftruncate(", bytes.size(), " bytes) for ", what));
  }
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
