// File: backends/sdk/runner/sandbox.h
//
// The half of the sandbox the runner applies to itself, after the host's
// half (namespaces, rlimits, no_new_privs, a clean environment, only the
// channel descriptors) and before any vendor code runs, even the vendor
// library's static initialisers:
//  - Landlock: read-only access to the system library folders and the paths
//    the manifest declares, read-write to the declared devices, nothing
//    else; no TCP bind or connect; no signals or abstract sockets outside
//    the sandbox (ABI 6 scoping), where the kernel supports each.
//  - seccomp-bpf (libseccomp, TSYNC): an allow list of what a decoder
//    needs, with clone (threads only), mmap/mprotect (never W+X), ioctl (no
//    terminal or file-system ioctls), fcntl, prctl, kill and prlimit64
//    checked by argument;
//    anything else is trapped so that the crash hints record the syscall
//    before the process ends, and another ABI kills the process.
// SECURITY: both are irreversible for the process and all its threads.

#ifndef CODECVISOR_BACKENDS_SDK_RUNNER_SANDBOX_H_
#define CODECVISOR_BACKENDS_SDK_RUNNER_SANDBOX_H_

#include <sys/mman.h>

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace codecvisor::runner {

struct RunnerSandbox {
  std::vector<std::string> read_paths;  // read-only (files or folders)
  std::vector<std::string> devices;     // read-write device nodes
  int library_fd = -1;                  // the vendor library, opened by the host
  bool landlock = true;
  bool seccomp = true;
};

// The ioctl types (the command's bits 8-15) refused with ENOTTY: terminals
// ('T': TIOCSTI pushes keys into the host's terminal) and file systems
// ('X', 'f', 'v', 0x94: FS_IOC_SETFLAGS, FS_IOC_SETVERSION,
// FS_IOC_FSSETXATTR, FICLONE...; 'r': FAT_IOCTL_SET_ATTRIBUTES; 0xf5:
// F2FS's), which would change the inode of the video lent to the backend
// when the host's user owns it (they need its ownership, not a descriptor
// open for writing). Sorted.
inline constexpr uint8_t kDeniedIoctlTypes[] = {0x54, 0x58, 0x66, 0x72, 0x76, 0x94, 0xf5};

// Every `bits`-bit value (bits <= 32) but `denied` (sorted), as disjoint
// aligned blocks: pairs of (mask, value) such that v is allowed when
// (v & mask) == value. A filter tests an argument against them with
// SCMP_CMP_MASKED_EQ, which sees only the low `bits` bits, as the kernel
// does of an int.
std::vector<std::pair<uint32_t, uint32_t>> AllowedValueBlocks(unsigned bits, std::span<const uint32_t> denied);

// Every ioctl type byte but `denied` (sorted), as AllowedValueBlocks(8).
std::vector<std::pair<uint8_t, uint8_t>> AllowedIoctlTypeBlocks(std::span<const uint8_t> denied);

// The madvise advice refused with EPERM: MADV_REMOVE and MADV_PAGEOUT free
// (or push to swap) a shared memfd's pages, which the host's next read of
// a frame there would allocate, or bring back, against its own memory.
// Every other advice, including ones newer than this list, is allowed.
inline constexpr uint32_t kDeniedAdvice[] = {MADV_REMOVE, MADV_PAGEOUT};

// The Landlock ABI the kernel offers, 0 if none.
int LandlockAbi();

// Applies Landlock as described above. kUnavailable if the kernel has no
// Landlock (the caller decides whether a degraded sandbox is allowed).
[[nodiscard]] absl::Status ApplyLandlock(const RunnerSandbox& sandbox);

enum class SeccompMode {
  kEnforce,  // a call outside the allow list ends the process, named
  kLog,      // such calls are logged by the kernel and go ahead (making the list)
};

// Installs the seccomp allow list on every thread (TSYNC). SECURITY: in
// kEnforce mode, any syscall not on the list ends the whole process (a
// trap whose handler records the syscall for the host, then exits); a
// call made through another ABI (i386 int 0x80, x32) kills it outright.
// Without `memfd` (RunnerArgs::memfd), memfd_create fails with EPERM.
[[nodiscard]] absl::Status ApplySeccomp(SeccompMode mode = SeccompMode::kEnforce, bool memfd = true);

}  // namespace codecvisor::runner

#endif  // CODECVISOR_BACKENDS_SDK_RUNNER_SANDBOX_H_
