#include "base/standard_descriptors.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace codecvisor {

bool FillClosedStandardDescriptors() {
  bool all_open = true;
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    // open takes the lowest free number, which is `fd` unless another
    // thread took it meanwhile (then it is open, as wanted).
    int opened;
    do {
      opened = open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
    } while (opened < 0 && errno == EINTR);
    if (opened > 2) close(opened);
    if (opened < 0 && fcntl(fd, F_GETFD) == -1) all_open = false;
  }
  return all_open;
}

}  // namespace codecvisor
