// The public C++ API (include/codecvisor/) end to end: a Host discovering
// real manifests, the synthetic backend in a real sandboxed child, frames
// checked byte for byte, and errors as Status values with the right codes.
// Nothing here includes a header behind the API except the synthetic
// backend's pixel pattern, the reference the frames are checked against.

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "base/cgroup_paths.h"
#include "tests/api_host_test_fixture.h"

namespace codecvisor {
namespace {

using testing::Runfile;

TEST_F(ApiHostTest, DiscoversTheBuiltInAndThePathsBackendsWithoutStartingThem) {
  std::vector<std::string> names;
  for (const BackendInfo& b : host_->Backends()) {
    names.push_back(b.name);
    if (b.name == "cpu" || b.name == "synthetic") {
      EXPECT_EQ(b.state, "discovered") << b.name;
      EXPECT_EQ(b.pid, -1) << b.name;
    }
  }
  EXPECT_NE(std::find(names.begin(), names.end(), "cpu"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "synthetic"), names.end());
  EXPECT_EQ(host_->default_device(), "cpu");
}

TEST_F(ApiHostTest, AutoloadOffLeavesOnlyTheBuiltInBackend) {
  HostOptions options;
  options.backend_path = {Runfile("backends/testing")};
  options.autoload = false;
  auto host = Host::Create(options);
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  std::vector<BackendInfo> backends = (*host)->Backends();
  ASSERT_EQ(backends.size(), 1u);
  EXPECT_EQ(backends[0].name, "cpu");
  // Asking for a plugin's device says why it is not there: the path the
  // user set is not searched (it said to set that path).
  DecoderOptions on_plugin;
  on_plugin.device = "synthetic";
  auto refused = (*host)->OpenDecoder(clip_, on_plugin);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kNotFound) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("installed backends: cpu (cpu)); this host was created with autoloading "
                                            "off, which loads the built-in cpu backend alone"),
            std::string::npos)
      << refused.status().ToString();
  // Options decide for the host created with them, whatever the
  // environment says; turned off by the environment, the message names
  // the value set.
  setenv("CODECVISOR_DEVICE_BACKEND_AUTOLOAD", "false", 1);
  auto by_options = (*host)->OpenDecoder(clip_, on_plugin);
  auto environment_host = Host::Create();
  unsetenv("CODECVISOR_DEVICE_BACKEND_AUTOLOAD");
  ASSERT_TRUE(environment_host.ok()) << environment_host.status().ToString();
  EXPECT_NE(by_options.status().message().find("this host was created with autoloading off"), std::string::npos)
      << by_options.status().ToString();
  auto from_environment = (*environment_host)->OpenDecoder(clip_, on_plugin);
  ASSERT_FALSE(from_environment.ok());
  EXPECT_NE(from_environment.status().message().find(
                "CODECVISOR_DEVICE_BACKEND_AUTOLOAD=false is set (anything but 1 turns autoloading off)"),
            std::string::npos)
      << from_environment.status().ToString();
}

