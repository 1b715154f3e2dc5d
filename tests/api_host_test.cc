// The public C++ API (include/codecvisor/) end to end: a Host discovering
// real manifests, the synthetic backend in a real sandboxed child, frames
// checked byte for byte, and errors as Status values with the right codes.
// Nothing here includes a header behind the API except the synthetic
// backend's pixel pattern, the reference the frames are checked against.

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backends/testing/synthetic_pattern.h"
#include "codecvisor/codecvisor.h"
#include "gtest/gtest.h"
#include "tests/test_paths.h"

namespace codecvisor {
namespace {

using testing::Runfile;

constexpr uint32_t kWidth = 32, kHeight = 24;
const testing::SyntheticVideo kClip{.frames = 40, .width = kWidth, .height = kHeight, .fps = 10, .start = 0.5};

class ApiHostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HostOptions options;
    options.backend_path = {Runfile("backends/testing")};  // synthetic.toml, faulty.toml, ...
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

  std::unique_ptr<Host> host_;
  std::string clip_;
};

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

  const std::vector<int64_t> wanted = {5, 1, 5};
  auto at = d->GetFramesAt(wanted);
  ASSERT_TRUE(at.ok()) << at.status().ToString();
  EXPECT_EQ(Indices(*at), wanted);
  for (const Frame& f : *at) ExpectFrame(f, f.index());
  at->clear();  // gives the arena slots back

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

// A child forked from a process with a Host, a decoder and a frame on an
// arena slot: its calls on them fail (they are the parent's, over the
// parent's channel), it can make a Host of its own, and it leaves by
// returning, destroying what it inherited, without waiting on the parent's
// threads or touching the parent's channel: the parent decodes on, with
// no restart. Before, the child hung in the inherited Host's destructor
// and the parent's next request timed out.
TEST_F(ApiHostTest, AForkedChildLeavesItsParentsObjectsAlone) {
  auto d = Open();
  ASSERT_NE(d, nullptr);
  auto held = d->GetFrameAt(3);
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int code = 0;
    {
      std::unique_ptr<Host> inherited = std::move(host_);
      std::unique_ptr<VideoDecoder> decoder = std::move(d);
      Frame frame = *std::move(held);
      if (decoder->GetFrameAt(1).status().code() != StatusCode::kFailedPrecondition) code |= 1;
      if (inherited->OpenDecoder(clip_, DecoderOptions{.device = "synthetic"}).status().code() !=
          StatusCode::kFailedPrecondition) {
        code |= 2;
      }
      // Nothing read behind locks the parent's threads may have held.
      if (!inherited->Backends().empty() || !inherited->warnings().empty()) code |= 32;
      frame.Detach();  // a copy; the slot stays the parent's
      if (frame.shared() || frame.data().size() != kWidth * kHeight * 3) code |= 4;
      HostOptions options;
      options.backend_path = {Runfile("backends/testing")};
      auto own = Host::Create(options);
      if (!own.ok()) {
        code |= 8;
      } else {
        auto mine = (*own)->OpenDecoder(clip_, DecoderOptions{.device = "synthetic"});
        if (!mine.ok() || !(*mine)->GetFrameAt(2).ok()) code |= 16;
      }
    }  // everything inherited is destroyed here, as a return from main would
    _exit(code);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "child status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: a call on the parent's decoder, 2: on its Host, 4: Detach, 8/16: a Host of its own, "
                                  "32: Backends() or warnings() read";
  ExpectFrame(*held, 3);
  for (int64_t i : {10, 0, 39}) {
    auto f = d->GetFrameAt(i);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    ExpectFrame(*f, i);
  }
  EXPECT_EQ(d->retries(), 0u);
}

// One decoder called from four threads at once (documented misuse) and
// from its own ForEachFrame sink: each call is either served whole or
// refused with kFailedPrecondition; before, the threads' requests shared
// the channel and the process crashed (SIGSEGV in the ring) or the
// backend was killed as malformed.
TEST_F(ApiHostTest, ACallWhileAnotherIsInProgressIsRefused) {
  auto d = Open();
  ASSERT_NE(d, nullptr);
  std::atomic<int> served{0}, refused{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 50; ++k) {
        const int64_t i = (t * 7 + k) % 40;
        auto f = d->GetFramesInRange(i, std::min<int64_t>(i + 3, 40));
        if (f.ok()) {
          ++served;
          if (f->empty() || (*f)[0].index() != i) ++wrong;
        } else if (f.status().code() == StatusCode::kFailedPrecondition) {
          ++refused;
        } else {
          ++wrong;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(served.load() + refused.load(), 200);
  EXPECT_GT(served.load(), 0);
  EXPECT_EQ(d->retries(), 0u);
  Status inner;
  Status outer = d->ForEachFrame(FrameSelection::InRange(0, 2), [&](Frame) {
    inner = d->GetFrameAt(5).status();
    return Status();
  });
  EXPECT_TRUE(outer.ok()) << outer.ToString();
  EXPECT_EQ(inner.code(), StatusCode::kFailedPrecondition);
  auto after = d->GetFrameAt(5);
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  ExpectFrame(*after, 5);
}

TEST_F(ApiHostTest, AFrameHasNoPlanePastItsLastAndTimeoutsArePositive) {
  auto d = Open();
  ASSERT_NE(d, nullptr);
  auto f = d->GetFrameAt(1);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_EQ(f->num_planes(), 1u);
  EXPECT_TRUE(f->plane(1).empty());
  EXPECT_EQ(f->stride(7), 0u);
  const Frame empty;
  EXPECT_TRUE(empty.plane(0).empty());
  for (auto [request, open] : {std::pair{0, 1000}, std::pair{1000, 0}, std::pair{-5, 1000}}) {
    DecoderOptions options;
    options.device = "synthetic";
    options.request_timeout = std::chrono::milliseconds(request);
    options.open_timeout = std::chrono::milliseconds(open);
    EXPECT_EQ(host_->OpenDecoder(clip_, options).status().code(), StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(host_->StartBackend("synthetic", std::chrono::milliseconds(-5)).code(), StatusCode::kInvalidArgument);
}

// milliseconds::max() is "no limit", taken as a long one: a deadline of now
// plus it overflowed into the past, and the backend was killed at once.
TEST_F(ApiHostTest, TheLongestTimeoutsWaitAndKillNothing) {
  ASSERT_TRUE(host_->StartBackend("synthetic", std::chrono::milliseconds::max()).ok());
  DecoderOptions options;
  options.device = "synthetic";
  options.request_timeout = std::chrono::milliseconds::max();
  options.open_timeout = std::chrono::milliseconds::max();
  auto d = host_->OpenDecoder(clip_, options);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  auto frames = (*d)->GetFramesInRange(0, 5);
  ASSERT_TRUE(frames.ok()) << frames.status().ToString();
  EXPECT_EQ(frames->size(), 5u);
  EXPECT_EQ((*d)->retries(), 0u);
  for (const BackendInfo& b : host_->Backends()) {
    if (b.name == "synthetic") EXPECT_EQ(b.restarts, 0u);
  }
}

TEST_F(ApiHostTest, FramesAreZeroCopyUntilDetached) {
  auto d = Open();
  ASSERT_NE(d, nullptr);
  auto f = d->GetFrameAt(3);
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f->shared());
  Frame copy = f->CopyOut();
  EXPECT_FALSE(copy.shared());
  ExpectFrame(copy, 3);
  f->Detach();
  EXPECT_FALSE(f->shared());
  ExpectFrame(*f, 3);
  Frame moved = std::move(*f);
  ExpectFrame(moved, 3);
}

TEST_F(ApiHostTest, AFrameOutlivesItsDecoderAndHost) {
  auto d = Open();
  ASSERT_NE(d, nullptr);
  auto f = d->GetFrameAt(11);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE(f->shared());
  d.reset();
  host_.reset();  // stops the backend's process
  ExpectFrame(*f, 11);
}

TEST_F(ApiHostTest, ADecoderOutlivingItsHostFailsAsUnavailable) {
  auto d = Open();
  ASSERT_NE(d, nullptr);
  host_.reset();
  auto f = d->GetFrameAt(1);
  EXPECT_EQ(f.status().code(), StatusCode::kUnavailable) << f.status().ToString();
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
  DecoderOptions unknown;
  unknown.device = "acme";
  auto no_device = host_->OpenDecoder(clip_, unknown);
  EXPECT_EQ(no_device.status().code(), StatusCode::kNotFound);
  EXPECT_NE(no_device.status().message().find("acme"), std::string::npos) << no_device.status().ToString();
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
