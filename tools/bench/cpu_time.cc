#include "tools/bench/cpu_time.h"

#include <dirent.h>
#include <sys/resource.h>
#include <time.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"

namespace codecvisor::bench {

double SelfCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec * 1e-6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

namespace {

// One thread's /proc/.../schedstat: time on the CPU (ns), time waiting to
// run (ns), timeslices. Nothing if it cannot be read (the thread exited).
struct Schedstat {
  long long run_ns = 0;
  long long wait_ns = 0;
  long long timeslices = 0;
};
std::optional<Schedstat> ReadSchedstat(const std::string& path) {
  std::ifstream in(path);
  Schedstat s;
  if (!(in >> s.run_ns >> s.wait_ns >> s.timeslices)) return std::nullopt;
  return s;
}

}  // namespace

absl::StatusOr<std::vector<ThreadCpu>> ThreadsCpu(pid_t pid) {
  const std::string dir = absl::StrCat("/proc/", pid, "/task");
  DIR* tasks = opendir(dir.c_str());
  if (tasks == nullptr) return absl::NotFoundError(absl::StrCat(dir, ": cannot be read"));
  std::vector<ThreadCpu> out;
  while (const dirent* entry = readdir(tasks)) {
    if (entry->d_name[0] == '.') continue;
    ThreadCpu t;
    t.tid = static_cast<pid_t>(std::strtol(entry->d_name, nullptr, 10));
    const std::optional<Schedstat> schedstat = ReadSchedstat(absl::StrCat(dir, "/", entry->d_name, "/schedstat"));
    if (!schedstat.has_value()) continue;  // exited meanwhile
    std::ifstream comm(absl::StrCat(dir, "/", entry->d_name, "/comm"));
    std::getline(comm, t.name);
    t.seconds = static_cast<double>(schedstat->run_ns) * 1e-9;
    out.push_back(std::move(t));
  }
  closedir(tasks);
  if (out.empty()) return absl::NotFoundError(absl::StrCat(dir, ": no thread could be read"));
  return out;
}

int64_t ThreadTimeslices() {
  const std::optional<Schedstat> s = ReadSchedstat("/proc/thread-self/schedstat");
  return s.has_value() ? s->timeslices : -1;
}

}  // namespace codecvisor::bench
