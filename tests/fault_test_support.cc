#include "tests/fault_test_support.h"

#include <dirent.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "backends/testing/synthetic_pattern.h"

namespace codecvisor::testing {

std::string Runfile(const std::string& path) {
  return std::string(std::getenv("TEST_SRCDIR")) + "/codecvisor/" + path;
}

std::string WriteFile(const std::string& name, const std::string& text) {
  std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

std::string WriteSyntheticVideo(const std::string& name, const std::string& extra) {
  return WriteFile(name, "synthetic frames=40 width=32 height=24 fps=10 " + extra);
}

int CountOpenFds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d) != nullptr) ++n;
    closedir(d);
  }
  return n;
}

int CountChannelMappings() {
  std::ifstream maps("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);) n += line.find("codecvisor-channel") != std::string::npos;
  return n;
}

int CountChildren() {
  int n = 0;
  std::ostringstream path;
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return -1;
  while (dirent* t = readdir(tasks)) {
    if (t->d_name[0] == '.') continue;
    std::ifstream children(std::string("/proc/self/task/") + t->d_name + "/children");
    for (int pid; children >> pid;) ++n;
  }
  closedir(tasks);
  return n;
}

bool IsSyntheticFrame(const Frame& frame, int64_t index) {
  if (frame.index() != index || frame.width() != 32 || frame.height() != 24) return false;
  const SyntheticVideo v{40, 32, 24, 10, 0};
  std::vector<uint8_t> want(32 * 24 * 3);
  FillSyntheticFrame(v, CV_OUTPUT_RGB24, index, want.data());
  auto got = frame.data();
  return got.size() == want.size() && std::equal(got.begin(), got.end(), want.begin());
}

void FaultTest::SetUp() {
  fds_before_ = CountOpenFds();
  options_.layout = InstallLayout{Runfile("backends/sdk/runner/codecvisor-backend"), Runfile("backends/cpu")};
  options_.discovery = DiscoveryOptions{{}, Runfile("backends/cpu"), true};
  options_.supervision.heartbeat_interval = std::chrono::milliseconds(0);
  StartHost();
}

void FaultTest::StartHost() {
  host_.reset();
  auto host = Host::Create(options_);
  ASSERT_TRUE(host.ok()) << host.status();
  host_ = *std::move(host);
  ASSERT_TRUE(host_->LoadBackend(Runfile("backends/testing/faulty.toml")).ok());
  ASSERT_TRUE(host_->LoadBackend(Runfile("backends/testing/synthetic.toml")).ok());
}

void FaultTest::TearDown() {
  host_.reset();
  EXPECT_EQ(CountChildren(), 0) << "a backend process outlived the Host";
  EXPECT_EQ(CountChannelMappings(), 0) << "a channel mapping leaked";
  EXPECT_EQ(CountOpenFds(), fds_before_) << "descriptors leaked";
}

absl::StatusOr<std::unique_ptr<VideoDecoder>> FaultTest::Open(const std::string& path, const std::string& device,
                                                              DecoderOptions options) {
  options.device = device;
  return host_->OpenDecoder(path, options);
}

BackendStatus FaultTest::StatusOf(const std::string& name) {
  for (BackendStatus& s : host_->Backends()) {
    if (s.name == name) return s;
  }
  ADD_FAILURE() << "no backend " << name;
  return {};
}

}  // namespace codecvisor::testing
