// `codecvisor decode`: selected frames to PNG, PPM, Y4M or raw RGB24.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "api/absl_interop.h"
#include "core/backend_output.h"
#include "tools/cli/commands.h"
#include "tools/cli/host_setup.h"
#include "tools/cli/json.h"
#include "tools/cli/progress.h"

namespace codecvisor::cli {

namespace {

bool IsYuv420(const std::string& pixel_format) {
  return pixel_format == "yuv420p" || pixel_format == "yuvj420p";
}

// Opens the decoder in the output format `format` needs. y4m takes the
// stream's own yuv420p frames as they are, byte for byte; any other stream
// is decoded to RGB24 and converted to 4:4:4 on the host. Native output is
// tried first because nearly every stream is yuv420p, so that the common
// case opens (and, in exact mode, scans) the file once.
absl::StatusOr<std::unique_ptr<VideoDecoder>> OpenFor(Host& host, const DecodeArgs& args) {
  DecoderOptions options = DecoderOptionsFor(args.open);
  if (args.format == FileFormat::kY4m) {
    options.output_format = OutputFormat::kNative;
    absl::StatusOr<std::unique_ptr<VideoDecoder>> native = ToAbsl(host.OpenDecoder(args.open.file, options));
    if (native.ok() && IsYuv420((*native)->metadata().pixel_format)) return native;
    // Other failures would only repeat: report them as they are.
    if (!native.ok() && !absl::IsUnimplemented(native.status()) && !absl::IsInvalidArgument(native.status())) {
      return native.status();
    }
  }
  options.output_format = OutputFormat::kRgb24;
  return ToAbsl(host.OpenDecoder(args.open.file, options));
}

// The writer's view of a frame: its planes as they lie in the arena.
ImageView ViewOf(const Frame& frame) {
  ImageView image{frame.width(), frame.height(), frame.pixel_format(), {}};
  for (size_t i = 0; i < frame.num_planes(); ++i) image.planes.push_back({frame.plane(i), frame.stride(i)});
  return image;
}

WriterOptions WriterOptionsFor(const DecodeArgs& args, const StreamMetadata& metadata,
                                const FrameSelection& selection) {
  WriterOptions options;
  options.format = args.format;
  options.out = args.out;
  options.input_path = args.open.file;
  if (std::optional<Rational> fps = FrameRateAsRational(metadata.average_fps)) {
    options.fps = *fps;
  } else if (args.format == FileFormat::kY4m) {
    std::fprintf(stderr, "codecvisor decode: %s: frame rate unknown; the y4m header says 25 fps\n",
                 EscapeForTerminal(args.open.file).c_str());
  }
  options.chroma_left = CodecSitesChromaLeft(metadata.codec);
  if (metadata.pixel_aspect_ratio.has_value()) options.aspect = *metadata.pixel_aspect_ratio;
  options.name_by_position = MayRepeatFrames(selection, metadata);
  if (metadata.color_range == "tv") options.color_range = "LIMITED";
  if (metadata.color_range == "pc") options.color_range = "FULL";
  return options;
}

// One frame written, for --json: torchcodec's Frame fields and the file.
struct WrittenFrame {
  int64_t index;
  double pts_seconds;
  double duration_seconds;
  std::string file;
};

// For --skip-bad-frames, which resumes after the frame that failed: the
// index at position `p` of an index selection, or nullopt past its end (and
// for time selections). A range is never listed: with no frame count known,
// its stop is as given, and may be 2^63 - 1.
std::optional<int64_t> IndexAt(const FrameSelection& selection, uint64_t p) {
  if (auto* list = std::get_if<FrameSelection::Indices>(&selection.get())) {
    return p < list->indices.size() ? std::optional<int64_t>(list->indices[p]) : std::nullopt;
  }
  auto* range = std::get_if<FrameSelection::Range>(&selection.get());
  if (range == nullptr || range->step <= 0 || range->start < 0 || range->start >= range->stop) return std::nullopt;
  const uint64_t span = static_cast<uint64_t>(range->stop) - static_cast<uint64_t>(range->start);
  const uint64_t count = span / static_cast<uint64_t>(range->step) + (span % static_cast<uint64_t>(range->step) != 0);
  if (p >= count) return std::nullopt;
  return range->start + static_cast<int64_t>(p * static_cast<uint64_t>(range->step));  // below stop
}

// The part of an index selection from position `p` on (`p` within it).
FrameSelection From(const FrameSelection& selection, uint64_t p) {
  if (auto* list = std::get_if<FrameSelection::Indices>(&selection.get())) {
    return FrameSelection::AtIndices(std::vector<int64_t>(list->indices.begin() + static_cast<ptrdiff_t>(p),
                                                          list->indices.end()));
  }
  const auto& range = std::get<FrameSelection::Range>(selection.get());
  return FrameSelection::InRange(*IndexAt(selection, p), range.stop, range.step);
}

// The folders that making the output folder `out` creates, outermost
// first: none when it exists, or for standard output. Only folders known
// not to exist are listed.
std::vector<std::filesystem::path> FoldersToMake(const std::string& out) {
  std::vector<std::filesystem::path> missing;
  if (out.empty() || out == "-") return missing;
  std::error_code error;
  std::filesystem::path folder = std::filesystem::absolute(out, error);
  while (!error && folder.has_relative_path()) {
    const bool there = std::filesystem::exists(folder, error);
    if (there || error) break;
    missing.insert(missing.begin(), folder);
    folder = folder.parent_path();
  }
  return missing;
}

// "101, 102, 115" (the first 20, then "and N more").
std::string ListIndices(const std::vector<int64_t>& indices) {
  constexpr size_t kShown = 20;
  std::string out;
  for (size_t i = 0; i < indices.size() && i < kShown; ++i) absl::StrAppend(&out, i > 0 ? ", " : "", indices[i]);
  if (indices.size() > kShown) absl::StrAppend(&out, " and ", indices.size() - kShown, " more");
  return out;
}

// The --json document (tools/README.md has its schema).
void PrintJson(const DecodeArgs& args, const std::vector<WrittenFrame>& frames,
               const std::vector<int64_t>& skipped = {}) {
  JsonWriter w;
  w.BeginObject();
  w.Key("schema_version").Int(kJsonSchemaVersion);
  w.Key("file").String(args.open.file);
  w.Key("format").String(FileFormatName(args.format));
  w.Key("frames").BeginArray();
  for (const WrittenFrame& f : frames) {
    w.BeginObject();
    w.Key("index").Int(f.index);
    w.Key("pts_seconds").Double(f.pts_seconds);
    w.Key("duration_seconds").Double(f.duration_seconds);
    w.Key("file").String(f.file);
    w.EndObject();
  }
  w.EndArray();
  if (args.skip_bad_frames) {
    w.Key("skipped").BeginArray();
    for (int64_t index : skipped) w.Int(index);
    w.EndArray();
  }
  w.EndObject();
  std::printf("%s\n", w.str().c_str());
}

}  // namespace

int RunDecode(const DecodeArgs& args) {
  const std::string& file = args.open.file;
  const auto start = std::chrono::steady_clock::now();
  auto fail = [&](const absl::Status& status) { return ReportFailure("decode", file, status); };
  // Frames are bytes, not text: a terminal would take them for its control
  // sequences (which a plugin's output could choose), as gzip refuses to.
  if (args.out == "-" && IsTerminal(stdout)) {
    return fail(absl::InvalidArgumentError(
        "frames are not written to a terminal: redirect standard output to a file or a program "
        "(--out - > frames.rgb, --out - | ffplay ...), or give --out a folder"));
  }
  if (absl::Status s = CheckReadableFile(file); !s.ok()) return fail(s);
  SetBackendLogLevel(args.open.log_level);
  absl::StatusOr<std::unique_ptr<Host>> host = CreateHost(args.open.backend_manifests);
  if (!host.ok()) return ReportFailure("decode", "", host.status());
  if (!args.quiet) PrintWarnings("decode", **host);
  absl::StatusOr<std::unique_ptr<VideoDecoder>> opened = OpenFor(**host, args);
  if (!opened.ok()) return fail(opened.status());
  VideoDecoder& decoder = **opened;

  absl::StatusOr<FrameSelection> selection = BuildSelection(args.selection, decoder.metadata());
  if (!selection.ok()) return fail(selection.status());
  // An index list out of order, one file per frame named by its index: the
  // same files from one pass in stream order, --json and the skipped list
  // in the order asked. (A stream's frames go in the order asked.)
  const bool one_stream = args.format == FileFormat::kY4m || args.out == "-";
  std::optional<std::vector<int64_t>> asked =
      one_stream ? std::nullopt : IndicesOutOfStreamOrder(*selection, decoder.metadata());
  std::vector<int64_t> given;  // as typed (-1), for the skipped list
  if (asked.has_value()) {
    given = std::get<FrameSelection::Indices>(selection->get()).indices;
    std::vector<int64_t> in_order = *asked;
    std::sort(in_order.begin(), in_order.end());
    *selection = FrameSelection::AtIndices(std::move(in_order));
  }
  if (SelectedFrameCount(*selection) == 0) {
    // An empty slice, as in Python: no frames, no output, and no error.
    if (!args.quiet) {
      const std::string what = !args.selection.frames.empty()       ? "--frames " + args.selection.frames
                               : !args.selection.time_range.empty() ? "--time-range " + args.selection.time_range
                                                                    : "the stream";
      std::fprintf(stderr, "codecvisor decode: %s: %s selects no frames (of %lld); nothing written\n",
                   EscapeForTerminal(file).c_str(), what.c_str(),
                   static_cast<long long>(decoder.metadata().num_frames()));
    }
    if (args.json) PrintJson(args, {});
    return StdoutWritten() ? 0 : fail(absl::InternalError("cannot write stdout"));
  }
  UnlinkTemporaryFilesOnSignal();  // Ctrl-C leaves no partial file behind
  const std::vector<std::filesystem::path> made = FoldersToMake(args.out);
  absl::StatusOr<std::unique_ptr<FrameWriter>> writer =
      MakeFrameWriter(WriterOptionsFor(args, decoder.metadata(), *selection));
  if (!writer.ok()) return fail(writer.status());
  std::vector<WrittenFrame> written;  // for --json only

  const double open_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // No bar while backends may log: their lines would break it mid-line.
  ProgressBar progress(stderr, !args.quiet && !BackendsMayLog() && IsTerminal(stderr),
                       SelectedFrameCount(*selection));
  // A decode that fails before its first frame (an index out of range)
  // leaves none of the folders it made behind; remove() takes only an
  // empty folder.
  bool finished = false;
  absl::Cleanup remove_made = [&] {
    if (finished || progress.done() > 0) return;
    for (auto folder = made.rbegin(); folder != made.rend(); ++folder) {
      std::error_code error;
      std::filesystem::remove(*folder, error);
    }
  };
  int64_t delivered = 0;      // frames the current request has delivered
  bool writer_failed = false;
  auto sink = [&](Frame frame) -> Status {
    if (absl::Status s = (*writer)->Write(frame.index(), ViewOf(frame)); !s.ok()) {
      writer_failed = true;
      return FromAbsl(absl::Status(s.code(), absl::StrCat("frame ", frame.index(), ": ", s.message())));
    }
    if (args.json) {
      written.push_back({frame.index(), frame.pts_seconds(), frame.duration_seconds(), (*writer)->last_path()});
    }
    ++delivered;
    progress.Advance();
    return Status();
  };
  // One request, however long (the decoder cuts long index and time lists
  // into requests the protocol takes); frames stream straight to the writer.
  // With --skip-bad-frames, a frame the backend cannot decode (DataLoss)
  // ends its request; the next one resumes after it.
  absl::Status decoded = ToAbsl(decoder.ForEachFrame(*selection, sink));
  std::vector<int64_t> skipped;
  if (args.skip_bad_frames) {
    uint64_t next = 0;  // the selection's position where the last request started
    while (absl::IsDataLoss(decoded) && !writer_failed) {
      next += static_cast<uint64_t>(delivered);
      const std::optional<int64_t> bad = IndexAt(*selection, next);
      if (!bad.has_value()) break;
      skipped.push_back(*bad);
      ++next;
      delivered = 0;
      if (!IndexAt(*selection, next).has_value()) {
        decoded = absl::OkStatus();
        break;
      }
      decoded = ToAbsl(decoder.ForEachFrame(From(*selection, next), sink));
    }
  }
  if (!decoded.ok()) {
    progress.Clear();
    return fail(decoded);
  }
  if (absl::Status s = (*writer)->Finish(); !s.ok()) {
    progress.Clear();
    return fail(s);
  }
  progress.Clear();
  if (asked.has_value()) {
    // Back in the order asked (the indices are distinct).
    std::map<int64_t, size_t> position;
    for (size_t i = 0; i < asked->size(); ++i) position[(*asked)[i]] = i;
    std::sort(written.begin(), written.end(),
              [&](const WrittenFrame& a, const WrittenFrame& b) { return position[a.index] < position[b.index]; });
    std::sort(skipped.begin(), skipped.end(), [&](int64_t a, int64_t b) { return position[a] < position[b]; });
    for (int64_t& index : skipped) index = given[position[index]];  // as given, as when decoded in that order
  }
  if (args.json) PrintJson(args, written, skipped);
  if (!skipped.empty()) {
    std::fprintf(stderr, "codecvisor decode: %s: skipped %zu undecodable frame%s: %s\n", EscapeForTerminal(file).c_str(),
                 skipped.size(), skipped.size() == 1 ? "" : "s", ListIndices(skipped).c_str());
  }
  if (!args.quiet) {
    const double seconds = progress.elapsed_seconds();
    std::fprintf(stderr, "codecvisor decode: %s: wrote %lld frame%s (%s) to %s in %.2f s, %.1f fps (open %.2f s)\n",
                 EscapeForTerminal(file).c_str(), static_cast<long long>(progress.done()),
                 progress.done() == 1 ? "" : "s", FileFormatName(args.format),
                 EscapeForTerminal((*writer)->destination()).c_str(), seconds,
                 seconds > 0 ? static_cast<double>(progress.done()) / seconds : 0.0, open_seconds);
    if (decoder.retries() > 0) {
      std::fprintf(stderr, "codecvisor decode: %s: %llu requests were re-issued after backend failures\n",
                   EscapeForTerminal(file).c_str(), static_cast<unsigned long long>(decoder.retries()));
    }
  }
  finished = true;
  return StdoutWritten() ? 0 : fail(absl::InternalError("cannot write stdout"));
}

}  // namespace codecvisor::cli