TEST_F(ApiHostTest, MetadataAndEveryAccessMethod) {
  auto d = Open();
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->backend_name(), "synthetic");
  EXPECT_EQ(d->label(), clip_);
  EXPECT_EQ(d->metadata().width, kWidth);
  EXPECT_EQ(d->metadata().height, kHeight);
  EXPECT_EQ(d->metadata().num_frames(), 40);
  EXPECT_DOUBLE_EQ(d->metadata().average_fps, 10);

  auto one = d->GetFrameAt(7);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  ExpectFrame(*one, 7);
  auto last = d->GetFrameAt(-1);
  ASSERT_TRUE(last.ok());
  ExpectFrame(*last, 39);

  // A list whose frames would take more than half the memory this process
  // may use is refused before anything is decoded: one frame asked for
  // that many times used to be copied until half the memory was taken.
  {
    // (Each frame counted with 256 bytes of bookkeeping besides its pixels.)
    const size_t too_many = UsableMemoryBytes() / 2 / (kWidth * kHeight * 3 + 256) + 1;
    auto refused = d->GetFramesAt(std::vector<int64_t>(too_many, 3));
    EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted) << refused.status().ToString();
    EXPECT_NE(refused.status().message().find(std::to_string(too_many) + " frames of 2304 bytes each"),
              std::string::npos)
        << refused.status().ToString();
    EXPECT_EQ(d->retries(), 0u);
  }
  const std::vector<int64_t> wanted = {5, 1, 5};
  auto at = d->GetFramesAt(wanted);
  ASSERT_TRUE(at.ok()) << at.status().ToString();
  EXPECT_EQ(Indices(*at), wanted);
  for (const Frame& f : *at) ExpectFrame(f, f.index());
  at->clear();  // gives the arena slots back
  // Negative indices are placed first, so that the frames are asked for in
  // stream order, each once: -1 and 39 are one frame, the second a copy
  // (each was decoded afresh, in the order given, before).
  const std::vector<int64_t> from_end = {-1, 4, 39, -40};
  auto back = d->GetFramesAt(from_end);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(Indices(*back), (std::vector<int64_t>{39, 4, 39, 0}));
  for (const Frame& f : *back) ExpectFrame(f, f.index());
  EXPECT_NE((*back)[0].shared(), (*back)[2].shared()) << "frame 39 was decoded twice";
  back->clear();
  EXPECT_EQ(d->GetFramesAt(std::vector<int64_t>{3, -41}).status().code(), StatusCode::kOutOfRange);

  auto range = d->GetFramesInRange(0, 40, 10);
  ASSERT_TRUE(range.ok());
  EXPECT_EQ(Indices(*range), (std::vector<int64_t>{0, 10, 20, 30}));
  range->clear();
  // Negative bounds count from the end, as FrameSelection says.
  auto tail = d->GetFramesInRange(-3, 40);
  ASSERT_TRUE(tail.ok()) << tail.status().ToString();
  EXPECT_EQ(Indices(*tail), (std::vector<int64_t>{37, 38, 39}));
  tail->clear();
  auto but_last = d->GetFramesInRange(35, -1, 2);
  ASSERT_TRUE(but_last.ok()) << but_last.status().ToString();
  EXPECT_EQ(Indices(*but_last), (std::vector<int64_t>{35, 37}));
  but_last->clear();
  const Status before_first = d->GetFramesInRange(-41, 3).status();
  EXPECT_EQ(before_first.code(), StatusCode::kOutOfRange);
  // Named with the file and backend, as every error of a decoder is.
  EXPECT_NE(before_first.message().find(d->label() + " (backend 'synthetic'): frames [-41, 3)"), std::string::npos)
      << before_first.ToString();
  EXPECT_EQ(d->GetFramesInRange(-2, -5).status().code(), StatusCode::kInvalidArgument);

  auto played = d->GetFramePlayedAt(1.05);
  ASSERT_TRUE(played.ok());
  EXPECT_EQ(played->index(), 5);
  const std::vector<double> times = {0.5, 2.0};
  auto played_at = d->GetFramesPlayedAt(times);
  ASSERT_TRUE(played_at.ok());
  EXPECT_EQ(Indices(*played_at), (std::vector<int64_t>{0, 15}));
  played_at->clear();
  auto played_in = d->GetFramesPlayedInRange(1.0, 1.3);
  ASSERT_TRUE(played_in.ok());
  EXPECT_EQ(Indices(*played_in), (std::vector<int64_t>{5, 6, 7}));
}

