// The suite's checks of what a backend's sessions leave behind once closed:
// memory (SessionLeak) and threads (SessionThreads), see suite.h.

#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "tools/common/process_census.h"
#include "tools/conformance/suite.h"

namespace codecvisor::conformance::internal {

using ::codecvisor::internal::BackendStatus;
using ::codecvisor::internal::Frame;
using ::codecvisor::internal::VideoDecoder;

namespace {

// A number of /proc/PID/status (a trailing " kB" dropped), or -1.
int64_t StatusNumber(pid_t pid, absl::string_view key) {
  int64_t value = 0;
  const std::string text = StatusField(tools::ReadWholeFile(absl::StrCat("/proc/", pid, "/status")), key);
  return absl::SimpleAtoi(absl::StripSuffix(text, " kB"), &value) ? value : -1;
}

// A process's resident memory in bytes (VmRSS), or -1.
int64_t ResidentBytes(pid_t pid) {
  const int64_t kib = StatusNumber(pid, "VmRSS");
  return kib < 0 ? -1 : kib << 10;
}

}  // namespace

absl::Status Suite::SessionLeak(const Sample& sample, std::string* detail) {
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
  // The backend is built with AddressSanitizer too, whose quarantine holds
  // freed memory (up to 256 MiB): its growth says nothing of leaks.
  *detail = "not measured: AddressSanitizer holds freed memory back";
  nothing_checked_ = true;
  return absl::OkStatus();
#endif
#endif
  // Each session opened, one frame decoded, closed.
  auto sessions = [&](int n) -> absl::Status {
    for (int i = 0; i < n; ++i) {
      absl::StatusOr<std::unique_ptr<VideoDecoder>> decoder = Open(sample.path);
      if (!decoder.ok()) return decoder.status();
      if (absl::StatusOr<Frame> frame = (*decoder)->GetFrameAt(sample.num_frames() / 2); !frame.ok()) {
        return frame.status();
      }
    }
    return absl::OkStatus();
  };
  // The first ones warm the allocators up: what FFmpeg's and the runner's
  // allocators keep for reuse after a close is not a leak.
  if (absl::Status s = sessions(kLeakWarmup); !s.ok()) return s;
  absl::StatusOr<BackendStatus> before = Status();
  if (!before.ok()) return before.status();
  const int64_t start = ResidentBytes(before->pid);
  if (absl::Status s = sessions(kLeakSessions); !s.ok()) return s;
  absl::StatusOr<BackendStatus> after = Status();
  if (!after.ok()) return after.status();
  if (after->pid != before->pid || start < 0) {
    return absl::InternalError(absl::StrCat("the backend was restarted while ", kLeakSessions,
                                            " sessions were opened and closed one after another"));
  }
  const int64_t grown = ResidentBytes(after->pid) - start;
  const int64_t each = grown / kLeakSessions;
  if (each > kLeakPerSession) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the backend's resident memory grew by %d MiB over %d sessions opened, decoded from and closed one after "
        "another (about %.1f MiB each): close_session must free what open_session and decode_frame allocated",
        grown >> 20, kLeakSessions, static_cast<double>(each) / (1 << 20)));
  }
  *detail = absl::StrCat(kLeakSessions, " sessions opened, decoded from and closed: the backend's resident memory ",
                         grown >= 0 ? "grew by " : "shrank by ", std::abs(grown) >> 10, " KiB");
  return absl::OkStatus();
}

absl::Status Suite::SessionThreads(const Sample& sample, std::string* detail) {
  // Counted in its process: one must be running (an earlier check may
  // have left it quarantined or restarting).
  absl::StatusOr<BackendStatus> before = Running("count the threads of");
  if (!before.ok()) return before.status();
  // The count once the earlier checks' closes have ended their threads: the
  // same for 200 ms on end (within the timeout).
  const auto settle_by = std::chrono::steady_clock::now() + options_.timeout;
  int64_t threads_before = StatusNumber(before->pid, "Threads");
  for (auto same_since = std::chrono::steady_clock::now();
       std::chrono::steady_clock::now() < std::min(settle_by, same_since + std::chrono::milliseconds(200));) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const int64_t now = StatusNumber(before->pid, "Threads");
    if (now != threads_before) same_since = std::chrono::steady_clock::now();
    threads_before = now;
  }
  if (threads_before < 0) return absl::InternalError(absl::StrCat("cannot read /proc/", before->pid, "/status"));
  {
    std::vector<std::unique_ptr<VideoDecoder>> decoders;
    for (int i = 0; i < kThreadSessions; ++i) {
      absl::StatusOr<std::unique_ptr<VideoDecoder>> decoder = Open(sample.path);
      if (!decoder.ok()) return decoder.status();
      if (absl::StatusOr<Frame> frame = (*decoder)->GetFrameAt(i % sample.num_frames()); !frame.ok()) {
        return frame.status();
      }
      decoders.push_back(*std::move(decoder));
    }
  }
  // The host does not wait for a close: the backend's session threads end
  // after the decoders are gone. A helper pool may keep a thread or two a
  // while; one thread or more per session closed is what a close that
  // never returns leaves.
  const auto closed = std::chrono::steady_clock::now();
  const auto wait = std::max<std::chrono::milliseconds>(options_.timeout, std::chrono::seconds(10));
  int64_t threads = StatusNumber(before->pid, "Threads");
  while (threads >= threads_before + kThreadSessions && std::chrono::steady_clock::now() < closed + wait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    threads = StatusNumber(before->pid, "Threads");
  }
  absl::StatusOr<BackendStatus> after = Status();
  if (!after.ok()) return after.status();
  if (after->pid != before->pid) {
    return absl::InternalError(absl::StrCat("the backend was restarted while ", kThreadSessions,
                                            " sessions were opened, decoded from and closed"));
  }
  if (threads < 0) return absl::InternalError(absl::StrCat("cannot read /proc/", before->pid, "/status"));
  if (threads >= threads_before + kThreadSessions) {
    return absl::FailedPreconditionError(
        absl::StrCat("the backend runs ", threads - threads_before, " threads more than before ", kThreadSessions,
                     " sessions were opened, decoded from and closed, ", wait.count(),
                     " ms after the last close: close_session must return, and end the threads its session started"));
  }
  *detail = absl::StrCat(kThreadSessions, " sessions opened at once, decoded from and closed: the backend is back to ",
                         threads, " threads (", threads_before, " before)");
  return absl::OkStatus();
}

}  // namespace codecvisor::conformance::internal
