// The `codecvisor` command line. Each subcommand is a thin layer over the
// library; this file only parses arguments and hands them to tools/cli/
// (or tools/bench/). Usage errors exit with CLI11's codes; failures of the
// work itself with 1, after one line on stderr.

#include <cstdio>
#include <iostream>
#include <map>
#include <string>

#include "CLI/CLI.hpp"
#include "tools/bench/decode_bench.h"
#include "tools/bench/ipc_bench.h"
#include "tools/bench/restart_bench.h"
#include "tools/bench/soak_bench.h"
#include "tools/cli/commands.h"
#include "tools/cli/frame_writers.h"
#include "tools/cli/selection.h"

namespace codecvisor {

namespace {

int RunBenchIpc(const bench::IpcBenchOptions& options, bool json) {
  auto result = bench::RunIpcBench(options);
  if (!result.ok()) {
    std::cerr << "codecvisor bench ipc: " << result.status() << "\n";
    return 1;
  }
  std::cout << (json ? result->ToJson() + "\n" : result->ToText());
  return 0;
}

int RunBenchDecode(const bench::DecodeBenchOptions& options, bool json) {
  auto results = bench::RunDecodeBench(options);
  if (!results.ok()) {
    std::cerr << "codecvisor bench decode: " << results.status().message() << "\n";
    return 1;
  }
  for (const bench::DecodeBenchResult& r : *results) std::cout << (json ? r.ToJson() + "\n" : r.ToText());
  return 0;
}

int RunBenchRestart(const bench::RestartBenchOptions& options, bool json) {
  auto result = bench::RunRestartBench(options);
  if (!result.ok()) {
    std::cerr << "codecvisor bench restart: " << result.status().message() << "\n";
    return 1;
  }
  std::cout << (json ? result->ToJson() + "\n" : result->ToText());
  return 0;
}

int RunBenchSoak(const bench::SoakBenchOptions& options, bool json) {
  auto result = bench::RunSoakBench(options);
  if (!result.ok()) {
    std::cerr << "codecvisor bench soak: " << result.status().message() << "\n";
    return 1;
  }
  std::cout << (json ? result->ToJson() + "\n" : result->ToText());
  return result->ok() ? 0 : 1;
}

// A CLI11 check that runs one of the selection parsers, so that bad syntax
// is a usage error reported by the parser with the flag's name.
template <typename Parser>
CLI::Validator SyntaxCheck(Parser parse, const std::string& syntax) {
  return CLI::Validator(
      [parse](std::string& text) {
        auto parsed = parse(text);
        return parsed.ok() ? std::string() : std::string(parsed.status().message());
      },
      syntax);
}

const std::map<std::string, SeekMode> kSeekModes = {{"exact", SeekMode::kExact},
                                                    {"approximate", SeekMode::kApproximate}};

// The flags shared by the subcommands that open a video; `seek_mode` is
// converted into args->seek_mode after parsing.
void AddOpenFlags(CLI::App* command, cli::OpenArgs* args, std::string* seek_mode) {
  command->add_option("file", args->file, "the video file")->required();
  command->add_option("--device", args->device,
                      "decode on this device (NAME or NAME:INDEX); default: $CODECVISOR_DEFAULT_DEVICE, else cpu");
  command->add_option("--stream", args->stream, "video stream index; default: the best video stream")
      ->check(CLI::NonNegativeNumber);
  command
      ->add_option("--seek-mode", *seek_mode,
                   "exact: scan the file for an exact frame index (default); approximate: trust the header")
      ->check(CLI::IsMember({"exact", "approximate"}));
  command->add_option("--backend-manifest", args->backend_manifests, "load an extra backend manifest (repeatable)");
}

}  // namespace
}  // namespace codecvisor

