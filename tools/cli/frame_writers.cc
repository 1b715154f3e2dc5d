#include "tools/cli/frame_writers.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace codecvisor::cli {
namespace {

// The temporary files being written, for the signal handler to unlink. A
// slot's path is written before it is marked used and cleared only after it
// is marked free, so the handler reads whole paths (a path too long for a
// slot is not registered: the file is still removed on a normal exit).
struct TempSlot {
  std::atomic<bool> used{false};
  char path[4096];
};
TempSlot temp_slots[8];

int RegisterTemp(const std::string& path) {
  if (path.size() >= sizeof(TempSlot::path)) return -1;
  for (int i = 0; i < static_cast<int>(std::size(temp_slots)); ++i) {
    TempSlot& slot = temp_slots[i];
    if (slot.used.load(std::memory_order_acquire)) continue;
    std::memcpy(slot.path, path.c_str(), path.size() + 1);
    slot.used.store(true, std::memory_order_release);
    return i;
  }
  return -1;
}

void UnregisterTemp(int slot) {
  if (slot >= 0) temp_slots[slot].used.store(false, std::memory_order_release);
}

extern "C" void UnlinkTempsAndReraise(int signal_number) {
  // Async-signal-safe only: unlink, signal, raise.
  for (TempSlot& slot : temp_slots) {
    if (slot.used.load(std::memory_order_acquire)) unlink(slot.path);
  }
  std::signal(signal_number, SIG_DFL);
  std::raise(signal_number);
}

absl::Status ErrnoError(int err, absl::string_view what) {
  return absl::Status(absl::ErrnoToStatusCode(err), absl::StrCat(what, ": ", std::strerror(err)));
}

// A file written under a temporary name and renamed into place by Commit(),
// or standard output. Unlinks an uncommitted temporary file.
class OutputFile {
 public:
  static absl::StatusOr<std::unique_ptr<OutputFile>> Create(const std::string& path) {
    auto file = std::unique_ptr<OutputFile>(new OutputFile);
    if (path == kStdout) {
      file->fd_ = STDOUT_FILENO;
      file->path_ = "stdout";
      return file;
    }
    file->path_ = path;
    const size_t slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
    const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    file->temp_ = absl::StrCat(dir, ".", name, ".", getpid(), ".tmp");
    file->slot_ = RegisterTemp(file->temp_);
    file->fd_ = open(file->temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (file->fd_ < 0) return ErrnoError(errno, absl::StrCat("cannot create ", file->temp_));
    return file;
  }

  ~OutputFile() {
    if (!temp_.empty()) {
      if (fd_ >= 0) close(fd_);
      unlink(temp_.c_str());
    }
    UnregisterTemp(slot_);
  }

  absl::Status Write(absl::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = write(fd_, bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ErrnoError(errno, absl::StrCat("cannot write ", path_));
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return absl::OkStatus();
  }

  // Closes the file and renames it into place (nothing for stdout).
  absl::Status Commit() {
    if (temp_.empty()) return absl::OkStatus();
    const int fd = fd_;
    fd_ = -1;
    // close() reports a delayed write error (NFS, full disk): keep it.
    if (close(fd) != 0) return ErrnoError(errno, absl::StrCat("cannot write ", path_));
    if (rename(temp_.c_str(), path_.c_str()) != 0) {
      return ErrnoError(errno, absl::StrCat("cannot rename ", temp_, " to ", path_));
    }
    temp_.clear();
    UnregisterTemp(slot_);
    slot_ = -1;
    return absl::OkStatus();
  }

  const std::string& path() const { return path_; }

 private:
  OutputFile() = default;
  int slot_ = -1;  // in temp_slots while the temporary file exists
  int fd_ = -1;
  std::string path_;
  std::string temp_;  // empty once committed, and for stdout
};

absl::Status WriteWholeFile(const std::string& path, absl::string_view bytes) {
  absl::StatusOr<std::unique_ptr<OutputFile>> file = OutputFile::Create(path);
  if (!file.ok()) return file.status();
  if (absl::Status s = (*file)->Write(bytes); !s.ok()) return s;
  return (*file)->Commit();
}

// "frames/" as "frames" (and "/" as itself), so that a frame's path has
// one slash before its name.
std::string WithoutTrailingSlashes(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

// png, ppm, rgb24: one file per frame in a folder.
class FilePerFrameWriter : public FrameWriter {
 public:
  FilePerFrameWriter(FileFormat format, std::string dir, bool name_by_position, Rational aspect,
                     const std::string& input_path)
      : format_(format),
        dir_(WithoutTrailingSlashes(std::move(dir))),
        name_by_position_(name_by_position),
        png_(aspect) {
    struct stat input {};
    if (stat(input_path.c_str(), &input) == 0) input_ = {input.st_dev, input.st_ino};
  }

  absl::Status Write(int64_t index, const ImageView& image) override {
    absl::StatusOr<std::string> bytes = Encode(image);
    if (!bytes.ok()) return bytes.status();
    const std::string path = absl::StrCat(
        dir_, "/", name_by_position_ ? FrameFileNameAt(position_, index, format_) : FrameFileName(index, format_));
    // An input named as an output frame (frame_000000.png in --out's
    // folder) would be replaced by it.
    if (struct stat existing {}; input_.has_value() && stat(path.c_str(), &existing) == 0 &&
                                 existing.st_dev == input_->first && existing.st_ino == input_->second) {
      return absl::InvalidArgumentError(absl::StrCat(path, " is the input video, which the output would replace; "
                                                     "give another --out folder"));
    }
    if (absl::Status s = WriteWholeFile(path, *bytes); !s.ok()) return s;
    ++position_;
    last_path_ = path;
    return absl::OkStatus();
  }

  absl::Status Finish() override { return absl::OkStatus(); }

  std::string destination() const override {
    return absl::StrCat(dir_, name_by_position_ ? "/NNNNNN_frame_NNNNNN." : "/frame_NNNNNN.",
                        format_ == FileFormat::kRgb24 ? "rgb" : FileFormatName(format_));
  }
  std::string last_path() const override { return last_path_; }

 private:
  absl::StatusOr<std::string> Encode(const ImageView& image) {
    switch (format_) {
      case FileFormat::kPng:
        return png_.Encode(image);
      case FileFormat::kPpm:
        return EncodePpm(image);
      default: {
        if (image.pixel_format != "rgb24") {
          return absl::InvalidArgumentError(absl::StrCat("rgb24 output got ", image.pixel_format, " pixels"));
        }
        std::string out;
        if (absl::Status s = AppendPackedPlanes(image, &out); !s.ok()) return s;
        return out;
      }
    }
  }

  FileFormat format_;
  std::string dir_;
  bool name_by_position_;
  int64_t position_ = 0;  // frames written so far
  std::string last_path_;
  PngEncoder png_;
  std::optional<std::pair<dev_t, ino_t>> input_;  // the input file, never to be written over
};

// rgb24 to standard output: frames concatenated.
class RawStreamWriter : public FrameWriter {
 public:
  explicit RawStreamWriter(std::unique_ptr<OutputFile> out) : out_(std::move(out)) {}

  absl::Status Write(int64_t, const ImageView& image) override {
    if (image.pixel_format != "rgb24") {
      return absl::InvalidArgumentError(absl::StrCat("rgb24 output got ", image.pixel_format, " pixels"));
    }
    buffer_.clear();
    if (absl::Status s = AppendPackedPlanes(image, &buffer_); !s.ok()) return s;
    return out_->Write(buffer_);
  }

  absl::Status Finish() override { return out_->Commit(); }
  std::string destination() const override { return out_->path(); }
  std::string last_path() const override { return out_->path(); }

 private:
  std::unique_ptr<OutputFile> out_;
  std::string buffer_;  // reused: one frame's packed bytes
};

// y4m to one file or standard output. The header is written with the first
// frame, whose size and (possibly converted) format it declares.
class Y4mWriter : public FrameWriter {
 public:
  Y4mWriter(std::unique_ptr<OutputFile> out, const WriterOptions& options) : out_(std::move(out)) {
    info_.fps = options.fps;
    info_.aspect = options.aspect;
    info_.color_range = options.color_range;
    info_.chroma_left = options.chroma_left;
  }

  absl::Status Write(int64_t, const ImageView& image) override {
    const ImageView* yuv = &image;
    absl::StatusOr<ImageView> converted;
    if (image.pixel_format == "rgb24") {
      converted = converter_.Convert(image);
      if (!converted.ok()) return converted.status();
      yuv = &*converted;
    }
    buffer_.clear();
    if (!started_) {
      info_.width = yuv->width;
      info_.height = yuv->height;
      info_.pixel_format = yuv->pixel_format;
      // Our own conversion is limited range, whatever the stream said.
      if (yuv->pixel_format == "yuv444p") info_.color_range = "LIMITED";
      absl::StatusOr<std::string> header = Y4mHeader(info_);
      if (!header.ok()) return header.status();
      buffer_ = *std::move(header);
      started_ = true;
    }
    if (absl::Status s = AppendY4mFrame(info_, *yuv, &buffer_); !s.ok()) return s;
    return out_->Write(buffer_);
  }

  absl::Status Finish() override { return out_->Commit(); }
  std::string destination() const override { return out_->path(); }
  std::string last_path() const override { return out_->path(); }

 private:
  std::unique_ptr<OutputFile> out_;
  Y4mStreamInfo info_;
  bool started_ = false;
  Yuv444Converter converter_;
  std::string buffer_;
};

// "clip" for "/videos/clip.mp4"; "frames" when nothing is left.
std::string Stem(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  const size_t dot = name.rfind('.');
  if (dot != std::string::npos && dot > 0) name.resize(dot);
  return name.empty() || name == "." || name == ".." ? "frames" : name;
}

}  // namespace

std::optional<FileFormat> ParseFileFormat(absl::string_view name) {
  if (name == "png") return FileFormat::kPng;
  if (name == "ppm") return FileFormat::kPpm;
  if (name == "y4m") return FileFormat::kY4m;
  if (name == "rgb24") return FileFormat::kRgb24;
  return std::nullopt;
}

const char* FileFormatName(FileFormat format) {
  switch (format) {
    case FileFormat::kPng: return "png";
    case FileFormat::kPpm: return "ppm";
    case FileFormat::kY4m: return "y4m";
    case FileFormat::kRgb24: return "rgb24";
  }
  return "?";
}

std::string FrameFileName(int64_t index, FileFormat format) {
  return absl::StrFormat("frame_%06d.%s", index, format == FileFormat::kRgb24 ? "rgb" : FileFormatName(format));
}

std::string FrameFileNameAt(int64_t position, int64_t index, FileFormat format) {
  return absl::StrFormat("%06d_%s", position, FrameFileName(index, format));
}

absl::StatusOr<std::unique_ptr<FrameWriter>> MakeFrameWriter(const WriterOptions& options) {
  const bool to_stdout = options.out == kStdout;
  if (to_stdout && (options.format == FileFormat::kPng || options.format == FileFormat::kPpm)) {
    return absl::InvalidArgumentError(absl::StrCat(FileFormatName(options.format),
                                                   " writes one file per frame and needs a folder, not '-'; "
                                                   "use --format y4m or rgb24 for standard output"));
  }
  if (options.out.empty()) return absl::InvalidArgumentError("no output folder given");
  if (!to_stdout) {
    std::error_code error;
    std::filesystem::create_directories(options.out, error);
    if (error) {
      return absl::Status(absl::ErrnoToStatusCode(error.value()),
                          absl::StrCat("cannot create output folder ", options.out, ": ", error.message()));
    }
  }
  if (options.format == FileFormat::kPng || options.format == FileFormat::kPpm ||
      (options.format == FileFormat::kRgb24 && !to_stdout)) {
    return std::unique_ptr<FrameWriter>(
        new FilePerFrameWriter(options.format, options.out, options.name_by_position, options.aspect,
                               options.input_path));
  }
  const std::string path =
      to_stdout ? std::string(kStdout) : absl::StrCat(options.out, "/", Stem(options.input_path), ".y4m");
  // A .y4m decoded into its own folder would be replaced by its output.
  struct stat input {}, output {};
  if (!to_stdout && stat(options.input_path.c_str(), &input) == 0 && stat(path.c_str(), &output) == 0 &&
      input.st_dev == output.st_dev && input.st_ino == output.st_ino) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is the input video, which the output would replace; "
                                                   "give another --out folder"));
  }
  absl::StatusOr<std::unique_ptr<OutputFile>> file = OutputFile::Create(path);
  if (!file.ok()) return file.status();
  if (options.format == FileFormat::kRgb24) {
    return std::unique_ptr<FrameWriter>(new RawStreamWriter(*std::move(file)));
  }
  return std::unique_ptr<FrameWriter>(new Y4mWriter(*std::move(file), options));
}

void UnlinkTemporaryFilesOnSignal() {
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) {
    // A signal ignored when the command started (nohup, `trap '' INT`)
    // stays ignored: the user asked for the decode to outlive it.
    struct sigaction current {};
    if (sigaction(signal_number, nullptr, &current) == 0 && current.sa_handler == SIG_IGN) continue;
    std::signal(signal_number, UnlinkTempsAndReraise);
  }
}

}  // namespace codecvisor::cli