TEST_F(ApiHostTest, PlanarOutputHasThreePlanes) {
  DecoderOptions options;
  options.output_format = OutputFormat::kRgb24Planar;
  auto d = Open(options);
  ASSERT_NE(d, nullptr);
  auto f = d->GetFrameAt(2);
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(f->num_planes(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(f->plane(i).size(), kWidth * kHeight);
  ExpectFrame(*f, 2, OutputFormat::kRgb24Planar);
}

// A backend that does not know native_formats (the synthetic one reads no
// such field) sends the RGB asked for, which callers handle as before.
TEST_F(ApiHostTest, ABackendIgnoringNativeFormatsSendsRgb) {
  DecoderOptions options;
  options.native_formats = RgbConverter::Formats();
  options.native_formats.push_back("rgb24");  // even its own pixel format
  auto d = Open(options);
  ASSERT_NE(d, nullptr);
  auto f = d->GetFrameAt(3);
  ASSERT_TRUE(f.ok());
  ExpectFrame(*f, 3);
}

TEST_F(ApiHostTest, ForEachFrameStreamsAndStopsAtTheSinksError) {
  auto d = Open();
  ASSERT_NE(d, nullptr);
  std::vector<int64_t> seen;
  Status s = d->ForEachFrame(FrameSelection::InRange(0, 40), [&](Frame f) {
    ExpectFrame(f, f.index());
    seen.push_back(f.index());
    return Status();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(seen.size(), 40u);

  seen.clear();
  s = d->ForEachFrame(FrameSelection::AtIndices({1, 2, 3}), [&](Frame f) {
    seen.push_back(f.index());
    return f.index() == 2 ? Status(StatusCode::kCancelled, "enough") : Status();
  });
  EXPECT_EQ(s.code(), StatusCode::kCancelled);
  EXPECT_NE(s.message().find("enough"), std::string::npos) << s.ToString();
  EXPECT_EQ(seen, (std::vector<int64_t>{1, 2}));
  auto after = d->GetFrameAt(9);  // still usable
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  ExpectFrame(*after, 9);
}

TEST_F(ApiHostTest, ListsLongerThanOneRequestComeBackWholeAndInOrder) {
  auto d = Open();
  ASSERT_NE(d, nullptr);
  std::vector<int64_t> wanted;
  for (int64_t i = 0; i < 5000; ++i) wanted.push_back((i * 7) % 40);  // > 2 requests' worth
  std::vector<int64_t> seen;
  Status s = d->ForEachFrame(FrameSelection::AtIndices(wanted), [&](Frame f) {
    seen.push_back(f.index());
    return Status();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(seen, wanted);
}

TEST_F(ApiHostTest, BytesInMemoryDecodeLikeTheFile) {
  std::ifstream in(clip_);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  DecoderOptions options;
  options.device = "synthetic";
  auto d = host_->OpenDecoderFromBytes(bytes, "clip in memory", options);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ((*d)->label(), "clip in memory");
  EXPECT_EQ((*d)->metadata().num_frames(), 40);
  auto f = (*d)->GetFrameAt(-2);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ExpectFrame(*f, 38);
  EXPECT_EQ(host_->OpenDecoderFromBytes("", "nothing", options).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(ApiHostTest, MisuseIsAStatusWithTheRightCode) {
  auto d = Open();
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->GetFrameAt(40).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(d->GetFrameAt(-41).status().code(), StatusCode::kOutOfRange);

  auto missing = host_->OpenDecoder(testing::WriteFile("x", "") + ".missing");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  // Paths the kernel refuses (through a file, a loop of links, too long):
  // the caller's error, not an internal one.
  EXPECT_EQ(host_->OpenDecoder(clip_ + "/x").status().code(), StatusCode::kNotFound);
  const std::string loop = testing::WriteFile("loop_target", "") + ".loop";
  ASSERT_EQ(symlink(loop.c_str(), loop.c_str()), 0);
  EXPECT_EQ(host_->OpenDecoder(loop).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(host_->OpenDecoder(std::string(5000, 'a')).status().code(), StatusCode::kInvalidArgument);
  // A NUL in the path: refused, not the file named by what precedes it.
  auto nul = host_->OpenDecoder(clip_ + std::string("\0ignored", 8));
  EXPECT_EQ(nul.status().code(), StatusCode::kInvalidArgument) << nul.status().ToString();
  DecoderOptions unknown;
  unknown.device = "acme";
  auto no_device = host_->OpenDecoder(clip_, unknown);
  EXPECT_EQ(no_device.status().code(), StatusCode::kNotFound);
  EXPECT_NE(no_device.status().message().find("acme"), std::string::npos) << no_device.status().ToString();
  // The cpu has no second device: an index is refused, not ignored.
  DecoderOptions second_cpu;
  second_cpu.device = "cpu:1";
  auto refused = host_->OpenDecoder(clip_, second_cpu);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("the cpu device has no index"), std::string::npos)
      << refused.status().ToString();
  second_cpu.device = "cpu:0";  // torch's name for the cpu: the cpu backend opens it (and finds no video)
  auto cpu0 = host_->OpenDecoder(clip_, second_cpu);
  EXPECT_NE(cpu0.status().code(), StatusCode::kInvalidArgument) << cpu0.status().ToString();
  EXPECT_EQ(cpu0.status().message().find("has no index"), std::string::npos) << cpu0.status().ToString();
  DecoderOptions no_slots;
  no_slots.device = "synthetic";
  no_slots.arena_slots = 0;
  EXPECT_EQ(host_->OpenDecoder(clip_, no_slots).status().code(), StatusCode::kInvalidArgument);
  // Integers cast to the enums, and a stream index below -1 (the best
  // video stream), were taken as the defaults.
  DecoderOptions odd_enum;
  odd_enum.device = "synthetic";
  odd_enum.output_format = static_cast<OutputFormat>(42);
  EXPECT_EQ(host_->OpenDecoder(clip_, odd_enum).status().code(), StatusCode::kInvalidArgument);
  odd_enum.output_format = OutputFormat::kRgb24;
  odd_enum.seek_mode = static_cast<SeekMode>(-3);
  EXPECT_EQ(host_->OpenDecoderFromBytes("x", "x", odd_enum).status().code(), StatusCode::kInvalidArgument);
  odd_enum.seek_mode = SeekMode::kExact;
  odd_enum.stream_index = -7;
  EXPECT_EQ(host_->OpenDecoder(clip_, odd_enum).status().code(), StatusCode::kInvalidArgument);
  // native_formats the protocol cannot carry are the caller's error, caught
  // before a backend sees them (it would drop a malformed request).
  DecoderOptions too_many;
  too_many.device = "synthetic";
  too_many.native_formats.assign(17, "yuv420p");
  EXPECT_EQ(host_->OpenDecoder(clip_, too_many).status().code(), StatusCode::kInvalidArgument);
  for (const char* bad : {"", "yuv420p,nv12", "yuv 420p", "\xff"}) {
    DecoderOptions odd;
    odd.device = "synthetic";
    odd.native_formats = {"nv12", bad};
    const Status s = host_->OpenDecoder(clip_, odd).status();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("is not a pixel format name"), std::string::npos) << s.ToString();
  }
  too_many.native_formats.resize(16);  // the most there may be
  EXPECT_TRUE(host_->OpenDecoder(clip_, too_many).ok());

  EXPECT_EQ(host_->LoadBackend(testing::WriteFile("bad.toml", "name = ")).code(), StatusCode::kInvalidArgument);
  const Status no_path = host_->LoadBackend("");
  EXPECT_EQ(no_path.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(no_path.message(), "no manifest path given to load a backend from");
  EXPECT_EQ(host_->ResetBackend("nope").code(), StatusCode::kNotFound);
}

TEST_F(ApiHostTest, AStartedBackendReportsItsProcessAndHandshake) {
  Status s = host_->StartBackend("synthetic", std::chrono::seconds(30));
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (const BackendInfo& b : host_->Backends()) {
    if (b.name != "synthetic") continue;
    EXPECT_EQ(b.state, "ready");
    EXPECT_GT(b.pid, 0);
    EXPECT_FALSE(b.version.empty());
    EXPECT_FALSE(b.seek_modes.empty());
    EXPECT_FALSE(b.output_formats.empty());
    EXPECT_NE(b.sandbox.find("seccomp"), std::string::npos) << b.sandbox;
    return;
  }
  FAIL() << "synthetic not listed";
}

}  // namespace
}  // namespace codecvisor
