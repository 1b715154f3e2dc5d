// File: backends/sdk/runner/crash_backtrace.h
//
// Opt-in crash backtraces for vendors debugging a backend that dies inside
// the sandbox, where there is no debugger and no core file (see
// backends/sdk/README.md, "Debugging a crash"). When enabled, the runner's
// fault-signal handler (crash_hints.h) writes the crashing thread's stack to
// the runner's stderr, which is the host's stderr:
//
//   codecvisor-backend: backend 'acme': fatal signal 11 (SIGSEGV); backtrace of the crashing thread:
//     #0 0x00007f3a1c2d4e5a _ZN4acme11DecodeSliceEPKhm+0x1a (/opt/acme/libacme.so+0x4e5a)
//     #1 ...
//
// Symbols come from each module's ELF symbol table (.symtab, so hidden
// functions of a -fvisibility=hidden library are named too), else from the
// dynamic symbols; names are printed mangled (demangling allocates): pipe
// through c++filt. The module offset is what `addr2line -Cfe MODULE OFFSET`
// takes for file and line.
//
// Thread-safety: Prepare once, on the main thread, before any other thread
// or the sandbox exists; Write is async-signal-safe (no allocation, no
// locks of ours; reads ELF files with pread) and writes at most once per
// process.

#ifndef CODECVISOR_BACKENDS_SDK_RUNNER_CRASH_BACKTRACE_H_
#define CODECVISOR_BACKENDS_SDK_RUNNER_CRASH_BACKTRACE_H_

#include <signal.h>

#include "absl/strings/string_view.h"

namespace codecvisor::runner {

// Enables backtraces for this process. `name` is the backend's name for the
// first line. `library_fd` is the vendor library the host opened for us
// (kept open by the runner, so its symbols can be read after Landlock);
// `library_open_path` is the path it was dlopened by (/proc/self/fd/5) and
// `library_display` the path shown instead. Also opens the runner's own
// executable and calls backtrace() once, so that libgcc's unwinder is
// loaded now: the sandbox would not let it be loaded at crash time.
// Must run before the sandbox is completed.
void PrepareCrashBacktrace(absl::string_view name, int library_fd, absl::string_view library_open_path,
                           absl::string_view library_display);

// Whether PrepareCrashBacktrace ran.
bool CrashBacktraceEnabled();

// Writes the backtrace of the calling (crashing) thread to stderr, starting
// at the faulting instruction found in `ucontext` (the handler's third
// argument) when it is on the stack. Async-signal-safe; only the first call
// in the process writes anything.
void WriteCrashBacktrace(int sig, const void* ucontext);

}  // namespace codecvisor::runner

#endif  // CODECVISOR_BACKENDS_SDK_RUNNER_CRASH_BACKTRACE_H_
