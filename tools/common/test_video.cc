#include "tools/common/test_video.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tools/common/subprocess.h"

namespace codecvisor::tools {

absl::Status MakeTestVideo(const std::vector<std::string>& args, const std::string& path) {
  std::vector<std::string> argv = {"ffmpeg", "-nostdin", "-y", "-v", "error"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back(path);
  return RunForOutput(argv).status();
}

absl::Status MakeTestVideo(absl::string_view args, const std::string& path) {
  return MakeTestVideo(std::vector<std::string>(absl::StrSplit(args, ' ', absl::SkipEmpty())), path);
}

std::vector<std::string> TestPatternInput(int width, int height, int rate) {
  return {"-f", "lavfi", "-i", absl::StrCat("testsrc2=size=", width, "x", height, ":rate=", rate)};
}

}  // namespace codecvisor::tools
