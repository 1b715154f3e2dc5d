#include "base/standard_descriptors.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace codecvisor {

namespace {

// /dev/null the other way from descriptor `fd`'s use; -1 on failure.
int OpenDevNullFor(int fd, int flags = 0) {
  int opened;
  do {
    opened = open("/dev/null", (fd == 0 ? O_WRONLY : O_RDONLY) | flags);
  } while (opened < 0 && errno == EINTR);
  return opened;
}

}  // namespace

bool FillClosedStandardDescriptors() {
  bool all_open = true;
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    // open takes the lowest free number, which is `fd` unless another
    // thread took it meanwhile (then it is open, as wanted).
    const int opened = OpenDevNullFor(fd);
    if (opened > 2) close(opened);
    if (opened >= 0 && opened <= 2 && opened != fd) {
      // Another standard number, closed meanwhile: ours now, so given that
      // number's direction.
      const int right = OpenDevNullFor(opened, O_CLOEXEC);
      if (right >= 0) {
        dup2(right, opened);
        close(right);
      }
    }
    if (opened < 0 && fcntl(fd, F_GETFD) == -1) all_open = false;
  }
  return all_open;
}

}  // namespace codecvisor
