#include "tools/bench/soak_bench.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/host.h"
#include "base/mutex.h"
#include "tools/bench/ffmpeg_cli.h"
#include "tools/bench/memory_usage.h"
#include "tools/bench/scratch_dir.h"
#include "tools/bench/test_backend_library.h"
#include "tools/cli/json.h"
#include "tools/common/process_census.h"

namespace codecvisor::bench {

using ::codecvisor::internal::Host;
using ::codecvisor::internal::HostOptions;
using ::codecvisor::internal::BackendStatus;
using ::codecvisor::internal::VideoDecoder;
using ::codecvisor::internal::DecoderOptions;
using ::codecvisor::internal::Frame;
using ::codecvisor::internal::DescribeSelection;
namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kFrames = 60;
constexpr int64_t kPoisonFrame = 40;
constexpr int kPoisonPauseMs = 250;
// How VideoDecoder words a poison verdict.
constexpr char kPoisonVerdict[] = "killed the backend twice";
constexpr size_t kUnexpectedKept = 8;
constexpr char kSyntheticClip[] = "synthetic frames=60 width=64 height=48 fps=25";

// A restart budget that the crash rate cannot exhaust, and a short backoff:
// the soak measures recovery, not quarantine (fault_recovery_test does).
constexpr char kRestartTable[] =
    "[restart]\nmax_restarts = 1000\nwindow_seconds = 60\nbackoff_initial_ms = 1\nbackoff_max_ms = 20\n";

uint64_t Fnv1a(std::span<const uint8_t> bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint8_t b : bytes) h = (h ^ b) * 0x100000001b3ull;
  return h;
}

// One video a decoder works on, with the checksum of each frame from the
// crash-free run.
struct Clip {
  std::string device;
  std::string path;
  bool poison = false;  // frame kPoisonFrame always crashes the backend
  bool flaky = false;   // crashes the backend at random
  std::vector<uint64_t> checksums;
};

struct Tally {
  std::atomic<uint64_t> served{0}, retried{0}, failed_poison{0}, failed_flaky_twice{0}, failed_other{0}, frames{0},
      wrong{0};
  Mutex mu;
  std::vector<std::string> unexpected ABSL_GUARDED_BY(mu);

  void Unexpected(std::string what) {
    failed_other.fetch_add(1);
    MutexLock lock(&mu);
    if (unexpected.size() < kUnexpectedKept) unexpected.push_back(std::move(what));
  }
};

