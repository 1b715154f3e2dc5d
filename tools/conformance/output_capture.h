// File: tools/conformance/output_capture.h
//
// The lines a backend writes to its stdout and stderr, as the host relays
// them: every relayed line reaches the host process's descriptor 2 as
// "codecvisor: backend 'NAME': LINE" (core/backend_output.h), written to
// what descriptor 2 is at that moment. OutputCapture points descriptor 2
// at a pipe of its own for a while, passes every byte on to the
// descriptor 2 it replaced (nothing is hidden from whoever reads the
// process's stderr), and counts the lines of one backend. For the
// conformance suite's quiet_output check: at the quiet log level a
// backend must write nothing (codecvisor_backend.h,
// CODECVISOR_BACKEND_LOG_LEVEL_ENV).
//
// Changes descriptor 2 of the whole process: one capture at a time per
// process, as one conformance run at a time. Thread-safe otherwise (a
// thread of its own reads the pipe; the accessors lock).

#ifndef CODECVISOR_TOOLS_CONFORMANCE_OUTPUT_CAPTURE_H_
#define CODECVISOR_TOOLS_CONFORMANCE_OUTPUT_CAPTURE_H_

#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "base/mutex.h"

namespace codecvisor::conformance {

class OutputCapture {
 public:
  // Starts counting the relayed lines of backend `backend`. Lines the
  // trusted runner itself writes ("codecvisor-backend...", e.g. a
  // degraded sandbox's warning) are not the plugin's and not counted.
  // An error names the call that failed; descriptor 2 is then unchanged.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<OutputCapture>> Start(const std::string& backend);
  OutputCapture(const OutputCapture&) = delete;
  OutputCapture& operator=(const OutputCapture&) = delete;
  // Stop()s.
  ~OutputCapture();

  // Gives descriptor 2 back, passes on what the pipe still holds and
  // closes every descriptor the capture opened. Idempotent.
  void Stop();

  int lines() const;
  // The first counted line, without the host's prefix; empty if none.
  std::string first_line() const;
  // The runner's reports of the plugin breaking cv_frame_pool's rules
  // ("codecvisor-backend: frame pool: ..."), the first of them.
  int frame_pool_reports() const;
  std::string first_frame_pool_report() const;

 private:
  OutputCapture(std::string prefix, int read_end, int write_end, int saved, int stop);
  void Run();
  void Take(std::string_view bytes);

  const std::string prefix_;  // "codecvisor: backend 'NAME': "
  int read_end_, write_end_, saved_, stop_;
  std::thread reader_;
  bool stopped_ = false;
  mutable codecvisor::Mutex mu_;
  std::string partial_ ABSL_GUARDED_BY(mu_);  // a line not yet ended
  int lines_ ABSL_GUARDED_BY(mu_) = 0;
  std::string first_line_ ABSL_GUARDED_BY(mu_);
  int frame_pool_reports_ ABSL_GUARDED_BY(mu_) = 0;
  std::string first_frame_pool_report_ ABSL_GUARDED_BY(mu_);
};

}  // namespace codecvisor::conformance

#endif  // CODECVISOR_TOOLS_CONFORMANCE_OUTPUT_CAPTURE_H_
