#include "tools/bench/restart_bench.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/host.h"
#include "core/restart_policy.h"
#include "tools/bench/memory_usage.h"
#include "tools/bench/scratch_dir.h"
#include "tools/bench/stats.h"
#include "tools/bench/test_backend_library.h"
#include "tools/cli/json.h"

namespace codecvisor::bench {

using ::codecvisor::internal::Host;
using ::codecvisor::internal::HostOptions;
using ::codecvisor::internal::BackendStatus;
using ::codecvisor::internal::VideoDecoder;
using ::codecvisor::internal::DecoderOptions;
using ::codecvisor::internal::Frame;
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kDevice[] = "synthetic";
constexpr char kLibrary[] = "libcodecvisor_synthetic.so";
// The failover request: frames [0, kRequestFrames), the backend killed as
// the sink receives frame kKillAtFrame. Enough frames remain after it that
// the re-issued request still delivers some, whatever the dead backend had
// already put in the arena (at most arena_slots - 1 frames ahead).
constexpr int64_t kKillAtFrame = 5;
constexpr int64_t kRequestFrames = 20;
constexpr int kWarmSamples = 20;
constexpr auto kSpareWait = std::chrono::seconds(10);
constexpr double kDiscoveryTargetMs = 10;
constexpr double kWarmFailoverTargetMs = 5;
constexpr double kColdFailoverMarginMs = 10;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

void Progress(const std::string& line) {
  if (isatty(STDERR_FILENO)) std::fprintf(stderr, "bench restart: %s\n", line.c_str());
}

// What every measurement shares: the install layout, and the scratch folder
// with the synthetic backend's manifest, a synthetic video and the
// manifests for the discovery measurement.
struct Setup {
  InstallLayout layout;
  std::unique_ptr<ScratchDir> scratch;
  std::string manifest;
  std::string video;
  std::string discovery_dir;
};

// A manifest as backends/testing/synthetic.toml, with the library's path
// made absolute.
std::string ManifestText(const std::string& name, const std::string& library) {
  return absl::StrFormat("name = \"%s\"\ndevices = [\"%s\"]\nlibrary = \"%s\"\nentry = \"codecvisor_backend_v1\"\n"
                         "abi_version = 1\n",
                         name, name, library);
}

absl::StatusOr<Setup> Prepare(const RestartBenchOptions& o) {
  Setup s;
  absl::StatusOr<InstallLayout> layout = InstallLayout::Discover();
  if (!layout.ok()) return layout.status();
  s.layout = *layout;
  absl::StatusOr<std::string> library = FindTestBackendLibrary(kLibrary, o.synthetic_library, "--synthetic-library");
  if (!library.ok()) return library.status();
  absl::StatusOr<std::unique_ptr<ScratchDir>> scratch = ScratchDir::Create("bench-restart");
  if (!scratch.ok()) return scratch.status();
  s.scratch = *std::move(scratch);
  absl::StatusOr<std::string> manifest = s.scratch->WriteFile("synthetic.toml", ManifestText(kDevice, *library));
  if (!manifest.ok()) return manifest.status();
  s.manifest = *manifest;
  absl::StatusOr<std::string> video = s.scratch->WriteFile("clip.syn", "synthetic frames=1000 width=64 height=48 fps=25");
  if (!video.ok()) return video.status();
  s.video = *video;
  // Sound manifests naming a real library, so that discovery builds a
  // supervisor for each, as for an installed plugin.
  s.discovery_dir = s.scratch->File("backends");
  std::filesystem::create_directory(s.discovery_dir);
  for (int i = 0; i < o.manifests; ++i) {
    const std::string name = absl::StrFormat("bench_%03d", i);
    absl::StatusOr<std::string> written =
        s.scratch->WriteFile(absl::StrCat("backends/", name, ".toml"), ManifestText(name, *library));
    if (!written.ok()) return written.status();
  }
  return s;
}

// Options for a Host with the built-in backend only (the environment's
// search path ignored).
HostOptions BaseOptions(const Setup& s) {
  HostOptions options;
  options.layout = s.layout;
  options.discovery = DiscoveryOptions{{}, s.layout.builtin_dir, false};
  return options;
}

absl::StatusOr<std::unique_ptr<Host>> HostWithSynthetic(const Setup& s, HostOptions options) {
  absl::StatusOr<std::unique_ptr<Host>> host = Host::Create(std::move(options));
  if (!host.ok()) return host.status();
  if (absl::Status loaded = (*host)->LoadBackend(s.manifest); !loaded.ok()) return loaded;
  return host;
}

absl::StatusOr<std::unique_ptr<VideoDecoder>> OpenSynthetic(Host& host, const Setup& s) {
  DecoderOptions options;
  options.device = kDevice;
  return host.OpenDecoder(s.video, options);
}

absl::StatusOr<BackendStatus> SyntheticStatus(const Host& host) {
  for (BackendStatus& b : host.Backends()) {
    if (b.name == kDevice) return b;
  }
  return absl::NotFoundError("the synthetic backend is not registered");
}

// Host::Create with `manifests` manifests on the search path (0: the
// built-in one only); the Host is destroyed outside the timing.
absl::StatusOr<double> DiscoveryMs(const Setup& s, int manifests) {
  HostOptions options = BaseOptions(s);
  if (manifests > 0) options.discovery = DiscoveryOptions{{s.discovery_dir}, s.layout.builtin_dir, true};
  const auto start = Clock::now();
  absl::StatusOr<std::unique_ptr<Host>> host = Host::Create(options);
  const double ms = Ms(Clock::now() - start);
  if (!host.ok()) return host.status();
  const size_t found = (*host)->Backends().size();
  if (found != static_cast<size_t>(manifests) + 1) {
    return absl::InternalError(absl::StrCat("discovery found ", found, " backends, expected ", manifests + 1));
  }
  return ms;
}

// The first request on a fresh backend: OpenDecoder (spawn, sandbox,
// dlopen, handshake, open) and GetFrameAt(0).
absl::StatusOr<double> ColdSpawnMs(const Setup& s, bool sandbox) {
  HostOptions options = BaseOptions(s);
  options.supervision.spawn.sandbox = sandbox;
  absl::StatusOr<std::unique_ptr<Host>> host = HostWithSynthetic(s, options);
  if (!host.ok()) return host.status();
  const auto start = Clock::now();
  absl::StatusOr<std::unique_ptr<VideoDecoder>> decoder = OpenSynthetic(**host, s);
  if (!decoder.ok()) return decoder.status();
  absl::StatusOr<Frame> frame = (*decoder)->GetFrameAt(0);
  const double ms = Ms(Clock::now() - start);
  if (!frame.ok()) return frame.status();
  return ms;
}

absl::Status WaitForSpare(const Host& host) {
  const auto deadline = Clock::now() + kSpareWait;
  for (;;) {
    absl::StatusOr<BackendStatus> b = SyntheticStatus(host);
    if (!b.ok()) return b.status();
    if (b->warm_spare && b->state == "ready") return absl::OkStatus();
    if (Clock::now() > deadline) return absl::DeadlineExceededError("no warm spare became ready within 10 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

struct Failover {
  std::vector<double> samples_ms;
  std::vector<double> exit_ms;  // kill -> the killed child's pidfd readable
  double open_ms = 0;     // OpenDecoder on the running backend
  double request_ms = 0;  // GetFrameAt on an open decoder
};

// `crashes` times: a ForEachFrame over frames [0, kRequestFrames) whose
// sink, on frame kKillAtFrame, notes the time and SIGKILLs the backend
// (its pid from Host::Backends()). The sample ends at the first frame the
// re-issued request delivers, told apart from frames the dead backend had
// already sent by the decoder's retry count. A helper thread notes when the
// child has exited (its pidfd readable): how much of the failover is the
// dying itself. (Waiting for it in the sink instead would start the host's
// wait for the next frame just as the supervisor interrupts the channel, and
// ipc::WaitFor can miss an interrupt that lands during its spin, sleeping a
// whole kLivenessSlice of 10 ms: that would be measured, not the failover.)
// One kill per request, so no request is ever taken for poison; enough
// requests are served between kills to make the restart budget whole
// (RestartLimits::heal_after_successes), so every restart is immediate.
absl::StatusOr<Failover> MeasureFailover(const Setup& s, bool warm_spare, int crashes) {
  HostOptions options = BaseOptions(s);
  options.supervision.warm_spare = warm_spare;
  absl::StatusOr<std::unique_ptr<Host>> host = HostWithSynthetic(s, options);
  if (!host.ok()) return host.status();
  absl::StatusOr<std::unique_ptr<VideoDecoder>> decoder = OpenSynthetic(**host, s);
  if (!decoder.ok()) return decoder.status();
  Failover f;
  std::vector<double> open_ms, request_ms;
  for (int i = 0; i < kWarmSamples; ++i) {
    auto start = Clock::now();
    absl::StatusOr<std::unique_ptr<VideoDecoder>> other = OpenSynthetic(**host, s);
    if (!other.ok()) return other.status();
    open_ms.push_back(Ms(Clock::now() - start));
    start = Clock::now();
    absl::StatusOr<Frame> frame = (*decoder)->GetFrameAt(i);
    if (!frame.ok()) return frame.status();
    request_ms.push_back(Ms(Clock::now() - start));
  }
  f.open_ms = Median(open_ms);
  f.request_ms = Median(request_ms);

  for (int c = 0; c < crashes; ++c) {
    for (int i = 0; i < RestartLimits{}.heal_after_successes; ++i) {
      if (absl::StatusOr<Frame> frame = (*decoder)->GetFrameAt(i); !frame.ok()) return frame.status();
    }
    if (warm_spare) {
      if (absl::Status ready = WaitForSpare(**host); !ready.ok()) return ready;
    }
    absl::StatusOr<BackendStatus> backend = SyntheticStatus(**host);
    if (!backend.ok()) return backend.status();
    if (backend->state != "ready" || backend->pid <= 0) {
      return absl::InternalError(absl::StrCat("backend is ", backend->state, " before crash ", c + 1));
    }
    const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, backend->pid, 0));
    if (pidfd < 0) return absl::InternalError(absl::StrCat("pidfd_open(", backend->pid, ") failed"));
    // Another thread sees the exit, so that the host's own path is not
    // held up by looking.
    Clock::time_point exited_at;
    std::thread exit_watch([pidfd, &exited_at] {
      pollfd exited{pidfd, POLLIN, 0};
      poll(&exited, 1, 30'000);
      exited_at = Clock::now();
    });
    const uint64_t retries_before = (*decoder)->retries();
    Clock::time_point killed_at, recovered_at;
    bool killed = false, recovered = false;
    absl::Status s = (*decoder)->ForEachFrame({ipc::IndexRange{0, kRequestFrames, 1}}, [&](Frame frame) {
      if (!killed && frame.index() == kKillAtFrame) {
        killed_at = Clock::now();
        kill(backend->pid, SIGKILL);
        killed = true;
      } else if (killed && !recovered && (*decoder)->retries() > retries_before) {
        recovered_at = Clock::now();
        recovered = true;
      }
      return absl::OkStatus();
    });
    if (!killed) kill(backend->pid, SIGKILL);  // lets the exit watch end
    exit_watch.join();
    close(pidfd);
    if (!s.ok()) return s;
    if (!recovered) {
      return absl::InternalError(absl::StrCat("crash ", c + 1, ": the request was not re-issued after the kill"));
    }
    f.samples_ms.push_back(Ms(recovered_at - killed_at));
    f.exit_ms.push_back(Ms(exited_at - killed_at));
  }
  return f;
}

}  // namespace

absl::StatusOr<RestartBenchResult> RunRestartBench(const RestartBenchOptions& o) {
  absl::StatusOr<Setup> setup = Prepare(o);
  if (!setup.ok()) return setup.status();
  const Setup& s = *setup;

  ResidentMemory resident(o.host_resident_mb);
  if (resident.bytes() < (o.host_resident_mb << 20)) {
    return absl::ResourceExhaustedError(absl::StrCat("cannot make ", o.host_resident_mb, " MiB resident"));
  }
  std::vector<double> discovery, discovery_builtin, cold, cold_unsandboxed, rewrite, rewrite_quiet;
  Progress("discovery and cold starts");
  for (int round = 0; round < o.rounds; ++round) {
    absl::StatusOr<double> d = DiscoveryMs(s, o.manifests);
    if (!d.ok()) return d.status();
    discovery.push_back(*d);
    absl::StatusOr<double> b = DiscoveryMs(s, 0);
    if (!b.ok()) return b.status();
    discovery_builtin.push_back(*b);
    absl::StatusOr<double> c = ColdSpawnMs(s, true);
    if (!c.ok()) return c.status();
    cold.push_back(*c);
    if (resident.bytes() > 0) {
      rewrite.push_back(resident.RewriteMs());
      rewrite_quiet.push_back(resident.RewriteMs());  // the same again: no start between
    }
    absl::StatusOr<double> u = ColdSpawnMs(s, false);
    if (!u.ok()) return u.status();
    cold_unsandboxed.push_back(*u);
  }
  Progress(absl::StrCat(o.crashes, " crashes without a warm spare"));
  absl::StatusOr<Failover> failover_cold = MeasureFailover(s, false, o.crashes);
  if (!failover_cold.ok()) return failover_cold.status();
  Progress(absl::StrCat(o.crashes, " crashes with a warm spare"));
  absl::StatusOr<Failover> failover_warm = MeasureFailover(s, true, o.crashes);
  if (!failover_warm.ok()) return failover_warm.status();

  RestartBenchResult r;
  r.manifests = o.manifests;
  r.rounds = o.rounds;
  r.crashes = o.crashes;
  r.discovery_ms_100 = Median(discovery);
  r.discovery_ms_builtin = Median(discovery_builtin);
  r.cold_spawn_ms = Median(cold);
  r.cold_spawn_ms_unsandboxed = Median(cold_unsandboxed);
  r.host_resident_mb = o.host_resident_mb;
  if (!rewrite.empty()) {
    r.resident_rewrite_ms = Median(rewrite);
    r.resident_rewrite_ms_quiet = Median(rewrite_quiet);
  }
  r.warm_open_ms = failover_cold->open_ms;
  r.warm_request_ms = failover_cold->request_ms;
  r.failover_ms_cold_p50 = Percentile(failover_cold->samples_ms, 50);
  r.failover_ms_cold_p95 = Percentile(failover_cold->samples_ms, 95);
  r.failover_ms_warm_p50 = Percentile(failover_warm->samples_ms, 50);
  r.failover_ms_warm_p95 = Percentile(failover_warm->samples_ms, 95);
  std::vector<double> exits = failover_cold->exit_ms;
  exits.insert(exits.end(), failover_warm->exit_ms.begin(), failover_warm->exit_ms.end());
  r.backend_exit_ms_p50 = Percentile(exits, 50);
  r.targets = {
      {"discovery_ms_100", absl::StrFormat("<= %g", kDiscoveryTargetMs), r.discovery_ms_100 <= kDiscoveryTargetMs},
      {"failover_ms_warm_p50", absl::StrFormat("<= %g", kWarmFailoverTargetMs),
       r.failover_ms_warm_p50 <= kWarmFailoverTargetMs},
      {"failover_ms_cold_p50", absl::StrFormat("<= cold_spawn_ms + %g", kColdFailoverMarginMs),
       r.failover_ms_cold_p50 <= r.cold_spawn_ms + kColdFailoverMarginMs},
  };
  return r;
}

std::string RestartBenchResult::ToJson() const {
  cli::JsonWriter w;
  w.BeginObject();
  w.Key("manifests").Int(manifests).Key("rounds").Int(rounds).Key("crashes").Int(crashes);
  w.Key("discovery_ms_100").Double(Rounded(discovery_ms_100, 2));
  w.Key("discovery_ms_builtin").Double(Rounded(discovery_ms_builtin, 2));
  w.Key("cold_spawn_ms").Double(Rounded(cold_spawn_ms, 2));
  w.Key("cold_spawn_ms_unsandboxed").Double(Rounded(cold_spawn_ms_unsandboxed, 2));
  w.Key("warm_open_ms").Double(Rounded(warm_open_ms, 3));
  w.Key("warm_request_ms").Double(Rounded(warm_request_ms, 3));
  w.Key("backend_exit_ms_p50").Double(Rounded(backend_exit_ms_p50, 2));
  w.Key("failover_ms_cold_p50").Double(Rounded(failover_ms_cold_p50, 2));
  w.Key("failover_ms_cold_p95").Double(Rounded(failover_ms_cold_p95, 2));
  w.Key("failover_ms_warm_p50").Double(Rounded(failover_ms_warm_p50, 2));
  w.Key("failover_ms_warm_p95").Double(Rounded(failover_ms_warm_p95, 2));
  w.Key("host_resident_mb").Int(static_cast<int64_t>(host_resident_mb));
  w.Key("resident_rewrite_ms").Double(Rounded(resident_rewrite_ms, 2));
  w.Key("resident_rewrite_ms_quiet").Double(Rounded(resident_rewrite_ms_quiet, 2));
  WriteTargets(w, targets);
  w.EndObject();
  return w.str();
}

std::string RestartBenchResult::ToText() const {
  std::string out;
  absl::StrAppendFormat(&out, "discovery, %d manifests: %.2f ms %s; built-in only: %.2f ms (median of %d)\n",
                        manifests, discovery_ms_100, TargetNote(targets, "discovery_ms_100"), discovery_ms_builtin,
                        rounds);
  absl::StrAppendFormat(&out, "cold start (OpenDecoder + GetFrameAt(0)): sandboxed %.2f ms, no sandbox %.2f ms\n",
                        cold_spawn_ms, cold_spawn_ms_unsandboxed);
  absl::StrAppendFormat(&out, "running backend: OpenDecoder %.3f ms, GetFrameAt %.3f ms\n", warm_open_ms,
                        warm_request_ms);
  absl::StrAppendFormat(&out, "failover, %d crashes (SIGKILL mid-request -> first re-issued frame):\n", crashes);
  absl::StrAppendFormat(&out, "  the killed child's exit (SIGKILL -> pidfd readable): p50 %.2f ms\n",
                        backend_exit_ms_p50);
  absl::StrAppendFormat(&out, "  cold: p50 %.2f ms, p95 %.2f ms %s\n", failover_ms_cold_p50, failover_ms_cold_p95,
                        TargetNote(targets, "failover_ms_cold_p50"));
  absl::StrAppendFormat(&out, "  warm spare: p50 %.2f ms, p95 %.2f ms %s\n", failover_ms_warm_p50,
                        failover_ms_warm_p95, TargetNote(targets, "failover_ms_warm_p50"));
  if (host_resident_mb > 0) {
    absl::StrAppendFormat(&out,
                          "this process's %d MiB resident, one byte a page written: %.2f ms after a cold start, "
                          "%.2f ms with none since\n",
                          host_resident_mb, resident_rewrite_ms, resident_rewrite_ms_quiet);
  }
  return out;
}

}  // namespace codecvisor::bench