int main(int argc, char** argv) {
  using namespace codecvisor;
  CLI::App app{"codecvisor: video decoding through sandboxed, supervised backend processes"};
  app.require_subcommand(1);
  int exit_code = 0;

  // info
  cli::InfoArgs info_args;
  std::string info_seek = "exact";
  auto* info = app.add_subcommand("info", "describe the video stream codecvisor decodes, and its backend");
  AddOpenFlags(info, &info_args.open, &info_seek);
  info->add_flag("--json", info_args.json, "print one JSON object");
  info->callback([&] {
    info_args.open.seek_mode = kSeekModes.at(info_seek);
    exit_code = cli::RunInfo(info_args);
  });

  // decode
  cli::DecodeArgs decode_args;
  std::string decode_seek = "exact";
  std::string format = "png";
  auto* decode = app.add_subcommand("decode", "decode frames to PNG, PPM, Y4M or raw RGB24 (all frames by default)");
  AddOpenFlags(decode, &decode_args.open, &decode_seek);
  cli::SelectionFlags& sel = decode_args.selection;
  auto* frames =
      decode
          ->add_option("--frames", sel.frames, "frames START:STOP[:STEP] (Python slice; negative counts from the end)")
          ->check(SyntaxCheck(cli::ParseFrameRange, "START:STOP[:STEP]"));
  auto* indices = decode->add_option("--indices", sel.indices, "frames at these indices, e.g. 0,5,-1")
                      ->check(SyntaxCheck(cli::ParseIndexList, "I,J,..."));
  auto* times = decode->add_option("--times", sel.times, "frames played at these times in seconds, e.g. 1.5,2")
                    ->check(SyntaxCheck(cli::ParseTimeList, "T,U,..."));
  auto* time_range = decode->add_option("--time-range", sel.time_range, "every frame played in [START, STOP) seconds")
                         ->check(SyntaxCheck(cli::ParseTimeRange, "START:STOP"));
  frames->excludes(indices)->excludes(times)->excludes(time_range);
  indices->excludes(times)->excludes(time_range);
  times->excludes(time_range);
  decode
      ->add_option(
          "--format", format,
          "png, ppm (one file per frame), y4m (one stream), rgb24 (raw; one stream on '-', else one file per frame)")
      ->capture_default_str()
      ->check(CLI::IsMember({"png", "ppm", "y4m", "rgb24"}));
  decode->add_option("--threads", decode_args.open.threads, "decoder threads; 0 lets the decoder choose")
      ->check(CLI::Range(0, 256));
  auto* out =
      decode->add_option("--out", decode_args.out, "output folder (created if missing), or - for stdout (y4m, rgb24)")
          ->required();
  decode->add_flag("-q,--quiet", decode_args.quiet, "no progress bar and no summary");
  decode->callback([&] {
    decode_args.open.seek_mode = kSeekModes.at(decode_seek);
    decode_args.format = *cli::ParseFileFormat(format);
    if (decode_args.out == cli::kStdout &&
        (decode_args.format == cli::FileFormat::kPng || decode_args.format == cli::FileFormat::kPpm)) {
      throw CLI::ValidationError(out->get_name(), format +
                                                      " writes one file per frame and needs a folder, not "
                                                      "'-'; use --format y4m or rgb24 for standard output");
    }
    exit_code = cli::RunDecode(decode_args);
  });

  // backends
  cli::BackendsArgs backends_args;
  auto* backends = app.add_subcommand("backends", "list the backends: devices, state, process, manifest, diagnostic");
  backends->add_flag("--json", backends_args.json, "print one JSON object");
  backends->add_option("--backend-manifest", backends_args.backend_manifests,
                       "load an extra backend manifest (repeatable)");
  backends
      ->add_option("--reset", backends_args.reset,
                   "lift the quarantine or load failure of backend NAME, then list. Quarantine is kept per host "
                   "process: this resets NAME in this command's own host (a fresh one, where nothing is "
                   "quarantined yet), not in another program using the library, which calls "
                   "Host::ResetBackend itself; with --start, NAME (like every backend) is then started and its state "
                   "reported")
      ->type_name("NAME");
  backends->add_flag("--start", backends_args.start,
                     "start every backend (after --reset, if given) and list their states, pids and engaged "
                     "sandboxes; exit 1 if one cannot start");
  backends->callback([&] { exit_code = cli::RunBackends(backends_args); });

  // doctor
  cli::DoctorArgs doctor_args;
  auto* doctor = app.add_subcommand(
      "doctor",
      "check the sandbox: which mechanisms the kernel offers (namespaces, seccomp-bpf, Landlock, pidfd, ...), "
      "then start every backend and show what is engaged for it. Exit 0 when every mechanism is present and "
      "every backend started, else 1");
  doctor->add_flag("--json", doctor_args.json, "print one JSON object");
  doctor->add_option("--backend-manifest", doctor_args.backend_manifests,
                     "load an extra backend manifest (repeatable)");
  doctor->callback([&] { exit_code = cli::RunDoctor(doctor_args); });

  // conformance
  cli::ConformanceArgs conformance_args;
  int64_t conformance_timeout_s = 60;
  auto* conformance = app.add_subcommand(
      "conformance",
      "run the backend conformance suite against an installed backend (or one given by manifest): handshake, "
      "sandbox, metadata and frames against ffprobe and ffmpeg, every access method and seek mode, bad input, "
      "8 concurrent sessions, recovery from a kill mid-request, clean shutdown. Exit 0 when every check passes");
  conformance->add_option("--backend", conformance_args.backend, "the backend's name (see `codecvisor backends`)")
      ->type_name("NAME");
  conformance->add_option("--backend-manifest", conformance_args.manifest,
                          "register this manifest first and check its backend");
  conformance->add_flag("--json", conformance_args.json, "print one JSON object");
  conformance->add_option("--timeout", conformance_timeout_s, "seconds to wait for the backend at each step")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  conformance->callback([&] {
    if (conformance_args.backend.empty() && conformance_args.manifest.empty()) {
      throw CLI::ValidationError("conformance", "give --backend NAME or --backend-manifest PATH");
    }
    conformance_args.timeout = std::chrono::seconds(conformance_timeout_s);
    exit_code = cli::RunConformance(conformance_args);
  });

  // bench
  auto* bench = app.add_subcommand("bench", "measure codecvisor against its baselines");
  bench->require_subcommand(1);

  codecvisor::bench::IpcBenchOptions ipc_options;
  bool ipc_json = false;
  auto* ipc = bench->add_subcommand("ipc", "channel round trip and frame throughput vs. raw futex and local memory");
  ipc->add_flag("--json", ipc_json, "print one JSON object");
  ipc->add_option("--round-trips", ipc_options.round_trips, "round trips per measurement")->check(CLI::PositiveNumber);
  ipc->add_option("--frames", ipc_options.frames, "frames per measurement")->check(CLI::PositiveNumber);
  ipc->add_option("--rounds", ipc_options.rounds, "measurement rounds; the median is reported")
      ->check(CLI::PositiveNumber);
  ipc->add_option("--slots", ipc_options.slots, "arena slots for the frame measurement")->check(CLI::Range(1, 256));
  ipc->callback([&] { exit_code = codecvisor::RunBenchIpc(ipc_options, ipc_json); });

  codecvisor::bench::DecodeBenchOptions decode_bench_options;
  bool decode_bench_json = false;
  auto* decode_bench = bench->add_subcommand(
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
  decode_bench->callback([&] { exit_code = codecvisor::RunBenchDecode(decode_bench_options, decode_bench_json); });

  codecvisor::bench::RestartBenchOptions restart_options;
  bool restart_json = false;
  auto* restart = bench->add_subcommand(
      "restart", "discovery, cold start and crash failover (cold and warm spare) with the synthetic test backend");
  restart->add_flag("--json", restart_json, "print one JSON object");
  restart->add_option("--crashes", restart_options.crashes, "backend kills per failover figure")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  restart->add_option("--rounds", restart_options.rounds, "host creations per discovery and cold-start median")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  restart->add_option("--synthetic-library", restart_options.synthetic_library,
                      "libcodecvisor_synthetic.so (//backends/testing); default: next to this binary");
  restart->callback([&] { exit_code = codecvisor::RunBenchRestart(restart_options, restart_json); });

  codecvisor::bench::SoakBenchOptions soak_options;
  bool soak_json = false;
  auto* soak = bench->add_subcommand(
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
  soak->callback([&] { exit_code = codecvisor::RunBenchSoak(soak_options, soak_json); });

  CLI11_PARSE(app, argc, argv);
  return exit_code;
}
