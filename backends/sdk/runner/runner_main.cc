// codecvisor-backend: the trusted runner. The host starts it with the control
// channel on descriptors 3 and 4; it loads the vendor library named on its
// command line and serves the host until the host hangs up.
//
// Exit codes: 0 normal shutdown; 2 bad command line or control channel;
// 3 the backend failed to load or init (reported over the channel first);
// 4 the control channel broke.

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "backends/sdk/runner/abi_convert.h"
#include "backends/sdk/runner/backend_library.h"
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
absl::Status CompleteSandbox(const std::multimap<std::string, std::string>& all,
                             std::map<std::string, std::string>& flags, ipc::HelloReply* report) {
  RunnerSandbox sandbox;
  for (auto [it, end] = all.equal_range(kFlagReadPath); it != end; ++it) sandbox.read_paths.push_back(it->second);
  for (auto [it, end] = all.equal_range(kFlagDevice); it != end; ++it) sandbox.devices.push_back(it->second);
  if (flags.count(kFlagLibraryFd)) sandbox.library_fd = std::atoi(flags[kFlagLibraryFd].c_str());
  const std::string landlock = flags.count(kFlagLandlock) ? flags[kFlagLandlock] : "require";
  if (landlock != "off") {
    absl::Status s = ApplyLandlock(sandbox);
    if (s.ok()) {
      report->sandbox_landlock_abi = static_cast<uint32_t>(LandlockAbi());
    } else if (landlock == "require") {
      return absl::FailedPreconditionError(absl::StrCat("sandbox: Landlock: ", s.message(),
                                                        "; set [sandbox] allow_degraded = true to run without it"));
    } else {
      std::fprintf(stderr, "codecvisor-backend: WARNING: running without Landlock: %s\n",
                   std::string(s.message()).c_str());
    }
  }
  if (flags[kFlagSeccomp] != "off") {
    absl::Status s = ApplySeccomp(flags[kFlagSeccomp] == "log" ? SeccompMode::kLog : SeccompMode::kEnforce);
    if (!s.ok()) return absl::FailedPreconditionError(absl::StrCat("sandbox: seccomp: ", s.message()));
    report->sandbox_seccomp = true;
  }
  return absl::OkStatus();
}

int Main(int argc, char** argv) {
  std::multimap<std::string, std::string> all;
  for (int i = 1; i + 1 < argc; i += 2) all.emplace(argv[i], argv[i + 1]);
  std::map<std::string, std::string> flags(all.begin(), all.end());
  const std::string name = flags[kFlagName];
  const std::string library = flags[kFlagLibrary];
  const std::string entry = flags.count(kFlagEntry) ? flags[kFlagEntry] : CODECVISOR_BACKEND_ENTRY;
  if (name.empty() || library.empty() || argc % 2 != 1) {
    std::fprintf(stderr, "usage: codecvisor-backend --name NAME --library PATH [--entry SYMBOL] [--config TEXT]\n"
                         "(started by the codecvisor host with its control channel on fds 3 and 4)\n");
    return 2;
  }
  absl::StatusOr<std::unique_ptr<ipc::BackendChannel>> control =
      ipc::BackendChannel::Attach({ipc::UniqueFd(kControlMemfdFd), ipc::UniqueFd(kControlSocketFd)});
  if (!control.ok()) {
    std::fprintf(stderr, "codecvisor-backend: control channel: %s\n", control.status().ToString().c_str());
    return 2;
  }

  // Before any thread starts, so that all inherit it (time_slice.h). Only a
  // scheduling preference: a kernel that refuses leaves the runner as it was.
  (void)LengthenTimeSlice(2);
  InstallCrashHintHandlers((*control)->header());
  if (flags[kFlagBacktrace] == "1") {
    // Before the sandbox: opens our own executable and loads the unwinder.
    const int library_fd = flags.count(kFlagLibraryFd) ? std::atoi(flags[kFlagLibraryFd].c_str()) : -1;
    PrepareCrashBacktrace(name, library_fd, library_fd >= 0 ? absl::StrCat("/proc/self/fd/", library_fd) : library,
                          library);
  }
  // Past RLIMIT_FSIZE (set by the host), a write to stderr should fail, not
  // kill the backend.
  signal(SIGXFSZ, SIG_IGN);
  const cv_backend_v1* vtable = nullptr;
  cv_backend* backend = nullptr;
  ipc::HelloReply report;
  absl::Status load_status = CompleteSandbox(all, flags, &report);
  const std::string open_path =
      flags.count(kFlagLibraryFd) ? absl::StrCat("/proc/self/fd/", flags[kFlagLibraryFd]) : library;
  absl::StatusOr<LoadedBackend> loaded =
      load_status.ok() ? LoadBackendLibrary(open_path, library, entry, name) : load_status;
  if (!loaded.ok()) {
    load_status = loaded.status();
  } else {
    vtable = loaded->table;
    cv_error error{};
    VendorCall call((*control)->header());
    cv_status st = vtable->create(flags[kFlagConfig].c_str(), &backend, &error);
    if (st != CV_OK) {
      absl::Status why = VendorError(st, error);
      load_status = absl::Status(why.code(), absl::StrCat("init failed: ", why.message()));
    }
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
  const std::string prefix = absl::StrCat("backend '", name, "': ");
  if (!load_status.ok()) load_status = absl::Status(load_status.code(), prefix + std::string(load_status.message()));
  ControlServer server(*std::move(control), name, load_status.ok() ? vtable : nullptr, backend, load_status,
                       report, hangups.ok() ? hangups->get() : nullptr);
  const int code = server.Run();
  // Session threads may still be inside vendor code: leave without running
  // static destructors under them.
  std::fflush(nullptr);
  ExitProcess(code);
}

}  // namespace
}  // namespace codecvisor::runner

int main(int argc, char** argv) { return codecvisor::runner::Main(argc, argv); }
