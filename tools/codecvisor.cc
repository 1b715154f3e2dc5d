// The `codecvisor` command line. Each subcommand is a thin layer over the
// library; this file only parses arguments and hands them to tools/cli/.
// Usage errors exit with CLI11's codes (listed in --help and
// tools/README.md); failures of the work itself with 1, after one line on
// stderr. The benchmarks are a binary of their own
// (tools/bench/bench_main.cc), so nothing here decodes in process.

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "base/standard_descriptors.h"
#include "core/backend_output.h"
#include "tools/cli/commands.h"
#include "tools/cli/frame_writers.h"
#include "tools/cli/host_setup.h"
#include "tools/cli/selection.h"

namespace codecvisor {

namespace {

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

// A number of seconds: CLI::Range lets NaN through (no comparison with it
// is true), and a NaN timeout was then taken for none given.
CLI::Validator Seconds() {
  return CLI::Range(0.001, 315360000.0) & CLI::Validator(
                                              [](std::string& text) {
                                                return std::isnan(std::strtod(text.c_str(), nullptr))
                                                           ? std::string("NaN is no number of seconds")
                                                           : std::string();
                                              },
                                              "");
}

// --backend-manifest: an empty path (a command substitution that printed
// nothing) is bad usage, not a nameless backend that failed to load.
CLI::Validator ManifestPath() {
  return CLI::Validator(
      [](std::string& path) {
        return path.empty() ? std::string("an empty path names no manifest (did a command substitution print nothing?)")
                            : std::string();
      },
      "PATH");
}

const std::map<std::string, SeekMode> kSeekModes = {{"exact", SeekMode::kExact},
                                                    {"approximate", SeekMode::kApproximate}};

// The flags shared by the subcommands that open a video; `seek_mode` is
// converted into args->seek_mode after parsing.
void AddLogLevelFlag(CLI::App* command, std::string* level) {
  command
      ->add_option("--loglevel", *level,
                   "the backends' own log lines (FFmpeg's for cpu), as ffmpeg's -loglevel names them; each goes "
                   "to stderr as one whole line. Default: quiet")
      ->check(CLI::IsMember(std::vector<std::string>(std::begin(cli::kLogLevels), std::end(cli::kLogLevels))));
}

void AddOpenFlags(CLI::App* command, cli::OpenArgs* args, std::string* seek_mode) {
  command->add_option("file", args->file, "the video file")->required();
  AddLogLevelFlag(command, &args->log_level);
  command
      ->add_option("--device", args->device,
                   "decode on this device (NAME or NAME:INDEX; cpu takes no index but torch's cpu:0); default: "
                   "$CODECVISOR_DEFAULT_DEVICE, else cpu")
      ->check(CLI::Validator(
          [](std::string& device) {
            absl::Status s = cli::CheckDeviceFlag(device);
            return s.ok() ? std::string() : std::string(s.message());
          },
          "DEVICE"));
  command->add_option("--stream", args->stream, "video stream index; default: the best video stream")
      ->check(CLI::Validator(
          [](std::string& text) {
            // Parsed again by CLI11 after the check; here only the sign.
            return !text.empty() && text[0] == '-'
                       ? "'" + text + "' is not a stream index: give 0 or more, or omit --stream for the best video stream"
                       : std::string();
          },
          "INDEX"));
  command
      ->add_option("--seek-mode", *seek_mode,
                   "exact: scan the file for an exact frame index (default); approximate: trust the header")
      ->check(CLI::IsMember({"exact", "approximate"}));
  command->add_option("--backend-manifest", args->backend_manifests, "load an extra backend manifest (repeatable)")
      ->check(ManifestPath());
  // As Python's timeout= and open_timeout=: a hung backend is killed and
  // the request replayed once, so a hang costs about twice this, and one
  // still using CPU at the deadline up to ten times it per try.
  command
      ->add_option("--timeout", args->timeout,
                   "seconds without an answer from the backend before it is taken as hung (killed, restarted, "
                   "the request replayed once; a backend still using CPU at the deadline gets up to ten times it, "
                   "so a request that spins costs up to twenty times it); default 30")
      ->check(Seconds());
  command
      ->add_option("--open-timeout", args->open_timeout,
                   "seconds for one attempt at opening the file (exact mode reads it whole); default 120")
      ->check(Seconds());
}

}  // namespace
}  // namespace codecvisor

