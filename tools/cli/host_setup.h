// File: tools/cli/host_setup.h
//
// What every subcommand does before and after its own work: create the
// Host (once per command) with the extra manifests the user named, turn
// the shared flags into DecoderOptions, and report a failure as the one
// line the command prints before exiting with status 1.
//
// Thread-safety: called from main()'s thread only.

#ifndef CODECVISOR_TOOLS_CLI_HOST_SETUP_H_
#define CODECVISOR_TOOLS_CLI_HOST_SETUP_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "codecvisor/host.h"
#include "core/environment_warnings.h"
#include "tools/cli/commands.h"

namespace codecvisor::cli {


// How long `backends --start` and `doctor` wait for one backend to start.
inline constexpr std::chrono::milliseconds kBackendStartTimeout{15'000};

// A manifest given with --backend-manifest that could not be loaded.
struct ManifestFailure {
  std::string path;
  absl::Status status;
};

// Creates the Host, which discovers the runner and the built-in backends
// (core/install_layout.h), then loads each of `manifests`. A manifest that
// fails is an error naming it, unless `failures` is given: then it is
// recorded there and the others still load.
[[nodiscard]] absl::StatusOr<std::unique_ptr<Host>> CreateHost(const std::vector<std::string>& manifests,
                                                               std::vector<ManifestFailure>* failures = nullptr);

// A manifest named with --backend-manifest that did not load, as a failed
// entry of the backend list: the host never registered it, so, as discovery
// does for an unreadable manifest, it is named after its file.
BackendInfo FailedManifestStatus(const ManifestFailure& failure);

// The level names --loglevel takes (the ffmpeg CLI's -loglevel names).
inline constexpr const auto& kLogLevels = kBackendLogLevels;

// Passes --loglevel `level` to the backends this process starts, through
// $CODECVISOR_BACKEND_LOG_LEVEL (which the host hands to their processes);
// nothing when `level` is empty. Backends are quiet by default. Their lines
// reach stderr whole, each prefixed "codecvisor: backend 'NAME': ".
void SetBackendLogLevel(const std::string& level);

// Whether backends may write log lines (a level other than quiet asked for,
// here or in the environment): a progress bar would then be broken mid-line.
bool BackendsMayLog();

// The DecoderOptions for the shared flags.
DecoderOptions DecoderOptionsFor(const OpenArgs& args);

// The device a decoder opened with `args` uses: --device, or the host's
// default device.
std::string DeviceFor(const OpenArgs& args, const Host& host);

// Prints the host's discovery warnings (a device claimed twice, ...) on
// stderr, one line each.
void PrintWarnings(absl::string_view command, const Host& host);

// OK when `path` is a readable file; else an error naming it and the cause,
// so that a typo fails before any backend process is started. A URL
// ("http://...", "file://...") that is not also a local path is
// kInvalidArgument: "URLs are not supported".
[[nodiscard]] absl::Status CheckReadableFile(const std::string& path);

// The --device check the command line runs: "cpu:N" is kInvalidArgument
// but for "cpu:0" (torch's name for the cpu, which the library takes), since
// the cpu device has no index. Other devices are checked by the host when
// it opens the decoder.
[[nodiscard]] absl::Status CheckDeviceFlag(absl::string_view device);

// Prints "codecvisor COMMAND: SUBJECT: cause" on stderr (the subject only
// when the cause does not already start with it) and returns 1.
int ReportFailure(absl::string_view command, absl::string_view subject, const absl::Status& status);

// Whether everything printed to stdout reached it: flushed, and no earlier
// write failed (output past stdio's buffer is written, and can fail, before
// the last flush, which then succeeds with nothing left).
bool StdoutWritten();


}  // namespace codecvisor::cli

#endif  // CODECVISOR_TOOLS_CLI_HOST_SETUP_H_
