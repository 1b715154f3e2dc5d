// Hostile videos: a corpus of truncated, corrupted and fuzzed files, made
// at test time from clean videos in five codecs, decoded through the real
// host and the sandboxed cpu backend. Each must decode to frames or to a
// clear error naming the file, within its deadline; the host never
// crashes. The backend may crash on one (FFmpeg is not perfect): it is
// restarted, and the restarts are counted and reported.

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/host.h"
#include "tests/reliability_log.h"
#include "tests/test_paths.h"
#include "tools/conformance/samples.h"

namespace codecvisor {

using ::codecvisor::internal::Host;
using ::codecvisor::internal::HostOptions;
using ::codecvisor::internal::BackendStatus;
using ::codecvisor::internal::DecoderOptions;
using ::codecvisor::internal::Frame;
using ::codecvisor::internal::SeekMode;
namespace {

using ::codecvisor::testing::Runfile;
using ::codecvisor::testing::TempPath;

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The clean videos the damage starts from: each sample codec, in a
// different container (the extension picks it).
struct Base {
  std::string codec;
  std::string name;
};

const std::vector<Base>& Bases() {
  static const auto* bases = new std::vector<Base>{
      {"h264", "h264.mp4"}, {"hevc", "hevc.mkv"}, {"vp9", "vp9.webm"}, {"av1", "av1.mkv"}, {"mpeg4", "mpeg4.avi"},
  };
  return *bases;
}

// One way of damaging a file: a name, and the damage (deterministic for a
// given seed).
struct Damage {
  std::string kind;
  std::function<std::string(const std::string& clean, std::mt19937& random)> apply;
};

std::string Truncate(const std::string& s, double keep) { return s.substr(0, static_cast<size_t>(s.size() * keep)); }

// libFuzzer-like mutations: overwrite, insert, erase, copy bytes.
std::string Fuzz(std::string s, std::mt19937& random, int operations) {
  for (int i = 0; i < operations && !s.empty(); ++i) {
    const size_t at = random() % s.size();
    switch (random() % 4) {
      case 0:
        s[at] = static_cast<char>(random());
        break;
      case 1:
        s.insert(at, std::string(1 + random() % 16, static_cast<char>(random())));
        break;
      case 2:
        s.erase(at, 1 + random() % 32);
        break;
      default: {
        const size_t from = random() % s.size(), n = std::min<size_t>(1 + random() % 64, s.size() - from);
        s.replace(at, std::min(n, s.size() - at), s.substr(from, n));
      }
    }
  }
  return s;
}

const std::vector<Damage>& Damages() {
  static const auto* damages = new std::vector<Damage>{
      {"truncated to 5%", [](const std::string& s, std::mt19937&) { return Truncate(s, 0.05); }},
      {"truncated to 33%", [](const std::string& s, std::mt19937&) { return Truncate(s, 0.33); }},
      {"truncated to 66%", [](const std::string& s, std::mt19937&) { return Truncate(s, 0.66); }},
      {"truncated to 95%", [](const std::string& s, std::mt19937&) { return Truncate(s, 0.95); }},
      {"a bit flipped per KiB", [](std::string s, std::mt19937& r) {
         for (size_t i = 0; i < s.size() / 1024 + 1; ++i) s[r() % s.size()] ^= static_cast<char>(1 << (r() % 8));
         return s;
       }},
      {"512 zero bytes mid-file", [](std::string s, std::mt19937&) {
         const size_t at = s.size() / 2;
         s.replace(at, std::min<size_t>(512, s.size() - at), std::string(std::min<size_t>(512, s.size() - at), '\0'));
         return s;
       }},
      {"random header (first 64 bytes)", [](std::string s, std::mt19937& r) {
         for (size_t i = 0; i < std::min<size_t>(64, s.size()); ++i) s[i] = static_cast<char>(r());
         return s;
       }},
      {"two 1 KiB chunks swapped", [](std::string s, std::mt19937&) {
         if (s.size() < 6 * 1024) return s;
         const size_t a = s.size() / 3, b = 2 * s.size() / 3;
         std::string chunk = s.substr(a, 1024);
         s.replace(a, 1024, s.substr(b, 1024));
         s.replace(b, 1024, chunk);
         return s;
       }},
      {"fuzzed (10 mutations)", [](const std::string& s, std::mt19937& r) { return Fuzz(s, r, 10); }},
      {"fuzzed (200 mutations)", [](const std::string& s, std::mt19937& r) { return Fuzz(s, r, 200); }},
  };
  return *damages;
}

// What decoding one hostile file gave.
struct Outcome {
  int64_t frames = 0;
  absl::Status status;  // the first error, OK if every step succeeded
};

class HostileVideoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HostOptions options;
    options.layout = InstallLayout{Runfile("backends/sdk/runner/codecvisor-backend"), Runfile("backends/cpu")};
    options.discovery = DiscoveryOptions{{}, Runfile("backends/cpu"), false};
    auto host = Host::Create(options);
    ASSERT_TRUE(host.ok()) << host.status();
    host_ = *std::move(host);
  }

  uint64_t CpuRestarts() const {
    for (const BackendStatus& s : host_->Backends()) {
      if (s.name == "cpu") return s.restarts;
    }
    return 0;
  }

