// The conformance suite must be able to fail. Run against the synthetic
// test backend, which speaks the protocol and is sandboxed but decodes only
// its own text descriptions, it passes the handshake, sandbox and shutdown
// checks and fails every check that decodes a sample, naming the file.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>

#include "backends/testing/synthetic_pattern.h"
#include "tests/test_paths.h"
#include "tools/common/subprocess.h"
#include "tools/common/test_video.h"
#include "tools/conformance/conformance.h"
#include "tools/conformance/output_capture.h"

namespace codecvisor::conformance {
namespace {

using ::codecvisor::testing::FillSyntheticFrame;
using ::codecvisor::testing::Runfile;
using ::codecvisor::testing::SyntheticVideo;
using ::codecvisor::testing::TempPath;
using ::codecvisor::testing::WriteFile;

ConformanceOptions Options() {
  ConformanceOptions options;
  options.scratch_dir = std::getenv("TEST_TMPDIR");
  options.host.layout = InstallLayout{Runfile("backends/sdk/runner/codecvisor-backend"), Runfile("backends/cpu")};
  options.host.discovery = DiscoveryOptions{{}, Runfile("backends/cpu"), false};
  options.timeout = std::chrono::seconds(20);
  return options;
}

// A manifest `file` of the faulty test backend with `config` as its [config].
// The faulty backend's manifest with `config` as its [config], after
// `tables` (whole TOML tables, e.g. "[conformance]\nsamples=[...]\n").
std::string FaultyManifest(const std::string& file, const std::string& config, const std::string& tables = "") {
  return WriteFile(file, "name='faulty'\ndevices=['faulty']\nlibrary='" +
                             Runfile("backends/testing/libcodecvisor_faulty.so") + "'\nabi_version=1\n" + tables +
                             "[config]\n" + config + "\n");
}

TEST(ConformanceSuiteTest, FailsABackendThatCannotDecodeTheSamples) {
  int callbacks = 0;
  ConformanceOptions options = Options();
  options.on_check = [&](const CheckResult&) { ++callbacks; };
  absl::StatusOr<ConformanceReport> report =
      RunConformance({.backend = "", .manifest_path = Runfile("backends/testing/synthetic.toml")}, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->backend, "synthetic");
  EXPECT_EQ(callbacks, static_cast<int>(report->checks.size()));
  std::map<std::string, CheckResult> by_name;
  for (const CheckResult& c : report->checks) by_name[c.name] = c;

  for (const char* passes : {"handshake", "sandbox", "quiet_output", "frame_pool", "shutdown"}) {
    ASSERT_TRUE(by_name.count(passes)) << passes;
    EXPECT_TRUE(by_name[passes].passed) << passes << ": " << by_name[passes].detail;
  }
  for (const char* fails : {"metadata_h264", "frames_h264", "access_h264", "approximate_h264", "planar_h264",
                            "native_h264", "concurrency", "crash_recovery"}) {
    ASSERT_TRUE(by_name.count(fails)) << fails;
    EXPECT_FALSE(by_name[fails].passed) << fails;
    EXPECT_NE(by_name[fails].detail.find("sample_h264.mkv"), std::string::npos) << by_name[fails].detail;
  }
  ASSERT_TRUE(by_name.count("first_seek_h264"));
  EXPECT_FALSE(by_name["first_seek_h264"].passed);
  EXPECT_NE(by_name["first_seek_h264"].detail.find("long_h264.mkv"), std::string::npos)
      << by_name["first_seek_h264"].detail;
  EXPECT_FALSE(report->ok());
  EXPECT_GE(report->failed(), 8);
}

// A synthetic video (12 frames of 32x24 at 10 fps, a file FFmpeg cannot
// read) named `name` in the test's folder, with its reference beside it
// (NAME.rgb24 and NAME.timestamps, which a manifest's sample takes);
// returns its path.
std::string WriteSyntheticSample(const std::string& name) {
  const SyntheticVideo video{.frames = 12, .width = 32, .height = 24, .fps = 10, .start = 0};
  const std::string path = WriteFile(name, "synthetic frames=12 width=32 height=24 fps=10");
  std::string frames(size_t{12} * 32 * 24 * 3, '\0');
  std::string stamps = "width 32\nheight 24\ntime_base 1/1000\ncodec synthetic\n";
  for (int64_t i = 0; i < 12; ++i) {
    FillSyntheticFrame(video, CV_OUTPUT_RGB24, i, reinterpret_cast<uint8_t*>(frames.data()) + i * 32 * 24 * 3);
    stamps += std::to_string(i * 100) + " 100\n";
  }
  WriteFile(name + ".rgb24", frames);
  WriteFile(name + ".timestamps", stamps);
  return path;
}

std::map<std::string, CheckResult> ByName(const ConformanceReport& report) {
  std::map<std::string, CheckResult> by_name;
  for (const CheckResult& c : report.checks) by_name[c.name] = c;
  return by_name;
}

// Every check passed, but session_leak under AddressSanitizer, whose
// quarantine keeps freed memory: there it has nothing to measure, and is
// skipped.
void ExpectEveryCheckPassed(const ConformanceReport& report) {
  for (const CheckResult& c : report.checks) {
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
    if (c.name == "session_leak" && c.skipped) continue;
#endif
#endif
    EXPECT_TRUE(c.passed) << c.name << ": " << c.detail;
  }
}

// A backend whose every open crashes is quarantined early in the run (its
// poison opens' crashes counted like any: max_poison_in_a_row 0). The suite
// lifts the first quarantine, so the next check runs and meets the crashes
// itself; after the second, the checks that need the backend are not run
// and say why. None says what a check could not measure of a process that
// is not there (it read /proc/-1/io), or gives the host's advice to call
// Host::ResetBackend, which a conformance run's user cannot take.
TEST(ConformanceSuiteTest, ChecksAfterAQuarantineSayWhy) {
  const std::string manifest =
      WriteFile("crashing_faulty.toml",
                "name='faulty'\ndevices=['faulty']\nlibrary='" + Runfile("backends/testing/libcodecvisor_faulty.so") +
                    "'\nabi_version=1\n[restart]\nmax_restarts=2\nbackoff_initial_ms=1\nbackoff_max_ms=2\n"
                    "max_poison_in_a_row=0\n[config]\nsegfault_open=1\n");
  absl::StatusOr<ConformanceReport> report = RunConformance({.backend = "", .manifest_path = manifest}, Options());
  ASSERT_TRUE(report.ok()) << report.status();
  std::map<std::string, CheckResult> by_name = ByName(*report);
  ASSERT_TRUE(by_name.count("first_seek_h264"));
  const CheckResult& seek = by_name["first_seek_h264"];
  EXPECT_FALSE(seek.passed);
  EXPECT_NE(seek.detail.find("quarantined"), std::string::npos) << seek.detail;
  std::vector<std::string> lifted, second, not_run;
  for (const CheckResult& c : report->checks) {
    EXPECT_EQ(c.detail.find("/proc/-1"), std::string::npos) << c.name << ": " << c.detail;
    if (c.detail.find("the suite lifted the quarantine") != std::string::npos) lifted.push_back(c.name);
    if (c.detail.find("for the second time") != std::string::npos) second.push_back(c.name);
    if (c.detail.starts_with("not run: the backend was quarantined during the '")) {
      not_run.push_back(c.name);
    } else if (!second.empty() && c.name != second.front()) {
      EXPECT_TRUE(c.name == "quiet_output" || c.name == "frame_pool" || c.name == "shutdown")
          << c.name << " ran after the second quarantine";
    }
    if (!not_run.empty() && not_run.back() == c.name) {
      EXPECT_EQ(c.detail.find("ResetBackend"), std::string::npos) << c.name << ": " << c.detail;
    }
  }
  ASSERT_EQ(lifted.size(), 1u) << "the first quarantine is lifted";
  ASSERT_EQ(second.size(), 1u) << "a second one ends the run's use of the backend";
  EXPECT_NE(lifted.front(), second.front()) << "the check after the lift ran and met the crashes itself";
  EXPECT_FALSE(by_name[second.front()].passed);
  EXPECT_FALSE(not_run.empty());
  ASSERT_TRUE(by_name.count("shutdown"));
  EXPECT_TRUE(by_name["shutdown"].passed) << "the host's teardown after a crash loop: " << by_name["shutdown"].detail;
}

// The vendor's own file, with a reference the vendor gives: the cpu backend
// (bit-exact) passes against ffmpeg's own frames, and a reference with one
// frame altered fails the frame checks, saying where and by how much.
TEST(ConformanceSuiteTest, OwnSampleWithTheVendorsReference) {
  const std::string clip = TempPath("own.y4m");
  ASSERT_TRUE(tools::MakeTestVideo("-f lavfi -i testsrc2=size=64x48:rate=24 -frames:v 12 -pix_fmt yuv420p", clip).ok());
  absl::StatusOr<std::string> frames = tools::RunForOutput(
      {"ffmpeg", "-nostdin", "-v", "error", "-i", clip, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"});
  ASSERT_TRUE(frames.ok()) << frames.status();
  std::string stamps = "width 64\nheight 48\ntime_base 1/24\ncodec rawvideo\n";
  for (int i = 0; i < 12; ++i) stamps += std::to_string(i) + " 1\n";
  const std::string timestamps = WriteFile("own.timestamps", stamps);
  const std::string good = WriteFile("own.rgb24", *frames);
  std::string altered = *frames;
  const size_t frame = 64 * 48 * 3;
  for (size_t i = 0; i < 16 * 64 * 3; ++i) altered[7 * frame + 32 * 64 * 3 + i] = '\xff';  // rows 32-47 of frame 7
  const std::string bad = WriteFile("bad.rgb24", altered);

  ConformanceTarget cpu{.backend = "cpu", .manifest_path = ""};
  ConformanceOptions options = Options();
  options.samples = {{.path = clip, .reference = {good, timestamps}}};
  absl::StatusOr<ConformanceReport> report = RunConformance(cpu, options);
  ASSERT_TRUE(report.ok()) << report.status();
  ExpectEveryCheckPassed(*report);
  std::map<std::string, CheckResult> by_name = ByName(*report);
  ASSERT_TRUE(by_name.count("frames_own_y4m"));
  EXPECT_NE(by_name["frames_own_y4m"].detail.find("bit-exact with the reference"), std::string::npos)
      << by_name["frames_own_y4m"].detail;
  EXPECT_FALSE(by_name.count("frames_h264")) << "--sample replaces the generated samples";
  // The cpu backend sends a yuv420p stream's frames native when offered,
  // and the host's conversion of them is bit-exact too.
  ASSERT_TRUE(by_name.count("native_own_y4m"));
  EXPECT_NE(by_name["native_own_y4m"].detail.find("native yuv420p frames, converted by the host, match"),
            std::string::npos)
      << by_name["native_own_y4m"].detail;
  // The first approximate request for its last frame reads that frame
  // alone, not the eleven before it.
  ASSERT_TRUE(by_name.count("first_seek_own_y4m"));
  EXPECT_NE(by_name["first_seek_own_y4m"].detail.find("frame 11 of " + clip), std::string::npos)
      << by_name["first_seek_own_y4m"].detail;

  options.samples = {{.path = clip, .reference = {bad, timestamps}}};
  report = RunConformance(cpu, options);
  ASSERT_TRUE(report.ok()) << report.status();
  by_name = ByName(*report);
  EXPECT_TRUE(by_name["metadata_own_y4m"].passed) << by_name["metadata_own_y4m"].detail;
  const std::string& why = by_name["frames_own_y4m"].detail;
  EXPECT_FALSE(by_name["frames_own_y4m"].passed);
  EXPECT_NE(why.find("frame 7 of " + clip + ": not bit-exact with the reference " + bad), std::string::npos) << why;
  EXPECT_NE(why.find("worst 16x16 block at x=0 y=32"), std::string::npos) << why;
  EXPECT_NE(why.find("PSNR"), std::string::npos) << why;
  EXPECT_FALSE(by_name["native_own_y4m"].passed) << "frame 7, converted by the host, differs as well";
}

// A sample in a format FFmpeg cannot read, with the vendor's reference
// (the synthetic backend's own text files): the first-seek check cannot
// list its packets, and with no codec claimed it is skipped, saying it had
// nothing to check: not failed on ffprobe, as every such backend once was,
// nor counted as passed.
TEST(ConformanceSuiteTest, ASampleFFmpegCannotReadSkipsTheFirstSeekCheck) {
  const std::string clip = WriteSyntheticSample("own.syn");
  const std::string reference = clip + ".rgb24";
  const std::string timestamps = clip + ".timestamps";
  // The synthetic library under a manifest that claims no codec.
  const std::string manifest = WriteFile(
      "own_synthetic.toml", "name='synthetic'\ndevices=['synthetic']\nlibrary='" +
                                Runfile("backends/testing/libcodecvisor_synthetic.so") + "'\nabi_version=1\n");
  ConformanceOptions options = Options();
  options.samples = {{.path = clip, .reference = {reference, timestamps}}};
  absl::StatusOr<ConformanceReport> report = RunConformance({.backend = "", .manifest_path = manifest}, options);
  ASSERT_TRUE(report.ok()) << report.status();
  std::map<std::string, CheckResult> by_name = ByName(*report);
  ASSERT_TRUE(by_name.count("frames_own_syn"));
  EXPECT_TRUE(by_name["frames_own_syn"].passed) << by_name["frames_own_syn"].detail;
  ASSERT_TRUE(by_name.count("first_seek_own_syn"));
  const CheckResult& seek = by_name["first_seek_own_syn"];
  EXPECT_TRUE(seek.skipped) << seek.detail;
  EXPECT_FALSE(seek.passed) << seek.detail;
  EXPECT_GE(report->skipped(), 1);  // and session_leak under AddressSanitizer
  EXPECT_EQ(report->failed(), 0);
  EXPECT_TRUE(report->ok());
  EXPECT_NE(seek.detail.find("is not a file FFmpeg reads"), std::string::npos) << seek.detail;
  EXPECT_EQ(seek.detail.find("ffprobe"), std::string::npos) << seek.detail;

  // Named by a manifest (as the Bazel macro runs it), the sample takes the
  // reference beside it: own.syn.rgb24 and own.syn.timestamps.
  const std::string named =
      WriteFile("named_synthetic.toml", "name='synthetic'\ndevices=['synthetic']\nlibrary='" +
                                            Runfile("backends/testing/libcodecvisor_synthetic.so") +
                                            "'\nabi_version=1\n[conformance]\nsamples=['own.syn']\n");
  report = RunConformance({.backend = "", .manifest_path = named}, Options());
  ASSERT_TRUE(report.ok()) << report.status();
  by_name = ByName(*report);
  ASSERT_TRUE(by_name.count("frames_own_syn") && by_name.count("first_seek_own_syn"));
  EXPECT_TRUE(by_name["frames_own_syn"].passed) << by_name["frames_own_syn"].detail;
  EXPECT_TRUE(by_name["first_seek_own_syn"].skipped) << by_name["first_seek_own_syn"].detail;
}

// A mistake in the suite's own table of the manifest (a codec the sample
// generator cannot make) is the suite's to refuse: a host loads the
// backend all the same, with a warning, and its device serves frames.
TEST(ConformanceSuiteTest, AMistakeInTheConformanceTableIsRefusedByTheSuiteOnly) {
  const std::string clip = WriteSyntheticSample("typo.syn");
  const std::string manifest = WriteFile("typo.toml", "name='faulty'\ndevices=['faulty']\nlibrary='" +
                                                          Runfile("backends/testing/libcodecvisor_faulty.so") +
                                                          "'\nabi_version=1\n[conformance]\ncodecs=['h265']\n");
  absl::StatusOr<ConformanceReport> report = RunConformance({.backend = "", .manifest_path = manifest}, Options());
  ASSERT_EQ(report.status().code(), absl::StatusCode::kInvalidArgument) << report.status();
  EXPECT_NE(report.status().message().find("key 'conformance.codecs': the sample generator cannot make 'h265'"),
            std::string::npos)
      << report.status();

  absl::StatusOr<std::unique_ptr<internal::Host>> host = internal::Host::Create(Options().host);
  ASSERT_TRUE(host.ok()) << host.status();
  ASSERT_TRUE((*host)->LoadBackend(manifest).ok());
  const std::vector<std::string> warnings = (*host)->warnings();
  EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(), [](const std::string& w) {
    return w.find("cannot make 'h265'") != std::string::npos &&
           w.find("the backend loads, the conformance suite refuses the manifest") != std::string::npos;
  })) << ::testing::PrintToString(warnings);
  auto decoder = (*host)->OpenDecoder(clip, {.device = "faulty"});
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  EXPECT_TRUE((*decoder)->GetFrameAt(1).ok());
}

// A backend that leaks 16 MiB a session (the faulty backend's
// leak_open, which the vendor QA helper found passing every check) fails
// session_leak, saying how much; the same backend without the leak passes.
TEST(ConformanceSuiteTest, ABackendThatLeaksASessionsMemoryFailsSessionLeak) {
  WriteSyntheticSample("leak.syn");
  for (bool leaks : {false, true}) {
    SCOPED_TRACE(leaks ? "leaking" : "not leaking");
    const std::string manifest =
        FaultyManifest(leaks ? "leaking.toml" : "tidy.toml", std::string("leak_open=") + (leaks ? "1" : "0"),
                       "[conformance]\nsamples=['leak.syn']\n");
    absl::StatusOr<ConformanceReport> report = RunConformance({.backend = "", .manifest_path = manifest}, Options());
    ASSERT_TRUE(report.ok()) << report.status();
    std::map<std::string, CheckResult> by_name = ByName(*report);
    ASSERT_TRUE(by_name.count("session_leak"));
    const CheckResult& leak = by_name["session_leak"];
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
    EXPECT_TRUE(leak.skipped && !leak.passed) << leak.detail;
    GTEST_SKIP() << "AddressSanitizer's quarantine keeps freed memory: session_leak measures nothing here";
#endif
#endif
    EXPECT_EQ(leak.passed, !leaks) << leak.detail;
    if (leaks) {
      EXPECT_NE(leak.detail.find("close_session must free what open_session and decode_frame allocated"),
                std::string::npos)
          << leak.detail;
    }
  }
}

// A close_session that never returns went unseen (every call succeeded,
// every check passed) while the backend's threads and CPU grew with each
// decoder closed: session_threads fails it, saying what close_session must
// do; the same backend whose closes return passes.
TEST(ConformanceSuiteTest, ABackendWhoseCloseNeverReturnsFailsSessionThreads) {
  WriteSyntheticSample("close.syn");
  for (bool hangs : {false, true}) {
    SCOPED_TRACE(hangs ? "hanging" : "returning");
    // close_timeout_seconds at its most: the runner's close watchdog would
    // otherwise restart the backend within the run; the check is for the
    // leak it would leave until then.
    const std::string manifest = FaultyManifest(
        hangs ? "hang_close.toml" : "returning_close.toml", std::string("hang_close=") + (hangs ? "1" : "0"),
        "[restart]\nclose_timeout_seconds=3600\n[conformance]\nsamples=['close.syn']\n");
    ConformanceOptions options = Options();
    absl::StatusOr<ConformanceReport> report = RunConformance({.backend = "", .manifest_path = manifest}, options);
    ASSERT_TRUE(report.ok()) << report.status();
    std::map<std::string, CheckResult> by_name = ByName(*report);
    ASSERT_TRUE(by_name.count("session_threads"));
    const CheckResult& threads = by_name["session_threads"];
    EXPECT_EQ(threads.passed, !hangs) << threads.detail;
    if (hangs) {
      EXPECT_NE(threads.detail.find("threads more than before 4 sessions were opened"), std::string::npos)
          << threads.detail;
      EXPECT_NE(threads.detail.find("close_session must return"), std::string::npos) << threads.detail;
    } else {
      EXPECT_NE(threads.detail.find("the backend is back to"), std::string::npos) << threads.detail;
    }
  }
}

// A backend whose errors carry no message fails bad_input, saying so: its
// users would read only the runner's stand-in for a message.
TEST(ConformanceSuiteTest, ErrorsWithoutAMessageFailBadInput) {
  const std::string manifest = FaultyManifest("silent_faulty.toml", "silent_errors=1");
  absl::StatusOr<ConformanceReport> report = RunConformance({.backend = "", .manifest_path = manifest}, Options());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->warnings.empty());
  std::map<std::string, CheckResult> by_name = ByName(*report);
  ASSERT_TRUE(by_name.count("bad_input"));
  EXPECT_FALSE(by_name["bad_input"].passed);
  EXPECT_NE(by_name["bad_input"].detail.find("not_a_video.mkv carries no message from the backend"),
            std::string::npos)
      << by_name["bad_input"].detail;
}

// A backend that writes lines to stdout/stderr at the quiet log level (here
// 100 on every open) fails quiet_output, which names the first line; the
// lines still reach the process's stderr, and the capture leaves no
// descriptor behind (the shutdown check counts them).
TEST(ConformanceSuiteTest, ABackendThatLogsAtTheQuietLevelFails) {
  ASSERT_EQ(std::getenv("CODECVISOR_BACKEND_LOG_LEVEL"), nullptr);
  const std::string manifest = FaultyManifest("chatty_faulty.toml", "chatty=1");
  absl::StatusOr<ConformanceReport> report = RunConformance({.backend = "", .manifest_path = manifest}, Options());
  ASSERT_TRUE(report.ok()) << report.status();
  std::map<std::string, CheckResult> by_name = ByName(*report);
  ASSERT_TRUE(by_name.count("quiet_output"));
  const CheckResult& quiet = by_name["quiet_output"];
  EXPECT_FALSE(quiet.passed);
  EXPECT_NE(quiet.detail.find("lines to stdout/stderr at the quiet log level"), std::string::npos) << quiet.detail;
  EXPECT_NE(quiet.detail.find("the first: 'faulty: opening "), std::string::npos) << quiet.detail;
  EXPECT_NE(quiet.detail.find("(line 1 of 100)'"), std::string::npos) << quiet.detail;
  ASSERT_TRUE(by_name.count("shutdown"));
  EXPECT_TRUE(by_name["shutdown"].passed) << by_name["shutdown"].detail;
}

// A run that lets backends log (--loglevel) cannot tell a backend's stray
// output from what it was asked for: quiet_output is skipped, saying so;
// it was counted as passed.
TEST(ConformanceSuiteTest, QuietOutputIsSkippedWhereTheRunLetsBackendsLog) {
  ASSERT_EQ(std::getenv("CODECVISOR_BACKEND_LOG_LEVEL"), nullptr);
  setenv("CODECVISOR_BACKEND_LOG_LEVEL", "info", 1);
  const std::string manifest = FaultyManifest("chatty_faulty_logging.toml", "chatty=1");
  absl::StatusOr<ConformanceReport> report = RunConformance({.backend = "", .manifest_path = manifest}, Options());
  unsetenv("CODECVISOR_BACKEND_LOG_LEVEL");
  ASSERT_TRUE(report.ok()) << report.status();
  std::map<std::string, CheckResult> by_name = ByName(*report);
  ASSERT_TRUE(by_name.count("quiet_output"));
  const CheckResult& quiet = by_name["quiet_output"];
  EXPECT_TRUE(quiet.skipped) << quiet.detail;
  EXPECT_FALSE(quiet.passed) << quiet.detail;
  EXPECT_NE(quiet.detail.find("not checked: this run lets backends log"), std::string::npos) << quiet.detail;
  EXPECT_GE(report->skipped(), 1);
}

// The runner's reports of a plugin breaking cv_frame_pool's rules, as the
// host relays them, are what the frame_pool check fails on (the test
// backends lay no frames out natively, so they get no pool to misuse).
TEST(ConformanceSuiteTest, TheCaptureCountsTheRunnersFramePoolReports) {
  absl::StatusOr<std::unique_ptr<OutputCapture>> capture = OutputCapture::Start("acme");
  ASSERT_TRUE(capture.ok()) << capture.status();
  std::fputs("codecvisor: backend 'acme': codecvisor-backend: frame pool: 1 slot(s) still borrowed\n"
             "codecvisor: backend 'acme': codecvisor-backend: WARNING: something else\n"
             "codecvisor: backend 'other': codecvisor-backend: frame pool: not acme's\n",
             stderr);
  std::fflush(stderr);
  (*capture)->Stop();
  EXPECT_EQ((*capture)->frame_pool_reports(), 1);
  EXPECT_EQ((*capture)->first_frame_pool_report(), "codecvisor-backend: frame pool: 1 slot(s) still borrowed");
  EXPECT_EQ((*capture)->lines(), 0) << "the runner's own lines are not the plugin's";
}

// A misspelt table of the manifest is named in the report's warnings, not
// silently ignored (the suite then makes its own samples instead).
TEST(ConformanceSuiteTest, UnknownManifestKeysAreInTheReport) {
  const std::string manifest = WriteFile("typo.toml", "name='synthetic'\ndevices=['synthetic']\nlibrary='" +
                                                          Runfile("backends/testing/libcodecvisor_synthetic.so") +
                                                          "'\nabi_version=1\n[conformence]\nsamples=['mine.y4m']\n");
  absl::StatusOr<ConformanceReport> report = RunConformance({.backend = "", .manifest_path = manifest}, Options());
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->warnings.size(), 1u);
  EXPECT_NE(report->warnings[0].find("key 'conformence' is unknown and ignored"), std::string::npos)
      << report->warnings[0];
}