absl::StatusOr<std::vector<uint64_t>> CrashFreeChecksums(Host& host, const std::string& path, const std::string& device) {
  DecoderOptions options;
  options.device = device;
  absl::StatusOr<std::unique_ptr<VideoDecoder>> decoder = host.OpenDecoder(path, options);
  if (!decoder.ok()) return decoder.status();
  std::vector<uint64_t> sums;
  absl::Status s = (*decoder)->ForEachFrame({ipc::IndexRange{0, kFrames, 1}}, [&](Frame frame) {
    sums.push_back(Fnv1a(frame.data()));
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  if (static_cast<int64_t>(sums.size()) != kFrames) {
    return absl::InternalError(absl::StrCat(path, ": ", sums.size(), " frames in the crash-free run"));
  }
  return sums;
}

// One decoder's loop until `stop`: random requests (a run of frames, or
// indices in any order), every frame checked. A poison clip alternates
// requests that touch its poison frame with requests that do not.
void Work(Host& host, const Clip& clip, uint64_t seed, const std::atomic<bool>& stop, Tally& tally) {
  std::mt19937_64 random(seed);
  DecoderOptions options;
  options.device = clip.device;
  options.request_timeout = std::chrono::seconds(20);
  std::unique_ptr<VideoDecoder> decoder;
  bool touch_poison = false;
  while (!stop.load()) {
    if (decoder == nullptr) {
      absl::StatusOr<std::unique_ptr<VideoDecoder>> opened = host.OpenDecoder(clip.path, options);
      if (!opened.ok()) {
        tally.Unexpected(absl::StrCat("open ", clip.path, ": ", opened.status().ToString()));
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
      decoder = *std::move(opened);
    }
    ipc::FrameRequest request;
    bool poison_request = false;
    if (clip.poison) {
      touch_poison = !touch_poison;
      poison_request = touch_poison;
      const int64_t start = touch_poison ? kPoisonFrame - 3 : 0;
      request.selection = ipc::IndexRange{start, start + 6, 1};
    } else if (random() % 2 == 0) {
      const int64_t start = static_cast<int64_t>(random() % (kFrames - 12));
      request.selection = ipc::IndexRange{start, start + 12, 1};
    } else {
      ipc::IndexList list;
      for (int i = 0; i < 5; ++i) list.indices.push_back(static_cast<int64_t>(random() % kFrames));
      request.selection = list;
    }
    const uint64_t retries_before = decoder->retries();
    absl::Status status = decoder->ForEachFrame(request, [&](Frame frame) {
      tally.frames.fetch_add(1);
      const int64_t i = frame.index();
      if (i < 0 || i >= kFrames || Fnv1a(frame.data()) != clip.checksums[static_cast<size_t>(i)]) {
        tally.wrong.fetch_add(1);
      }
      return absl::OkStatus();
    });
    if (status.ok()) {
      tally.served.fetch_add(1);
      if (decoder->retries() > retries_before) tally.retried.fetch_add(1);
    } else if (status.code() == absl::StatusCode::kAborted && absl::StrContains(status.message(), kPoisonVerdict) &&
               (poison_request || clip.flaky)) {
      // The poison clip's request, or a flaky clip's request that happened
      // to crash the backend on both tries: a request that killed the
      // backend twice is poison by definition (outside kills blame nobody).
      (poison_request ? tally.failed_poison : tally.failed_flaky_twice).fetch_add(1);
      // Each poison request costs two restarts; paced, so that on any
      // machine they stay well inside the restart budget (kRestartTable).
      std::this_thread::sleep_for(std::chrono::milliseconds(kPoisonPauseMs));
    } else {
      tally.Unexpected(absl::StrCat(clip.device, " ", DescribeSelection(request), ": ", status.ToString()));
    }
  }
}

// Kills one of the backends' children at random, on average every
// `interval_ms` (exponential gaps), until `stop`.
uint64_t Chaos(Host& host, double interval_ms, uint64_t seed, const std::atomic<bool>& stop) {
  std::mt19937_64 random(seed);
  std::exponential_distribution<double> gap(1.0 / interval_ms);
  uint64_t kills = 0;
  auto next = Clock::now();
  while (!stop.load()) {
    next += std::chrono::microseconds(static_cast<int64_t>(gap(random) * 1000));
    while (!stop.load() && Clock::now() < next) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (stop.load()) break;
    // One of the two at random; if it is restarting, the other; if both
    // are, wait for one, so that the kills keep their average rate.
    const bool cpu_first = random() % 2 == 0;
    bool killed = false;
    while (!killed && !stop.load()) {
      for (const char* victim : {cpu_first ? "cpu" : "faulty", cpu_first ? "faulty" : "cpu"}) {
        if (killed) break;
        for (const BackendStatus& s : host.Backends()) {
          if (s.name == victim && s.state == "ready" && s.pid > 0 && kill(s.pid, SIGKILL) == 0) killed = true;
        }
      }
      if (!killed) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (killed) ++kills;
  }
  return kills;
}

}  // namespace

bool SoakBenchResult::ok() const {
  return failed_other == 0 && wrong_frames == 0 && children_left == 0 && fds_end <= fds_start && requests_served > 0;
}

std::string SoakBenchResult::ToJson() const {
  cli::JsonWriter w;
  w.BeginObject();
  w.Key("seconds").Double(seconds);
  w.Key("decoders").Int(decoders);
  w.Key("crash_interval_ms").Double(crash_interval_ms);
  w.Key("requests_served").Int(static_cast<int64_t>(requests_served));
  w.Key("requests_retried").Int(static_cast<int64_t>(requests_retried));
  w.Key("requests_failed").Int(static_cast<int64_t>(requests_failed));
  w.Key("failed_poison").Int(static_cast<int64_t>(failed_poison));
  w.Key("failed_flaky_twice").Int(static_cast<int64_t>(failed_flaky_twice));
  w.Key("failed_other").Int(static_cast<int64_t>(failed_other));
  w.Key("frames_checked").Int(static_cast<int64_t>(frames_checked));
  w.Key("wrong_frames").Int(static_cast<int64_t>(wrong_frames));
  w.Key("crashes_injected").Int(static_cast<int64_t>(crashes_injected));
  w.Key("restarts_cpu").Int(static_cast<int64_t>(restarts_cpu));
  w.Key("restarts_faulty").Int(static_cast<int64_t>(restarts_faulty));
  w.Key("rss_kb_start").Int(rss_kb_start);
  w.Key("rss_kb_end").Int(rss_kb_end);
  w.Key("fds_start").Int(fds_start);
  w.Key("fds_end").Int(fds_end);
  w.Key("children_left").Int(children_left);
  w.Key("unexpected").BeginArray();
  for (const std::string& u : unexpected) w.String(u);
  w.EndArray();
  w.Key("ok").Bool(ok());
  w.EndObject();
  return w.str();
}

std::string SoakBenchResult::ToText() const {
  std::string out = absl::StrFormat(
      "soak: %.1f s, %d decoders on cpu and faulty, a kill every %.0f ms on average\n"
      "  requests    %d served (%d after a re-issue), %d failed: %d poison, %d flaky twice, %d other\n"
      "  frames      %d checked, %d wrong\n"
      "  crashes     %d injected; restarts cpu %d, faulty %d (random faults and poison included)\n"
      "  host        RSS %d -> %d KiB, descriptors %d -> %d, children left %d\n",
      seconds, decoders, crash_interval_ms, requests_served, requests_retried, requests_failed, failed_poison,
      failed_flaky_twice, failed_other, frames_checked, wrong_frames, crashes_injected, restarts_cpu, restarts_faulty, rss_kb_start,
      rss_kb_end, fds_start, fds_end, children_left);
  for (const std::string& u : unexpected) absl::StrAppend(&out, "  unexpected: ", u, "\n");
  absl::StrAppend(&out, ok() ? "ok\n" : "NOT OK\n");
  return out;
}

absl::StatusOr<SoakBenchResult> RunSoakBench(const SoakBenchOptions& options) {
  if (options.decoders < 2 || !(options.seconds > 0) || !(options.crash_interval_ms > 0)) {
    return absl::InvalidArgumentError("soak: needs at least 2 decoders, and positive seconds and crash interval");
  }
  absl::StatusOr<std::string> faulty_library =
      FindTestBackendLibrary("libcodecvisor_faulty.so", options.faulty_library, "--faulty-library");
  if (!faulty_library.ok()) return faulty_library.status();
  absl::StatusOr<InstallLayout> layout = options.layout.has_value() ? *options.layout : InstallLayout::Discover();
  if (!layout.ok()) return layout.status();
  absl::StatusOr<std::unique_ptr<ScratchDir>> scratch = ScratchDir::Create("soak");
  if (!scratch.ok()) return scratch.status();
  const ScratchDir& dir = **scratch;

  // Both manifests with the soak's restart budget; the cpu one as the
  // built-in backend of a scratch install folder.
  const std::string builtin = dir.File("builtin");
  if (mkdir(builtin.c_str(), 0700) != 0) return absl::InternalError(absl::StrCat("mkdir ", builtin));
  for (const auto& [file, text] : std::vector<std::pair<std::string, std::string>>{
           {"builtin/cpu.toml", absl::StrCat("name = \"cpu\"\ndevices = [\"cpu\"]\nlibrary = \"", layout->builtin_dir,
                                             "/libcodecvisor_cpu.so\"\nabi_version = 1\n", kRestartTable)},
           {"faulty.toml", absl::StrCat("name = \"faulty\"\ndevices = [\"faulty\"]\nlibrary = \"", *faulty_library,
                                        "\"\nabi_version = 1\n", kRestartTable, "[sandbox]\nmemory_mb = 1024\n")}}) {
    if (absl::StatusOr<std::string> written = dir.WriteFile(file, text); !written.ok()) return written.status();
  }
  const std::string h264 = dir.File("clip.mp4");
  if (absl::Status s = MakeBenchVideo(h264, 160, 120, static_cast<int>(kFrames)); !s.ok()) return s;
  // The faulty backend's clips: a flaky one (crashes at random on its own,
  // about once per 5000 frames) and a poison one.
  absl::StatusOr<std::string> flaky =
      dir.WriteFile("flaky.txt", absl::StrCat(kSyntheticClip, " fault=segfault fault_rate=0.0002"));
  absl::StatusOr<std::string> clean = dir.WriteFile("clean.txt", kSyntheticClip);
  absl::StatusOr<std::string> poison =
      dir.WriteFile("poison.txt", absl::StrCat(kSyntheticClip, " fault=abort fault_frame=", kPoisonFrame));
  for (const auto* f : {&flaky, &clean, &poison}) {
    if (!f->ok()) return f->status();
  }

  SoakBenchResult result;
  result.decoders = options.decoders;
  result.crash_interval_ms = options.crash_interval_ms;
  const std::map<int, std::string> fds_before = tools::OpenDescriptors();
  result.fds_start = static_cast<int>(fds_before.size());
  {
    HostOptions host_options;
    host_options.layout = InstallLayout{layout->runner, builtin};
    host_options.discovery = DiscoveryOptions{{}, builtin, false};
    absl::StatusOr<std::unique_ptr<Host>> host = Host::Create(host_options);
    if (!host.ok()) return host.status();
    if (absl::Status s = (*host)->LoadBackend(dir.File("faulty.toml")); !s.ok()) return s;

    absl::StatusOr<std::vector<uint64_t>> cpu_sums = CrashFreeChecksums(**host, h264, "cpu");
    if (!cpu_sums.ok()) return cpu_sums.status();
    absl::StatusOr<std::vector<uint64_t>> synthetic_sums = CrashFreeChecksums(**host, *clean, "faulty");
    if (!synthetic_sums.ok()) return synthetic_sums.status();
    std::vector<Clip> clips;
    for (int i = 0; i < options.decoders; ++i) {
      if (i % 2 == 0) {
        clips.push_back({"cpu", h264, false, false, *cpu_sums});
      } else {
        const bool is_poison = i == options.decoders - 1;
        clips.push_back({"faulty", is_poison ? *poison : *flaky, is_poison, !is_poison, *synthetic_sums});
      }
    }
    if (absl::StatusOr<int64_t> rss = ProcStatusKb("VmRSS"); rss.ok()) result.rss_kb_start = *rss;

    const uint64_t seed = options.seed != 0 ? options.seed
                                            : static_cast<uint64_t>(Clock::now().time_since_epoch().count());
    Tally tally;
    std::atomic<bool> stop{false};
    const auto start = Clock::now();
    std::vector<std::thread> workers;
    for (size_t i = 0; i < clips.size(); ++i) {
      workers.emplace_back([&, i] { Work(**host, clips[i], seed + i + 1, stop, tally); });
    }
    uint64_t kills = 0;
    std::thread chaos([&] { kills = Chaos(**host, options.crash_interval_ms, seed, stop); });
    std::this_thread::sleep_for(std::chrono::duration<double>(options.seconds));
    stop.store(true);
    chaos.join();
    for (std::thread& t : workers) t.join();
    result.seconds = std::chrono::duration<double>(Clock::now() - start).count();

    result.crashes_injected = kills;
    result.requests_served = tally.served.load();
    result.requests_retried = tally.retried.load();
    result.failed_poison = tally.failed_poison.load();
    result.failed_flaky_twice = tally.failed_flaky_twice.load();
    result.failed_other = tally.failed_other.load();
    result.requests_failed = result.failed_poison + result.failed_flaky_twice + result.failed_other;
    result.frames_checked = tally.frames.load();
    result.wrong_frames = tally.wrong.load();
    {
      MutexLock lock(&tally.mu);
      result.unexpected = tally.unexpected;
    }
    for (const BackendStatus& s : (*host)->Backends()) {
      if (s.name == "cpu") result.restarts_cpu = s.restarts;
      if (s.name == "faulty") result.restarts_faulty = s.restarts;
    }
    if (absl::StatusOr<int64_t> rss = ProcStatusKb("VmRSS"); rss.ok()) result.rss_kb_end = *rss;
  }
  result.children_left = static_cast<int>(tools::ChildProcesses().size());
  result.fds_end = static_cast<int>(tools::OpenDescriptors().size());
  return result;
}

}  // namespace codecvisor::bench
