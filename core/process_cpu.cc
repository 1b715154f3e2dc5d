#include "core/process_cpu.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace codecvisor {

std::optional<std::chrono::nanoseconds> ParseStatCpuTime(std::string_view stat, long ticks_per_second) {
  // "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses, so
  // the fields are counted from its last ')'. utime and stime are fields
  // 14 and 15 of the line, the 12th and 13th after it.
  const size_t comm_end = stat.rfind(')');
  if (comm_end == std::string_view::npos || ticks_per_second <= 0) return std::nullopt;
  const std::vector<absl::string_view> fields =
      absl::StrSplit(absl::string_view(stat.data() + comm_end + 1, stat.size() - comm_end - 1), ' ',
                     absl::SkipEmpty());
  uint64_t utime = 0, stime = 0;
  if (fields.size() < 13 || !absl::SimpleAtoi(fields[11], &utime) || !absl::SimpleAtoi(fields[12], &stime)) {
    return std::nullopt;
  }
  const uint64_t ticks = utime + stime;
  return std::chrono::nanoseconds(static_cast<int64_t>(ticks * (1'000'000'000 / static_cast<uint64_t>(ticks_per_second))));
}

std::optional<std::chrono::nanoseconds> ProcessCpuTime(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  const std::string path = absl::StrCat("/proc/", pid, "/stat");
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char buffer[1024];
  const ssize_t n = read(fd, buffer, sizeof(buffer) - 1);
  close(fd);
  if (n <= 0) return std::nullopt;
  return ParseStatCpuTime(std::string_view(buffer, static_cast<size_t>(n)), sysconf(_SC_CLK_TCK));
}

}  // namespace codecvisor
