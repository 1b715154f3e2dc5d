#include "tools/cli/frame_writers.h"

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace codecvisor::cli {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

WriterOptions Options(FileFormat format, const std::string& out, const std::string& input) {
  WriterOptions options;
  options.format = format;
  options.out = out;
  options.input_path = input;
  return options;
}

// Every file name in `dir`, sorted.
std::vector<std::string> Listing(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

class FrameWritersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(std::getenv("TEST_TMPDIR")) / ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    for (int i = 0; i < 2 * 2 * 3; ++i) rgb_.push_back(static_cast<uint8_t>(i * 20));
  }
  ImageView Rgb() const { return ImageView{2, 2, "rgb24", {{rgb_, 6}}}; }

  fs::path dir_;
  std::vector<uint8_t> rgb_;
};

// An interrupted decode: a y4m stream file is a temporary file until
// Finish(); `signal_number` (in a child process, which dies of it) must
// remove it from `out`.
void ExpectSignalRemovesTemporaryFile(const fs::path& out, const std::vector<uint8_t>& rgb, int signal_number) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    UnlinkTemporaryFilesOnSignal();
    WriterOptions options = Options(FileFormat::kY4m, out.string(), "clip.mp4");
    auto writer = MakeFrameWriter(options);
    if (!writer.ok() || !(*writer)->Write(0, ImageView{2, 2, "rgb24", {{rgb, 6}}}).ok()) _exit(3);
    // The stream file exists, under its temporary name, until Finish().
    if (Listing(out).size() != 1) _exit(4);
    raise(signal_number);
    _exit(5);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), signal_number) << "it dies of the signal, as it would have";
  EXPECT_EQ(Listing(out), std::vector<std::string>{}) << "a temporary file was left behind";
}

TEST_F(FrameWritersTest, SignalRemovesTemporaryFiles) {
  ExpectSignalRemovesTemporaryFile(dir_ / "interrupted", rgb_, SIGINT);
}

// A kill (SIGTERM) and a closed terminal (SIGHUP) clean up as Ctrl-C does.
TEST_F(FrameWritersTest, TermAndHangupRemoveTemporaryFilesToo) {
  for (int signal_number : {SIGTERM, SIGHUP}) {
    SCOPED_TRACE(strsignal(signal_number));
    ExpectSignalRemovesTemporaryFile(dir_ / ("signal_" + std::to_string(signal_number)), rgb_, signal_number);
  }
}

TEST_F(FrameWritersTest, FileNamesUseTheStreamIndex) {
  EXPECT_EQ(FrameFileName(42, FileFormat::kPng), "frame_000042.png");
  EXPECT_EQ(FrameFileName(0, FileFormat::kPpm), "frame_000000.ppm");
  EXPECT_EQ(FrameFileName(1234567, FileFormat::kRgb24), "frame_1234567.rgb");
}

TEST_F(FrameWritersTest, PpmFilesInACreatedFolder) {
  const fs::path out = dir_ / "nested" / "frames";
  auto writer = MakeFrameWriter(Options(FileFormat::kPpm, out.string(), "clip.mp4"));
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->Write(7, Rgb()).ok());
  ASSERT_TRUE((*writer)->Write(3, Rgb()).ok());
  ASSERT_TRUE((*writer)->Finish().ok());
  EXPECT_EQ(Listing(out), (std::vector<std::string>{"frame_000003.ppm", "frame_000007.ppm"}))
      << "no temporary files are left";
  EXPECT_EQ(ReadFile(out / "frame_000007.ppm"), "P6\n2 2\n255\n" + std::string(rgb_.begin(), rgb_.end()));
}

// `--out frames/` names its files frames/frame_NNNNNN.ppm, one slash.
TEST_F(FrameWritersTest, AFolderWithATrailingSlashGivesPathsWithOneSlash) {
  auto writer = MakeFrameWriter(Options(FileFormat::kPpm, dir_.string() + "//", "clip.mp4"));
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->Write(7, Rgb()).ok());
  EXPECT_EQ((*writer)->last_path(), dir_.string() + "/frame_000007.ppm");
  EXPECT_EQ((*writer)->destination(), dir_.string() + "/frame_NNNNNN.ppm");
  ASSERT_TRUE((*writer)->Finish().ok());
}

// A request that repeats a frame (--indices 5,3,5) keeps every frame, in
// request order: names start with the position in the request.
TEST_F(FrameWritersTest, RepeatedFramesNamedByPositionDoNotOverwrite) {
  EXPECT_EQ(FrameFileNameAt(2, 42, FileFormat::kPng), "000002_frame_000042.png");
  WriterOptions options = Options(FileFormat::kPpm, dir_.string(), "clip.mp4");
  options.name_by_position = true;
  auto writer = MakeFrameWriter(options);
  ASSERT_TRUE(writer.ok()) << writer.status();
  EXPECT_EQ((*writer)->last_path(), "");
  for (int64_t index : {5, 3, 5}) ASSERT_TRUE((*writer)->Write(index, Rgb()).ok());
  EXPECT_EQ((*writer)->last_path(), (dir_ / "000002_frame_000005.ppm").string());
  ASSERT_TRUE((*writer)->Finish().ok());
  EXPECT_EQ(Listing(dir_), (std::vector<std::string>{"000000_frame_000005.ppm", "000001_frame_000003.ppm",
                                                     "000002_frame_000005.ppm"}));
}

TEST_F(FrameWritersTest, PngFilesAreWholePngs) {
  auto writer = MakeFrameWriter(Options(FileFormat::kPng, dir_.string(), "clip.mp4"));
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->Write(0, Rgb()).ok());
  ASSERT_TRUE((*writer)->Finish().ok());
  EXPECT_EQ(ReadFile(dir_ / "frame_000000.png").substr(0, 8), "\x89PNG\r\n\x1a\n");
}

