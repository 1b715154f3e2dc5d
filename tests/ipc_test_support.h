// File: tests/ipc_test_support.h
//
// Process plumbing shared by the cross-process channel suites (the
// tests/ipc_*_test.cc files): each test creates a real HostChannel, fork()s a
// real backend process that attaches a BackendChannel to the region and
// socket it inherited, and drives the host side from the test process,
// watching the child with a pidfd as the supervisor does.
//
// Rules every test keeps:
//  * fork() happens while the test process is single-threaded; a test that
//    uses threads starts them after its forks and joins them before it ends.
//  * The child closes every inherited descriptor except its two PeerEnds (as
//    a spawner's exec would), uses only its BackendChannel, reports through
//    messages and its exit code, and leaves with _exit(). It never runs gtest
//    assertions: it uses the CHILD_* macros below.
//  * Every child is owned by a ChildProcess guard that SIGKILLs and reaps it
//    when the test ends, whatever assertion failed.
//  * Deadlines are either generous ones that must not be reached (5 s) or
//    short ones (100-200 ms) that must be; nothing passes by luck of timing.
//
// Nothing here is thread-safe; the test's main thread owns every object.

#ifndef CODECVISOR_TESTS_IPC_TEST_SUPPORT_H_
#define CODECVISOR_TESTS_IPC_TEST_SUPPORT_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "ipc/channel.h"
#include "ipc/messages.h"
#include "ipc/unique_fd.h"

namespace codecvisor::ipc::test {

// A deadline that must never be reached in a passing test.
inline constexpr auto kGenerous = std::chrono::seconds(5);
// What "promptly" means: far inside kGenerous, far above a 10 ms liveness slice.
inline constexpr auto kPrompt = std::chrono::seconds(2);

inline Deadline In(Clock::duration d) { return Clock::now() + d; }

constexpr double ToMillis(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }
inline constexpr double kPromptMs = ToMillis(kPrompt);

inline double MillisSince(Clock::time_point t) { return ToMillis(Clock::now() - t); }

// ---- assertions in the forked backend ---------------------------------------------

// Exit codes of a child that failed a CHILD_* check, or could not attach.
inline constexpr int kChildCheckFailed = 90;
inline constexpr int kChildAttachFailed = 91;

// Prints "[backend child PID] file:line: what" to stderr and _exits with
// kChildCheckFailed. For the child only: never returns, runs no destructors.
[[noreturn]] void ChildDie(const char* file, int line, const std::string& what);

// Assertions for code running in the forked backend: print, then _exit.
#define CHILD_CHECK(cond)                                              \
  do {                                                                 \
    if (!(cond)) ChildDie(__FILE__, __LINE__, "check failed: " #cond); \
  } while (0)

#define CHILD_CHECK_OK(expr)                                                             \
  do {                                                                                   \
    const absl::Status child_status_ = (expr);                                           \
    if (!child_status_.ok()) {                                                           \
      ChildDie(__FILE__, __LINE__, absl::StrCat(#expr, ": ", child_status_.ToString())); \
    }                                                                                    \
  } while (0)

// The value of a StatusOr, or ChildDie with its status (use CHILD_VALUE).
template <typename T>
T ChildValue(absl::StatusOr<T> v, const char* what, const char* file, int line) {
  if (!v.ok()) ChildDie(file, line, absl::StrCat(what, ": ", v.status().ToString()));
  return *std::move(v);
}
#define CHILD_VALUE(expr) ChildValue((expr), #expr, __FILE__, __LINE__)

// ---- child processes --------------------------------------------------------------

// "exited with code N", "killed by signal N" or the raw wait status.
std::string DescribeWaitStatus(int status);

// Owns a child process: SIGKILLs and reaps it on destruction unless it was
// already reaped by Wait().
class ChildProcess {
 public:
  ChildProcess() = default;
  // Takes `pid` (a child of this process) and opens a pidfd for it if it can.
  explicit ChildProcess(pid_t pid);
  ChildProcess(ChildProcess&& other) noexcept
      : pid_(std::exchange(other.pid_, -1)), pidfd_(std::move(other.pidfd_)) {}
  ChildProcess& operator=(ChildProcess&& other) noexcept {
    if (this != &other) {
      Kill();
      pid_ = std::exchange(other.pid_, -1);
      pidfd_ = std::move(other.pidfd_);
    }
    return *this;
  }
  ~ChildProcess() { Kill(); }

  pid_t pid() const { return pid_; }

  // Waits up to `timeout` for the child to exit and reaps it. Returns its
  // wait status, or nullopt if it is still running.
  std::optional<int> Wait(Clock::duration timeout);

  // SIGKILLs and reaps the child; does nothing if there is none.
  void Kill();

 private:
  pid_t pid_ = -1;
  UniqueFd pidfd_;
};

// In the child: closes every descriptor inherited from the test process
// except stdio and `keep` (what an exec-based spawner leaves open).
void CloseInheritedDescriptors(std::initializer_list<int> keep);

// What the backend process runs; its result is the child's exit code.
using BackendBody = std::function<int(BackendChannel&)>;

// The host's side of one channel with a live backend process.
struct Peer {
  std::unique_ptr<HostChannel> host;
  ChildProcess child;  // declared last: killed and reaped first
};

// Creates a channel with `geometry`, forks a backend that attaches to it and
// runs `body`, and makes the host watch the child's pidfd. The child exits
// with kChildAttachFailed if it cannot attach.
absl::StatusOr<Peer> StartPeer(const Geometry& geometry, const BackendBody& body);

// Host side: the child must exit with `code` within kGenerous (gtest
// assertions; a fatal failure if it is still running).
void ExpectExit(ChildProcess& child, int code);

// Backend side: consumes requests until the host hangs up. 0 if the wait
// ended with kUnavailable (the host's end is gone), 92 otherwise.
int AwaitHostHangUp(BackendChannel& b);

// Backend side: the next request, or ChildDie.
Request MustReceive(BackendChannel& b);

// ---- writing the response ring by hand (hostile backends) ------------------------

RingControl& ResponseControl(BackendChannel& b);

// Writes `n` bytes at ring index `at` of the response ring, wrapping like the
// real writer, without publishing anything.
void PokeResponseRing(BackendChannel& b, uint64_t at, const void* data, uint64_t n);

// Writes a record header (length word, check word) at ring index `at`.
void PokeRecordHeader(BackendChannel& b, uint64_t at, uint32_t len, uint32_t check);

// Stores `tail` as the response ring's producer index and rings its doorbell.
void PublishResponseTail(BackendChannel& b, uint64_t tail);

// The bytes of an encoded message.
std::span<const uint8_t> WordBytes(const kj::Array<capnp::word>& w);

// ---- resource counts in this process ---------------------------------------------

// Open descriptors of this process; -1 if /proc/self/fd cannot be read.
int CountOpenFds();

// Mappings of channel regions ("codecvisor-channel" memfds) in this process.
int CountChannelMappings();

}  // namespace codecvisor::ipc::test

#endif  // CODECVISOR_TESTS_IPC_TEST_SUPPORT_H_
