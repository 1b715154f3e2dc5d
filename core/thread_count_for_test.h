// File: core/thread_count_for_test.h
//
// How many threads this process has now (/proc/self/task), for tests that
// check what costs a thread.

#ifndef CODECVISOR_CORE_THREAD_COUNT_FOR_TEST_H_
#define CODECVISOR_CORE_THREAD_COUNT_FOR_TEST_H_

#include <dirent.h>

namespace codecvisor {

inline int ThreadCountForTest() {
  int n = 0;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return -1;
  while (dirent* e = readdir(dir)) n += e->d_name[0] != '.';
  closedir(dir);
  return n;
}

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_THREAD_COUNT_FOR_TEST_H_
