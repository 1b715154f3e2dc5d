// File: tools/conformance/process_io.h
//
// How many bytes a process has read through read calls (read, pread,
// readv...) on any descriptor, as the kernel counts them for the whole
// process ("rchar" in /proc/PID/io): a count that does not depend on time
// or on the page cache. Reading another process's count needs the right to
// inspect it (the host may, for the backend children it started).
// Thread-safe.

#ifndef CODECVISOR_TOOLS_CONFORMANCE_PROCESS_IO_H_
#define CODECVISOR_TOOLS_CONFORMANCE_PROCESS_IO_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace codecvisor::conformance {

// The "rchar" of a /proc/PID/io text; kInternal when it has none.
[[nodiscard]] absl::StatusOr<int64_t> ParseReadChars(absl::string_view io_text);

// The bytes process `pid` has read so far; an error naming the file when
// it cannot be read (no such process, no right to inspect it).
[[nodiscard]] absl::StatusOr<int64_t> BytesRead(pid_t pid);

}  // namespace codecvisor::conformance

#endif  // CODECVISOR_TOOLS_CONFORMANCE_PROCESS_IO_H_
