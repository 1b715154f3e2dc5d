// File: ipc/socket.h
//
// The channel's socketpair: descriptor passing (SCM_RIGHTS, host -> backend
// only) and peer liveness (hang-up on the socket, exit seen on a pidfd).
// Functions are thread-compatible; PeerLiveness::Interrupt() may be called
// from any thread.

#ifndef CODECVISOR_IPC_SOCKET_H_
#define CODECVISOR_IPC_SOCKET_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ipc/unique_fd.h"

namespace codecvisor::ipc {

// A connected AF_UNIX SOCK_SEQPACKET pair (message boundaries kept), both
// ends close-on-exec.
[[nodiscard]] absl::StatusOr<std::pair<UniqueFd, UniqueFd>> MakeSocketPair();

// Sends one message of `bytes` with `fds` attached, waiting for socket
// buffer space until `deadline` (a peer that stops reading cannot block us
// longer). Never raises SIGPIPE: a closed peer is kUnavailable. The
// descriptors stay owned by the caller.
[[nodiscard]] absl::Status SendWithDescriptors(int sock, std::span<const uint8_t> bytes,
                                               std::span<const int> fds, Deadline deadline);

struct ReceivedMessage {
  std::vector<uint8_t> bytes;
  std::vector<UniqueFd> fds;
};

// Receives one message, waiting until `deadline`. Received descriptors are
// close-on-exec. A message longer than `max_bytes`, or with more than
// `max_fds` descriptors, is an error (kDataLoss) and every descriptor that
// came with it is closed. A message whose descriptors this process had no
// room for (its RLIMIT_NOFILE reached: the kernel drops them) is
// kResourceExhausted, its bytes read, so that the receiver can answer it
// and go on. For the backend side only.
[[nodiscard]] absl::StatusOr<ReceivedMessage> ReceiveWithDescriptors(
    int sock, size_t max_bytes, size_t max_fds, Deadline deadline);

// Opens a pidfd for `pid` (pidfd_open), for PeerLiveness.
[[nodiscard]] absl::StatusOr<UniqueFd> OpenPidFd(int pid);

// Tells whether the process at the other end of a channel is still there.
// Borrows its descriptors; they must outlive it.
class PeerLiveness {
 public:
  // `socket`: our end of the channel's socketpair. `pidfd`: the peer's pidfd,
  // or -1. `host_side`: the host accepts nothing on the socket, so data there
  // is a violation; the backend expects descriptor messages there.
  PeerLiveness(int socket, int pidfd, bool host_side)
      : socket_(socket), pidfd_(pidfd), host_side_(host_side) {}

  // OK while the peer lives. kUnavailable once it hung up or exited, or after
  // Interrupt(). On the host side, anything the peer wrote to the socket is
  // drained, its descriptors closed unread, and kDataLoss returned.
  [[nodiscard]] absl::Status Check() const;
  // Whether the peer hung up or exited, interrupted or not (the supervisor
  // interrupts the channels of a backend it saw die).
  bool Gone() const;

  // Makes every later Check() fail with kCancelled, e.g. when the supervisor
  // has seen the peer die through its own watch. Thread-safe.
  void Interrupt() { interrupted_.store(true, std::memory_order_release); }
  // A hang-up seen by someone else (a HangupWatcher): every later Check()
  // fails with kUnavailable, and interrupted() is true. Thread-safe.
  void HungUp() {
    hung_up_.store(true, std::memory_order_release);
    Interrupt();
  }
  // Hang-ups on the socket are delivered through HungUp() (and a ring of the
  // doorbells waited on), so waits need not poll the socket between futex
  // sleeps (doorbell.h). Call before any wait.
  void set_hangups_watched() { hangups_watched_ = true; }
  bool hangups_watched() const { return hangups_watched_; }
  // Also watch the peer's pidfd (borrowed). Call before any Check().
  void set_pidfd(int pidfd) { pidfd_ = pidfd; }
  bool interrupted() const { return interrupted_.load(std::memory_order_acquire); }

 private:
  int socket_;
  int pidfd_;
  bool host_side_;
  bool hangups_watched_ = false;
  std::atomic<bool> interrupted_{false};
  std::atomic<bool> hung_up_{false};
};

}  // namespace codecvisor::ipc

#endif  // CODECVISOR_IPC_SOCKET_H_
