#include "core/backend_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "backends/sdk/codecvisor_backend.h"
#include "backends/sdk/runner/runner_args.h"
#include "core/backend_output.h"
#include "core/file_trust.h"
#include "core/loader_folders.h"
#include "core/read_path_policy.h"
#include "ipc/region.h"

namespace codecvisor {
namespace {

using ipc::Clock;

// Control-channel geometry: no arena; a small request ring, and a response
// ring whose messages (half the ring) hold the longest open answer: 1024
// streams with 63-character codec names are about 100 KB
// (host_synthetic_test AFileWithTheMostStreamsOpens). Its pages become
// resident as answers go round it: 256 KiB at most, per backend.
constexpr ipc::Geometry kControlGeometry{16 << 10, 256 << 10, 0, 0};
constexpr auto kExitGrace = std::chrono::milliseconds(500);
// How long a reaped child's output may take to reach the host: its pipe
// ends at once unless a process it left behind (degraded sandbox, no pid
// namespace) still holds it.
constexpr auto kOutputGrace = std::chrono::milliseconds(1000);

absl::Status Prefixed(const absl::Status& s, absl::string_view prefix) {
  return absl::Status(s.code(), absl::StrCat(prefix, s.message()));
}

}  // namespace

namespace {

// Whether this process's user is held to a limit of processes and threads
// that its backends count against (RLIMIT_NPROC): never root's, whose
// backends' user namespaces are made without one. The suites, run as
// root, stand for another user with CODECVISOR_TEST_USER_THREAD_LIMIT=1.
bool UserHasThreadLimit() {
  if (const char* test = std::getenv("CODECVISOR_TEST_USER_THREAD_LIMIT"); test != nullptr && test[0] == '1') {
    return true;
  }
  rlimit limit{};
  return geteuid() != 0 && getrlimit(RLIMIT_NPROC, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY;
}

}  // namespace

absl::Status FromWireError(const ipc::Error& error) {
  absl::StatusCode code = absl::StatusCode::kUnknown;
  switch (error.code) {
    case ipc::ErrorCode::kInvalidArgument:
      code = absl::StatusCode::kInvalidArgument;
      break;
    case ipc::ErrorCode::kOutOfRange:
      code = absl::StatusCode::kOutOfRange;
      break;
    case ipc::ErrorCode::kNotFound:
      code = absl::StatusCode::kNotFound;
      break;
    case ipc::ErrorCode::kCorruptData:
      code = absl::StatusCode::kDataLoss;
      break;
    case ipc::ErrorCode::kUnsupported:
      code = absl::StatusCode::kUnimplemented;
      break;
    case ipc::ErrorCode::kResourceExhausted:
      code = absl::StatusCode::kResourceExhausted;
      break;
    case ipc::ErrorCode::kInternal:
      code = absl::StatusCode::kInternal;
      break;
    case ipc::ErrorCode::kNativeChanged:  // handled by VideoDecoder where it may come
      code = absl::StatusCode::kDataLoss;
      break;
    case ipc::ErrorCode::kNoThreadFree:
      // The caller's user's shortage, which no replacement cures, if that
      // user has a limit: the backend says so from inside the sandbox, and a
      // plugin could say it to dodge the blame. Root's processes, and a
      // user without a limit, leave only the backend's own.
      if (UserHasThreadLimit()) {
        return UsersThreadShortage(absl::ResourceExhaustedError(ReplaceUnsafeForTerminal(error.message)));
      }
      return absl::ResourceExhaustedError(
          absl::StrCat("the backend reports a thread refused at its user's limit, which this host's user does not "
                       "have (root, or no `ulimit -u`): its own shortage (",
                       ReplaceUnsafeForTerminal(error.message), ")"));
    case ipc::ErrorCode::kNoDescriptorFree:
      // The sessions open in it: the caller's to close (VideoDecoder
      // replaces a backend short with none open: its plugin holds them).
      return BackendDescriptorShortage(absl::FailedPreconditionError(ReplaceUnsafeForTerminal(error.message)));
    case ipc::ErrorCode::kProtocolMismatch:
      code = absl::StatusCode::kFailedPrecondition;
      break;
    case ipc::ErrorCode::kUnknown:
      break;
  }
  // The plugin wrote it: no terminal control reaches whoever prints it.
  return absl::Status(code, ReplaceUnsafeForTerminal(error.message));
}

BackendProcess::BackendProcess(BackendManifest manifest, std::shared_ptr<ProcessLauncher> launcher,
                               ChildProcess child, std::unique_ptr<ipc::HostChannel> control)
    : manifest_(std::move(manifest)),
      launcher_(std::move(launcher)),
      child_(std::move(child)),
      control_(std::move(control)),
      control_region_(control_->shared_region()) {}

absl::StatusOr<std::unique_ptr<BackendProcess>> BackendProcess::Start(const BackendManifest& manifest,
                                                                      const InstallLayout& layout,
                                                                      std::shared_ptr<ProcessLauncher> launcher,
                                                                      const SpawnOptions& spawn,
                                                                      ipc::Deadline deadline) {
  const std::string where = absl::StrCat("backend '", manifest.name, "' (", manifest.path, "): ");
  auto created = ipc::HostChannel::Create(kControlGeometry);
  if (!created.ok()) {
    return MaybeHostShortage(Prefixed(created.status(), where));
  }
  std::unique_ptr<ipc::HostChannel> control = std::move(created->first);
  ipc::PeerEnds ends = std::move(created->second);

  ipc::UniqueFd devnull(open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!devnull.valid()) return MaybeHostShortage(Prefixed(ipc::ErrnoStatus("open(/dev/null)"), where));
  // The host opens the runner and the library: the child may run as nobody
  // and need not reach their paths. The runner applies half the sandbox
  // (Landlock, seccomp): one another user could replace would leave it out.
  if (absl::Status s = CheckOnlyOwnerCanChange(layout.runner, "runner"); !s.ok() && !absl::IsNotFound(s)) {
    return Prefixed(s, where);
  }
  ipc::UniqueFd runner(open(layout.runner.c_str(), O_RDONLY | O_CLOEXEC));
  if (!runner.valid()) {
    return MaybeHostShortage(Prefixed(ipc::ErrnoStatus(absl::StrCat("open(", layout.runner, ")")), where));
  }
  // Checked when the manifest was read, and again now: the library is
  // opened by its path at each start.
  // A library that is not there is not opened: another user could create
  // a missing folder on its path (in /tmp) between the check and the open.
  if (absl::Status s = CheckOnlyOwnerCanChange(manifest.library, "library"); !s.ok()) {
    if (absl::IsNotFound(s)) {
      // Its message names the library again: say only what dlopen would.
      return Prefixed(absl::NotFoundError(absl::StrCat("library ", manifest.library,
                                                       ": cannot open shared object file: ", std::strerror(ENOENT),
                                                       "; reinstall the plugin (a Python package ships it only if its "
                                                       "package data lists it, e.g. [tool.setuptools.package-data])")),
                      where);
    }
    return Prefixed(s, where);
  }
  // O_NONBLOCK: a FIFO in the library's place would block the open, and
  // with it the host, for good; only a regular file is taken.
  ipc::UniqueFd library(open(manifest.library.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!library.valid() && (errno == EMFILE || errno == ENFILE || errno == ENOMEM)) {
    return HostShortage(Prefixed(ipc::ErrnoStatus(absl::StrCat("open(", manifest.library, ")")), where));
  }
  if (!library.valid()) {
    return Prefixed(absl::NotFoundError(absl::StrCat("library ", manifest.library, ": cannot open shared object file: ",
                                                     std::strerror(errno), "; reinstall the plugin")),
                    where);
  }
  struct stat library_stat {};
  if (fstat(library.get(), &library_stat) != 0 || !S_ISREG(library_stat.st_mode)) {
    return Prefixed(absl::NotFoundError(absl::StrCat("library ", manifest.library,
                                                     " is not a regular file (a FIFO, a device or a folder); "
                                                     "reinstall the plugin")),
                    where);
  }
  // The child reads it as a file; the flag is the open's alone.
  fcntl(library.get(), F_SETFL, fcntl(library.get(), F_GETFL) & ~O_NONBLOCK);
  const bool allow_degraded = spawn.allow_degraded || manifest.sandbox.allow_degraded;
  LaunchSpec spec;
  spec.path = layout.runner;
  spec.exec_fd = runner.get();
  runner::RunnerArgs args;
  args.name = manifest.name;
  args.library = manifest.library;
  args.entry = manifest.entry;
  args.library_fd = runner::kLibraryFd;
  // [config] may hold what the vendor keeps from other users (a licence
  // key): in a sealed memfd, not on the command line `ps` shows.
  ipc::UniqueFd config;
  if (!manifest.config.empty()) {
    absl::StatusOr<ipc::UniqueFd> sealed = ipc::SealedMemfd("codecvisor-config", manifest.config, "[config]");
    if (!sealed.ok()) return MaybeHostShortage(Prefixed(sealed.status(), where));
    config = *std::move(sealed);
    args.config_fd = runner::kConfigFd;
  }
  args.read_paths = manifest.sandbox.read_paths;
  // Landlock's grant of the loader's registered folders, which the empty
  // root binds (HostSandbox).
  args.read_paths.insert(args.read_paths.end(), LoaderFolders().begin(), LoaderFolders().end());
  args.devices = manifest.sandbox.devices;
  args.landlock = !spawn.sandbox    ? runner::RunnerArgs::Landlock::kOff
                  : allow_degraded ? runner::RunnerArgs::Landlock::kTry
                                   : runner::RunnerArgs::Landlock::kRequire;
  // CODECVISOR_SECCOMP=log: calls outside the allow list are logged by the
  // kernel instead of ending the backend (backends/sdk/README.md: finding
  // the syscalls a plugin needs).
  const char* seccomp_mode = std::getenv(runner::kSeccompEnv);
  const bool seccomp_log = spawn.sandbox && seccomp_mode != nullptr && std::string(seccomp_mode) == "log";
  if (seccomp_log) {
    std::fprintf(stderr,
                 "codecvisor: WARNING: backend '%s': seccomp only logs (%s=log): a call outside its allow list is "
                 "logged by the kernel and goes ahead\n",
                 manifest.name.c_str(), runner::kSeccompEnv);
  }
  args.seccomp = !spawn.sandbox ? runner::RunnerArgs::Seccomp::kOff
                 : seccomp_log  ? runner::RunnerArgs::Seccomp::kLog
                                : runner::RunnerArgs::Seccomp::kRequire;
  // A debugging aid for vendors (backends/sdk/README.md): the runner writes
  // the crashing thread's backtrace to its stderr, which is ours.
  args.backtrace = BacktraceEnabled();
  args.close_timeout_ms = std::chrono::milliseconds(manifest.close_timeout).count();
  // A clean environment: no secret of the host's reaches plugin code.
  spec.env = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8"};
  // Except the log level the user asked backends for (the CLI's --loglevel;
  // backends/cpu/ffmpeg_log.h): a level name, not a secret.
  if (const char* level = std::getenv(CODECVISOR_BACKEND_LOG_LEVEL_ENV); level != nullptr) {
    spec.env.push_back(std::string(CODECVISOR_BACKEND_LOG_LEVEL_ENV "=") + level);
  }
  // The backend's stdout and stderr are a pipe the host reads and forwards
  // to its own stderr (core/backend_output.h): the child never holds the
  // host's terminal or log, nor writes into a frame stream on stdout.
  int output_pipe[2];
  if (pipe2(output_pipe, O_CLOEXEC) != 0) return MaybeHostShortage(Prefixed(ipc::ErrnoStatus("pipe2"), where));
  ipc::UniqueFd output_write(output_pipe[1]);
  absl::StatusOr<std::unique_ptr<BackendOutput>> output =
      BackendOutput::Start(manifest.name, ipc::UniqueFd(output_pipe[0]), STDERR_FILENO);
  if (!output.ok()) return HostShortage(Prefixed(output.status(), where));
  spec.fds = {{devnull.get(), 0},
              {output_write.get(), 1},
              {output_write.get(), 2},
              {ends.memfd.get(), runner::kControlMemfdFd},
              {ends.socket.get(), runner::kControlSocketFd},
              {library.get(), runner::kLibraryFd}};
  if (config.valid()) spec.fds.push_back({config.get(), runner::kConfigFd});
  EngagedSandbox engaged;
  std::unique_ptr<BackendCgroup> cgroup;
  if (spawn.sandbox) {
    // Checked when the manifest was read, and again now: what is at a
    // device's path is what gets bound.
    if (absl::Status s = CheckDeviceNodes(manifest.sandbox.devices); !s.ok()) {
      return MaybeHostShortage(Prefixed(s, where));
    }
    if (absl::Status s = CheckReadPaths(manifest.sandbox.read_paths, manifest.path); !s.ok()) {
      return MaybeHostShortage(Prefixed(s, where));
    }
    spec.sandbox = HostSandbox(manifest.sandbox);
    absl::StatusOr<std::unique_ptr<BackendCgroup>> made = MakeCgroup(manifest, allow_degraded);
    if (!made.ok()) return MaybeHostShortage(Prefixed(made.status(), where));
    cgroup = *std::move(made);
    if (cgroup != nullptr) {
      spec.sandbox.cgroup_procs = cgroup->procs_files();
      spec.sandbox.cgroup_version = cgroup->version();
      engaged.cgroup = absl::StrCat("cgroup v", cgroup->version(), " (memory ", manifest.sandbox.memory_mb,
                                    " MiB, tasks ", BackendTaskLimit(manifest.sandbox.threads), ")");
    }
  }
  // A memfd's pages are charged to no mapping and no RSS: only a memory
  // cgroup bounds what a plugin holds in memfds (RunnerArgs::memfd).
  args.memfd = !spawn.sandbox || cgroup != nullptr;
  spec.argv = args.ToArgv();
  if (!spawn.sandbox) {
    std::fprintf(stderr, "codecvisor: WARNING: backend '%s' runs WITHOUT a sandbox (sandbox disabled by the host)\n",
                 manifest.name.c_str());
  }
  absl::StatusOr<ChildProcess> child = launcher->Launch(spec);
  // Out of processes, threads or descriptors (the host's limits, which the
  // child has until it execs): no weaker sandbox would start either.
  if (!child.ok() && absl::IsResourceExhausted(child.status())) return HostShortage(Prefixed(child.status(), where));
  // A kernel without what every backend needs (a pidfd): no weaker sandbox
  // would start, and none is worth advising.
  if (!child.ok() && IsKernelTooOld(child.status())) return Prefixed(child.status(), where);
  if (!child.ok() && spawn.sandbox && allow_degraded && !spec.sandbox.empty_root.steps.empty()) {
    // A kernel that gives user namespaces but no mounts in them (some
    // hardened configurations): the host's filesystem, Landlock-checked.
    // Said only if that starts: where namespaces are refused too, the
    // warning below says what the backend lacks.
    const std::string why = std::string(child.status().message());
    spec.sandbox.empty_root = {};
    child = launcher->Launch(spec);
    if (child.ok()) {
      std::fprintf(stderr,
                   "codecvisor: WARNING: backend '%s': no empty root (%s); running with a DEGRADED sandbox as "
                   "allowed by its manifest or the host\n",
                   manifest.name.c_str(), why.c_str());
    }
  }
  if (!child.ok() && spawn.sandbox && allow_degraded && !absl::IsResourceExhausted(child.status())) {
    const std::string why = std::string(child.status().message());
    DropNamespaces(&spec.sandbox, cgroup != nullptr);
    child = launcher->Launch(spec);
    if (child.ok()) {
      std::fprintf(stderr,
                   "codecvisor: WARNING: backend '%s': no namespaces (%s); running with a DEGRADED sandbox as "
                   "allowed by its manifest or the host\n",
                   manifest.name.c_str(), why.c_str());
    }
  }
  if (!child.ok() && absl::IsResourceExhausted(child.status())) return HostShortage(Prefixed(child.status(), where));
  if (!child.ok()) {
    if (spawn.sandbox && !allow_degraded) {
      return Prefixed(
          absl::Status(child.status().code(), absl::StrCat(child.status().message(), kDegradedSandboxAdvice)), where);
    }
    return Prefixed(child.status(), where);
  }
  engaged.namespaces = spec.sandbox.namespaces;
  engaged.empty_root = spec.sandbox.namespaces && !spec.sandbox.empty_root.steps.empty();
  engaged.unprivileged_ids = child->unprivileged_ids;
  engaged.rlimits = !spec.sandbox.rlimits.empty();
  engaged.no_new_privs = spec.sandbox.no_new_privs;
  ends = {};  // the child has its copies now
  output_write.reset();

  // From here on the process object stops and reaps the child on any
  // failure (its destructor).
  const int child_pidfd = child->pidfd.get();
  ipc::HostChannel* control_channel = control.get();
  std::unique_ptr<BackendProcess> process(
      new BackendProcess(manifest, std::move(launcher), *std::move(child), std::move(control)));
  process->output_ = *std::move(output);
  process->cgroup_ = std::move(cgroup);
  const int dup = fcntl(child_pidfd, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) return MaybeHostShortage(Prefixed(ipc::ErrnoStatus("dup(pidfd)"), where));
  control_channel->WatchProcess(ipc::UniqueFd(dup));  // no other thread knows the process yet
  if (absl::Status s = process->Handshake(deadline); !s.ok()) return Prefixed(s, where);
  engaged.landlock_abi = process->hello_.sandbox_landlock_abi;
  engaged.seccomp = process->hello_.sandbox_seccomp;
  engaged.seccomp_log_only = seccomp_log;
  process->sandbox_ = engaged;
  return process;
}

void BackendProcess::Shutdown() {
  {
    // An open in progress holds mu_ for up to its open timeout: kill the
    // child rather than wait, and that open fails within a liveness slice.
    bool killed = false;
    while (!mu_.try_lock()) {
      if (!killed) Kill();
      killed = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    MutexLock lock(&mu_, std::adopt_lock);
    control_.reset();  // hang-up: the runner exits on its own
  }
  if (!Reap(Clock::now() + kExitGrace).ok()) {
    Kill();
    if (!Reap(Clock::now() + std::chrono::seconds(5)).ok()) return;
  }
  // Now, not when this object goes: a decoder may hold it past its host,
  // and a process that exits meanwhile would leave the cgroup behind.
  if (cgroup_ != nullptr) cgroup_->Remove();
}

bool BackendProcess::Exited() const {
  pollfd p{child_.pidfd.get(), POLLIN, 0};
  return poll(&p, 1, 0) == 1;
}

void BackendProcess::Kill() {
  if (child_.pid > 0) launcher_->Signal(child_, SIGKILL);
}

absl::StatusOr<ExitStatus> BackendProcess::Reap(ipc::Deadline deadline) {
  MutexLock lock(&reap_mu_);
  if (exit_.has_value()) return *exit_;
  if (child_.pid <= 0) return absl::FailedPreconditionError("backend process was never started");
  absl::StatusOr<ExitStatus> exit = launcher_->Wait(child_, deadline);
  if (!exit.ok()) return exit.status();
  exit_ = *exit;
  // What it wrote before it died reaches the host's stderr before anyone
  // hears of the death (a crash backtrace, a vendor's last words).
  if (output_ != nullptr) output_->Finish(kOutputGrace);
  return *exit_;
}

absl::Status BackendProcess::Ping(ipc::Deadline deadline) {
  if (!mu_.try_lock()) return absl::OkStatus();
  MutexLock lock(&mu_, std::adopt_lock);
  bool channel_failure;
  absl::StatusOr<ipc::Response> reply = Call({0, ipc::Ping{next_id_}}, deadline, &channel_failure);
  if (!reply.ok()) return reply.status();
  if (!std::holds_alternative<ipc::Pong>(reply->body)) {
    return absl::DataLossError(absl::StrCat("backend answered ping with ", ipc::KindName(*reply)));
  }
  return absl::OkStatus();
}

absl::StatusOr<ipc::Response> BackendProcess::Call(ipc::Request request, ipc::Deadline deadline,
                                                   bool* channel_failure) {
  *channel_failure = true;
  if (control_ == nullptr) return absl::UnavailableError("backend was shut down");
  request.id = next_id_++;
  if (absl::Status s = control_->Send(request, deadline); !s.ok()) return s;
  absl::StatusOr<ipc::Incoming> in = control_->Receive(deadline);
  if (!in.ok()) return in.status();
  if (in->response.id != request.id) {
    return absl::DataLossError(absl::StrCat("backend answered request ", in->response.id, " to request ",
                                            request.id));
  }
  if (auto* error = std::get_if<ipc::Error>(&in->response.body)) {
    *channel_failure = false;
    return FromWireError(*error);
  }
  return std::move(in->response);
}

absl::Status BackendProcess::Handshake(ipc::Deadline deadline) {
  MutexLock lock(&mu_);
  bool channel_failure;
  absl::StatusOr<ipc::Response> reply =
      Call({0, ipc::Hello{ipc::kProtocolVersion, "codecvisor 0.1"}}, deadline, &channel_failure);
  if (!reply.ok()) {
    if (absl::IsUnavailable(reply.status())) {
      // The runner died before answering: say how.
      MutexLock reap(&reap_mu_);
      absl::StatusOr<ExitStatus> exit = launcher_->Wait(child_, Clock::now() + kExitGrace);
      if (exit.ok()) {
        exit_ = *exit;
        const ipc::CrashHints hints = ControlCrashHints();
        // Its stderr, forwarded, says which flag; a runner from another build is the usual cause.
        const bool rejected = !exit->signaled && exit->code == runner::ExitCode(runner::RunnerExit::kBadInvocation);
        const bool channel_closed =
            !exit->signaled && exit->code == runner::ExitCode(runner::RunnerExit::kPluginClosedChannel);
        return absl::UnavailableError(absl::StrCat(
            "runner ", DescribeExit(*exit, hints.any_fault_signal(), hints.violation_syscall), " while starting",
            rejected ? " (it rejected its command line; reinstall codecvisor so that host and runner match)" : "",
            channel_closed ? " (the plugin closed or replaced the runner's control channel, descriptors 3 and 4, "
                             "while it loaded: a plugin must close only descriptors it opened)"
                           : "",
            PluginExitWhileStarting(*exit, hints),
            CrashAdvice(*exit, hints.any_fault_signal(), hints.violation_syscall, BacktraceEnabled())));
      }
    }
    // The runner answers once it has sandboxed itself, loaded the plugin's
    // library (running its constructors) and made the backend (create).
    if (absl::IsDeadlineExceeded(reply.status())) {
      return absl::DeadlineExceededError(
          absl::StrCat("the backend did not finish starting (sandboxing, loading the plugin's library and running its ",
                       "constructors, the plugin's create): ", reply.status().message(),
                       "; a plugin that needs longer sets [restart] start_timeout_seconds in its manifest"));
    }
    return reply.status();
  }
  auto* hello = std::get_if<ipc::HelloReply>(&reply->body);
  if (hello == nullptr) {
    return absl::DataLossError(absl::StrCat("backend answered hello with ", ipc::KindName(*reply)));
  }
  if (hello->protocol_version != ipc::kProtocolVersion || hello->backend_name != manifest_.name) {
    return absl::FailedPreconditionError(absl::StrCat("backend says it is '", ReplaceUnsafeForTerminal(hello->backend_name),
                                                      "' speaking protocol ", hello->protocol_version));
  }
  hello_ = *hello;
  // Shown by `backends`, `doctor` and the conformance report: the plugin's own text.
  hello_.backend_version = ReplaceUnsafeForTerminal(hello_.backend_version);
  for (std::string& device : hello_.devices) device = ReplaceUnsafeForTerminal(device);
  return absl::OkStatus();
}

}  // namespace codecvisor
