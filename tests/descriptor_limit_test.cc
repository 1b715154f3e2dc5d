// Many decoders open at once: a backend, or the host itself, out of
// descriptors fails the one open it has none for, with an error that says
// whose limit it is. The decoders already open go on, the backend is neither
// replaced nor quarantined, and opens work again once decoders close. Each
// of those cases is a row of docs/RELIABILITY.md (FaultRow). And a host
// that cannot start a thread (RLIMIT_NPROC) says so.

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/lowered_file_limit_for_test.h"
#include "base/threads_refused_for_test.h"
#include "core/cgroup.h"
#include "tests/fault_test_support.h"

namespace codecvisor::testing {
namespace {

// The synthetic backend's manifest with a descriptor limit of `open_files`.
std::string FewFilesManifest(int open_files) {
  return WriteFile("few_files_synthetic.toml",
                   absl::StrCat("name='synthetic'\ndevices=['synthetic']\nlibrary='",
                                Runfile("backends/testing/libcodecvisor_synthetic.so"),
                                "'\nabi_version=1\n[sandbox]\nopen_files=", open_files, "\n"));
}

// The faulty backend's manifest with [sandbox] open_files = 64 and `config`.
std::string FaultyWith64Files(const std::string& config) {
  return WriteFile(
      "faulty_64_files.toml",
      absl::StrCat("name='faulty'\ndevices=['faulty']\nlibrary='", Runfile("backends/testing/libcodecvisor_faulty.so"),
                   "'\nabi_version=1\n[sandbox]\nopen_files=64\n[config]\n", config, "\n"));
}

// Options whose requests and opens may each take `seconds`.
DecoderOptions WithTimeouts(std::chrono::seconds seconds) {
  DecoderOptions options;
  options.request_timeout = seconds;
  options.open_timeout = seconds;
  return options;
}

// Descriptors this process has open (CountOpenFds also counts its listing's
// own, "." and "..").
int OpenFds() { return CountOpenFds() - 3; }

// Descriptors process `pid` has open; 0 if they cannot be listed.
int BackendFds(pid_t pid) {
  std::error_code error;
  int n = 0;
  for (std::filesystem::directory_iterator it("/proc/" + std::to_string(pid) + "/fd", error), end; !error && it != end;
       it.increment(error)) {
    ++n;
  }
  return error ? 0 : n;
}

class DescriptorLimitTest : public FaultTest {
 protected:
  void TearDown() override {
    decoders_.clear();  // before the Host goes and the leak checks run
    FaultTest::TearDown();
  }

  absl::StatusOr<std::unique_ptr<VideoDecoder>> OpenVideo() { return Open(video_, "synthetic"); }

  // Backend `name`'s status, its restarts and state noted in `row`.
  BackendStatus NoteBackend(FaultRow& row, const std::string& name) {
    const BackendStatus status = StatusOf(name);
    row.Note(absl::StrCat(status.restarts, " restarts, backend ", status.state));
    return status;
  }

  // A host whose only backend besides the built-in is `manifest`'s.
  void HostWith(const std::string& manifest) {
    host_.reset();
    absl::StatusOr<std::unique_ptr<Host>> host = Host::Create(options_);
    ASSERT_TRUE(host.ok()) << host.status();
    host_ = *std::move(host);
    const absl::Status loaded = host_->LoadBackend(manifest);
    ASSERT_TRUE(loaded.ok()) << loaded;
  }

  // Opens decoders until one is refused (at most 100): that refusal.
  absl::Status OpenUntilRefused(FaultRow& row) {
    absl::Status refused;
    while (decoders_.size() < 100) {
      absl::StatusOr<std::unique_ptr<VideoDecoder>> d = OpenVideo();
      if (!d.ok()) {
        refused = d.status();
        break;
      }
      decoders_.push_back(*std::move(d));
    }
    row.Saw(absl::StrCat("opens before the refusal: ", decoders_.size()));
    row.Saw("the refused open: " + CodeName(refused));
    return refused;
  }

