// codecvisor-backend: the trusted runner. The host starts it with the control
// channel on descriptors 3 and 4; it loads the vendor library named on its
// command line and serves the host until the host hangs up.
//
// Exit codes: RunnerExit (runner_args.h).

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "backends/sdk/runner/abi_convert.h"
#include "backends/sdk/runner/backend_library.h"
#include "backends/sdk/runner/close_watchdog.h"
#include "backends/sdk/runner/control_server.h"
#include "backends/sdk/runner/crash_backtrace.h"
#include "backends/sdk/runner/crash_hints.h"
#include "backends/sdk/runner/runner_args.h"
#include "backends/sdk/runner/sandbox.h"
#include "backends/sdk/runner/time_slice.h"
#include "ipc/channel.h"

namespace codecvisor::runner {
namespace {

// The sandbox, completed before any vendor code runs. A mechanism that is
// required and unavailable makes loading fail with that reason.
absl::Status CompleteSandbox(const RunnerArgs& args, ipc::HelloReply* report) {
  RunnerSandbox sandbox;
  sandbox.read_paths = args.read_paths;
  sandbox.devices = args.devices;
  if (args.library_fd >= 0) sandbox.library_fd = args.library_fd;
  if (args.landlock != RunnerArgs::Landlock::kOff) {
    absl::Status s = ApplyLandlock(sandbox);
    if (s.ok()) {
      report->sandbox_landlock_abi = static_cast<uint32_t>(LandlockAbi());
    } else if (absl::StrContains(s.message(), std::strerror(EMFILE))) {
      // Out of descriptors: the kernel has Landlock, and running without it
      // would not give the backend a descriptor more.
      return absl::ResourceExhaustedError(
          absl::StrCat("sandbox: Landlock: ", s.message(), "; raise [sandbox] open_files in the backend's manifest"));
    } else if (args.landlock == RunnerArgs::Landlock::kRequire) {
      return absl::FailedPreconditionError(
          absl::StrCat("sandbox: Landlock: ", s.message(),
                       "; set [sandbox] allow_degraded = true in the backend's manifest, or "
                       "CODECVISOR_ALLOW_DEGRADED_SANDBOX=1 in the host's environment, to run without it (see "
                       "`codecvisor doctor`)"));
    } else {
      std::fprintf(stderr, "codecvisor-backend: WARNING: running without Landlock: %s\n",
                   std::string(s.message()).c_str());
    }
  }
  if (args.seccomp != RunnerArgs::Seccomp::kOff) {
    absl::Status s =
        ApplySeccomp(args.seccomp == RunnerArgs::Seccomp::kLog ? SeccompMode::kLog : SeccompMode::kEnforce, args.memfd);
    if (!s.ok()) return absl::FailedPreconditionError(absl::StrCat("sandbox: seccomp: ", s.message()));
    report->sandbox_seccomp = true;
  }
  return absl::OkStatus();
}

// What a vendor needs to hear when create() could not open a file: inside
// the sandbox only the system's library folders and the manifest's
// read_paths exist (others are "No such file or directory"), and Landlock
// refuses the rest of /proc and /dev ("Permission denied").
std::string SandboxFileHint(const absl::Status& why) {
  if (!absl::StrContains(why.message(), std::strerror(ENOENT)) &&
      !absl::StrContains(why.message(), std::strerror(EACCES))) {
    return "";
  }
  return "; inside the sandbox a plugin sees only the system's library folders and the files and folders of its "
         "manifest's [sandbox] read_paths (read_paths = [\".\"] for the plugin's own folder) and devices";
}

// The control channel's descriptors as files (device and inode), to tell
// whether the plugin closed or replaced them while it loaded.
struct ChannelFiles {
  dev_t dev[2] = {};
  ino_t ino[2] = {};
  bool operator==(const ChannelFiles&) const = default;
};

ChannelFiles ControlChannelFiles() {
  ChannelFiles f;
  const int fds[2] = {kControlMemfdFd, kControlSocketFd};
  for (int i = 0; i < 2; ++i) {
    struct stat st {};
    if (fstat(fds[i], &st) == 0) {
      f.dev[i] = st.st_dev;
      f.ino[i] = st.st_ino;
    }
  }
  return f;
}

int Main(int argc, char** argv) {
  absl::StatusOr<RunnerArgs> parsed = RunnerArgs::Parse(argc, argv);
  if (parsed.ok()) {
    if (absl::Status s = parsed->ReadConfig(); !s.ok()) parsed = s;
  }
  if (!parsed.ok()) {
    std::fprintf(stderr, "codecvisor-backend: %s\n"
                         "usage: codecvisor-backend --name NAME --library PATH [--entry SYMBOL] [--config TEXT | --config-fd N]\n"
                         "(started by the codecvisor host with its control channel on fds 3 and 4)\n",
                 std::string(parsed.status().message()).c_str());
    return ExitCode(RunnerExit::kBadInvocation);
  }
  const RunnerArgs& args = *parsed;
  const std::string& name = args.name;
  const std::string& library = args.library;
  const std::string entry = args.entry.empty() ? CODECVISOR_BACKEND_ENTRY : args.entry;
  absl::StatusOr<std::unique_ptr<ipc::BackendChannel>> control =
      ipc::BackendChannel::Attach({ipc::UniqueFd(kControlMemfdFd), ipc::UniqueFd(kControlSocketFd)});
  if (!control.ok()) {
    std::fprintf(stderr, "codecvisor-backend: control channel: %s\n", control.status().ToString().c_str());
    return ExitCode(RunnerExit::kBadInvocation);
  }

  // Before any thread starts, so that all inherit it (time_slice.h). Only a
  // scheduling preference: a kernel that refuses leaves the runner as it was.
  (void)LengthenTimeSlice(2);
  InstallCrashHintHandlers((*control)->header());
  if (args.backtrace) {
    // Before the sandbox: opens our own executable and loads the unwinder.
    PrepareCrashBacktrace(name, args.library_fd,
                          args.library_fd >= 0 ? DescriptorPath(args.library_fd) : library, library);
  }
  // Past RLIMIT_FSIZE (set by the host), a write to stderr should fail, not
  // kill the backend.
  signal(SIGXFSZ, SIG_IGN);
  const cv_backend_v1* vtable = nullptr;
  cv_backend* backend = nullptr;
  ipc::HelloReply report;
  const ChannelFiles channel_files = ControlChannelFiles();
  absl::Status load_status = CompleteSandbox(args, &report);
  // A close_session nobody waits for that never returns would keep its
  // thread (spinning, perhaps) for the life of the process: past the
  // manifest's close_timeout_seconds the runner ends, and the host restarts
  // it as after a crash. The watchdog says so in the control region (the
  // host's DeathRecord::close_hung) and on stderr, with neither stdio nor
  // malloc, whose locks the hung close may hold. Its thread starts here,
  // after the sandbox (Landlock binds the threads started after it) and
  // before the plugin's code, which may leave no thread for it. Never
  // destroyed: the process ends in ExitProcess.
  ipc::RegionHeader* control_header = (*control)->header();
  auto* close_watchdog = new CloseWatchdog(
      std::chrono::milliseconds(args.close_timeout_ms),
      [control_header, name, limit = args.close_timeout_ms](const char* what) {
        control_header->backend_close_hung.store(1, std::memory_order_release);
        char line[512];
        const int n = std::snprintf(line, sizeof(line),
                                    "codecvisor-backend '%s': %s did not return within %lld ms (the manifest's "
                                    "[restart] close_timeout_seconds): the backend ends so that it is restarted\n",
                                    name.c_str(), what, static_cast<long long>(limit));
        if (n > 0) (void)!write(STDERR_FILENO, line, std::min<size_t>(static_cast<size_t>(n), sizeof(line) - 1));
        ExitProcess(ExitCode(RunnerExit::kCloseHung));
      });
  const std::string open_path = LibraryOpenPath(library, args.library_fd, args.read_paths);
  absl::StatusOr<LoadedBackend> loaded =
      load_status.ok() ? LoadBackendLibrary(open_path, library, entry, name) : load_status;
  if (load_status.ok() && !loaded.ok() && args.library_fd >= 0 && open_path == library) {
    // By its path the sandbox may still refuse it (a link to outside the
    // read paths): the descriptor the host opened works wherever it points.
    absl::StatusOr<LoadedBackend> by_fd =
        LoadBackendLibrary(DescriptorPath(args.library_fd), library, entry, name);
    if (by_fd.ok()) loaded = std::move(by_fd);
  }
  if (!loaded.ok()) {
    load_status = loaded.status();
  } else {
    vtable = loaded->table;
    cv_error error{};
    VendorCall call((*control)->header());
    cv_status st = vtable->create(args.config.c_str(), &backend, &error);
    if (st != CV_OK) {
      absl::Status why = VendorError(st, error);
      load_status = absl::Status(why.code(), absl::StrCat("init failed: ", why.message(), SandboxFileHint(why)));
    }
  }
  // A plugin that closed descriptors it did not open (a daemon-style
  // close-everything loop in a constructor or create()) took the channel
  // the host would hear any answer on: say so where the host reads it.
  if (ControlChannelFiles() != channel_files) {
    std::fprintf(stderr, "codecvisor-backend '%s': the plugin closed or replaced descriptors %d and %d, the runner's "
                         "control channel, while it loaded; a plugin must close only descriptors it opened\n",
                 name.c_str(), kControlMemfdFd, kControlSocketFd);
    std::fflush(nullptr);
    ExitProcess(ExitCode(RunnerExit::kPluginClosedChannel));
  }
  // One thread reports the host's hang-up on every channel, so that idle
  // waits sleep instead of polling their sockets (ipc/hangup_watcher.h).
  // Never destroyed: the process ends in ExitProcess, session threads may
  // still hold watches. Without it, waits poll every 10 ms, as before.
  absl::StatusOr<std::unique_ptr<ipc::HangupWatcher>> hangups = ipc::HangupWatcher::Start();
  if (hangups.ok()) {
    (*control)->WatchHangups(hangups->get());
  } else {
    std::fprintf(stderr, "codecvisor-backend: WARNING: idle waits will poll: %s\n",
                 std::string(hangups.status().message()).c_str());
  }
  // load_status goes to the host as is: the host names the backend and its
  // manifest in front of it.
  ControlServer server(*std::move(control), name, load_status.ok() ? vtable : nullptr, backend, load_status, report,
                       hangups.ok() ? hangups->get() : nullptr, close_watchdog);
  const int code = server.Run();
  // Session threads may still be inside vendor code: leave without running
  // static destructors under them.
  std::fflush(nullptr);
  ExitProcess(code);
}

}  // namespace
}  // namespace codecvisor::runner

int main(int argc, char** argv) { return codecvisor::runner::Main(argc, argv); }
