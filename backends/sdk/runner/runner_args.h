// File: backends/sdk/runner/runner_args.h
//
// How the host starts `codecvisor-backend`: shared by the spawner (core/)
// and the runner so the two cannot drift apart.

#ifndef CODECVISOR_BACKENDS_SDK_RUNNER_RUNNER_ARGS_H_
#define CODECVISOR_BACKENDS_SDK_RUNNER_RUNNER_ARGS_H_

namespace codecvisor::runner {

// The control channel's ends are the child's descriptors 3 and 4; every
// other descriptor is closed before exec.
inline constexpr int kControlMemfdFd = 3;
inline constexpr int kControlSocketFd = 4;

// Command-line flags, each followed by its value.
inline constexpr const char kFlagName[] = "--name";        // backend name from the manifest
inline constexpr const char kFlagLibrary[] = "--library";  // absolute path of the vendor library
inline constexpr const char kFlagEntry[] = "--entry";      // entry symbol
inline constexpr const char kFlagConfig[] = "--config";    // "key=value" lines for create()
inline constexpr const char kFlagLibraryFd[] = "--library-fd";  // the library, opened by the host
inline constexpr const char kFlagReadPath[] = "--read-path";    // repeatable: Landlock read-only path
inline constexpr const char kFlagDevice[] = "--device";         // repeatable: Landlock read-write device
inline constexpr const char kFlagLandlock[] = "--landlock";     // require | try | off
inline constexpr const char kFlagSeccomp[] = "--seccomp";       // require | log | off
// "1": on a fatal signal, write the crashing thread's backtrace to stderr
// (crash_backtrace.h). The host passes it when its own environment has
// CODECVISOR_BACKEND_BACKTRACE=1 (the child's environment is cleaned).
inline constexpr const char kFlagBacktrace[] = "--backtrace";
inline constexpr const char kBacktraceEnv[] = "CODECVISOR_BACKEND_BACKTRACE";
inline constexpr const char kSeccompEnv[] = "CODECVISOR_SECCOMP";  // "log": log refusals, do not enforce

// The vendor library's descriptor in the child, when the host passes one.
inline constexpr int kLibraryFd = 5;

// The name (/proc/PID/task/TID/comm) of the runner thread that serves a
// session: the vendor's decode_frame calls run on it. The control thread is
// the main thread; any other thread of the runner is the vendor's own (an
// FFmpeg frame thread, say). Benchmarks tell them apart by this.
inline constexpr const char kSessionThreadName[] = "cv-session";

}  // namespace codecvisor::runner

#endif  // CODECVISOR_BACKENDS_SDK_RUNNER_RUNNER_ARGS_H_
