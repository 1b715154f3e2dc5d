// File: backends/sdk/runner/session_server.h
//
// Serves one decoder session on its own channel and thread: turns metadata
// and frame requests into calls of the vendor's C ABI, and decodes frames
// straight into arena slots. Everything here runs in the sandboxed child.

#ifndef CODECVISOR_BACKENDS_SDK_RUNNER_SESSION_SERVER_H_
#define CODECVISOR_BACKENDS_SDK_RUNNER_SESSION_SERVER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/sdk/codecvisor_backend.h"
#include "ipc/channel.h"
#include "ipc/messages.h"
#include "backends/sdk/runner/resolve_selection.h"
#include "ipc/unique_fd.h"

namespace codecvisor::runner {

// How long the runner waits for the host to free an arena slot or make room
// in the response ring before it gives up on the request.
inline constexpr std::chrono::seconds kHostProgressTimeout{60};

class SessionServer {
 public:
  SessionServer(VendorSession session, std::unique_ptr<ipc::BackendChannel> channel)
      : session_(std::move(session)), channel_(std::move(channel)) {
    session_.hints = channel_->header();
  }
  ~SessionServer();

  // Serves requests until Close or until the host goes away. Closes the
  // vendor session on the way out.
  void Run();

 private:
  // Answers one frame request with one FrameBatch message per frame, or an
  // Error. Returns non-OK only if the channel itself failed.
  absl::Status ServeFrames(uint64_t id, const ipc::FrameRequest& request);
  absl::Status SendError(uint64_t id, absl::Status status);
  // Between two frames of request `id`, or from the vendor mid-frame
  // (cv_cancel_check): whether the host has cancelled it. Reads what the
  // host sent meanwhile; anything but a cancel is kept in pending_ for
  // Run(). Session thread only.
  bool Cancelled(uint64_t id);

  VendorSession session_;
  std::unique_ptr<ipc::BackendChannel> channel_;
  std::optional<ipc::Request> pending_;
  std::optional<uint64_t> cancelled_;  // the last request the host cancelled, once read
};

}  // namespace codecvisor::runner

#endif  // CODECVISOR_BACKENDS_SDK_RUNNER_SESSION_SERVER_H_