TEST_F(FrameWritersTest, RawFilesPerFrameInAFolder) {
  auto writer = MakeFrameWriter(Options(FileFormat::kRgb24, dir_.string(), "clip.mp4"));
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->Write(5, Rgb()).ok());
  ASSERT_TRUE((*writer)->Finish().ok());
  EXPECT_EQ(ReadFile(dir_ / "frame_000005.rgb"), std::string(rgb_.begin(), rgb_.end()));
}

TEST_F(FrameWritersTest, Y4mFileIsNamedAfterTheInputAndConvertsRgb) {
  WriterOptions options = Options(FileFormat::kY4m, dir_.string(), "/videos/clip.mp4");
  options.fps = {25, 1};
  options.color_range = "FULL";  // ignored: our own conversion is limited range
  auto writer = MakeFrameWriter(options);
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->Write(0, Rgb()).ok());
  ASSERT_TRUE((*writer)->Write(1, Rgb()).ok());
  EXPECT_FALSE(fs::exists(dir_ / "clip.y4m")) << "the stream appears only when finished";
  ASSERT_TRUE((*writer)->Finish().ok());
  EXPECT_EQ(Listing(dir_), std::vector<std::string>{"clip.y4m"});
  const std::string y4m = ReadFile(dir_ / "clip.y4m");
  const std::string header = "YUV4MPEG2 W2 H2 F25:1 Ip A0:0 C444 XCOLORRANGE=LIMITED\n";
  ASSERT_EQ(y4m.substr(0, header.size()), header);
  EXPECT_EQ(y4m.size(), header.size() + 2 * (6 + 12));
  EXPECT_EQ(y4m.substr(header.size(), 6), "FRAME\n");
}

TEST_F(FrameWritersTest, Y4mPassesYuv420pThroughByteForByte) {
  std::vector<uint8_t> y = {1, 2, 3, 4}, u = {5}, v = {6};
  WriterOptions options = Options(FileFormat::kY4m, dir_.string(), "a.b.c.mkv");
  options.fps = {30000, 1001};
  options.color_range = "LIMITED";
  options.chroma_left = true;
  auto writer = MakeFrameWriter(options);
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE((*writer)->Write(0, ImageView{2, 2, "yuv420p", {{y, 2}, {u, 1}, {v, 1}}}).ok());
  ASSERT_TRUE((*writer)->Finish().ok());
  EXPECT_EQ(ReadFile(dir_ / "a.b.c.y4m"),
            "YUV4MPEG2 W2 H2 F30000:1001 Ip A0:0 C420mpeg2 XCOLORRANGE=LIMITED\nFRAME\n\1\2\3\4\5\6");
}

TEST_F(FrameWritersTest, AFailedStreamLeavesNothingBehind) {
  std::vector<uint8_t> y = {1, 2, 3, 4}, u = {5}, v = {6};
  {
    auto writer = MakeFrameWriter(Options(FileFormat::kY4m, dir_.string(), "clip.mp4"));
    ASSERT_TRUE(writer.ok()) << writer.status();
    ASSERT_TRUE((*writer)->Write(0, ImageView{2, 2, "yuv420p", {{y, 2}, {u, 1}, {v, 1}}}).ok());
    // A frame of another size cannot join the stream.
    EXPECT_EQ((*writer)->Write(1, ImageView{4, 1, "yuv420p", {{y, 4}, {u, 2}, {v, 2}}}).code(),
              absl::StatusCode::kInvalidArgument);
  }  // destroyed without Finish()
  EXPECT_TRUE(Listing(dir_).empty());
}

TEST_F(FrameWritersTest, ImagesCannotGoToStdout) {
  for (FileFormat format : {FileFormat::kPng, FileFormat::kPpm}) {
    auto writer = MakeFrameWriter(Options(format, std::string(kStdout), "clip.mp4"));
    EXPECT_EQ(writer.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(writer.status().message().find("needs a folder"), std::string::npos) << writer.status();
  }
}

TEST_F(FrameWritersTest, WrongPixelsAreAnError) {
  std::vector<uint8_t> y = {1, 2, 3, 4}, u = {5}, v = {6};
  const ImageView yuv{2, 2, "yuv420p", {{y, 2}, {u, 1}, {v, 1}}};
  for (FileFormat format : {FileFormat::kPng, FileFormat::kPpm, FileFormat::kRgb24}) {
    auto writer = MakeFrameWriter(Options(format, dir_.string(), "clip.mp4"));
    ASSERT_TRUE(writer.ok()) << writer.status();
    EXPECT_EQ((*writer)->Write(0, yuv).code(), absl::StatusCode::kInvalidArgument) << FileFormatName(format);
  }
  EXPECT_TRUE(Listing(dir_).empty());
}

TEST_F(FrameWritersTest, AnOutputPathThatIsAFileIsAClearError) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "taken") << "x";
  auto writer = MakeFrameWriter(Options(FileFormat::kPng, (dir_ / "taken").string(), "clip.mp4"));
  ASSERT_FALSE(writer.ok());
  EXPECT_NE(writer.status().message().find("taken"), std::string::npos) << writer.status();
}

TEST_F(FrameWritersTest, FormatNames) {
  for (FileFormat format : {FileFormat::kPng, FileFormat::kPpm, FileFormat::kY4m, FileFormat::kRgb24}) {
    EXPECT_EQ(ParseFileFormat(FileFormatName(format)), format);
  }
  EXPECT_EQ(ParseFileFormat("jpeg"), std::nullopt);
}

}  // namespace
}  // namespace codecvisor::cli
