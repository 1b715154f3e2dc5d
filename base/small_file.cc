#include "base/small_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace codecvisor {

std::optional<std::string> ReadSmallFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) text.append(buf, static_cast<size_t>(n));
  }
  const int err = errno;
  close(fd);
  if (n < 0) {
    errno = err;
    return std::nullopt;
  }
  return text;
}

bool OutOfDescriptors(int err) { return err == EMFILE || err == ENFILE; }

}  // namespace codecvisor
