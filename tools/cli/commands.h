// File: tools/cli/commands.h
//
// The `codecvisor` subcommands that use the library: info, decode,
// backends and doctor. tools/codecvisor.cc parses the command line into these
// structs; everything after parsing happens here. Each Run*() creates one
// Host, does its work, and returns the process's exit code: 0, or 1 after
// one line on stderr that names the file (or manifest) and the cause.
// Standard output carries only the command's result (for decode --out -,
// only frame bytes); progress and summaries go to stderr.
//
// Thread-safety: each Run*() is called once, from main().

#ifndef CODECVISOR_TOOLS_CLI_COMMANDS_H_
#define CODECVISOR_TOOLS_CLI_COMMANDS_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "codecvisor/codecvisor.h"
#include "tools/cli/frame_writers.h"
#include "tools/cli/selection.h"

namespace codecvisor::cli {


// Flags shared by the commands that open a video.
struct OpenArgs {
  std::string file;
  std::string device;  // empty: the host's default device
  int32_t stream = -1;  // -1: the best video stream
  SeekMode seek_mode = SeekMode::kExact;
  uint32_t threads = 0;  // decoder threads; 0: the decoder chooses
  // --timeout and --open-timeout, in seconds; 0: DecoderOptions' defaults.
  double timeout = 0;
  double open_timeout = 0;
  // Extra manifests to load with Host::LoadBackend, in order.
  std::vector<std::string> backend_manifests;
  // --loglevel: the backends' own log level (FFmpeg's, for cpu); empty
  // keeps $CODECVISOR_BACKEND_LOG_LEVEL, else quiet.
  std::string log_level;
};

struct InfoArgs {
  OpenArgs open;
  bool json = false;
};

struct DecodeArgs {
  OpenArgs open;
  SelectionFlags selection;
  FileFormat format = FileFormat::kPng;
  std::string out;  // a folder, or "-" for standard output
  bool quiet = false;
  // Print one JSON object on stdout once every frame is written: each
  // frame's index, pts_seconds, duration_seconds and file (tools/README.md).
  // Not with out "-", where stdout carries the frames.
  bool json = false;
  // --skip-bad-frames: a frame that cannot be decoded is skipped and named
  // in the summary (and --json's "skipped") instead of ending the command.
  // Index selections only (--frames, --indices, or every frame).
  bool skip_bad_frames = false;
};

struct BackendsArgs {
  std::vector<std::string> backend_manifests;
  bool json = false;
  // Host::ResetBackend on this backend first, and its record in the
  // backend history cleared. Quarantine and the restart budget live in the
  // Host that saw the crashes, so this lifts them only in this command's
  // own Host; a library user calls ResetBackend in its own.
  std::string reset;
  // Unless no_check, every backend is started (all at once) before listing,
  // which loads its library in its sandboxed child: the list shows each
  // one's pid and engaged sandbox, or why it cannot load.
  bool no_check = false;
  // Exit 1 if a backend cannot start.
  bool start = false;
};

struct DoctorArgs {
  std::vector<std::string> backend_manifests;
  bool json = false;
};

struct ConformanceArgs {
  std::string backend;   // by name; may be empty when manifest is given
  std::string manifest;  // registered first when given
  bool json = false;
  std::chrono::milliseconds timeout{60'000};
  std::vector<std::string> samples;   // the vendor's own files; empty: the manifest's [conformance]
  std::string reference;              // raw RGB24 frames of the one sample (with reference_timestamps)
  std::string reference_timestamps;
  double min_psnr_floor_db = 30;
  std::string log_level;  // as OpenArgs::log_level
};

// Prints every StreamMetadata field of the chosen stream, with the backend
// that decodes it: aligned "key value" lines, or one JSON object.
int RunInfo(const InfoArgs& args);

// Decodes the selected frames (all by default) into args.out, streaming:
// memory stays bounded by the decoder's arena whatever the frame count.
// Draws a progress bar when stderr is a terminal and prints a one-line
// summary unless quiet. A selection of no frames (an empty --frames slice)
// writes nothing and exits 0.
int RunDecode(const DecodeArgs& args);

// Lists every registered backend: name, devices, state, pid, manifest,
// engaged sandbox and diagnostic. A manifest given with --backend-manifest
// that does not load is listed as failed, with the reason, rather than
// ending the command. With args.reset, resets that backend first (exit 1
// if there is none); with args.start, starts every backend first and exits
// 1, after the list, if one could not start.
int RunBackends(const BackendsArgs& args);

// `codecvisor doctor`: probes the kernel for every mechanism the sandbox
// uses (core/kernel_features.h), starts every backend and shows what was
// engaged for it, and says what a missing mechanism means. Exit 0 when
// every mechanism is present and every backend started; else 1.
int RunDoctor(const DoctorArgs& args);

// `codecvisor conformance`: runs the conformance suite (tools/conformance)
// against one backend and prints a line per check (PASS/FAIL, time, what
// was seen or what is wrong), or one JSON object. Exit 0 when every check
// passed, 1 when one failed or the suite could not run.
int RunConformance(const ConformanceArgs& args);

}  // namespace codecvisor::cli

#endif  // CODECVISOR_TOOLS_CLI_COMMANDS_H_