  // Every decoder open still gives its frames; after two close, an open
  // works again (given a moment: the backend learns of each close when its
  // channel hangs up); the backend was neither replaced nor quarantined.
  void ExpectTheOthersGoOn(FaultRow& row) {
    EXPECT_GE(decoders_.size(), 5u);
    int good = 0;
    for (size_t i = 0; i < decoders_.size(); ++i) {
      const int64_t index = static_cast<int64_t>(i % 40);
      absl::StatusOr<Frame> f = decoders_[i]->GetFrameAt(index);
      good += f.ok() && IsSyntheticFrame(*f, index);
      EXPECT_TRUE(f.ok() && IsSyntheticFrame(*f, index)) << "decoder " << i << ": " << FrameOutcome(f, index);
    }
    row.Note(absl::StrCat(good, " of the ", decoders_.size(), " decoders open before still decode"));
    decoders_.resize(decoders_.size() - 2);
    absl::StatusOr<std::unique_ptr<VideoDecoder>> again = absl::UnknownError("not opened");
    WaitUntil([&] { return (again = OpenVideo()).ok(); }, std::chrono::milliseconds(20));
    row.Saw("an open after two closed: " + CodeName(again.status()));
    EXPECT_TRUE(again.ok()) << again.status();
    const BackendStatus status = NoteBackend(row, "synthetic");
    EXPECT_EQ(status.restarts, 0u);
    EXPECT_EQ(status.state, "ready");
  }

