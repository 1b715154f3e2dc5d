// File: base/small_file.h
//
// Reading the short texts the kernel serves (/proc, /sys, cgroup files)
// without losing why a read failed: a file that cannot be opened because
// the process is out of descriptors is the host's shortage, and must not be
// read as an empty or missing file (no cgroup, no device driver).

#ifndef CODECVISOR_BASE_SMALL_FILE_H_
#define CODECVISOR_BASE_SMALL_FILE_H_

#include <optional>
#include <string>

namespace codecvisor {

// The whole text of a small file (one of /proc's, /sys's or a cgroup's), or
// nullopt with errno saying why it could not be opened or read.
std::optional<std::string> ReadSmallFile(const std::string& path);

// Whether `err` (an errno) says that this process (EMFILE) or the system
// (ENFILE) has no descriptor to spare: a shortage of the host's, not a fact
// about the file.
bool OutOfDescriptors(int err);

}  // namespace codecvisor

#endif  // CODECVISOR_BASE_SMALL_FILE_H_
