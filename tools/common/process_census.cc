#include "tools/common/process_census.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace codecvisor::tools {
namespace {

// Calls `each` with every numeric entry of the folder `path`, except `skip_fd`'s own.
template <typename Each>
void ForEachNumericEntry(const char* path, bool skip_own_fd, Each each) {
  DIR* dir = opendir(path);
  if (dir == nullptr) return;
  const int own = dirfd(dir);
  while (dirent* entry = readdir(dir)) {
    int number = -1;
    if (!absl::SimpleAtoi(entry->d_name, &number) || (skip_own_fd && number == own)) continue;
    each(number);
  }
  closedir(dir);
}

}  // namespace

std::string ReadWholeFile(const std::string& path) {
  std::string out;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

std::vector<pid_t> ChildProcesses() {
  std::vector<pid_t> children;
  const pid_t self = getpid();
  ForEachNumericEntry("/proc", false, [&](int pid) {
    const std::string stat = ReadWholeFile(absl::StrCat("/proc/", pid, "/stat"));
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    const size_t close = stat.rfind(')');
    if (close == std::string::npos || close + 2 > stat.size()) return;
    std::vector<absl::string_view> fields = absl::StrSplit(absl::string_view(stat).substr(close + 2), ' ');
    pid_t ppid = 0;
    if (fields.size() > 1 && absl::SimpleAtoi(fields[1], &ppid) && ppid == self) children.push_back(pid);
  });
  return children;
}

std::map<int, std::string> OpenDescriptors() {
  std::map<int, std::string> fds;
  ForEachNumericEntry("/proc/self/fd", true, [&](int fd) {
    char target[512];
    const ssize_t n = readlink(absl::StrCat("/proc/self/fd/", fd).c_str(), target, sizeof(target));
    fds[fd] = n > 0 ? std::string(target, static_cast<size_t>(n)) : std::string("?");
  });
  return fds;
}

std::vector<std::string> NewDescriptors(const std::map<int, std::string>& before,
                                        const std::map<int, std::string>& now) {
  std::vector<std::string> added;
  for (const auto& [fd, target] : now) {
    auto was = before.find(fd);
    if (was == before.end() || was->second != target) added.push_back(absl::StrCat(fd, " -> ", target));
  }
  return added;
}

}  // namespace codecvisor::tools
