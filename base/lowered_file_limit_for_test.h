// File: base/lowered_file_limit_for_test.h
//
// This process's soft descriptor limit (RLIMIT_NOFILE) lowered for one
// scope and put back: a limit of N makes every open fail with EMFILE once
// the descriptors below N are taken (0: every open). Tests only; it
// affects every thread of the process while it lasts.

#ifndef CODECVISOR_BASE_LOWERED_FILE_LIMIT_FOR_TEST_H_
#define CODECVISOR_BASE_LOWERED_FILE_LIMIT_FOR_TEST_H_

#include <sys/resource.h>

namespace codecvisor::testing {

class LoweredFileLimit {
 public:
  explicit LoweredFileLimit(rlim_t soft) {
    getrlimit(RLIMIT_NOFILE, &saved_);
    rlimit lowered = saved_;
    lowered.rlim_cur = soft;
    ok_ = setrlimit(RLIMIT_NOFILE, &lowered) == 0;
  }
  ~LoweredFileLimit() { setrlimit(RLIMIT_NOFILE, &saved_); }
  LoweredFileLimit(const LoweredFileLimit&) = delete;
  LoweredFileLimit& operator=(const LoweredFileLimit&) = delete;

  // Whether the limit was lowered.
  bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  bool ok_ = false;
};

}  // namespace codecvisor::testing

#endif  // CODECVISOR_BASE_LOWERED_FILE_LIMIT_FOR_TEST_H_
