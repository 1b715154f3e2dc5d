// File: base/threads_refused_for_test.h
//
// Runs a check in a forked child whose every new thread or process is
// refused with EAGAIN, as clone answers a user at RLIMIT_NPROC (root, who
// runs the tests here, is not held to that limit, so a seccomp filter
// answers so). Tests only; the child must not need a thread to report.

#ifndef CODECVISOR_BASE_THREADS_REFUSED_FOR_TEST_H_
#define CODECVISOR_BASE_THREADS_REFUSED_FOR_TEST_H_

#include <cerrno>
#include <initializer_list>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"

namespace codecvisor::testing {

// What `check` returned in a child where each of `syscalls` fails with
// `error` (a seccomp filter); an error if the child could not be made,
// could not load its filter, or died.
absl::StatusOr<std::string> RunWithSyscallsRefused(std::initializer_list<int> syscalls, int error,
                                                   absl::FunctionRef<std::string()> check);

// RunWithSyscallsRefused for clone and clone3: `error` EAGAIN as at
// RLIMIT_NPROC, EPERM as an older container seccomp profile answers clone3.
absl::StatusOr<std::string> RunWithThreadsRefused(absl::FunctionRef<std::string()> check, int error = EAGAIN);

}  // namespace codecvisor::testing

#endif  // CODECVISOR_BASE_THREADS_REFUSED_FOR_TEST_H_
