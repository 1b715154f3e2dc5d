// The suite's checks of the backend as a process: the handshake and its
// capabilities, the sandbox, bad input, concurrent sessions, recovery from a
// kill mid-request, what it writes to stdout/stderr at the quiet log level,
// and a clean shutdown (see suite.h); what sessions leave behind is in
// session_checks.cc.

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "backends/sdk/codecvisor_backend.h"
#include "core/environment_warnings.h"
#include "ipc/messages.h"
#include "tools/common/process_census.h"
#include "tools/conformance/suite.h"

namespace codecvisor::conformance::internal {

using ::codecvisor::internal::BackendStatus;
using ::codecvisor::internal::VideoDecoder;
using ::codecvisor::internal::Frame;
using ::codecvisor::internal::StreamMetadata;
using ::codecvisor::internal::SeekMode;
using ::codecvisor::internal::OutputFormat;
namespace {

// A bad input's error names the file and says why: a message from the
// backend, not the runner's stand-in for none.
absl::Status SaysWhy(const absl::Status& error, const std::string& path) {
  const std::string name = path.substr(path.rfind('/') + 1);
  if (!absl::StrContains(error.message(), name)) {
    return absl::InternalError(absl::StrCat("the error for ", path, " does not name the file: ", error.message()));
  }
  if (absl::StrContains(error.message(), ipc::kVendorErrorWithoutMessage)) {
    return absl::InternalError(absl::StrCat("the error for ", path, " carries no message from the backend (its ",
                                            "cv_error.message was empty): ", error.message()));
  }
  return absl::OkStatus();
}

absl::Status WriteBytes(const std::string& path, absl::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

std::string Link(const std::string& path) {
  char buffer[256];
  const ssize_t n = readlink(path.c_str(), buffer, sizeof(buffer));
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : std::string();
}

}  // namespace

std::string StatusField(const std::string& status, absl::string_view key) {
  for (absl::string_view line : absl::StrSplit(status, '\n')) {
    if (absl::ConsumePrefix(&line, key) && absl::ConsumePrefix(&line, ":")) {
      return std::string(absl::StripAsciiWhitespace(line));
    }
  }
  return "";
}

absl::Status Suite::Handshake(std::string* detail) {
  const auto start = Clock::now();
  if (absl::Status s = host_->StartBackend(report_.backend, options_.timeout); !s.ok()) return s;
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  absl::StatusOr<BackendStatus> status = Status();
  if (!status.ok()) return status.status();
  if (status->state != "ready" || status->pid <= 0) {
    return absl::InternalError(absl::StrCat("started, but state is ", status->state, " (pid ", status->pid, ")"));
  }
  if (!status->hello.has_value()) return absl::InternalError("started, but no handshake is recorded");
  const ipc::HelloReply& hello = *status->hello;
  report_.backend_version = hello.backend_version;
  if (hello.backend_name != report_.backend) {
    return absl::InternalError(absl::StrCat("the library calls itself '", hello.backend_name, "'"));
  }
  for (const std::string& device : manifest_.devices) {
    if (std::find(hello.devices.begin(), hello.devices.end(), device) == hello.devices.end()) {
      return absl::InternalError(absl::StrCat("the handshake does not list device '", device, "'"));
    }
  }
  const ipc::Capabilities& caps = hello.capabilities;
  auto has_mode = [&](SeekMode m) { return std::find(caps.seek_modes.begin(), caps.seek_modes.end(), m) != caps.seek_modes.end(); };
  auto has_format = [&](OutputFormat f) {
    return std::find(caps.output_formats.begin(), caps.output_formats.end(), f) != caps.output_formats.end();
  };
  if (!has_mode(SeekMode::kExact) || !has_mode(SeekMode::kApproximate)) {
    return absl::InternalError("capabilities: both seek modes (exact, approximate) are required");
  }
  if (!has_format(OutputFormat::kRgb24) || !has_format(OutputFormat::kRgb24Planar)) {
    return absl::InternalError("capabilities: RGB24 and planar RGB24 output are required");
  }
  exact_ = caps.exact_cpu_output;
  min_psnr_db_ = caps.psnr_threshold_db;
  ready_ = true;
  if (!exact_ && !(min_psnr_db_ >= options_.min_psnr_floor_db)) {
    const double declared = min_psnr_db_;
    // The frame checks still run, held to the floor.
    min_psnr_db_ = options_.min_psnr_floor_db;
    return absl::InternalError(absl::StrFormat(
        "capabilities: psnr_threshold_db is %.2f dB (exact_cpu_output 0), below the floor of %.2f dB: declare "
        "the PSNR your RGB24 output keeps against the reference, at least the floor (or run conformance with "
        "--min-psnr-floor DB to accept a lower one); the frame checks below hold frames to %.2f dB",
        declared, options_.min_psnr_floor_db, options_.min_psnr_floor_db));
  }
  *detail = absl::StrCat("pid ", status->pid, ", ready in ", absl::StrFormat("%.1f", ms), " ms, version '",
                         hello.backend_version, "', ",
                         exact_ ? std::string("bit-exact output") : absl::StrFormat("PSNR >= %.1f dB", min_psnr_db_),
                         caps.max_sessions == 0 ? std::string(", no session limit")
                                                : absl::StrCat(", up to ", caps.max_sessions, " sessions"));
  return absl::OkStatus();
}

absl::Status Suite::SandboxEngaged(std::string* detail) {
  absl::StatusOr<BackendStatus> status = Status();
  if (!status.ok()) return status.status();
  const std::string proc = absl::StrCat("/proc/", status->pid);
  const std::string text = tools::ReadWholeFile(proc + "/status");
  if (text.empty()) return absl::InternalError(absl::StrCat("cannot read ", proc, "/status"));
  if (StatusField(text, "Seccomp") != "2") {
    return absl::InternalError(absl::StrCat("seccomp filter not engaged (Seccomp: ", StatusField(text, "Seccomp"), ")"));
  }
  if (StatusField(text, "NoNewPrivs") != "1") return absl::InternalError("no_new_privs not set");
  for (const char* ns : {"user", "pid", "net", "ipc"}) {
    const std::string theirs = Link(absl::StrCat(proc, "/ns/", ns));
    if (theirs.empty() || theirs == Link(absl::StrCat("/proc/self/ns/", ns))) {
      return absl::InternalError(absl::StrCat("the child shares the host's ", ns, " namespace"));
    }
  }
  const ipc::HelloReply& hello = *status->hello;
  if (!hello.sandbox_seccomp) return absl::InternalError("the runner reports no seccomp filter");
  if (hello.sandbox_landlock_abi == 0) return absl::InternalError("the runner reports Landlock not applied");
  *detail = absl::StrCat("seccomp filter, no_new_privs, own user/pid/net/ipc namespaces, Landlock ABI ",
                         hello.sandbox_landlock_abi, "; ", status->sandbox);
  return absl::OkStatus();
}

absl::Status Suite::BadInput(const Sample& sample, std::string* detail) {
  absl::StatusOr<BackendStatus> before = Status();
  if (!before.ok()) return before.status();
  std::vector<std::string> seen;

  // A file that is not a video: the open fails, naming the file.
  const std::string not_video = absl::StrCat(scratch_, "/not_a_video.mkv");
  std::string text;
  for (int i = 0; i < 200; ++i) absl::StrAppend(&text, "this is not a video, line ", i, "\n");
  if (absl::Status s = WriteBytes(not_video, text); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<VideoDecoder>> opened = Open(not_video);
  if (opened.ok()) return absl::InternalError(absl::StrCat(not_video, " (text) opened as a video"));
  if (absl::Status s = SaysWhy(opened.status(), not_video); !s.ok()) return s;
  seen.push_back(absl::StrCat("text file: ", absl::StatusCodeToString(opened.status().code())));

  // A truncated file and one with corrupt packets: frames or clear errors.
  const std::string bytes = tools::ReadWholeFile(sample.path);
  std::string corrupt = bytes;
  uint32_t noise = 0x9e3779b9u;
  for (size_t at = 2048; at + 48 < corrupt.size(); at += 1024) {
    for (size_t i = 0; i < 48; ++i) {
      noise = noise * 1664525u + 1013904223u;
      corrupt[at + i] = static_cast<char>(noise >> 24);
    }
  }
  const size_t dot = sample.path.rfind('.');
  const std::string extension = dot != std::string::npos && sample.path.find('/', dot) == std::string::npos
                                    ? sample.path.substr(dot)
                                    : std::string();
  const std::vector<std::pair<std::string, std::string>> damaged = {
      {"truncated" + extension, bytes.substr(0, bytes.size() / 3)}, {"corrupt" + extension, corrupt}};
  for (const auto& entry : damaged) {
    const std::string path = absl::StrCat(scratch_, "/", entry.first);
    if (absl::Status s = WriteBytes(path, entry.second); !s.ok()) return s;
    absl::StatusOr<std::unique_ptr<VideoDecoder>> damaged_decoder = Open(path);
    absl::Status outcome = damaged_decoder.status();
    int64_t frames = 0;
    if (damaged_decoder.ok()) {
      const StreamMetadata& m = (*damaged_decoder)->metadata();
      const int64_t count = m.num_frames_from_scan > 0 ? m.num_frames_from_scan : sample.num_frames();
      outcome = (*damaged_decoder)->ForEachFrame({ipc::IndexRange{0, count, 1}}, [&](Frame) {
        ++frames;
        return absl::OkStatus();
      });
    }
    if (!outcome.ok()) {
      if (absl::Status s = SaysWhy(outcome, path); !s.ok()) return s;
    }
    seen.push_back(absl::StrCat(entry.first, ": ", frames, " frames, ",
                                outcome.ok() ? std::string("OK") : absl::StatusCodeToString(outcome.code())));
  }

  // Out of range, then the same decoder still works.
  absl::StatusOr<std::unique_ptr<VideoDecoder>> good = Open(sample.path);
  if (!good.ok()) return good.status();
  const double after_end = Seconds(sample, sample.pts.back() + sample.durations.back()) + 5;
  const double before_start = Seconds(sample, sample.pts.front()) - 0.25;
  const std::vector<std::pair<std::string, absl::Status>> out_of_range = {
      {absl::StrCat("frame ", sample.num_frames()), (*good)->GetFrameAt(sample.num_frames()).status()},
      {absl::StrCat("time ", after_end, " s"), (*good)->GetFramePlayedAt(after_end).status()},
      {absl::StrCat("time ", before_start, " s"), (*good)->GetFramePlayedAt(before_start).status()},
  };
  for (const auto& [what, status] : out_of_range) {
    if (status.code() != absl::StatusCode::kOutOfRange) {
      return absl::InternalError(absl::StrCat(what, ": expected OUT_OF_RANGE, got ", status.ToString()));
    }
  }
  absl::StatusOr<Frame> frame = (*good)->GetFrameAt(1);
  if (!frame.ok()) return absl::InternalError(absl::StrCat("after the errors: ", frame.status().message()));
  if (absl::Status s = Compare(*frame, sample, 1, "after errors"); !s.ok()) return s;

  absl::StatusOr<BackendStatus> after = Status();
  if (!after.ok()) return after.status();
  if (after->restarts != before->restarts || after->pid != before->pid) {
    return absl::InternalError(absl::StrCat("the backend died on bad input (", after->last_exit,
                                            "); it must return an error instead"));
  }
  seen.push_back("out of range: OUT_OF_RANGE x3");
  *detail = absl::StrCat(absl::StrJoin(seen, "; "), "; backend still up (pid ", after->pid, ")");
  return absl::OkStatus();
}

absl::Status Suite::Concurrency(std::string* detail) {
  const int sessions = options_.concurrent_sessions;
  std::vector<absl::Status> results(static_cast<size_t>(sessions));
  std::vector<std::thread> threads;
  for (int t = 0; t < sessions; ++t) {
    threads.emplace_back([this, t, &results] {
      const Sample& sample = samples_[static_cast<size_t>(t) % samples_.size()];
      absl::Status& result = results[static_cast<size_t>(t)];
      absl::StatusOr<std::unique_ptr<VideoDecoder>> decoder = Open(sample.path);
      if (!decoder.ok()) {
        result = decoder.status();
        return;
      }
      int64_t next = 0;
      result = (*decoder)->ForEachFrame({ipc::IndexRange{0, sample.num_frames(), 1}}, [&](Frame frame) {
        return Compare(frame, sample, next++, "concurrent sequential decode");
      });
      if (!result.ok()) return;
      const int64_t n = sample.num_frames();
      const std::vector<int64_t> indices = {n - 2, static_cast<int64_t>(t) % 7 * n / 36, 19 * n / 36};
      absl::StatusOr<std::vector<Frame>> frames = (*decoder)->GetFramesAt(indices);
      if (!frames.ok()) {
        result = frames.status();
        return;
      }
      for (size_t i = 0; i < indices.size() && result.ok(); ++i) {
        result = Compare((*frames)[i], sample, indices[i], "concurrent random access");
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < sessions; ++t) {
    if (!results[static_cast<size_t>(t)].ok()) {
      return absl::InternalError(absl::StrCat("session ", t, " of ", sessions, ": ", results[static_cast<size_t>(t)].message()));
    }
  }
  *detail = absl::StrCat(sessions, " sessions at once, each every frame in order then 3 at random, all correct");
  return absl::OkStatus();
}

absl::Status Suite::CrashRecovery(const Sample& sample, std::string* detail) {
  absl::StatusOr<BackendStatus> before = Status();
  if (!before.ok()) return before.status();
  absl::StatusOr<std::unique_ptr<VideoDecoder>> decoder = Open(sample.path);
  if (!decoder.ok()) return decoder.status();
  const int64_t kill_after = sample.num_frames() / 3;
  pid_t killed = -1;
  int64_t next = 0;
  absl::Status status = (*decoder)->ForEachFrame(
      {ipc::IndexRange{0, sample.num_frames(), 1}}, [&](Frame frame) -> absl::Status {
        if (absl::Status s = Compare(frame, sample, next++, "re-issued request"); !s.ok()) return s;
        if (next == kill_after) {
          absl::StatusOr<BackendStatus> now = Status();
          if (!now.ok()) return now.status();
          killed = now->pid;
          if (killed <= 0) {
            // Not running mid-request: it died by itself, decoding ahead.
            return absl::InternalError(absl::StrCat(
                "the backend died by itself while it decoded ", sample.path, " (", now->restarts - before->restarts,
                " restart(s) during this check; state ", now->state, now->last_exit.empty() ? "" : "; last exit: ",
                now->last_exit, now->diagnostic.empty() ? "" : "; ", now->diagnostic,
                "), before the suite's kill after frame ", kill_after - 1));
          }
          if (kill(killed, SIGKILL) != 0) {
            return absl::InternalError(absl::StrCat("cannot kill the backend (pid ", killed, "): ", strerror(errno)));
          }
        }
        return absl::OkStatus();
      });
  if (!status.ok()) return status;
  if (next != sample.num_frames()) {
    return absl::InternalError(absl::StrCat(next, " frames after the kill, expected ", sample.num_frames()));
  }
  absl::StatusOr<BackendStatus> after = Status();
  if (!after.ok()) return after.status();
  if ((*decoder)->retries() < 1 || after->restarts <= before->restarts || after->pid == killed) {
    return absl::InternalError(absl::StrCat("the kill of pid ", killed, " went unnoticed: ", (*decoder)->retries(),
                                            " retries, ", after->restarts - before->restarts, " restarts, pid now ",
                                            after->pid));
  }
  *detail = absl::StrCat("killed pid ", killed, " (SIGKILL) after frame ", kill_after - 1, "; all ", next,
                         " frames correct after ", (*decoder)->retries(), " re-issue(s), new pid ", after->pid);
  return absl::OkStatus();
}

absl::Status Suite::QuietOutput(std::string* detail) {
  if (!output_.ok()) return output_.status();
  (*output_)->Stop();
  const int lines = (*output_)->lines();
  const char* env = std::getenv(CODECVISOR_BACKEND_LOG_LEVEL_ENV);
  const absl::string_view level = env != nullptr ? env : "quiet";
  // Names the host passes on that let a backend log; anything else is quiet.
  if (level != "quiet" && std::ranges::find(kBackendLogLevels, level) != std::end(kBackendLogLevels)) {
    *detail = absl::StrCat("not checked: this run lets backends log (", CODECVISOR_BACKEND_LOG_LEVEL_ENV, "=", level,
                           ", --loglevel); it wrote ", lines, " line(s)");
    nothing_checked_ = true;
    return absl::OkStatus();
  }
  if (lines > kMaxQuietLines) {
    return absl::InternalError(absl::StrCat(
        "the backend wrote ", lines, " lines to stdout/stderr at the quiet log level (at most ", kMaxQuietLines,
        " pass), the first: '", (*output_)->first_line(), "'; unless ", CODECVISOR_BACKEND_LOG_LEVEL_ENV,
        " asks for more, a backend reports through cv_error and writes nothing to the user's terminal"));
  }
  *detail = absl::StrCat(lines, " line(s) written to stdout/stderr during the checks, at the quiet log level",
                         lines > 0 ? absl::StrCat(", the first: '", (*output_)->first_line(), "'") : "");
  return absl::OkStatus();
}

absl::Status Suite::FramePool(std::string* detail) {
  if (!output_.ok()) return output_.status();
  (*output_)->Stop();
  if (const int reports = (*output_)->frame_pool_reports(); reports > 0) {
    return absl::InternalError(absl::StrCat("the runner reported ", reports, " breach(es) of cv_frame_pool's rules, ",
                                            "the first: '", (*output_)->first_frame_pool_report(), "'"));
  }
  *detail = "every borrowed slot was given back once, before close_session returned (or none was borrowed)";
  return absl::OkStatus();
}

absl::Status Suite::Shutdown(std::string* detail) {
  // Every decoder of the suite is closed by now: the backend has no session.
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  for (;;) {
    absl::StatusOr<BackendStatus> status = Status();
    if (!status.ok()) return status.status();
    if (status->sessions == 0) break;
    if (Clock::now() > deadline) {
      return absl::InternalError(absl::StrCat(status->sessions, " sessions still open after every decoder closed"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const std::vector<pid_t> children = tools::ChildProcesses();
  const auto start = Clock::now();
  host_.reset();
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  if (std::vector<pid_t> left = tools::ChildProcesses(); !left.empty()) {
    return absl::InternalError(absl::StrCat("child processes left after the host was destroyed: ",
                                            absl::StrJoin(left, ", ")));
  }
  const std::vector<std::string> leaked = tools::NewDescriptors(descriptors_before_, tools::OpenDescriptors());
  if (!leaked.empty()) {
    return absl::InternalError(absl::StrCat("descriptors left open: ", absl::StrJoin(leaked, ", ")));
  }
  *detail = absl::StrCat("host destroyed in ", absl::StrFormat("%.1f", ms), " ms; ", children.size(),
                         " child process(es) gone, no descriptor left");
  return absl::OkStatus();
}

}  // namespace codecvisor::conformance::internal
