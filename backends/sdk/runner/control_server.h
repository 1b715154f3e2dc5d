// File: backends/sdk/runner/control_server.h
//
// The runner's control loop: answers the handshake (or, if the vendor
// library failed to load, says exactly why), opens vendor sessions, and
// hands each one to its own thread once the host attaches a session channel.
// Runs on the runner's main thread; session threads never touch it.

#ifndef CODECVISOR_BACKENDS_SDK_RUNNER_CONTROL_SERVER_H_
#define CODECVISOR_BACKENDS_SDK_RUNNER_CONTROL_SERVER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "backends/sdk/codecvisor_backend.h"
#include "backends/sdk/runner/session_server.h"
#include "ipc/channel.h"

namespace codecvisor::runner {

class ControlServer {
 public:
  // `vtable` and `backend` are null when loading failed; `load_status` says why.
  // `sandbox` carries what the runner applied to itself, for the handshake.
  // `hangups` (may be null; must outlive every session) reports the host's
  // hang-up on each session channel, so idle sessions do not poll.
  // `close_watchdog` (may be null; must outlive every session) gives each
  // attached session's close_session its deadline.
  ControlServer(std::unique_ptr<ipc::BackendChannel> control, std::string name, const cv_backend_v1* vtable,
                cv_backend* backend, absl::Status load_status, ipc::HelloReply sandbox, ipc::HangupWatcher* hangups,
                CloseWatchdog* close_watchdog = nullptr)
      : control_(std::move(control)),
        hangups_(hangups),
        close_watchdog_(close_watchdog),
        name_(std::move(name)),
        vtable_(vtable),
        backend_(backend),
        load_status_(std::move(load_status)),
        sandbox_(std::move(sandbox)) {}

  // Serves until the host hangs up. Returns the process exit code
  // (RunnerExit, runner_args.h): kHostHungUp after a normal shutdown,
  // kLoadFailed when the backend failed to load (after reporting it),
  // kChannelBroken when the control channel failed.
  int Run();

 private:
  absl::Status HandleOpen(uint64_t id, const ipc::OpenSession& open);
  absl::Status HandleAttach(uint64_t id, const ipc::AttachSession& attach);
  absl::Status Reply(ipc::Response response);
  // The answer to an open or attach whose descriptors were dropped for
  // want of a free one (`why`).
  ipc::Error NoDescriptorFree(const absl::Status& why) const;

  std::unique_ptr<ipc::BackendChannel> control_;
  ipc::HangupWatcher* hangups_;
  CloseWatchdog* close_watchdog_;
  std::string name_;
  const cv_backend_v1* vtable_;
  cv_backend* backend_;
  absl::Status load_status_;
  ipc::HelloReply sandbox_;
  uint64_t next_session_id_ = 1;
  std::map<uint64_t, VendorSession> pending_;  // opened, not yet attached
};

}  // namespace codecvisor::runner

#endif  // CODECVISOR_BACKENDS_SDK_RUNNER_CONTROL_SERVER_H_