  // Exact mode: every frame the scan found, in order; then approximate
  // mode: the first, middle and last frame the header promises.
  Outcome Decode(const std::string& path) {
    Outcome out;
    DecoderOptions options;
    options.request_timeout = std::chrono::seconds(20);
    options.open_timeout = std::chrono::seconds(30);
    auto exact = host_->OpenDecoder(path, options);
    if (!exact.ok()) {
      out.status = exact.status();
    } else {
      const int64_t n = (*exact)->metadata().num_frames_from_scan;
      out.status = (*exact)->ForEachFrame({ipc::IndexRange{0, std::max<int64_t>(n, 0), 1}}, [&](Frame f) {
        ++out.frames;
        return absl::OkStatus();
      });
    }
    options.seek_mode = SeekMode::kApproximate;
    auto approximate = host_->OpenDecoder(path, options);
    if (approximate.ok()) {
      const int64_t n = (*approximate)->metadata().num_frames_from_header;
      std::vector<int64_t> indices = {0};
      if (n > 1) indices.insert(indices.end(), {n / 2, n - 1});
      auto frames = (*approximate)->GetFramesAt(indices);
      if (!frames.ok() && out.status.ok()) out.status = frames.status();
    } else if (out.status.ok()) {
      out.status = approximate.status();
    }
    return out;
  }

  std::unique_ptr<Host> host_;
};

TEST_F(HostileVideoTest, EveryFileDecodesToFramesOrAClearError) {
  std::mt19937 random(20261121);
  struct Tally {
    int files = 0, decoded = 0, errors = 0, unclear = 0;
    uint64_t restarts = 0;
    std::map<std::string, int> codes;
  };
  std::map<std::string, Tally> by_kind;
  std::vector<std::pair<std::string, std::string>> files;  // (kind, path)

  for (const Base& base : Bases()) {
    const std::string clean = TempPath(base.name);
    const absl::Status made = conformance::EncodeVideo(base.codec, 96, 64, 48, 0, clean);
    ASSERT_TRUE(made.ok()) << made;
    const std::string bytes = ReadBytes(clean);
    ASSERT_GT(bytes.size(), 1000u) << clean;
    for (size_t d = 0; d < Damages().size(); ++d) {
      // The random damages several times over, each with fresh draws.
      const bool is_random = absl::StrContains(Damages()[d].kind, "fuzzed") || absl::StrContains(Damages()[d].kind, "flipped");
      for (int copy = 0; copy < (is_random ? 4 : 1); ++copy) {
        const std::string path = TempPath(absl::StrCat("hostile_", d, "_", copy, "_", base.name));
        WriteBytes(path, Damages()[d].apply(bytes, random));
        files.emplace_back(Damages()[d].kind, path);
      }
    }
  }
  WriteBytes(TempPath("hostile_empty.mp4"), "");
  files.emplace_back("empty file", TempPath("hostile_empty.mp4"));
  WriteBytes(TempPath("hostile_one_byte.mkv"), std::string(1, '\x1a'));
  files.emplace_back("one byte", TempPath("hostile_one_byte.mkv"));

  for (const auto& [kind, path] : files) {
    const uint64_t restarts_before = CpuRestarts();
    const Outcome outcome = Decode(path);
    Tally& t = by_kind[kind];
    ++t.files;
    t.restarts += CpuRestarts() - restarts_before;
    const std::string name = path.substr(path.rfind('/') + 1);
    if (outcome.status.ok()) {
      ++t.decoded;
    } else {
      ++t.errors;
      ++t.codes[absl::StatusCodeToString(outcome.status.code())];
      // A clear error names the file and says something beyond the code.
      if (!absl::StrContains(outcome.status.message(), name)) {
        ++t.unclear;
        ADD_FAILURE() << name << " (" << kind << "): the error does not name the file: " << outcome.status;
      }
      EXPECT_NE(outcome.status.code(), absl::StatusCode::kDeadlineExceeded) << name << ": " << outcome.status;
    }
  }

  // The backend still decodes a clean file afterwards.
  const Outcome clean = Decode(TempPath(Bases().front().name));
  EXPECT_TRUE(clean.status.ok()) << clean.status;
  EXPECT_EQ(clean.frames, 48);

  uint64_t total_restarts = 0;
  int total_files = 0;
  for (const auto& [kind, t] : by_kind) {
    std::vector<std::string> codes;
    for (const auto& [code, count] : t.codes) codes.push_back(absl::StrCat(count, " ", code));
    const std::string outcome =
        absl::StrCat(t.decoded, " decoded without error, ", t.errors, " clear errors",
                     codes.empty() ? "" : absl::StrCat(" (", absl::StrJoin(codes, ", "), ")"), "; backend restarts: ",
                     t.restarts, t.unclear > 0 ? absl::StrCat("; ", t.unclear, " errors not naming the file") : "");
    std::cout << kind << ": " << t.files << " files: " << outcome << "\n";
    testing::RecordFault("hostile videos (cpu backend)", kind, t.files, outcome, t.unclear == 0);
    total_restarts += t.restarts;
    total_files += t.files;
  }
  std::cout << total_files << " hostile files, " << total_restarts << " backend restarts; host never crashed\n";
}

}  // namespace
}  // namespace codecvisor
