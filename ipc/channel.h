// File: ipc/channel.h
//
// One host <-> backend channel: a shared region (rings + arena) and a
// socketpair. HostChannel is the host's end: it creates everything, sends
// requests and descriptors, and receives responses as values it has fully
// validated. BackendChannel is the runner's end. ipc/README.md has the
// design: who owns each buffer and what happens when a side dies.
//
// Threading: Send and Receive on one end are used by one thread at a time
// (a session is sequential); FrameLease release and Interrupt() may come from
// any thread. After the first channel error every call returns that error.

#ifndef CODECVISOR_IPC_CHANNEL_H_
#define CODECVISOR_IPC_CHANNEL_H_

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ipc/doorbell.h"
#include "ipc/frame_arena.h"
#include "ipc/hangup_watcher.h"
#include "ipc/messages.h"
#include "ipc/region.h"
#include "ipc/region_cache.h"
#include "ipc/ring.h"
#include "ipc/socket.h"
#include "ipc/unique_fd.h"

namespace codecvisor::ipc {

// What the backend needs to attach: both close-on-exec; the spawner decides
// how they reach the child.
struct PeerEnds {
  UniqueFd memfd;
  UniqueFd socket;
};

// A response and, for a frame batch, one lease per frame (same order).
struct Incoming {
  Response response;
  std::vector<FrameLease> frames;
};

// What the backend said about itself when it died: non-zero if a vendor
// call was running for this channel, and the fault signal it died of or
// the exit code it ended the process with.
// Meaningful only once the backend is dead (it could write anything before);
// used to decide which request to blame for a crash.
struct CrashHints {
  uint32_t in_call = 0;
  uint32_t fault_signal = 0;
  int32_t violation_syscall = -1;  // the syscall seccomp trapped, if any
  uint64_t call_token = 0;         // control channel: the file token of the open in the call
  int32_t exit_code = -1;          // what that call passed to exit()/_exit(), if the sandbox caught it
  uint32_t stray_fault_signal = 0; // control channel: a fault on a thread in no vendor call
  bool address_space_full = false;  // control channel: its address space was full when it faulted
  bool close_hung = false;          // control channel: the runner ended for a close_session past its limit
  // The signal the process died of as recorded here: the call's, else a stray one.
  uint32_t any_fault_signal() const { return fault_signal != 0 ? fault_signal : stray_fault_signal; }
};
CrashHints ReadCrashHints(const Region& region);

class HostChannel {
 public:
  // Creates the region and socketpair. The PeerEnds go to the backend.
  // With a `cache`, the region is one the same backend's earlier session
  // left there when it fits, and goes back there when its last holder
  // lets go (ipc/region_cache.h).
  [[nodiscard]] static absl::StatusOr<std::pair<std::unique_ptr<HostChannel>, PeerEnds>> Create(
      const Geometry& geometry, RegionCache* cache = nullptr);

  // Lets liveness checks also watch the backend's pidfd (recommended: the
  // socket alone misses a dead backend whose children still hold it).
  void WatchProcess(UniqueFd pidfd);

  // Encodes and appends a request, waiting for ring space until `deadline`.
  [[nodiscard]] absl::Status Send(const Request& request, Deadline deadline);
  // Sends `fds` in one message over the socket, tagged with `token` (the
  // OpenSession.file_token or AttachSession.token that refers to them).
  // Waits for socket space until `deadline`.
  [[nodiscard]] absl::Status SendDescriptors(uint64_t token, std::span<const int> fds, Deadline deadline);
  [[nodiscard]] absl::Status SendDescriptor(uint64_t token, int fd, Deadline deadline) {
    const int fds[] = {fd};
    return SendDescriptors(token, fds, deadline);
  }
  // Waits until `deadline` for the next response, copies it out, decodes it,
  // and claims the arena slots of any frames in it. kDataLoss means the
  // backend broke the protocol: the channel is dead, replace the backend.
  // The socket is checked for traffic from the backend (a violation) on
  // every wait and at least every kLivenessSlice of back-to-back responses.
  [[nodiscard]] absl::StatusOr<Incoming> Receive(Deadline deadline);

  // Makes every blocked and later call fail with kCancelled, waking a
  // blocked one at once. Thread-safe (e.g. the supervisor, on seeing the
  // backend die).
  void Interrupt();
  const Geometry& geometry() const { return region_->geometry(); }
  const HostArena& arena() const { return *arena_; }
  const Region& region_for_test() const { return *region_; }

  CrashHints ReadCrashHints() const { return ipc::ReadCrashHints(*region_); }

