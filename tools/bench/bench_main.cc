// `codecvisor-bench`: the benchmarks' command line (ipc, decode, seek,
// restart, soak). It only parses arguments and hands them to the benchmark
// libraries beside it; each prints a table, or one JSON object per line
// with --json. A binary apart from the product's `codecvisor`, because
// `decode` links the cpu backend's code in process as its baseline. Usage
// errors exit with CLI11's codes; a failed measurement with 1, after one
// line on stderr; `soak` also with 1 when a must-be-zero figure is not.

#include <iostream>
#include <string>

#include "CLI/CLI.hpp"
#include "tools/bench/decode_bench.h"
#include "tools/bench/ipc_bench.h"
#include "tools/bench/restart_bench.h"
#include "tools/bench/seek_bench.h"
#include "tools/bench/soak_bench.h"

namespace codecvisor::bench {
namespace {

// Prints a result, or each of a list of them, as text or as one JSON object
// per line, and returns 0; a failed measurement as one line on stderr,
// returning 1.
template <typename Result>
int Report(const char* command, const absl::StatusOr<Result>& result, bool json) {
  if (!result.ok()) {
    std::cerr << "codecvisor-bench " << command << ": " << result.status().message() << "\n";
    return 1;
  }
  auto print = [json](const auto& r) { std::cout << (json ? r.ToJson() + "\n" : r.ToText()); };
  if constexpr (requires { result->begin(); }) {
    for (const auto& r : *result) print(r);
  } else {
    print(*result);
  }
  return 0;
}

}  // namespace
}  // namespace codecvisor::bench

int main(int argc, char** argv) {
  using namespace codecvisor;
  CLI::App app{"codecvisor-bench: measure codecvisor against its baselines"};
  app.require_subcommand(1);
  int exit_code = 0;

  bench::IpcBenchOptions ipc_options;
  bool ipc_json = false;
  auto* ipc = app.add_subcommand("ipc", "channel round trip and frame throughput vs. raw futex and local memory");
  ipc->add_flag("--json", ipc_json, "print one JSON object");
  ipc->add_option("--round-trips", ipc_options.round_trips, "round trips per measurement")->check(CLI::PositiveNumber);
  ipc->add_option("--frames", ipc_options.frames, "frames per measurement")->check(CLI::PositiveNumber);
  ipc->add_option("--rounds", ipc_options.rounds, "measurement rounds; the median is reported")
      ->check(CLI::PositiveNumber);
  ipc->add_option("--slots", ipc_options.slots, "arena slots for the frame measurement")->check(CLI::Range(1, 256));
  ipc->callback([&] { exit_code = bench::Report("ipc", bench::RunIpcBench(ipc_options), ipc_json); });

  bench::DecodeBenchOptions decode_bench_options;
  bool decode_bench_json = false;
  auto* decode_bench = app.add_subcommand(
      "decode", "decode throughput: in process vs. out of process (sandboxed and not) vs. the ffmpeg CLI; host RSS");
  decode_bench->add_option("file", decode_bench_options.file,
                           "the video to measure; default: generated 1080p and 360p H.264 files of 300 frames");
  decode_bench->add_flag("--json", decode_bench_json, "print one JSON object per video, one per line");
  decode_bench
      ->add_option("--threads", decode_bench_options.threads, "decoder threads on every side; 0 lets FFmpeg choose")
      ->capture_default_str()
      ->check(CLI::Range(0, 256));
  decode_bench->add_option("--frames", decode_bench_options.frames, "frames per sequential pass")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  decode_bench->add_option("--rounds", decode_bench_options.rounds, "measurement rounds; the median is reported")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  decode_bench
      ->add_option("--random-frames", decode_bench_options.random_frames, "random indices per random-access pass")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  decode_bench
      ->add_option("--arena-slots", decode_bench_options.arena_slots,
                   "frame slots of each out-of-process decoder (its cache footprint)")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  decode_bench
      ->add_option("--in-process-buffers", decode_bench_options.in_process_buffers,
                   "buffers the in-process side writes frames into in turn (1: the baseline the targets judge; "
                   "the arena's slot count: the same cache footprint on both sides)")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  decode_bench
      ->add_option("--compare-runner", decode_bench_options.compare_runner,
                   "another codecvisor-backend build: a fourth decoder, sandboxed, started through it, takes turns "
                   "with the others on the sequential chunks")
      ->check(CLI::ExistingFile);
  decode_bench->callback([&] { 
    exit_code = bench::Report("decode", bench::RunDecodeBench(decode_bench_options), decode_bench_json);
   });

  bench::SeekBenchOptions seek_options;
  bool seek_json = false;
  auto* seek = app.add_subcommand(
      "seek", "a fresh decoder's first access to a late frame: approximate mode vs. exact mode and ffmpeg -ss");
  seek->add_option("file", seek_options.file,
                   "the video to measure; default: a generated 1080p H.264 file, 20 s, a key frame every 250 frames");
  seek->add_flag("--json", seek_json, "print one JSON object");
  seek->add_option("--index", seek_options.index, "the frame to access; negative counts from the end")
      ->capture_default_str();
  seek->add_option("--rounds", seek_options.rounds, "measurement rounds; the median is reported")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  seek->add_option("--threads", seek_options.threads, "decoder threads on every side; 0 lets FFmpeg choose")
      ->capture_default_str()
      ->check(CLI::Range(0, 256));
  seek->callback([&] { exit_code = bench::Report("seek", bench::RunSeekBench(seek_options), seek_json); });

  bench::RestartBenchOptions restart_options;
  bool restart_json = false;
  auto* restart = app.add_subcommand(
      "restart", "discovery, cold start and crash failover (cold and warm spare) with the synthetic test backend");
  restart->add_flag("--json", restart_json, "print one JSON object");
  restart->add_option("--crashes", restart_options.crashes, "backend kills per failover figure")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  restart->add_option("--rounds", restart_options.rounds, "host creations per discovery and cold-start median")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  restart
      ->add_option("--host-resident-mb", restart_options.host_resident_mb,
                   "make this many MiB of this process's memory resident first, as a training process's is")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  restart->add_option("--synthetic-library", restart_options.synthetic_library,
                      "libcodecvisor_synthetic.so (//backends/testing); default: next to this binary");
  restart->callback([&] { 
    exit_code = bench::Report("restart", bench::RunRestartBench(restart_options), restart_json);
   });

  bench::SoakBenchOptions soak_options;
  bool soak_json = false;
  auto* soak = app.add_subcommand(
      "soak",
      "reliability under load: decoders on cpu and the faulty test backend while children are killed at "
      "random; every frame checked; exit 1 on a wrong frame, a failure other than poison, or a leak");
  soak->add_flag("--json", soak_json, "print one JSON object");
  soak->add_option("--seconds", soak_options.seconds, "how long to run")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  soak->add_option("--decoders", soak_options.decoders, "concurrent decoders, half on each backend")
      ->capture_default_str()
      ->check(CLI::Range(2, 256));
  soak->add_option("--crash-interval-ms", soak_options.crash_interval_ms, "mean time between injected kills")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  soak->add_option("--faulty-library", soak_options.faulty_library,
                   "libcodecvisor_faulty.so (//backends/testing); default: next to this binary");
  soak->add_option("--seed", soak_options.seed, "random seed; 0: from the clock");
  soak->callback([&] {
    const auto result = bench::RunSoakBench(soak_options);
    exit_code = bench::Report("soak", result, soak_json);
    if (exit_code == 0 && !result->ok()) exit_code = 1;  // a wrong frame, a failure other than poison, a leak
  });

  CLI11_PARSE(app, argc, argv);
  return exit_code;
}
