#include "tools/bench/memory_usage.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
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

ResidentMemory::ResidentMemory(uint64_t mib) {
  if (mib == 0) return;
  void* p = mmap(nullptr, mib << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;
  data_ = static_cast<char*>(p);
  bytes_ = mib << 20;
  (void)RewriteMs();
}

ResidentMemory::~ResidentMemory() {
  if (data_ != nullptr) munmap(data_, bytes_);
}

double ResidentMemory::RewriteMs() {
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t at = 0; at < bytes_; at += 4096) data_[at] = static_cast<char>(data_[at] + 1);
  asm volatile("" : : "r"(data_) : "memory");
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace codecvisor::bench
