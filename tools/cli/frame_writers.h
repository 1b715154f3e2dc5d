// File: tools/cli/frame_writers.h
//
// Where `codecvisor decode` puts frames, in which format:
//   png, ppm, rgb24 to a folder: one file per frame, named by the frame's
//       index in the stream: DIR/frame_000042.png (.ppm, .rgb). rgb24
//       files are the bare rows, width * height * 3 bytes. When the
//       request may yield a frame twice (WriterOptions::name_by_position),
//       each name starts with the frame's position in the request, from 0:
//       DIR/000002_frame_000042.png, so that repeats do not overwrite each
//       other and the names sort in request order.
//   rgb24 to "-": the bare RGB24 frames concatenated, in request order, on
//       standard output (nothing else is written there).
//   y4m to a folder or "-": one YUV4MPEG2 stream, DIR/<input stem>.y4m or
//       standard output. yuv420p (and yuvj420p) frames are written as they
//       are (C420mpeg2 or C420jpeg, see Y4mStreamInfo); rgb24 frames, which is what the command asks for
//       when the stream's own format is anything else, are converted to
//       4:4:4 (C444, BT.601 limited range; see Yuv444Converter).
// png and ppm cannot go to standard output: that is kInvalidArgument.
//
// Files appear whole or not at all: each is written under a temporary
// name in the same folder and renamed when complete, so a failed or
// interrupted decode never leaves a truncated frame_000042.png behind
// (a y4m stream file is renamed by Finish()); temporary files are removed
// on failure, and on SIGINT/SIGTERM/SIGHUP once UnlinkTemporaryFilesOnSignal
// is installed.
//
// Thread-safety: a FrameWriter is used by one thread at a time.

#ifndef CODECVISOR_TOOLS_CLI_FRAME_WRITERS_H_
#define CODECVISOR_TOOLS_CLI_FRAME_WRITERS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/cli/image_encoding.h"

namespace codecvisor::cli {

enum class FileFormat { kPng, kPpm, kY4m, kRgb24 };

// "png", "ppm", "y4m", "rgb24"; nullopt for anything else.
std::optional<FileFormat> ParseFileFormat(absl::string_view name);
const char* FileFormatName(FileFormat format);

// The out value that means standard output.
inline constexpr absl::string_view kStdout = "-";

struct WriterOptions {
  FileFormat format = FileFormat::kPng;
  std::string out;         // a folder (created if missing), or kStdout
  std::string input_path;  // names the y4m file in a folder
  // y4m header fields (see Y4mStreamInfo).
  Rational fps{25, 1};
  Rational aspect{0, 0};
  std::string color_range;
  bool chroma_left = false;
  // One file per frame: prefix each name with the frame's position in the
  // request (see above). Set when the request may repeat a frame.
  bool name_by_position = false;
};

class FrameWriter {
 public:
  virtual ~FrameWriter() = default;

  // Writes frame `index` of the stream. kInvalidArgument when the image's
  // pixel format does not suit the output; an I/O failure is kInternal (or
  // the errno's status) naming the path.
  [[nodiscard]] virtual absl::Status Write(int64_t index, const ImageView& image) = 0;
  // Completes the output; only then is a stream file in place.
  [[nodiscard]] virtual absl::Status Finish() = 0;
  // Where the output goes, for messages: "out/frame_%06d.png", "stdout".
  virtual std::string destination() const = 0;
  // Where the last frame written went: its own file ("out/frame_000042.png"),
  // the stream file ("out/clip.y4m"), or "stdout". Empty before any Write.
  virtual std::string last_path() const = 0;
};

// The writer for `options`; creates the output folder. kInvalidArgument
// for png/ppm to standard output; an error naming the folder if it cannot
// be created.
[[nodiscard]] absl::StatusOr<std::unique_ptr<FrameWriter>> MakeFrameWriter(const WriterOptions& options);

// Installs handlers for SIGINT, SIGTERM and SIGHUP that unlink the
// temporary files being written (an interrupted decode leaves no hidden
// ".frame_000042.png.PID.tmp" or half a y4m stream), then die of the signal
// as they would have (exit status 128 + signal for the shell). Call once,
// from the main thread, before writing.
void UnlinkTemporaryFilesOnSignal();

// "frame_000042.png": the file name of frame `index` in a folder.
std::string FrameFileName(int64_t index, FileFormat format);
// "000002_frame_000042.png": the name of frame `index` written at
// `position` (from 0) of a request that may repeat frames.
std::string FrameFileNameAt(int64_t position, int64_t index, FileFormat format);

}  // namespace codecvisor::cli

#endif  // CODECVISOR_TOOLS_CLI_FRAME_WRITERS_H_
