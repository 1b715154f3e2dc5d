// File: tools/conformance/suite.h
//
// The conformance suite's internals (conformance.h is the interface): the
// Suite that owns the Host, the samples and the report, and runs each
// check. Its methods live in four files by what they check:
// conformance.cc (set-up, running checks, frame comparison),
// frame_checks.cc (metadata, frames, access methods, seek modes, the
// first approximate request, planar)
// process_checks.cc (handshake, sandbox, bad input, concurrency, crash
// recovery, quiet output, shutdown) and session_checks.cc (what closed
// sessions leave behind). Not thread-safe, except where a check runs its own
// threads (Concurrency).

#ifndef CODECVISOR_TOOLS_CONFORMANCE_SUITE_H_
#define CODECVISOR_TOOLS_CONFORMANCE_SUITE_H_

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/host.h"
#include "core/manifest.h"
#include "tools/conformance/conformance.h"
#include "tools/conformance/output_capture.h"
#include "tools/conformance/samples.h"

namespace codecvisor::conformance::internal {

using ::codecvisor::internal::Host;
using ::codecvisor::internal::BackendStatus;
using ::codecvisor::internal::VideoDecoder;
using ::codecvisor::internal::Frame;
using ::codecvisor::internal::SeekMode;
using ::codecvisor::internal::OutputFormat;

using Clock = std::chrono::steady_clock;

class Suite {
 public:
  Suite(ConformanceTarget target, ConformanceOptions options)
      : target_(std::move(target)), options_(std::move(options)) {}

  absl::StatusOr<ConformanceReport> Run();

 private:
  // Runs `body` as the check `name` and records the outcome. A body returns
  // OK to pass, or an error whose message says what was wrong; `detail`
  // collects what a passing check saw.
  // A body that finds nothing to check sets nothing_checked_ and returns
  // OK: the check is skipped, neither passed nor failed.
  void Check(const std::string& name, const std::function<absl::Status(std::string* detail)>& body);
  // Records `name` failed as not run, for `why`: a check an earlier
  // failure left nothing to run on (no handshake, no sample).
  void NotRun(const std::string& name, const std::string& why);
  // Reports `result` (options_.on_check) and adds it to the report.
  void Record(CheckResult result);

  absl::Status Prepare();
  absl::Status Handshake(std::string* detail);
  absl::Status SandboxEngaged(std::string* detail);
  absl::Status Metadata(const Sample& sample, std::string* detail);
  absl::Status Sequential(const Sample& sample, std::string* detail);
  absl::Status AccessMethods(const Sample& sample, std::string* detail);
  absl::Status Approximate(const Sample& sample, std::string* detail);
  absl::Status Planar(const Sample& sample, std::string* detail);
  // Opened as the Python package opens every decoder (native_formats: the
  // formats the host converts): frames the backend sends native, converted
  // as the host converts them, must match the reference as its RGB does;
  // a backend that ignores the option sends RGB, checked as usual.
  absl::Status Native(const Sample& sample, std::string* detail);
  // A copy of a sample with a display matrix of a quarter turn: a backend
  // that rotates (reports the rotated size) must match the CLI's
  // autorotated frames and ffprobe as Metadata and Sequential check; one
  // that reports the coded size and the angle passes as "not claimed".
  absl::Status Rotation(const Sample& rotated, std::string* detail);
  // A fresh approximate-mode decoder's first request, for the last frame
  // of a sample with key frames far into the file: passes when it read
  // less than half of the bytes before that frame's key frame, i.e. it
  // sought rather than decoding from the start (first_seek.h).
  absl::Status FirstSeek(const Sample& sample, std::string* detail);
  // Runs FirstSeek on a long sample of the first codec the manifest
  // lists, else on the first of the vendor's samples.
  void CheckFirstSeek();
  // A request for frames 0 and the last of `sample` (a deep seek in exact
  // mode) interrupted (Ctrl-C) as frame 0 arrives: the call must end with
  // kCancelled without the backend being replaced (a plugin that takes
  // longer than the host's grace on one frame must stop at
  // cv_cancel_check), and the session must then serve the frame asked
  // for, the one before it and the first, as the reference has them (a
  // plugin that stopped must leave its decoder able to seek).
  absl::Status Cancel(const Sample& sample, std::string* detail);
  absl::Status BadInput(const Sample& sample, std::string* detail);
  absl::Status Concurrency(std::string* detail);
  // A backend that keeps memory of closed sessions: kLeakWarmup sessions
  // of `sample` (each opened, one frame decoded, closed), then
  // kLeakSessions more, after which the backend's resident memory may have
  // grown by at most kLeakPerSession for each. Passes as "not measured"
  // under AddressSanitizer, whose quarantine keeps freed memory.
  absl::Status SessionLeak(const Sample& sample, std::string* detail);
  static constexpr int kLeakWarmup = 8;
  static constexpr int kLeakSessions = 16;
  static constexpr int64_t kLeakPerSession = int64_t{2} << 20;
  // A close_session that never returns (or leaves its session's threads
  // running) costs nothing a caller sees: the host does not wait for it.
  // Opens kThreadSessions decoders of `sample` at once, decodes a frame
  // from each and closes them; within the suite's timeout (at least 10 s)
  // the backend must run fewer than kThreadSessions threads more than
  // before they opened (counted once the count held for 200 ms).
  absl::Status SessionThreads(const Sample& sample, std::string* detail);
  static constexpr int kThreadSessions = 4;
  absl::Status CrashRecovery(const Sample& sample, std::string* detail);
  // Stops capturing the backend's output (output_): more than
  // kMaxQuietLines lines written at the quiet log level fail, naming the
  // first. Passes as "not checked" where the run lets backends log.
  absl::Status QuietOutput(std::string* detail);
  // After QuietOutput (the capture stopped, so every session's close has
  // been reported): the runner's reports of the plugin breaking
  // cv_frame_pool's rules fail, naming the first.
  absl::Status FramePool(std::string* detail);
  absl::Status Shutdown(std::string* detail);

