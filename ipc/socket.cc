#include "ipc/socket.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace codecvisor::ipc {
namespace {

constexpr size_t kMaxFdsPerMessage = 8;

int MillisUntil(Deadline deadline) {
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 1 << 30));
}

// Reads and discards one message, closing every descriptor attached to it.
void DrainOne(int sock) {
  char data[256];
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)];
  iovec iov{data, sizeof(data)};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  if (RetryEintr([&] { return recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC); }) < 0) return;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < n; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      ::close(fd);
    }
  }
}

}  // namespace

absl::StatusOr<std::pair<UniqueFd, UniqueFd>> MakeSocketPair() {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) {
    return ErrnoStatus("socketpair(AF_UNIX, SOCK_SEQPACKET)");
  }
  return std::make_pair(UniqueFd(fds[0]), UniqueFd(fds[1]));
}

absl::Status SendWithDescriptors(int sock, std::span<const uint8_t> bytes, std::span<const int> fds,
                                 Deadline deadline) {
  if (fds.size() > kMaxFdsPerMessage) {
    return absl::InvalidArgumentError("too many descriptors for one message");
  }
  // A zero-length SEQPACKET message is legal but looks like EOF to recv().
  uint8_t filler = 0;
  iovec iov{bytes.empty() ? &filler : const_cast<uint8_t*>(bytes.data()),
            bytes.empty() ? 1 : bytes.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (!fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  for (;;) {
    if (RetryEintr([&] { return sendmsg(sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT); }) >= 0) {
      return absl::OkStatus();
    }
    if (errno != EAGAIN) return ErrnoStatus("sendmsg(SCM_RIGHTS)");
    pollfd p{sock, POLLOUT, 0};
    const int ms = MillisUntil(deadline);
    if (ms == 0) {
      return absl::DeadlineExceededError("timed out sending descriptors: the peer is not reading its socket");
    }
    if (RetryEintr([&] { return poll(&p, 1, ms); }) < 0) return ErrnoStatus("poll(channel socket)");
  }
}

absl::StatusOr<ReceivedMessage> ReceiveWithDescriptors(int sock, size_t max_bytes,
                                                       size_t max_fds, Deadline deadline) {
  max_fds = std::min(max_fds, kMaxFdsPerMessage);
  pollfd p{sock, POLLIN, 0};
  for (;;) {
    int r = RetryEintr([&] { return poll(&p, 1, MillisUntil(deadline)); });
    if (r < 0) return ErrnoStatus("poll(channel socket)");
    if (r > 0) break;
    if (Clock::now() >= deadline) {
      return absl::DeadlineExceededError("timed out waiting for a descriptor message");
    }
  }
  ReceivedMessage out;
  out.bytes.resize(std::max<size_t>(max_bytes, 1));
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)];
  iovec iov{out.bytes.data(), out.bytes.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n = RetryEintr([&] { return recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC); });
  if (n < 0) return ErrnoStatus("recvmsg(channel socket)");
  if (n == 0) return absl::UnavailableError("peer closed the channel socket");
  // Take ownership of every descriptor first, so that any error below closes them.
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      out.fds.emplace_back(fd);
    }
  }
  if ((msg.msg_flags & MSG_CTRUNC) && !(msg.msg_flags & MSG_TRUNC) && out.fds.size() < max_fds) {
    // Fewer descriptors than room was made for: the kernel dropped those
    // this process had no slot for. Not checked again now: a descriptor
    // another thread closed meanwhile (a session ending) would make the
    // shortage look like a broken channel.
    return absl::ResourceExhaustedError(
        absl::StrCat("descriptors sent with a message were dropped: this process had no descriptor free (",
                     std::strerror(EMFILE), ")"));
  }
  if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
    return absl::DataLossError("descriptor message truncated (too long or too many descriptors)");
  }
  if (out.fds.size() > max_fds) {
    return absl::DataLossError(absl::StrCat("descriptor message carries ", out.fds.size(),
                                            " descriptors, at most ", max_fds, " expected"));
  }
  out.bytes.resize(static_cast<size_t>(n));
  return out;
}

absl::StatusOr<UniqueFd> OpenPidFd(int pid) {
  int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return ErrnoStatus(absl::StrCat("pidfd_open(", pid, ")"));
  return UniqueFd(fd);
}

bool PeerLiveness::Gone() const {
  if (hung_up_.load(std::memory_order_acquire)) return true;
  pollfd p[2] = {{socket_, static_cast<short>(POLLRDHUP), 0}, {pidfd_, POLLIN, 0}};
  if (RetryEintr([&] { return poll(p, pidfd_ >= 0 ? 2 : 1, 0); }) < 0) return false;
  return (p[1].revents & POLLIN) != 0 || (p[0].revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL)) != 0;
}

absl::Status PeerLiveness::Check() const {
  if (hung_up_.load(std::memory_order_acquire)) return absl::UnavailableError("peer hung up the channel socket");
  if (interrupted()) return absl::CancelledError("channel wait interrupted");
  pollfd p[2] = {{socket_, static_cast<short>(POLLIN | POLLRDHUP), 0},
                 {pidfd_, POLLIN, 0}};
  int n = RetryEintr([&] { return poll(p, pidfd_ >= 0 ? 2 : 1, 0); });
  if (n < 0) return ErrnoStatus("poll(peer liveness)");
  if (p[1].revents & POLLIN) {
    return absl::UnavailableError("peer process exited");
  }
  if (p[0].revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL)) {
    return absl::UnavailableError("peer hung up the channel socket");
  }
  if (host_side_ && (p[0].revents & POLLIN)) {
    DrainOne(socket_);
    return absl::DataLossError(
        "peer wrote to the channel socket; the host accepts no messages or descriptors there");
  }
  return absl::OkStatus();
}

}  // namespace codecvisor::ipc
