// File: tests/api_host_test_fixture.h
//
// A Host with the testing backends and a 40-frame synthetic clip, for the
// public C++ API's end-to-end tests (api_host_test.cc: discovery, access,
// output formats, misuse; api_lifetime_test.cc: lifetimes, threads, fork).

#ifndef CODECVISOR_TESTS_API_HOST_TEST_FIXTURE_H_
#define CODECVISOR_TESTS_API_HOST_TEST_FIXTURE_H_

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/testing/synthetic_pattern.h"
#include "codecvisor/codecvisor.h"
#include "gtest/gtest.h"
#include "tests/test_paths.h"

namespace codecvisor {


inline constexpr uint32_t kWidth = 32, kHeight = 24;
inline const testing::SyntheticVideo kClip{.frames = 40, .width = kWidth, .height = kHeight, .fps = 10, .start = 0.5};

class ApiHostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HostOptions options;
    options.backend_path = {testing::Runfile("backends/testing")};  // synthetic.toml, faulty.toml, ...
    auto host = Host::Create(options);
    ASSERT_TRUE(host.ok()) << host.status().ToString();
    host_ = *std::move(host);
    clip_ = testing::WriteFile("clip.syn", "synthetic frames=40 width=32 height=24 fps=10 start=0.5");
  }

  std::unique_ptr<VideoDecoder> Open(DecoderOptions options = {}) {
    options.device = "synthetic";
    auto decoder = host_->OpenDecoder(clip_, options);
    EXPECT_TRUE(decoder.ok()) << decoder.status().ToString();
    return decoder.ok() ? *std::move(decoder) : nullptr;
  }

  static void ExpectFrame(const Frame& f, int64_t index, OutputFormat format = OutputFormat::kRgb24) {
    ASSERT_EQ(f.index(), index);
    ASSERT_EQ(f.width(), kWidth);
    ASSERT_EQ(f.height(), kHeight);
    EXPECT_EQ(f.format(), format);
    EXPECT_DOUBLE_EQ(f.pts_seconds(), 0.5 + index / 10.0);
    EXPECT_DOUBLE_EQ(f.duration_seconds(), 0.1);
    std::vector<uint8_t> want(kWidth * kHeight * 3);
    testing::FillSyntheticFrame(kClip, format == OutputFormat::kRgb24 ? CV_OUTPUT_RGB24 : CV_OUTPUT_RGB24_PLANAR,
                                index, want.data());
    ASSERT_EQ(f.data().size(), want.size());
    EXPECT_TRUE(std::equal(want.begin(), want.end(), f.data().begin())) << "frame " << index;
  }

  static std::vector<int64_t> Indices(const std::vector<Frame>& frames) {
    std::vector<int64_t> out;
    for (const Frame& f : frames) out.push_back(f.index());
    return out;
  }

  // Runs `body` in a forked child, which exits with what it returns: its
  // exit status, or 128 + the signal that ended it (-1: no child).
  static int ExitStatusInChild(const std::function<int()>& body) {
    const pid_t child = fork();
    if (child < 0) return -1;
    if (child == 0) _exit(body());
    int status = 0;
    if (waitpid(child, &status, 0) != child) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  std::unique_ptr<Host> host_;
  std::string clip_;
};

}  // namespace codecvisor

#endif  // CODECVISOR_TESTS_API_HOST_TEST_FIXTURE_H_
