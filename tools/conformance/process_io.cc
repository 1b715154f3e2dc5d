#include "tools/conformance/process_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace codecvisor::conformance {

absl::StatusOr<int64_t> ParseReadChars(absl::string_view io_text) {
  for (absl::string_view line : absl::StrSplit(io_text, '\n')) {
    int64_t value = 0;
    if (absl::ConsumePrefix(&line, "rchar:") && absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &value)) {
      return value;
    }
  }
  return absl::InternalError("no 'rchar:' line");
}

absl::StatusOr<int64_t> BytesRead(pid_t pid) {
  const std::string path = absl::StrCat("/proc/", pid, "/io");
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::InternalError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  char buffer[1024];
  ssize_t n = 0;
  do {
    n = read(fd, buffer, sizeof(buffer));
  } while (n < 0 && errno == EINTR);
  const int error = errno;
  close(fd);
  if (n < 0) return absl::InternalError(absl::StrCat("cannot read ", path, ": ", std::strerror(error)));
  absl::StatusOr<int64_t> chars = ParseReadChars(absl::string_view(buffer, static_cast<size_t>(n)));
  if (!chars.ok()) return absl::InternalError(absl::StrCat(path, ": ", chars.status().message()));
  return chars;
}

}  // namespace codecvisor::conformance