  absl::StatusOr<std::unique_ptr<VideoDecoder>> Open(const std::string& path,
                                                     SeekMode mode = SeekMode::kExact,
                                                     OutputFormat format = OutputFormat::kRgb24);
  absl::StatusOr<BackendStatus> Status() const;
  // The backend's status once it runs (started if an earlier check left it
  // stopped, quarantined or restarting); kUnavailable, saying its state and
  // diagnostic, where it has no process to `look_at` (a check's purpose).
  absl::StatusOr<BackendStatus> Running(absl::string_view look_at);
  // Checks `frame` against frame `index` of `sample`: size, pts, duration
  // and pixels (exactly, or at the declared PSNR), and that the frame says
  // it is that index unless `check_index` is false.
  // `psnr`, when given, receives the frame's PSNR (+inf when identical).
  absl::Status Compare(const Frame& frame, const Sample& sample, int64_t index, absl::string_view what,
                       double* psnr = nullptr, bool check_index = true) const;
  // The same with the frame's pixels given as packed RGB24 (`pixels`).
  absl::Status Compare(const Frame& frame, std::span<const uint8_t> pixels, const Sample& sample, int64_t index,
                       absl::string_view what, double* psnr = nullptr, bool check_index = true) const;
  // Checks `frame` against the reference frame of its pts, whatever index
  // it says it is: approximate mode on a variable frame rate names frames
  // by the header's constant rate.
  absl::Status CompareByPts(const Frame& frame, const Sample& sample, absl::string_view what) const;
  // Makes or loads the samples to check, running the checks of each one.
  void CheckSamples();
  void CheckSample(const std::string& suffix, absl::StatusOr<Sample> sample);
  // `ticks` of `sample`'s time base (the reference's, which Metadata()
  // checks the backend reports too), in seconds.
  static double Seconds(const Sample& sample, int64_t ticks) {
    return static_cast<double>(ticks) * static_cast<double>(sample.time_base_num) /
           static_cast<double>(sample.time_base_den);
  }

  ConformanceTarget target_;
  ConformanceOptions options_;
  ConformanceReport report_;
  std::unique_ptr<Host> host_;
  std::string scratch_;
  bool own_scratch_ = false;
  std::string device_;
  BackendManifest manifest_;
  bool exact_ = true;
  double min_psnr_db_ = 0;
  bool ready_ = false;  // the handshake passed
  // The checks during which the backend was quarantined. The suite lifts
  // the first quarantine; after the second, the checks that need the
  // backend are not run.
  std::vector<std::string> quarantines_;
  bool nothing_checked_ = false;  // set by the running check's body (Check)
  static constexpr size_t kMaxQuarantines = 2;
  std::vector<Sample> samples_;
  std::map<int, std::string> descriptors_before_;
  // The backend's relayed output from its start to the quiet_output check,
  // which ends the capture before the shutdown check counts descriptors.
  absl::StatusOr<std::unique_ptr<OutputCapture>> output_ = absl::FailedPreconditionError("not started");
  // A few lines at the quiet level pass (a library's one-off notice); the
  // failure this catches is a backend that logs as it decodes.
  static constexpr int kMaxQuietLines = 3;
};

// The value of "Key:\tvalue" in a /proc/PID/status text ("" if absent).
std::string StatusField(const std::string& status, absl::string_view key);

}  // namespace codecvisor::conformance::internal

#endif  // CODECVISOR_TOOLS_CONFORMANCE_SUITE_H_