  const std::string video_ = WriteSyntheticVideo("descriptor_limit.syn");
  std::vector<std::unique_ptr<VideoDecoder>> decoders_;
};

TEST_F(DescriptorLimitTest, AnOpenPastTheBackendsDescriptorLimitFailsAlone) {
  FaultRow& row = Row("more decoders open than the backend has descriptors for ([sandbox] open_files = 64)");
  ++row.tries;
  ASSERT_NO_FATAL_FAILURE(HostWith(FewFilesManifest(64)));
  const absl::Status refused = OpenUntilRefused(row);
  ASSERT_FALSE(refused.ok()) << "64 descriptors held 100 sessions";
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << refused;
  EXPECT_NE(refused.message().find("has no descriptor free for another session"), std::string::npos) << refused;
  EXPECT_NE(refused.message().find("open_files"), std::string::npos) << refused;
  ExpectTheOthersGoOn(row);
}

// A plugin that leaves 20 descriptors open at every open, in a backend of
// 64: from the third decoder opened and closed in turn, every open failed
// with "no descriptor free: close a decoder" though none was open, and the
// backend stayed, never replaced. Short with no session of this host open,
// the backend is replaced (its plugin holds them) and the open goes on.
// Each open waits for the backend to have closed the last session (it
// learns of a close when the channel hangs up): an open that came first
// would find that session's descriptors still held, the plugin's leak
// would stop short of them, and the close would then leave the new
// session room; no shortage to recover from.
TEST_F(DescriptorLimitTest, ABackendWhosePluginLeaksDescriptorsIsReplaced) {
  FaultRow& row = Row("a plugin that leaks 20 descriptors at every open ([sandbox] open_files = 64), decoders in turn");
  ASSERT_NO_FATAL_FAILURE(HostWith(FaultyWith64Files("leak_open_fds=20")));
  int good = 0;
  for (int i = 0; i < 10; ++i) {
    ++row.tries;
    absl::StatusOr<std::unique_ptr<VideoDecoder>> d = Open(video_, "faulty");
    ASSERT_TRUE(d.ok()) << "decoder " << i << ": " << d.status();
    absl::StatusOr<Frame> f = (*d)->GetFrameAt(i);
    good += f.ok() && IsSyntheticFrame(*f, i);
    EXPECT_TRUE(f.ok() && IsSyntheticFrame(*f, i)) << "decoder " << i << ": " << FrameOutcome(f, i);
    const pid_t backend = StatusOf("faulty").pid;
    ASSERT_GT(backend, 0);
    const int held = BackendFds(backend);
    ASSERT_GT(held, 0) << "cannot list /proc/" << backend << "/fd";
    d->reset();
    ASSERT_TRUE(WaitUntil([&] { return BackendFds(backend) < held; }, std::chrono::milliseconds(2)))
        << "the backend did not close decoder " << i << "'s session in 20 s";
  }
  row.Saw(absl::StrCat("opened and decoded: ", good, " of 10"));
  const BackendStatus status = NoteBackend(row, "faulty");
  EXPECT_GE(status.restarts, 2u);
  EXPECT_EQ(status.state, "ready");
}

// A plugin whose own descriptors leave a backend of 64 no room for one
// session (create() keeps 60): the manifest's open_files is too small,
// which no fresh process cures. Each open fails so, saying to raise it,
// and neither the file nor the backend is blamed: no restart, no poison.
TEST_F(DescriptorLimitTest, ABackendWithNoRoomForOneSessionIsNotReplaced) {
  FaultRow& row = Row("a plugin that keeps 60 descriptors from create() ([sandbox] open_files = 64)");
  ASSERT_NO_FATAL_FAILURE(HostWith(FaultyWith64Files("hold_fds=60")));
  for (int i = 0; i < 3; ++i) {
    ++row.tries;
    absl::StatusOr<std::unique_ptr<VideoDecoder>> d = Open(video_, "faulty");
    row.Saw("open " + CodeName(d.status()));
    ASSERT_FALSE(d.ok()) << "60 of 64 descriptors held a session";
    EXPECT_EQ(d.status().code(), absl::StatusCode::kFailedPrecondition) << d.status();
    EXPECT_NE(d.status().message().find("open_files"), std::string::npos) << d.status();
    EXPECT_EQ(d.status().message().find("poison"), std::string::npos) << d.status();
  }
  const BackendStatus status = NoteBackend(row, "faulty");
  EXPECT_EQ(status.restarts, 0u);
  EXPECT_EQ(status.state, "ready");
}

TEST_F(DescriptorLimitTest, AnOpenPastTheHostsDescriptorLimitFailsAlone) {
  FaultRow& row = Row("more decoders open than the host process has descriptors for (RLIMIT_NOFILE)");
  ++row.tries;
  // The backend up first, with one decoder: the limit then bounds sessions only.
  absl::StatusOr<std::unique_ptr<VideoDecoder>> first = OpenVideo();
  ASSERT_TRUE(first.ok()) << first.status();
  decoders_.push_back(*std::move(first));
  absl::Status refused;
  {
    LoweredFileLimit limit(static_cast<rlim_t>(CountOpenFds() + 40));
    ASSERT_TRUE(limit.ok());
    refused = OpenUntilRefused(row);
  }
  ASSERT_FALSE(refused.ok()) << "40 descriptors held 100 sessions";
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_NE(refused.message().find("this process is short of what another decoder needs"), std::string::npos)
      << refused;
  ExpectTheOthersGoOn(row);
}

// The backend killed while the host is at its descriptor limit (decoders
// opened until one was refused): the restart needs descriptors that only
// the dead backend's sessions hold. They are dropped before it, so every
// decoder gets its frame from the new process; the waiting decoders once
// held them, and the restart failed until each call gave up.
TEST_F(DescriptorLimitTest, ARestartAtTheHostsDescriptorLimitTakesWhatTheDeadSessionsHeld) {
  FaultRow& row = Row("the backend killed while the host process is at its descriptor limit (RLIMIT_NOFILE)");
  ++row.tries;
  const DecoderOptions options = WithTimeouts(std::chrono::seconds(5));
  absl::StatusOr<std::unique_ptr<VideoDecoder>> first = Open(video_, "synthetic", options);
  ASSERT_TRUE(first.ok()) << first.status();
  decoders_.push_back(*std::move(first));
  LoweredFileLimit limit(static_cast<rlim_t>(CountOpenFds() + 40));
  ASSERT_TRUE(limit.ok());
  while (decoders_.size() < 100) {
    absl::StatusOr<std::unique_ptr<VideoDecoder>> d = Open(video_, "synthetic", options);
    if (!d.ok()) break;
    decoders_.push_back(*std::move(d));
  }
  ASSERT_LT(decoders_.size(), 100u);
  const pid_t pid = StatusOf("synthetic").pid;
  ASSERT_GT(pid, 0);
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  int good = 0;
  for (size_t i = 0; i < decoders_.size(); ++i) {
    const int64_t index = static_cast<int64_t>(i % 40);
    absl::StatusOr<Frame> f = decoders_[i]->GetFrameAt(index);
    good += f.ok() && IsSyntheticFrame(*f, index);
    EXPECT_TRUE(f.ok() && IsSyntheticFrame(*f, index))
        << "decoder " << i << ": " << FrameOutcome(f, index) << " " << f.status();
  }
  row.Saw(absl::StrCat(good, " of the ", decoders_.size(), " decoders decode after the kill"));
  const BackendStatus status = StatusOf("synthetic");
  row.Note(absl::StrCat(status.restarts, " restart(s), backend ", status.state));
  EXPECT_EQ(status.restarts, 1u);
  EXPECT_NE(status.pid, pid);
}

TEST_F(DescriptorLimitTest, AFirstStartPastTheHostsDescriptorLimitFailsOnlyThatOpen) {
  FaultRow& row = Row("the host process out of descriptors as it starts a backend for the first time");
  ++row.tries;
  // The smallest soft limit past this process's descriptors at which the
  // video opens and the backend's start is what runs short.
  absl::Status refused;
  for (int extra = 0; extra <= 16; ++extra) {
    LoweredFileLimit limit(static_cast<rlim_t>(CountOpenFds() + extra));
    ASSERT_TRUE(limit.ok());
    absl::StatusOr<std::unique_ptr<VideoDecoder>> d = OpenVideo();
    ASSERT_FALSE(d.ok()) << extra << " descriptors spare started the backend";
    refused = d.status();
    if (refused.message().find("backend 'synthetic'") != std::string::npos) break;
  }
  row.Saw("the refused open: " + CodeName(refused));
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_NE(refused.message().find("backend 'synthetic'"), std::string::npos) << refused;
  EXPECT_NE(refused.message().find("this process is short of what another decoder needs"), std::string::npos)
      << refused;
  EXPECT_NE(StatusOf("synthetic").state, "failed");
  // The limit back, the next open starts the backend.
  absl::StatusOr<std::unique_ptr<VideoDecoder>> again = OpenVideo();
  row.Saw("the next open with the limit back: " + CodeName(again.status()));
  ASSERT_TRUE(again.ok()) << again.status();
  absl::StatusOr<Frame> f = (*again)->GetFrameAt(3);
  EXPECT_TRUE(f.ok() && IsSyntheticFrame(*f, 3)) << FrameOutcome(f, 3);
  const BackendStatus status = NoteBackend(row, "synthetic");
  EXPECT_EQ(status.state, "ready");
  EXPECT_EQ(status.restarts, 0u);
}

// However few descriptors the host has to spare as it first starts a
// backend (each step of the start takes some: its channel, the sandbox's id
// maps, cgroup and empty root, which the child builds with a copy of the
// host's descriptor table), an open it cannot serve fails with this
// process's shortage, never as a sandbox the machine cannot give, which
// would fail the backend for the life of the process. With the limit back,
// the backend starts with its whole sandbox, cgroup included where this
// machine gives one.
TEST_F(DescriptorLimitTest, AFirstStartWithAnyNumberOfDescriptorsSpareStartsOrIsTheHostsShortage) {
  FaultRow& row = Row("the host process out of descriptors at each step of a backend's first start");
  ++row.tries;
  int refused = 0;
  absl::StatusOr<std::unique_ptr<VideoDecoder>> d;
  int extra = 0;
  for (; extra <= 48; ++extra) {
    {
      LoweredFileLimit limit(static_cast<rlim_t>(OpenFds() + extra));
      ASSERT_TRUE(limit.ok());
      d = OpenVideo();
    }
    if (d.ok()) break;
    ++refused;
    EXPECT_EQ(d.status().code(), absl::StatusCode::kResourceExhausted) << extra << " spare: " << d.status();
    EXPECT_EQ(StatusOf("synthetic").state, "discovered") << extra << " spare: " << d.status();
  }
  row.Saw(absl::StrCat(refused, " opens refused with this process's shortage, then one started the backend"));
  EXPECT_GT(refused, 0) << "no count was short: the sweep checked nothing";
  ASSERT_TRUE(d.ok()) << d.status();
  decoders_.push_back(*std::move(d));
  // Started at the first count that had room: its sandbox is the whole one.
  const CgroupLayout cgroups = ProbeCgroupLayout();
  EXPECT_EQ(StatusOf("synthetic").sandbox.find("cgroup") != std::string::npos, cgroups.version != 0)
      << StatusOf("synthetic").sandbox << " (" << cgroups.missing << ")";
  absl::StatusOr<Frame> f = decoders_[0]->GetFrameAt(5);
  EXPECT_TRUE(f.ok() && IsSyntheticFrame(*f, 5)) << FrameOutcome(f, 5);
}

// The backend killed while the host has few descriptors to spare, for
// every count from none up: the request in flight gets its frame (the
// restart had room) or, at once, this process's shortage (not a hang until
// the open's deadline, and not a crash counted toward quarantine). Once
// the limit is back the same decoder gets its frames from a restarted
// backend with the sandbox it had.
TEST_F(DescriptorLimitTest, ARestartWithAnyNumberOfDescriptorsSpareServesOrIsTheHostsShortage) {
  FaultRow& row = Row("the backend killed while the host process has 0 to 24 descriptors to spare");
  ++row.tries;
  const DecoderOptions options = WithTimeouts(std::chrono::seconds(20));
  absl::StatusOr<std::unique_ptr<VideoDecoder>> opened = Open(video_, "synthetic", options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  VideoDecoder& d = **opened;
  const std::string sandbox = StatusOf("synthetic").sandbox;
  int shortages = 0;
  for (int extra = 0; extra <= 24; ++extra) {
    const int64_t index = extra % 40;
    const pid_t pid = StatusOf("synthetic").pid;
    ASSERT_GT(pid, 0) << extra;
    absl::StatusOr<Frame> f;
    const auto began = std::chrono::steady_clock::now();
    {
      LoweredFileLimit limit(static_cast<rlim_t>(OpenFds() + extra));
      ASSERT_TRUE(limit.ok());
      ASSERT_EQ(kill(pid, SIGKILL), 0);
      f = d.GetFrameAt(index);
    }
    if (f.ok()) {
      EXPECT_TRUE(IsSyntheticFrame(*f, index)) << extra << " spare: " << FrameOutcome(f, index);
    } else {
      ++shortages;
      EXPECT_EQ(f.status().code(), absl::StatusCode::kResourceExhausted) << extra << " spare: " << f.status();
      EXPECT_LT(std::chrono::steady_clock::now() - began, options.open_timeout / 2)
          << extra << " spare: the shortage came at the deadline, not when the restart failed";
    }
    // The limit back: frames again, three in a row (which make the restart
    // budget whole, so the 25 kills never quarantine it).
    for (int64_t i : {index + 1, index + 2, index + 3}) {
      absl::StatusOr<Frame> again = d.GetFrameAt(i);
      ASSERT_TRUE(again.ok() && IsSyntheticFrame(*again, i)) << extra << " spare: " << FrameOutcome(again, i);
    }
    const BackendStatus status = StatusOf("synthetic");
    EXPECT_EQ(status.state, "ready") << extra;
    EXPECT_EQ(status.sandbox, sandbox) << extra;
  }
  row.Saw(absl::StrCat(shortages,
                       " of 25 requests got this process's shortage, the rest their frame; all decode "
                       "once the limit is back"));
  EXPECT_GT(shortages, 0) << "no restart was short: the sweep checked nothing";
  EXPECT_EQ(StatusOf("synthetic").restarts, 25u);
}

// A host run under a small soft limit (`ulimit -n 64`) with room for what a
// backend's start takes: the backend starts and decodes. The child moves its
// descriptors into place through numbers past the limit's no more.
TEST_F(DescriptorLimitTest, ABackendStartsUnderASmallLimitWithRoomForItsStart) {
  FaultRow& row = Row("the host process under a small soft descriptor limit (ulimit -n 64) starts a backend");
  ++row.tries;
  const rlim_t soft = static_cast<rlim_t>(CountOpenFds() + 24);
  ASSERT_LT(soft, 64u) << "this process holds too many descriptors for the case";
  absl::StatusOr<std::unique_ptr<VideoDecoder>> d;
  {
    LoweredFileLimit limit(soft);
    ASSERT_TRUE(limit.ok());
    d = OpenVideo();
  }
  row.Saw(absl::StrCat("an open under a soft limit of ", soft, ": ", CodeName(d.status())));
  ASSERT_TRUE(d.ok()) << d.status();
  absl::StatusOr<Frame> f = (*d)->GetFrameAt(7);
  EXPECT_TRUE(f.ok() && IsSyntheticFrame(*f, 7)) << FrameOutcome(f, 7);
  EXPECT_EQ(StatusOf("synthetic").restarts, 0u);
}

// A backend far below its own thread limit whose open cannot start a thread
// (EAGAIN: its user's processes and threads, DataLoader workers and other
// backends among them, are at `ulimit -u`) says whose limit it is, and
// neither the file nor the backend is blamed: before, each such open
// replaced the backend, judged the good file poison, and eight of them
// quarantined the backend for the process.
TEST_F(FaultTest, AnOpenRefusedAThreadByItsUsersLimitBlamesNeitherFileNorBackend) {
  FaultRow& row = Row("an open whose threads its user's limit refuses (EAGAIN), 10 in a row");
  // Root's backends have no user's limit to meet: the host stands for a user with one.
  setenv("CODECVISOR_TEST_USER_THREAD_LIMIT", "1", 1);
  const std::string video = WriteSyntheticVideo("no_thread.syn", "fault=no_thread_open");
  DecoderOptions options;
  // The shortage is waited out for 750 ms of it; each exchange with the
  // backend, which must answer within it, takes a few ms.
  options.open_timeout = std::chrono::milliseconds(1000);
  for (int run = 0; run < 10; ++run) {
    ++row.tries;
    absl::StatusOr<std::unique_ptr<VideoDecoder>> d = Open(video, "faulty", options);
    row.Saw("open " + CodeName(d.status()));
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.status().code(), absl::StatusCode::kResourceExhausted) << d.status();
    EXPECT_NE(d.status().message().find("this process is short of what another decoder needs"), std::string::npos)
        << d.status();
    EXPECT_NE(d.status().message().find("could not start a thread"), std::string::npos) << d.status();
    EXPECT_NE(d.status().message().find("`ulimit -u`"), std::string::npos) << d.status();
    EXPECT_EQ(d.status().message().find("poison"), std::string::npos) << d.status();
  }
  unsetenv("CODECVISOR_TEST_USER_THREAD_LIMIT");
  const BackendStatus status = StatusOf("faulty");
  row.Note(absl::StrCat(status.restarts, " restarts, backend ", status.state));
  EXPECT_EQ(status.restarts, 0u);
  EXPECT_EQ(status.state, "ready");
  // Without a user's limit (root's processes) the claim is the backend's
  // own shortage: it is replaced, and the file judged, as before.
  ++row.tries;
  absl::StatusOr<std::unique_ptr<VideoDecoder>> unlimited = Open(video, "faulty", options);
  row.Saw("with no user's limit, open " + CodeName(unlimited.status()));
  EXPECT_EQ(unlimited.status().code(), absl::StatusCode::kAborted) << unlimited.status();
  EXPECT_NE(unlimited.status().message().find("poison"), std::string::npos) << unlimited.status();
  // Not the backend's word that the user is at a limit the user does not have.
  EXPECT_NE(unlimited.status().message().find("the backend reports a thread refused at its user's limit, which this "
                                              "host's user does not have"),
            std::string::npos)
      << unlimited.status();
  ++row.tries;
  absl::StatusOr<std::unique_ptr<VideoDecoder>> good = Open(WriteSyntheticVideo("after_no_thread.syn"), "faulty");
  ASSERT_TRUE(good.ok()) << good.status();
  absl::StatusOr<Frame> f = (*good)->GetFrameAt(2);
  row.Saw("then a good file's request " + FrameOutcome(f, 2));
  EXPECT_TRUE(f.ok() && IsSyntheticFrame(*f, 2));
}

// A process that may start no more threads (its user at RLIMIT_NPROC, as
// clone answers EAGAIN; here a seccomp filter answers so, since root is
// not held to the limit) cannot make a Host: Create says whose limit it
// is, where the spawner thread's std::system_error escaped it (the CLI
// aborted, Python got a bare RuntimeError). The case runs in a child.
TEST(ThreadLimitTest, AHostThatCannotStartAThreadSaysSo) {
  absl::StatusOr<std::string> said = RunWithThreadsRefused([] {
    HostOptions options;
    options.layout = InstallLayout{Runfile("backends/sdk/runner/codecvisor-backend"), "/nonexistent"};
    options.discovery = DiscoveryOptions{{}, "/nonexistent", false};
    absl::StatusOr<std::unique_ptr<Host>> host = Host::Create(options);  // threw without the fix: SIGABRT
    return host.ok() ? std::string("OK") : host.status().ToString();
  });
  ASSERT_TRUE(said.ok()) << said.status();
  EXPECT_NE(said->find("RESOURCE_EXHAUSTED"), std::string::npos) << *said;
  EXPECT_NE(said->find("cannot start the host's thread"), std::string::npos) << *said;
  EXPECT_NE(said->find("`ulimit -u`"), std::string::npos) << *said;
}

// Threads refused with EPERM, as an older Docker seccomp profile answers
// clone3 (glibc 2.34+ starts threads with it): no limit is short, and the
// message said "short of what another decoder needs ... close a decoder,
// or raise the process's limits".
TEST(ThreadLimitTest, AHostRefusedThreadsByAPolicySaysWhichPolicy) {
  absl::StatusOr<std::string> said = RunWithThreadsRefused(
      [] {
        HostOptions options;
        options.layout = InstallLayout{Runfile("backends/sdk/runner/codecvisor-backend"), "/nonexistent"};
        options.discovery = DiscoveryOptions{{}, "/nonexistent", false};
        absl::StatusOr<std::unique_ptr<Host>> host = Host::Create(options);
        return host.ok() ? std::string("OK") : host.status().ToString();
      },
      EPERM);
  ASSERT_TRUE(said.ok()) << said.status();
  EXPECT_NE(said->find("FAILED_PRECONDITION: cannot start the host's thread"), std::string::npos) << *said;
  EXPECT_NE(said->find("seccomp profile that refuses clone3"), std::string::npos) << *said;
  EXPECT_EQ(said->find("another decoder"), std::string::npos) << *said;
}

}  // namespace
}  // namespace codecvisor::testing
