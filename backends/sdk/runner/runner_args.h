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

}  // namespace codecvisor::runner

#endif  // CODECVISOR_BACKENDS_SDK_RUNNER_RUNNER_ARGS_H_
