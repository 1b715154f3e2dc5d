#include "ipc/channel.h"

#include <fcntl.h>

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace codecvisor::ipc {
namespace {

std::span<const uint8_t> AsBytes(const kj::Array<capnp::word>& words) {
  return {reinterpret_cast<const uint8_t*>(words.begin()), words.size() * sizeof(capnp::word)};
}

// Appends `words` to `ring`, waiting for space on its space doorbell.
absl::Status WriteWaiting(RingWriter& ring, std::span<const uint8_t> bytes, Deadline deadline,
                          const PeerLiveness& peer, WaitPolicy* policy, absl::string_view what, bool wake = true) {
  if (bytes.size() > ring.max_payload()) return ring.Write(bytes);  // reports the size error
  absl::Status room = WaitFor(&ring.control()->space_bell, [&] { return ring.HasRoomFor(bytes.size()); },
                              deadline, peer, policy, what);
  if (!room.ok()) return room;
  return ring.Write(bytes, wake);
}

}  // namespace

// ---- HostChannel -------------------------------------------------------------

HostChannel::HostChannel(std::shared_ptr<Region> region, UniqueFd socket)
    : region_(std::move(region)),
      arena_(std::make_shared<HostArena>(region_)),
      socket_(std::move(socket)),
      liveness_(socket_.get(), -1, /*host_side=*/true),
      requests_(&region_->header()->request, region_->request_ring(),
                region_->geometry().request_ring_bytes),
      responses_(&region_->header()->response, region_->response_ring(),
                 region_->geometry().response_ring_bytes) {}

absl::StatusOr<std::pair<std::unique_ptr<HostChannel>, PeerEnds>> HostChannel::Create(
    const Geometry& geometry, RegionCache* cache) {
  std::shared_ptr<Region> shared = cache != nullptr ? cache->Take(geometry) : nullptr;
  if (shared == nullptr) {
    absl::StatusOr<Region> region = Region::Create(geometry);
    if (!region.ok()) return region.status();
    shared = cache != nullptr ? cache->Adopt(*std::move(region)) : std::make_shared<Region>(*std::move(region));
  }
  auto sockets = MakeSocketPair();
  if (!sockets.ok()) return sockets.status();
  // The backend gets its own descriptor of the memfd, not ours.
  UniqueFd peer_memfd(fcntl(shared->fd(), F_DUPFD_CLOEXEC, 0));
  if (!peer_memfd.valid()) return ErrnoStatus("dup(channel memfd)");
  std::unique_ptr<HostChannel> host(new HostChannel(std::move(shared), std::move(sockets->first)));
  return std::make_pair(std::move(host), PeerEnds{std::move(peer_memfd), std::move(sockets->second)});
}

void HostChannel::CloseInheritedDescriptors() {
  socket_.reset();
  pidfd_.reset();
  region_->CloseDescriptor();
}

void HostChannel::Interrupt() {
  liveness_.Interrupt();
  RingDoorbell(&region_->header()->response.data_bell);
  RingDoorbell(&region_->header()->request.space_bell);
}

CrashHints ReadCrashHints(const Region& region) {
  const RegionHeader* h = region.header();
  // Stored plus one (0: none); the backend may have written anything, so
  // the subtraction is done where it cannot overflow.
  auto minus_one = [](auto stored) {
    return static_cast<int32_t>(static_cast<uint32_t>(stored) - 1u);
  };
  return {h->backend_in_call.load(std::memory_order_acquire),
          h->backend_fault_signal.load(std::memory_order_acquire),
          minus_one(h->backend_violation_syscall.load(std::memory_order_acquire)),
          h->backend_call_token.load(std::memory_order_acquire),
          minus_one(h->backend_exit_code.load(std::memory_order_acquire)),
          h->backend_stray_fault_signal.load(std::memory_order_acquire),
          h->backend_address_space_full.load(std::memory_order_acquire) != 0,
          h->backend_close_hung.load(std::memory_order_acquire) != 0};
}

void HostChannel::WatchProcess(UniqueFd pidfd) {
  pidfd_ = std::move(pidfd);
  liveness_.set_pidfd(pidfd_.get());
}

absl::Status HostChannel::Fail(absl::Status status) {
  if (absl::IsDataLoss(status) && broken_.ok()) broken_ = status;
  return status;
}

absl::Status HostChannel::Send(const Request& request, Deadline deadline) {
  if (!broken_.ok()) return broken_;
  absl::StatusOr<kj::Array<capnp::word>> words = EncodeRequest(request);
  if (!words.ok()) return words.status();
  return Fail(WriteWaiting(requests_, AsBytes(*words), deadline, liveness_, &send_wait_,
                           absl::StrCat("room in the request ring for a ", KindName(request),
                                        " request")));
}

absl::Status HostChannel::SendDescriptors(uint64_t token, std::span<const int> fds, Deadline deadline) {
  if (!broken_.ok()) return broken_;
  if (liveness_.interrupted()) return absl::CancelledError("channel interrupted");
  uint8_t bytes[sizeof(token)];
  std::memcpy(bytes, &token, sizeof(token));
  return SendWithDescriptors(socket_.get(), bytes, fds, deadline);
}

absl::StatusOr<Incoming> HostChannel::Receive(Deadline deadline) {
  if (!broken_.ok()) return broken_;
  absl::Status ready = WaitFor(&region_->header()->response.data_bell,
                               [&] { return responses_.HasData(); }, deadline, liveness_,
                               &receive_wait_, "a response from the backend");
  // What the backend published before it died is read first, also once the
  // channel is interrupted for its death: a frame it finished before it
  // crashed is delivered, and the request's poison is the frame after. An
  // interrupt of a live one ends reading at once.
  if (!ready.ok() && !(responses_.HasData() && liveness_.Gone())) return Fail(ready);
  // A backend that always has a response ready never makes us sleep, so the
  // socket is also checked here, at a bounded rate.
  if (const auto now = Clock::now(); now - last_socket_check_ >= kLivenessSlice) {
    last_socket_check_ = now;
    if (absl::Status s = liveness_.Check(); absl::IsDataLoss(s)) return Fail(s);
  }
  absl::StatusOr<kj::Array<capnp::word>> words = responses_.Read();
  if (!words.ok()) return Fail(words.status());
  absl::StatusOr<Response> response = DecodeResponse(*words);
  if (!response.ok()) return Fail(response.status());
  Incoming in{*std::move(response), {}};
  if (auto* batch = std::get_if<FrameBatch>(&in.response.body)) {
    in.frames.reserve(batch->frames.size());
    for (const FrameRef& ref : batch->frames) {
      // On failure the leases already taken release their slots as `in` dies.
      if (absl::Status s = arena_->Claim(ref); !s.ok()) return Fail(s);
      in.frames.emplace_back(arena_, ref);
    }
  }
  return in;
}

// ---- BackendChannel ----------------------------------------------------------

BackendChannel::~BackendChannel() {
  // The hang-up callback rings this region's doorbells: stop it first.
  hangup_watch_ = HangupWatcher::Watch();
  region_.header()->backend_detached.store(1, std::memory_order_release);
}

BackendChannel::BackendChannel(Region region, UniqueFd socket)
    : region_(std::move(region)),
      socket_(std::move(socket)),
      liveness_(socket_.get(), -1, /*host_side=*/false),
      requests_(&region_.header()->request, region_.request_ring(), region_.geometry().request_ring_bytes),
      responses_(&region_.header()->response, region_.response_ring(),
                 region_.geometry().response_ring_bytes),
      arena_(&region_) {}

absl::StatusOr<std::unique_ptr<BackendChannel>> BackendChannel::Attach(PeerEnds ends) {
  absl::StatusOr<Region> region = Region::Map(std::move(ends.memfd));
  if (!region.ok()) return region.status();
  return std::unique_ptr<BackendChannel>(new BackendChannel(*std::move(region), std::move(ends.socket)));
}

void BackendChannel::WatchHangups(HangupWatcher* watcher) {
  liveness_.set_hangups_watched();
  hangup_watch_ = watcher->Add(socket_.get(), [this] {
    liveness_.HungUp();
    // Every bell this end waits on: a request, ring space, a free slot.
    RegionHeader* h = region_.header();
    RingDoorbell(&h->request.data_bell);
    RingDoorbell(&h->response.space_bell);
    RingDoorbell(&h->slot_bell);
  });
}

absl::StatusOr<Request> BackendChannel::Receive(Deadline deadline) {
  absl::Status ready = WaitFor(&region_.header()->request.data_bell, [&] { return requests_.HasData(); },
                               deadline, liveness_, &receive_wait_, "a request from the host");
  if (!ready.ok()) return ready;
  absl::StatusOr<kj::Array<capnp::word>> words = requests_.Read();
  if (!words.ok()) return words.status();
  return DecodeRequest(*words);
}

absl::Status BackendChannel::Send(const Response& response, Deadline deadline, bool wake_host) {
  absl::StatusOr<kj::Array<capnp::word>> words = EncodeResponse(response);
  if (!words.ok()) return words.status();
  const std::span<const uint8_t> bytes = AsBytes(*words);
  // The host frees ring space only when it reads: wake it before waiting.
  if (unwoken_ > 0 && !responses_.HasRoomFor(bytes.size())) WakeHost();
  absl::Status written =
      WriteWaiting(responses_, bytes, deadline, liveness_, &send_wait_, "room in the response ring", wake_host);
  if (written.ok()) unwoken_ = wake_host ? 0 : unwoken_ + 1;
  return written;
}

absl::StatusOr<BackendArena::Slot> BackendChannel::AcquireSlot(Deadline deadline) {
  if (unwoken_ > 0 && !arena_.HasFreeSlot()) WakeHost();
  return arena_.Acquire(deadline, liveness_, &arena_wait_);
}

void BackendChannel::WakeHost() {
  if (unwoken_ == 0) return;
  WakeDoorbell(&responses_.control()->data_bell);
  unwoken_ = 0;
}

absl::StatusOr<std::vector<UniqueFd>> BackendChannel::ReceiveDescriptors(uint64_t token, size_t count,
                                                                           Deadline deadline) {
  absl::StatusOr<ReceivedMessage> msg = ReceiveWithDescriptors(socket_.get(), sizeof(token), count, deadline);
  if (!msg.ok()) return msg.status();
  uint64_t got = 0;
  if (msg->bytes.size() != sizeof(got) || msg->fds.size() != count) {
    return absl::DataLossError(absl::StrCat("descriptor message is not one token and ", count,
                                            " descriptors"));
  }
  std::memcpy(&got, msg->bytes.data(), sizeof(got));
  if (got != token) {
    return absl::DataLossError(absl::StrCat("descriptor arrived for token ", got, ", expected ", token));
  }
  return std::move(msg->fds);
}

}  // namespace codecvisor::ipc
