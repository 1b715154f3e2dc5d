// File: backends/sdk/runner/runner_args.h
//
// How the host starts `codecvisor-backend` and how it ends: one struct for
// the command line, written by the spawner (core/backend_process.cc) with
// ToArgv() and read by the runner with Parse(), and one enum for the exit
// codes, so the two sides cannot drift apart.
//
// Thread-safety: plain data and pure functions.

#ifndef CODECVISOR_BACKENDS_SDK_RUNNER_RUNNER_ARGS_H_
#define CODECVISOR_BACKENDS_SDK_RUNNER_RUNNER_ARGS_H_

#include <signal.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace codecvisor::runner {

// The control channel's ends are the child's descriptors 3 and 4; every
// other descriptor is closed before exec.
inline constexpr int kControlMemfdFd = 3;
inline constexpr int kControlSocketFd = 4;

// How the runner ends. The host reads them as exit statuses ("exited with
// code 3"); a vendor's own exit() shows its own code instead.
enum class RunnerExit : int {
  kHostHungUp = 0,           // the host closed the control channel: a normal shutdown
  kBadInvocation = 2,        // a command line Parse() rejects, or no control channel
  kLoadFailed = 3,           // the backend did not load or init (said over the channel first)
  kChannelBroken = 4,        // the control channel failed mid-way
  kPluginClosedChannel = 5,  // the plugin closed or replaced the control channel's descriptors
  kCloseHung = 6,            // a close_session ran past --close-timeout-ms (close_watchdog.h)
  // A syscall outside the sandbox's allow list: the runner, as the init of
  // its pid namespace, ends as a SIGSYS death would read.
  kSandboxViolation = 128 + SIGSYS,
};
inline constexpr int ExitCode(RunnerExit e) { return static_cast<int>(e); }

// Command-line flags, each followed by its value.
inline constexpr const char kFlagName[] = "--name";        // backend name from the manifest
inline constexpr const char kFlagLibrary[] = "--library";  // absolute path of the vendor library
inline constexpr const char kFlagEntry[] = "--entry";      // entry symbol
// "key=value" lines for create(), for a runner started by hand: the host
// passes them with kFlagConfigFd, since a flag's value is on the command
// line every local user can read.
inline constexpr const char kFlagConfig[] = "--config";
// The same lines in a descriptor (a sealed memfd the host passes): unlike a
// flag's value, not on the command line every local user can read.
inline constexpr const char kFlagConfigFd[] = "--config-fd";
inline constexpr const char kFlagLibraryFd[] = "--library-fd";  // the library, opened by the host
inline constexpr const char kFlagReadPath[] = "--read-path";    // repeatable: Landlock read-only path
inline constexpr const char kFlagDevice[] = "--device";         // repeatable: Landlock read-write device
inline constexpr const char kFlagLandlock[] = "--landlock";     // require | try | off
inline constexpr const char kFlagSeccomp[] = "--seccomp";       // require | log | off
// "1": on a fatal signal, write the crashing thread's backtrace to stderr
// (crash_backtrace.h). The host passes it when its own environment has
// CODECVISOR_BACKEND_BACKTRACE=1 (the child's environment is cleaned).
inline constexpr const char kFlagBacktrace[] = "--backtrace";
inline constexpr const char kFlagMemfd[] = "--memfd";
// How long a session's close_session may run (1 to kMaxCloseTimeoutMs);
// the manifest's [restart] close_timeout_seconds.
inline constexpr const char kFlagCloseTimeout[] = "--close-timeout-ms";
inline constexpr int64_t kDefaultCloseTimeoutMs = 60'000;
inline constexpr int64_t kMaxCloseTimeoutMs = 3'600'000;
inline constexpr const char kBacktraceEnv[] = "CODECVISOR_BACKEND_BACKTRACE";
inline constexpr const char kSeccompEnv[] = "CODECVISOR_SECCOMP";  // "log": log refusals, do not enforce

// The vendor library's descriptor in the child, when the host passes one.
inline constexpr int kLibraryFd = 5;
// The manifest's [config] in the child, when it has one.
inline constexpr int kConfigFd = 6;
// The most [config] a runner reads from kFlagConfigFd.
inline constexpr size_t kMaxConfigBytes = 1 << 20;

// The name (/proc/PID/task/TID/comm) of the runner thread that serves a
// session: the vendor's decode_frame calls run on it. The control thread is
// the main thread; any other thread of the runner is the vendor's own (an
// FFmpeg frame thread, say). Benchmarks tell them apart by this.
inline constexpr const char kSessionThreadName[] = "cv-session";

// The runner's command line. Every flag takes one value; read paths and
// devices repeat.
struct RunnerArgs {
  enum class Landlock { kRequire, kTry, kOff };
  enum class Seccomp { kRequire, kLog, kOff };

  std::string name;     // required: the manifest's name
  std::string library;  // required: the vendor library's path (for messages, and to open without library_fd)
  std::string entry;    // empty: CODECVISOR_BACKEND_ENTRY
  std::string config;   // "key=value" lines for create()
  int library_fd = -1;  // the library opened by the host; -1: open `library`
  int config_fd = -1;   // `config` to be read from here (ReadConfig); -1: none
  std::vector<std::string> read_paths;
  std::vector<std::string> devices;
  Landlock landlock = Landlock::kRequire;
  Seccomp seccomp = Seccomp::kRequire;
  bool backtrace = false;
  // memfd_create allowed. Off where no memory cgroup holds the backend: a
  // memfd's pages are in no mapping (RLIMIT_AS never sees them) and in no
  // process's RSS, so only a cgroup bounds what memfds hold.
  bool memfd = true;
  int64_t close_timeout_ms = kDefaultCloseTimeoutMs;

  // argv[0] ("codecvisor-backend") and the flags; only what differs from
  // the defaults, besides name, library and the two sandbox modes.
  std::vector<std::string> ToArgv() const;
  // Reads argv[1..argc). kInvalidArgument naming the flag for an unknown
  // flag, a flag without its value, a repeated single flag, a value out of
  // its set, or a missing name or library.
  [[nodiscard]] static absl::StatusOr<RunnerArgs> Parse(int argc, const char* const* argv);
  // The same from a vector (argv[0] included), for tests.
  [[nodiscard]] static absl::StatusOr<RunnerArgs> Parse(const std::vector<std::string>& argv);
  // With config_fd set: reads `config` from it (at most kMaxConfigBytes,
  // from its start), closes it and clears config_fd. kInvalidArgument for
  // more. (Parse refuses --config and --config-fd together.)
  [[nodiscard]] absl::Status ReadConfig();

  bool operator==(const RunnerArgs&) const = default;
};

}  // namespace codecvisor::runner

#endif  // CODECVISOR_BACKENDS_SDK_RUNNER_RUNNER_ARGS_H_
