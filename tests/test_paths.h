// File: tests/test_paths.h
//
// Where a test's files are: its runfiles (the built runner, backends and
// manifests) and its scratch folder. Test-only.

#ifndef CODECVISOR_TESTS_TEST_PATHS_H_
#define CODECVISOR_TESTS_TEST_PATHS_H_

#include <string>

namespace codecvisor::testing {

// $TEST_SRCDIR/codecvisor/`path`: a file the test depends on.
std::string Runfile(const std::string& path);
// $TEST_TMPDIR/`name`.
std::string TempPath(const std::string& name);
// Writes `text` to TempPath(name) and returns that path.
std::string WriteFile(const std::string& name, const std::string& text);

}  // namespace codecvisor::testing

#endif  // CODECVISOR_TESTS_TEST_PATHS_H_
