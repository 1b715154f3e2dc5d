// File: tools/common/process_census.h
//
// What this process holds, read from /proc: its child processes and its
// open descriptors. The conformance suite and the soak benchmark use them to
// show that a Host leaves nothing behind. Thread-safe (reads procfs only),
// but the answer is a snapshot.

#ifndef CODECVISOR_TOOLS_COMMON_PROCESS_CENSUS_H_
#define CODECVISOR_TOOLS_COMMON_PROCESS_CENSUS_H_

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace codecvisor::tools {

// A file's whole contents, "" if it cannot be read. For procfs: a read
// failing because the process exited meanwhile (ESRCH) ends it quietly,
// where a std::ifstream read through istreambuf_iterator throws.
std::string ReadWholeFile(const std::string& path);

// Processes whose parent is this process, zombies included.
std::vector<pid_t> ChildProcesses();

// This process's open descriptors, each with what it refers to
// ("/dev/null", "pipe:[123]", "/memfd:codecvisor (deleted)").
std::map<int, std::string> OpenDescriptors();

// The descriptors of `now` that are not in `before` (or refer to something
// else), as "fd -> target".
std::vector<std::string> NewDescriptors(const std::map<int, std::string>& before,
                                        const std::map<int, std::string>& now);

}  // namespace codecvisor::tools

#endif  // CODECVISOR_TOOLS_COMMON_PROCESS_CENSUS_H_
