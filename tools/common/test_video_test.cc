#include "tools/common/test_video.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tools/common/subprocess.h"

namespace codecvisor::tools {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

// What ffprobe finds in the file: codec, size and frame count.
std::string Probe(const std::string& path) {
  absl::StatusOr<std::string> out =
      RunForOutput({"ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                    "stream=codec_name,width,height,nb_read_frames", "-of", "csv=p=0", path});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : "";
}

TEST(TestVideoTest, EncodesTheTestPatternAsAsked) {
  std::vector<std::string> args = TestPatternInput(64, 48, 25);
  EXPECT_EQ(args.back(), "testsrc2=size=64x48:rate=25");
  args.insert(args.end(), {"-frames:v", "7", "-c:v", "mpeg4", "-pix_fmt", "yuv420p"});
  const std::string path = TempPath("pattern.mkv");
  ASSERT_TRUE(MakeTestVideo(args, path).ok());
  EXPECT_EQ(Probe(path), "mpeg4,64,48,7\n");
}

TEST(TestVideoTest, SplitsAStringOfArgumentsAtSpaces) {
  const std::string path = TempPath("string.mkv");
  ASSERT_TRUE(MakeTestVideo("-f lavfi  -i testsrc=size=32x16:rate=10 -frames:v 3 -c:v mpeg4", path).ok());
  EXPECT_EQ(Probe(path), "mpeg4,32,16,3\n");
}

TEST(TestVideoTest, NamesTheEncoderThatFailed) {
  absl::Status failed = MakeTestVideo("-f lavfi -i testsrc2 -frames:v 1 -c:v no_such_encoder", TempPath("x.mkv"));
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.message().find("no_such_encoder"), std::string::npos) << failed;
}

}  // namespace
}  // namespace codecvisor::tools