  // In a forked child, on the parent's channel it inherited and will never
  // use: closes the child's copies of its descriptors (the socket, the
  // pidfd, the memfd) and keeps the region mapped for the frames that
  // still read it. The parent's channel is untouched: its descriptors are
  // its own. The channel may only be left alone afterwards.
  void CloseInheritedDescriptors();
  // The region, kept mapped as long as the caller holds it.
  std::shared_ptr<const Region> shared_region() const { return region_; }

 private:
  HostChannel(std::shared_ptr<Region> region, UniqueFd socket);
  absl::Status Fail(absl::Status status);

  std::shared_ptr<Region> region_;
  std::shared_ptr<HostArena> arena_;
  UniqueFd socket_;
  UniqueFd pidfd_;
  PeerLiveness liveness_;
  RingWriter requests_;
  RingReader responses_;
  WaitPolicy send_wait_;
  WaitPolicy receive_wait_;
  Clock::time_point last_socket_check_{};
  absl::Status broken_;
};

class BackendChannel {
 public:
  // Maps the host's region (checking its header and seals) and takes the socket.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<BackendChannel>> Attach(PeerEnds ends);
  // Marks the region detached (RegionHeader::backend_detached): whoever
  // destroys the channel must be done with every pointer into it.
  ~BackendChannel();

  // Lets `watcher` (which must outlive this channel) report the host's
  // hang-up: every wait then sleeps until woken or its deadline, with no
  // 10 ms liveness polls, so an idle session costs no wake-ups; the hang-up
  // wakes them with kUnavailable. Call once, before the first wait.
  void WatchHangups(HangupWatcher* watcher);

  // Waits until `deadline` for the next request.
  [[nodiscard]] absl::StatusOr<Request> Receive(Deadline deadline);
  // Whether a request is waiting to be received (no wait, no syscall): a
  // session serving frames looks between frames for the host's cancel.
  bool HasRequest() const { return requests_.HasData(); }
  // Encodes and appends a response, waiting for ring space until `deadline`.
  // With `wake_host` false the host is not woken for it (a batch of cheap
  // frames: it is woken by the next Send that wakes, by WakeHost(), or at
  // worst by its own liveness slice); Send wakes it anyway before it would
  // wait for ring space.
  [[nodiscard]] absl::Status Send(const Response& response, Deadline deadline, bool wake_host = true);
  // Wakes the host if responses were sent without waking it.
  void WakeHost();
  // Responses sent since the host was last woken.
  uint32_t unwoken_responses() const { return unwoken_; }
  // Receives the `count` descriptors the host sent with `token`.
  [[nodiscard]] absl::StatusOr<std::vector<UniqueFd>> ReceiveDescriptors(uint64_t token, size_t count,
                                                                         Deadline deadline);
  [[nodiscard]] absl::StatusOr<UniqueFd> ReceiveDescriptor(uint64_t token, Deadline deadline) {
    auto fds = ReceiveDescriptors(token, 1, deadline);
    if (!fds.ok()) return fds.status();
    return std::move((*fds)[0]);
  }

  // Claims a free frame slot, waiting until `deadline` while the host holds
  // them all (BackendArena::Acquire); wakes the host first if it has frames
  // it was not woken for, since only it can free a slot.
  [[nodiscard]] absl::StatusOr<BackendArena::Slot> AcquireSlot(Deadline deadline);
  BackendArena& arena() { return arena_; }
  const PeerLiveness& liveness() const { return liveness_; }
  const Geometry& geometry() const { return region_.geometry(); }

  // Test hooks for hostile-peer tests: raw bytes into the response ring, and
  // the region itself.
  [[nodiscard]] absl::Status SendRawForTest(std::span<const uint8_t> payload) {
    return responses_.Write(payload);
  }
  Region& region_for_test() { return region_; }
  int socket_for_test() const { return socket_.get(); }
  // For crash hints (backends/sdk/runner/crash_hints.h).
  RegionHeader* header() { return region_.header(); }

 private:
  BackendChannel(Region region, UniqueFd socket);

  Region region_;
  UniqueFd socket_;
  PeerLiveness liveness_;
  RingReader requests_;
  RingWriter responses_;
  BackendArena arena_;
  WaitPolicy receive_wait_;
  WaitPolicy send_wait_;
  WaitPolicy arena_wait_;
  uint32_t unwoken_ = 0;
  // Last: dropped first, so its callback never sees a half-destroyed channel.
  HangupWatcher::Watch hangup_watch_;
};

}  // namespace codecvisor::ipc

#endif  // CODECVISOR_IPC_CHANNEL_H_
