#include "tools/bench/memory_usage.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace codecvisor::bench {

absl::StatusOr<int64_t> ProcStatusKb(absl::string_view field) {
  std::ifstream status("/proc/self/status");
  const std::string prefix = absl::StrCat(field, ":");
  for (std::string line; std::getline(status, line);) {
    absl::string_view rest(line);
    if (!absl::ConsumePrefix(&rest, prefix)) continue;
    rest = absl::StripAsciiWhitespace(rest);
    absl::ConsumeSuffix(&rest, "kB");
    int64_t kb = 0;
    if (absl::SimpleAtoi(absl::StripAsciiWhitespace(rest), &kb)) return kb;
    return absl::InternalError(absl::StrCat("/proc/self/status: cannot read '", line, "'"));
  }
  return absl::NotFoundError(absl::StrCat("/proc/self/status has no ", field, " line"));
}

absl::Status ResetPeakRss() {
  const int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
  if (fd < 0 || write(fd, "5", 1) != 1) {
    const int err = errno;
    if (fd >= 0) close(fd);
    return absl::Status(absl::ErrnoToStatusCode(err),
                        absl::StrCat("cannot reset the peak RSS through /proc/self/clear_refs: ", std::strerror(err)));
  }
  close(fd);
  return absl::OkStatus();
}

}  // namespace codecvisor::bench