int main(int argc, char** argv) {
  using namespace codecvisor;
  // Started with stdio closed: nothing of ours may take numbers 0-2.
  FillClosedStandardDescriptors();
  // Under a file-size limit (`ulimit -f`), a write past it fails with EFBIG
  // and is reported, rather than killing the command without a word.
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{"codecvisor: video decoding through sandboxed, supervised backend processes"};
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 success (also a --frames slice that selects no frames); 1 the work failed (one line on "
      "stderr names the file and the cause; doctor and conformance: a check failed or a backend did not start). "
      "Usage errors, from CLI11, after its message: 104 a value of the wrong type (--stream abc), 105 a value that "
      "fails its check (a range is checked first: --threads abc), 106 a required option or the subcommand missing (or an unknown subcommand), 108 options "
      "that exclude each other, 109 an unknown option or an extra argument, 114 an option given more times than it "
      "takes. Other codes from 100 to 127 are CLI11's own and not expected. A FILE beginning with '-' goes after "
      "'--' (codecvisor info -- -clip.mp4).");
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
          ->add_option("--frames", sel.frames,
                       "frames START:STOP[:STEP] (a Python slice with a positive STEP; "
                       "a negative START or STOP counts from the end)")
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
  decode
      ->add_option("--threads", decode_args.open.threads,
                   "decoder threads; 0 lets the decoder choose (a backend may refuse more than it takes: cpu, above 64)")
      ->check(CLI::Range(0, 256));
  auto* out =
      decode->add_option("--out", decode_args.out, "output folder (created if missing), or - for stdout (y4m, rgb24)")
          ->required()
          ->check(CLI::Validator(
              [](const std::string& value) {
                return value.empty() ? std::string("give a folder, or -") : std::string();
              },
              "DIR"));
  decode->add_flag("-q,--quiet", decode_args.quiet, "no progress bar and no summary");
  decode
      ->add_flag("--skip-bad-frames", decode_args.skip_bad_frames,
                 "skip frames that cannot be decoded (damaged data) instead of stopping at the first; they are "
                 "named on stderr and in --json's \"skipped\" (with --frames, --indices or every frame)")
      ->excludes(times)
      ->excludes(time_range);
  decode->add_flag("--json", decode_args.json,
                   "once done, print one JSON object on stdout: every frame written with its index, pts_seconds, "
                   "duration_seconds and file, in request order (not with --out -)");
  decode->callback([&] {
    decode_args.open.seek_mode = kSeekModes.at(decode_seek);
    decode_args.format = *cli::ParseFileFormat(format);
    if (decode_args.out == cli::kStdout &&
        (decode_args.format == cli::FileFormat::kPng || decode_args.format == cli::FileFormat::kPpm)) {
      throw CLI::ValidationError(out->get_name(), format +
                                                      " writes one file per frame and needs a folder, not "
                                                      "'-'; use --format y4m or rgb24 for standard output");
    }
    if (decode_args.out == cli::kStdout && decode_args.json) {
      throw CLI::ExcludesError("--json: stdout carries the frames with --out -; give --out DIR for --json",
                               CLI::ExitCodes::ExcludesError);
    }
    exit_code = cli::RunDecode(decode_args);
  });

  // backends
  cli::BackendsArgs backends_args;
  auto* backends = app.add_subcommand("backends", "list the backends: devices, state, process, manifest, diagnostic");
  backends->add_flag("--json", backends_args.json, "print one JSON object");
  backends->add_option("--backend-manifest", backends_args.backend_manifests,
                       "load an extra backend manifest (repeatable)")
      ->check(ManifestPath());
  backends
      ->add_option("--reset", backends_args.reset,
                   "clear backend NAME's record of earlier crashes and quarantine (the backend history file), "
                   "lift its quarantine or load failure in this command's own host, then list. Quarantine itself is "
                   "kept per host process: another program using the library calls Host::ResetBackend itself")
      ->type_name("NAME");
  auto* start_flag = backends->add_flag("--start", backends_args.start, "exit 1 if a backend cannot start");
  backends->add_flag("--no-check", backends_args.no_check,
                     "list the manifests without starting the backends (by default each one is started, all at "
                     "once, after --reset if given, so that the list shows its pid and sandbox, or why its "
                     "library cannot load)")
      ->excludes(start_flag);
  backends->callback([&] { exit_code = cli::RunBackends(backends_args); });

  // doctor
  cli::DoctorArgs doctor_args;
  auto* doctor = app.add_subcommand(
      "doctor",
      "check the sandbox: which mechanisms the kernel offers (namespaces, seccomp-bpf, Landlock, pidfd, ...), "
      "then start every backend and show what is engaged for it. Exit 0 when every mechanism the sandbox needs is "
      "present (those it uses only where available, such as a cgroup, may be missing) and every backend started, "
      "else 1");
  doctor->add_flag("--json", doctor_args.json, "print one JSON object");
  doctor->add_option("--backend-manifest", doctor_args.backend_manifests,
                     "load an extra backend manifest (repeatable)")
      ->check(ManifestPath());
  doctor->callback([&] { exit_code = cli::RunDoctor(doctor_args); });

  // conformance
  cli::ConformanceArgs conformance_args;
  int64_t conformance_timeout_s = 60;
  auto* conformance = app.add_subcommand(
      "conformance",
      "run the backend conformance suite against an installed backend (or one given by manifest): handshake, "
      "sandbox, metadata and frames against ffprobe and ffmpeg (or your own reference), every access method and "
      "seek mode, bad input, 8 concurrent sessions, recovery from a kill mid-request, clean shutdown; on the "
      "manifest's [conformance] samples, or your own files with --sample. Exit 0 when every check passes");
  conformance->add_option("--backend", conformance_args.backend, "the backend's name (see `codecvisor backends`)")
      ->type_name("NAME");
  conformance
      ->add_option("--backend-manifest", conformance_args.manifest,
                   "register this manifest first and check its backend")
      ->check(ManifestPath());
  conformance->add_flag("--json", conformance_args.json, "print one JSON object");
  AddLogLevelFlag(conformance, &conformance_args.log_level);
  conformance->add_option("--timeout", conformance_timeout_s, "seconds to wait for the backend at each step")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  // An existing file, shown in --help by the option's own type name alone.
  const CLI::Validator existing_file = CLI::Validator(CLI::ExistingFile).description("");
  conformance
      ->add_option(
          "--sample", conformance_args.samples,
          "check on this file of your own instead of the manifest's [conformance] codecs and samples "
          "(repeatable); its reference is --reference if given, else FILE.rgb24 and FILE.timestamps beside it if "
          "there, else ffmpeg's RGB24")
      ->check(existing_file)
      ->type_name("FILE");
  conformance
          ->add_option("--reference", conformance_args.reference,
                       "the one --sample's expected frames, packed RGB24, concatenated in presentation order (for a "
                       "file FFmpeg cannot read; needs --reference-timestamps)")
          ->check(existing_file)
          ->type_name("FRAMES");
  conformance
          ->add_option("--reference-timestamps", conformance_args.reference_timestamps,
                       "the reference's stream and frames: lines 'width W', 'height H', 'time_base NUM/DEN', "
                       "optional 'codec NAME' and 'average_fps F', then 'PTS DURATION' per frame")
          ->check(existing_file)
          ->type_name("FILE");
  conformance
      ->add_option("--min-psnr-floor", conformance_args.min_psnr_floor_db,
                   "the least PSNR (dB) a backend may declare instead of exact output; a lower claim fails the "
                   "handshake check and frames are held to the floor")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 200.0));
  conformance->callback([&] {
    if (conformance_args.backend.empty() && conformance_args.manifest.empty()) {
      throw CLI::RequiredError("conformance: give --backend NAME or --backend-manifest PATH",
                               CLI::ExitCodes::RequiredError);
    }
    if (conformance_args.reference.empty() != conformance_args.reference_timestamps.empty()) {
      throw CLI::ValidationError("--reference", "give both --reference FRAMES and --reference-timestamps FILE");
    }
    if (!conformance_args.reference.empty() && conformance_args.samples.size() != 1) {
      throw CLI::ValidationError("--reference", "a reference is for exactly one --sample FILE");
    }
    conformance_args.timeout = std::chrono::seconds(conformance_timeout_s);
    exit_code = cli::RunConformance(conformance_args);
  });

  // A first word that is no command ("decdoe") is named, where CLI11 says
  // only that a command is required.
  if (argc > 1 && argv[1][0] != '-') {
    std::vector<std::string> names;
    for (const CLI::App* command : app.get_subcommands([](CLI::App*) { return true; })) {
      names.push_back(command->get_name());
    }
    if (std::find(names.begin(), names.end(), argv[1]) == names.end()) {
      std::string list;
      for (const std::string& name : names) list += (list.empty() ? "" : ", ") + name;
      std::fprintf(stderr,
                   "codecvisor: '%s' is not a command (the commands: %s)\nRun with --help for more information.\n",
                   EscapeForTerminal(argv[1]).c_str(), list.c_str());
      return static_cast<int>(CLI::ExitCodes::RequiredError);
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help, --version and usage errors: a help that could not be written
    // is a failure, as every command's output is.
    const int code = app.exit(e);
    if (code == 0 && !cli::StdoutWritten())
      return cli::ReportFailure("--help", "", absl::InternalError("cannot write stdout"));
    return code;
  }
  return exit_code;
}
