// File: core/thread_count_for_test.h
//
// How many threads this process has now (/proc/self/task), or how many of
// them are named `name` (their comm), for tests that check what costs a
// thread. Count by name where a runtime may add threads of its own (TSan
// starts one with the first thread the test creates).

#ifndef CODECVISOR_CORE_THREAD_COUNT_FOR_TEST_H_
#define CODECVISOR_CORE_THREAD_COUNT_FOR_TEST_H_

#include <dirent.h>

#include <fstream>
#include <string>

namespace codecvisor {

inline int ThreadCountForTest(const char* name = nullptr) {
  int n = 0;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return -1;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::string comm;
    if (name != nullptr) std::getline(std::ifstream(std::string("/proc/self/task/") + e->d_name + "/comm"), comm);
    n += name == nullptr || comm == name;
  }
  closedir(dir);
  return n;
}

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_THREAD_COUNT_FOR_TEST_H_
