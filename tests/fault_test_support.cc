#include "tests/fault_test_support.h"

#include <dirent.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/testing/synthetic_pattern.h"
#include "tests/reliability_log.h"

namespace codecvisor::testing {

using ::codecvisor::internal::Host;
using ::codecvisor::internal::BackendStatus;
using ::codecvisor::internal::VideoDecoder;
using ::codecvisor::internal::DecoderOptions;
using ::codecvisor::internal::Frame;

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
  const SyntheticVideo v{.frames = 40, .width = 32, .height = 24, .fps = 10, .start = 0};
  std::vector<uint8_t> want(32 * 24 * 3);
  FillSyntheticFrame(v, CV_OUTPUT_RGB24, index, want.data());
  auto got = frame.data();
  return got.size() == want.size() && std::equal(got.begin(), got.end(), want.begin());
}

void FaultRow::Saw(const std::string& what, int64_t n) {
  for (auto& [seen, count] : seen_) {
    if (seen == what) {
      count += n;
      return;
    }
  }
  seen_.emplace_back(what, n);
}

void FaultRow::Note(const std::string& fact) { seen_.emplace_back(fact, kNote); }

std::string FaultRow::Outcome() const {
  std::vector<std::string> parts;
  for (const auto& [what, count] : seen_) parts.push_back(count == kNote ? what : absl::StrCat(what, " ×", count));
  return absl::StrJoin(parts, "; ");
}

std::string CodeName(const absl::Status& status) { return absl::StatusCodeToString(status.code()); }

bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds poll, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return done();
    std::this_thread::sleep_for(poll);
  }
  return true;
}

std::string FrameOutcome(const absl::StatusOr<Frame>& frame, int64_t index) {
  if (!frame.ok()) return CodeName(frame.status());
  return IsSyntheticFrame(*frame, index) ? "correct frame" : "WRONG frame";
}

namespace {

// The suite column: the Bazel test's name (TEST_TARGET is //tests:NAME).
std::string SuiteName() {
  const char* target = std::getenv("TEST_TARGET");
  if (target == nullptr) return "unknown";
  const std::string label(target);
  return label.substr(label.rfind(':') + 1);
}

}  // namespace

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
  const int children = CountChildren(), mappings = CountChannelMappings(), fds = CountOpenFds() - fds_before_;
  EXPECT_EQ(children, 0) << "a backend process outlived the Host";
  EXPECT_EQ(mappings, 0) << "a channel mapping leaked";
  EXPECT_EQ(fds, 0) << "descriptors leaked";
  const std::string leaks =
      children == 0 && mappings == 0 && fds == 0
          ? "after the Host: no process, descriptor or mapping left"
          : absl::StrCat("after the Host: LEAKED ", children, " processes, ", fds, " descriptors, ", mappings,
                         " mappings");
  for (FaultRow& row : rows_) {
    row.Note(leaks);
    const bool passed = row.verdict().has_value() ? *row.verdict() && children == 0 && mappings == 0 && fds == 0
                                                  : !HasFailure();
    RecordFault(SuiteName(), row.fault(), row.tries, row.Outcome(), passed);
  }
  rows_.clear();
}

FaultRow& FaultTest::Row(const std::string& fault) {
  for (FaultRow& row : rows_) {
    if (row.fault() == fault) return row;
  }
  return rows_.emplace_back(fault);
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
