// File: tests/ipc_test_support.cc
//
// Child-process guard, StartPeer and the ring/descriptor helpers declared in
// ipc_test_support.h.

#include "tests/ipc_test_support.h"

#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "ipc/doorbell.h"
#include "ipc/socket.h"

namespace codecvisor::ipc::test {

[[noreturn]] void ChildDie(const char* file, int line, const std::string& what) {
  std::fprintf(stderr, "[backend child %d] %s:%d: %s\n", static_cast<int>(getpid()), file, line,
               what.c_str());
  std::fflush(stderr);
  _exit(kChildCheckFailed);
}

std::string DescribeWaitStatus(int status) {
  if (WIFEXITED(status)) return absl::StrCat("exited with code ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return absl::StrCat("killed by signal ", WTERMSIG(status));
  return absl::StrCat("wait status ", status);
}

ChildProcess::ChildProcess(pid_t pid) : pid_(pid) {
  if (auto fd = OpenPidFd(pid); fd.ok()) pidfd_ = *std::move(fd);
}

std::optional<int> ChildProcess::Wait(Clock::duration timeout) {
  if (pid_ <= 0) return std::nullopt;
  const Deadline deadline = Clock::now() + timeout;
  for (;;) {
    int status = 0;
    pid_t r = RetryEintr([&] { return waitpid(pid_, &status, WNOHANG); });
    if (r == pid_) {
      pid_ = -1;
      pidfd_.reset();
      return status;
    }
    if (r < 0) return std::nullopt;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return std::nullopt;
    if (pidfd_.valid()) {
      pollfd p{pidfd_.get(), POLLIN, 0};
      RetryEintr([&] { return poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 100))); });
    } else {
      usleep(1000);
    }
  }
}

void ChildProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int status = 0;
  RetryEintr([&] { return waitpid(pid_, &status, 0); });
  pid_ = -1;
  pidfd_.reset();
}

void CloseInheritedDescriptors(std::initializer_list<int> keep) {
  std::vector<int> open;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(dir)) {
      if (e->d_name[0] != '.') open.push_back(std::atoi(e->d_name));
    }
    closedir(dir);
  }
  for (int fd : open) {
    if (fd > 2 && std::find(keep.begin(), keep.end(), fd) == keep.end()) close(fd);
  }
}

absl::StatusOr<Peer> StartPeer(const Geometry& geometry, const BackendBody& body) {
  auto created = HostChannel::Create(geometry);
  if (!created.ok()) return created.status();
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return ErrnoStatus("fork");
  if (pid == 0) {
    PeerEnds& ends = created->second;
    CloseInheritedDescriptors({ends.memfd.get(), ends.socket.get()});
    auto backend = BackendChannel::Attach(std::move(ends));
    if (!backend.ok()) {
      std::fprintf(stderr, "[backend child] Attach: %s\n", backend.status().ToString().c_str());
      _exit(kChildAttachFailed);
    }
    _exit(body(**backend));
  }
  Peer peer;
  peer.child = ChildProcess(pid);
  created->second = PeerEnds{};  // the host keeps none of the backend's ends
  auto pidfd = OpenPidFd(pid);
  if (!pidfd.ok()) return pidfd.status();
  created->first->WatchProcess(*std::move(pidfd));
  peer.host = std::move(created->first);
  return peer;
}

void ExpectExit(ChildProcess& child, int code) {
  std::optional<int> status = child.Wait(kGenerous);
  ASSERT_TRUE(status.has_value()) << "backend child did not exit within 5 s";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == code)
      << "backend child " << DescribeWaitStatus(*status) << ", expected exit code " << code;
}

int AwaitHostHangUp(BackendChannel& b) {
  for (;;) {
    absl::StatusOr<Request> r = b.Receive(In(kGenerous));
    if (r.ok()) continue;
    if (absl::IsUnavailable(r.status())) return 0;
    std::fprintf(stderr, "[backend child] waiting for hang-up: %s\n", r.status().ToString().c_str());
    return 92;
  }
}

Request MustReceive(BackendChannel& b) { return CHILD_VALUE(b.Receive(In(kGenerous))); }

RingControl& ResponseControl(BackendChannel& b) { return b.region_for_test().header()->response; }

void PokeResponseRing(BackendChannel& b, uint64_t at, const void* data, uint64_t n) {
  uint8_t* ring = b.region_for_test().response_ring();
  const uint64_t cap = b.geometry().response_ring_bytes;
  const auto* from = static_cast<const uint8_t*>(data);
  for (uint64_t i = 0; i < n; ++i) ring[(at + i) & (cap - 1)] = from[i];
}

void PokeRecordHeader(BackendChannel& b, uint64_t at, uint32_t len, uint32_t check) {
  const uint32_t header[2] = {len, check};
  PokeResponseRing(b, at, header, sizeof(header));
}

void PublishResponseTail(BackendChannel& b, uint64_t tail) {
  ResponseControl(b).tail.store(tail, std::memory_order_release);
  RingDoorbell(&ResponseControl(b).data_bell);
}

std::span<const uint8_t> WordBytes(const kj::Array<capnp::word>& w) {
  return {reinterpret_cast<const uint8_t*>(w.begin()), w.size() * sizeof(capnp::word)};
}

int CountOpenFds() {
  int n = 0;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  while (dirent* e = readdir(dir)) n += e->d_name[0] != '.';
  closedir(dir);
  return n - 1;  // the directory's own descriptor
}

int CountChannelMappings() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  int n = 0;
  while (std::getline(maps, line)) n += absl::StrContains(line, "codecvisor-channel");
  return n;
}

}  // namespace codecvisor::ipc::test
