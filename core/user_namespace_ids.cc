#include "core/user_namespace_ids.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace codecvisor {

bool UserNamespaceMapsId(const char* file, uint32_t id) {
  const int fd = open(absl::StrCat("/proc/self/", file).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;
  char text[4096];
  const ssize_t n = read(fd, text, sizeof(text) - 1);
  close(fd);
  if (n <= 0) return true;
  text[n] = '\0';
  const char* line = text;
  for (;;) {
    unsigned long long inside = 0, outside = 0, count = 0;
    if (std::sscanf(line, "%llu %llu %llu", &inside, &outside, &count) == 3 && id >= inside && id - inside < count) {
      return true;
    }
    line = std::strchr(line, '\n');
    if (line == nullptr) return false;
    ++line;
  }
}

}  // namespace codecvisor