// A correct backend passes on samples of any length. At 24 fps, frame 10
// starts at 10 / 24.0 s, one step above 10 * (1 / 24.0): a backend that
// times frames as index * den / num (the y4m example) answers "frame 9"
// at the lower time, rightly, and the suite must ask at the frame's own
// pts_seconds. These lengths put frames 9, 10 and 30 at the fractions the
// access checks use.
TEST(ConformanceSuiteTest, TheY4mExamplePassesOnSamplesOfEveryLength) {
  ConformanceOptions options = Options();
  for (int frames : {13, 24, 30, 48}) {
    const std::string clip = TempPath("len" + std::to_string(frames) + ".y4m");
    ASSERT_TRUE(tools::MakeTestVideo("-f lavfi -i testsrc2=size=64x48:rate=24 -frames:v " + std::to_string(frames) +
                                         " -pix_fmt yuv420p",
                                     clip)
                    .ok());
    options.samples.push_back({.path = clip, .reference = {}});
  }
  absl::StatusOr<ConformanceReport> report =
      RunConformance({.backend = "", .manifest_path = Runfile("examples/y4m_backend/y4m.toml")}, options);
  ASSERT_TRUE(report.ok()) << report.status();
  ExpectEveryCheckPassed(*report);
}

// A variable frame rate: approximate mode names frames by the header's
// constant rate, so its index i is the frame shown at i / rate; the cpu
// backend (correct) passes, each frame the reference's of its pts.
TEST(ConformanceSuiteTest, TheCpuBackendPassesOnAVariableFrameRate) {
  const std::string clip = TempPath("vfr.mp4");
  ASSERT_TRUE(tools::MakeTestVideo("-f lavfi -i testsrc2=size=64x48:rate=25 -t 2 -vf select=lt(n\\,10)+not(mod(n\\,3)) "
                                   "-fps_mode vfr -c:v libx264 -bf 0 -pix_fmt yuv420p",
                                   clip)
                  .ok());
  // A constant rate in a time base that does not divide it (Matroska's
  // 1/1000 at 24 fps: steps of 42 and 41 ms) is checked by index, as ever.
  const std::string constant = TempPath("cfr.mkv");
  ASSERT_TRUE(tools::MakeTestVideo("-f lavfi -i testsrc2=size=64x48:rate=24 -frames:v 24 -c:v libx264 -pix_fmt yuv420p",
                                   constant)
                  .ok());
  ConformanceOptions options = Options();
  options.samples = {{.path = clip, .reference = {}}, {.path = constant, .reference = {}}};
  absl::StatusOr<ConformanceReport> report = RunConformance({.backend = "cpu", .manifest_path = ""}, options);
  ASSERT_TRUE(report.ok()) << report.status();
  ExpectEveryCheckPassed(*report);
  std::map<std::string, CheckResult> by_name = ByName(*report);
  ASSERT_TRUE(by_name.count("approximate_vfr_mp4") && by_name.count("approximate_cfr_mkv"));
  EXPECT_NE(by_name["approximate_vfr_mp4"].detail.find("a variable frame rate"), std::string::npos)
      << by_name["approximate_vfr_mp4"].detail;
  EXPECT_EQ(by_name["approximate_cfr_mkv"].detail.find("variable"), std::string::npos)
      << by_name["approximate_cfr_mkv"].detail;
}

TEST(ConformanceSuiteTest, UnknownBackendIsAnErrorNotAReport) {
  absl::StatusOr<ConformanceReport> report = RunConformance({.backend = "no_such_backend", .manifest_path = ""}, Options());
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(report.status().message().find("cpu"), std::string::npos) << "lists what is installed";
}

}  // namespace
}  // namespace codecvisor::conformance
