// A broken plugin never breaks the host: bad manifest, missing library,
// missing symbol, ABI mismatch, NULL table, failing init. Each is listed as
// failed with a precise diagnostic, and only a request for its device fails.
// Each case is a row of docs/RELIABILITY.md (FaultRow).

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "base/cgroup_paths.h"
#include "tests/fault_test_support.h"

namespace codecvisor::testing {

using ::codecvisor::internal::BackendStatus;
namespace {

std::string FaultyManifest(const std::string& name, const std::string& library, const std::string& entry,
                           const std::string& extra = "") {
  return "name='" + name + "'\ndevices=['" + name + "']\nlibrary='" + library + "'\nentry='" + entry +
         "'\nabi_version=1\n" + extra;
}

struct LoadCase {
  const char* name;
  const char* library;  // relative to runfiles, or an absolute bad path
  const char* entry;
  const char* extra;
  const char* diagnostic;  // must appear in the error
  const char* fault;       // what is broken, for the reliability report
};

class BackendLoadTest : public FaultTest, public ::testing::WithParamInterface<LoadCase> {};

TEST_P(BackendLoadTest, BrokenPluginIsAPreciseErrorForItsDeviceOnly) {
  const LoadCase& c = GetParam();
  std::string library = c.library[0] == '/' ? c.library : Runfile(c.library);
  const std::string path = WriteFile(std::string(c.name) + ".toml", FaultyManifest(c.name, library, c.entry, c.extra));
  ASSERT_TRUE(host_->LoadBackend(path).ok());
  FaultRow& row = Row(absl::StrCat(c.fault, ": 20 opens, then 8 at once"));
  for (int run = 0; run < 20; ++run) {
    ++row.tries;
    auto decoder = Open(WriteSyntheticVideo("load.syn"), c.name);
    const bool precise = decoder.status().message().find(c.diagnostic) != std::string::npos &&
                         decoder.status().message().find(path) != std::string::npos;
    row.Saw(absl::StrCat("open ", CodeName(decoder.status()),
                         precise ? " naming the manifest and '" : " WITHOUT the manifest or '", c.diagnostic, "'"));
    ASSERT_FALSE(decoder.ok()) << c.name;
    EXPECT_NE(decoder.status().message().find(c.diagnostic), std::string::npos) << decoder.status();
    EXPECT_NE(decoder.status().message().find(path), std::string::npos) << "names the manifest: " << decoder.status();
  }
  // And from 8 sessions at once.
  std::vector<std::thread> threads;
  std::atomic<int> precise{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      auto d = Open(WriteSyntheticVideo("load_" + std::to_string(t) + ".syn"), c.name);
      if (!d.ok() && d.status().message().find(c.diagnostic) != absl::string_view::npos) ++precise;
    });
  }
  for (auto& th : threads) th.join();
  row.tries += 8;
  row.Saw("concurrent open failing with the diagnostic", precise.load());
  if (precise.load() < 8) row.Saw("concurrent open WITHOUT the diagnostic", 8 - precise.load());
  const BackendStatus backend = StatusOf(c.name);
  row.Note("backend " + backend.state);
  EXPECT_EQ(backend.state, "failed");
  EXPECT_NE(backend.diagnostic.find(c.diagnostic), std::string::npos) << backend.diagnostic;
  // What the plugin wrote arrives with its unsafe bytes replaced (U+FFFD):
  // no terminal control, no line break.
  EXPECT_EQ(backend.diagnostic.find_first_of("\x1b\x07\n"), std::string::npos) << backend.diagnostic;
  auto other = Open(WriteSyntheticVideo("other.syn"), "synthetic");
  row.Note("another backend meanwhile: open " + CodeName(other.status()));
  ASSERT_TRUE(other.ok()) << other.status();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BackendLoadTest,
    ::testing::Values(
        LoadCase{"nolib", "/nonexistent/libnothing.so", "codecvisor_backend_v1", "",
                 "library /nonexistent/libnothing.so: cannot open shared object file: No such file or directory; "
                 "reinstall the plugin",
                 "plugin library missing"},
        LoadCase{"nosym", "backends/testing/libcodecvisor_faulty.so", "no_such_entry", "",
                 "undefined symbol no_such_entry", "plugin entry symbol missing"},
        LoadCase{"badabi", "backends/testing/libcodecvisor_faulty.so", "faulty_wrong_abi", "", "ABI version 99",
                 "plugin of another ABI version"},
        LoadCase{"nulltable", "backends/testing/libcodecvisor_faulty.so", "faulty_null_table", "", "returned NULL",
                 "plugin entry returning a NULL table"},
        LoadCase{"shorttable", "backends/testing/libcodecvisor_faulty.so", "faulty_short_table", "",
                 "function table of", "plugin table shorter than ABI version 1's"},
        LoadCase{"initfail", "backends/testing/libcodecvisor_faulty.so", "faulty_init_fails", "",
                 "init failed: synthetic backend told to fail at init\xef\xbf\xbd]0;owned\xef\xbf\xbd\xef\xbf\xbd"
                 "ok: every check passed",
                 "plugin init failing"},
        LoadCase{"wrongname", "backends/testing/libcodecvisor_faulty.so", "codecvisor_backend_v1", "",
                 "is backend 'faulty', but its manifest says 'wrongname'", "plugin under another backend's name"}),
    [](const ::testing::TestParamInfo<LoadCase>& info) { return std::string(info.param.name); });

// A plugin whose create() never returns (a constructor or init waiting on
// something the sandbox denies): the start times out, is retried once, and
// the backend fails with a diagnostic that says the start never finished,
// not only that a response timed out.
TEST_F(FaultTest, APluginThatNeverFinishesStartingSaysSo) {
  options_.supervision.spawn_timeout = std::chrono::milliseconds(1000);
  StartHost();
  const std::string path =
      WriteFile("inithang.toml",
                FaultyManifest("inithang", Runfile("backends/testing/libcodecvisor_faulty.so"), "faulty_init_hangs"));
  ASSERT_TRUE(host_->LoadBackend(path).ok());
  FaultRow& row = Row("plugin create() that never returns");
  ++row.tries;
  auto decoder = Open(WriteSyntheticVideo("hang_start.syn"), "inithang");
  row.Saw("open " + CodeName(decoder.status()));
  ASSERT_FALSE(decoder.ok());
  EXPECT_NE(decoder.status().message().find("did not finish starting (sandboxing, loading the plugin's library"),
            std::string::npos)
      << decoder.status();
  EXPECT_EQ(StatusOf("inithang").state, "failed");
  auto other = Open(WriteSyntheticVideo("other_start.syn"), "synthetic");
  ASSERT_TRUE(other.ok()) << other.status();
}

// A start that hangs (a plugin stuck in create() until it is killed) costs
// an open a restart, however short its timeout: the open waits for the
// stuck start to be given up (spawn_timeout) and a fresh one. Before, it
// waited at most 10 s, the default spawn_timeout itself, and failed with
// 'was not ready in time' (a training loop's sample lost to one hang).
TEST_F(FaultTest, AStartThatHangsOnceDelaysAnOpenWithAShortTimeoutButDoesNotFailIt) {
  StartHost();  // the default spawn_timeout, 10 s
  // The plugin's own folder (HOME here is the test's folder, which a read
  // path may not be: read_path_policy.h).
  mkdir(TempPath("hangonce").c_str(), 0755);
  const std::string marker = WriteFile("hangonce/hang_marker", "");
  const std::string folder = marker.substr(0, marker.rfind('/'));
  const std::string path = WriteFile(
      "hangonce/hangonce.toml",
      FaultyManifest("hangonce", Runfile("backends/testing/libcodecvisor_faulty.so"), "faulty_hangs_while_marked",
                     "[sandbox]\nread_paths=['" + folder + "']\n[config]\nmarker='" + marker + "'\n"));
  ASSERT_TRUE(host_->LoadBackend(path).ok());
  FaultRow& row = Row("plugin create() that hangs once, with a short open_timeout");
  ++row.tries;
  // The marker goes once the first start is under way (and stuck: create()
  // that saw it pauses for good), half the spawn timeout in, which no start
  // of the test backend comes near; its replacement then starts.
  std::thread unmark([&] {
    std::this_thread::sleep_for(std::chrono::seconds(5));
    std::remove(marker.c_str());
  });
  DecoderOptions options;
  options.open_timeout = std::chrono::milliseconds(500);
  const auto start = std::chrono::steady_clock::now();
  auto decoder = Open(WriteSyntheticVideo("hang_once.syn"), "hangonce", options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  unmark.join();
  row.Saw("open " + CodeName(decoder.status()));
  ASSERT_TRUE(decoder.ok()) << decoder.status() << " after " << seconds << " s";
  EXPECT_GE(seconds, 9.0);  // the stuck start was waited for, then replaced
  absl::StatusOr<Frame> f = (*decoder)->GetFrameAt(3);
  EXPECT_TRUE(f.ok() && IsSyntheticFrame(*f, 3)) << FrameOutcome(f, 3);
}

// Fields appended to cv_backend_v1 (late_frame_buffer) must not break a
// plugin built against the first version 1 header: its table is shorter,
// and the runner reads none of what lies past it.
TEST_F(FaultTest, ATableFromTheFirstVersion1HeaderStillWorks) {
  const std::string path = WriteFile(
      "oldtable.toml", FaultyManifest("oldtable", Runfile("backends/testing/libcodecvisor_faulty.so"),
                                      "faulty_first_v1_table"));
  ASSERT_TRUE(host_->LoadBackend(path).ok());
  auto decoder = Open(WriteSyntheticVideo("old.syn"), "oldtable");
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  auto frames = (*decoder)->GetFramesInRange(0, 6);
  ASSERT_TRUE(frames.ok()) << frames.status();
  ASSERT_EQ(frames->size(), 6u);
  for (size_t i = 0; i < frames->size(); ++i) EXPECT_EQ((*frames)[i].index(), static_cast<int64_t>(i));
  EXPECT_EQ(StatusOf("oldtable").state, "ready");
}

TEST_F(FaultTest, MalformedManifestFailsOnlyItsOwnDevice) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/plugins";
  mkdir(dir.c_str(), 0755);
  WriteFile("plugins/broken.toml", "name = [");
  options_.discovery->search_path = {dir};
  StartHost();
  FaultRow& row = Row("malformed manifest found by discovery");
  ++row.tries;
  const BackendStatus broken = StatusOf("broken");
  const bool named = broken.diagnostic.find("broken.toml") != std::string::npos;
  row.Note("backend " + broken.state + (named ? ", its diagnostic naming broken.toml" : ""));
  EXPECT_EQ(broken.state, "failed");
  EXPECT_TRUE(named) << broken.diagnostic;
  auto d = Open(WriteSyntheticVideo("x.syn"), "broken");
  const bool way_out = d.status().message().find("CODECVISOR_DEVICE_BACKEND_AUTOLOAD=0") != std::string::npos;
  row.Saw("open " + CodeName(d.status()) + (way_out ? " naming CODECVISOR_DEVICE_BACKEND_AUTOLOAD=0" : ""));
  // Not found: no working backend serves the device (Python's NoSuchDeviceError).
  ASSERT_EQ(d.status().code(), absl::StatusCode::kNotFound) << d.status();
  EXPECT_NE(d.status().message().find("broken.toml"), std::string::npos) << d.status();
  EXPECT_TRUE(way_out) << d.status();
  auto other = Open(WriteSyntheticVideo("y.syn"), "synthetic");
  row.Note("another backend meanwhile: open " + CodeName(other.status()));
  EXPECT_TRUE(other.ok()) << other.status();
}

// A manifest whose library is a FIFO: its open blocked the host for good
// (each of `codecvisor info`, `backends` and a Python open with a 2 s
// timeout). A writer opened after 30 s ends a hang so that the test fails
// instead of hanging.
TEST_F(FaultTest, ALibraryThatIsAFifoIsAnErrorNotAHang) {
  const std::string fifo = std::string(std::getenv("TEST_TMPDIR")) + "/libfifo.so";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  const std::string path = WriteFile("fifolib.toml", FaultyManifest("fifolib", fifo, "codecvisor_backend_v1"));
  ASSERT_TRUE(host_->LoadBackend(path).ok());
  std::atomic<bool> done{false};
  std::thread unblock([&] {
    for (int i = 0; i < 300 && !done.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    // Without a reader a writer's open fails (ENXIO): tried until the
    // blocked open is there to read.
    while (!done.load()) {
      const int fd = open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd >= 0) {
        close(fd);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  const auto start = std::chrono::steady_clock::now();
  auto decoder = Open(WriteSyntheticVideo("fifo.syn"), "fifolib");
  const auto took = std::chrono::steady_clock::now() - start;
  done = true;
  unblock.join();
  EXPECT_LT(took, std::chrono::seconds(30)) << "the open waited for a writer";
  ASSERT_FALSE(decoder.ok());
  EXPECT_NE(decoder.status().message().find("is not a regular file"), std::string::npos) << decoder.status();
  EXPECT_NE(decoder.status().message().find(fifo), std::string::npos) << decoder.status();
}

// A broken manifest named like the built-in (a stale `cpu.toml` on the
// search path) once replaced the built-in's entry, and opening a file on
// `cpu` then crashed the host on a null supervisor.
TEST_F(FaultTest, ABrokenManifestNamedLikeTheBuiltinLeavesTheBuiltinServing) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/shadow";
  mkdir(dir.c_str(), 0755);
  WriteFile("shadow/cpu.toml", "name = [");
  options_.discovery->search_path = {dir};
  StartHost();
  FaultRow& row = Row("broken manifest with the built-in's name");
  ++row.tries;
  const BackendStatus shadow = StatusOf("cpu (" + dir + "/cpu.toml)");
  row.Note("broken one listed as 'cpu (...)': " + shadow.state);
  EXPECT_EQ(shadow.state, "failed");
  EXPECT_NE(shadow.diagnostic.find("cpu.toml"), std::string::npos) << shadow.diagnostic;
  // The open goes to the built-in's entry (whose library this test does not
  // ship, so that is the error), not to the broken one, and not to a crash.
  const BackendStatus builtin = StatusOf("cpu");
  EXPECT_NE(builtin.manifest_path.find("backends/cpu/cpu.toml"), std::string::npos) << builtin.manifest_path;
  auto d = Open(WriteSyntheticVideo("x.syn"), "cpu");
  row.Saw("open on cpu: " + CodeName(d.status()));
  EXPECT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("backends/cpu/cpu.toml"), std::string::npos) << d.status();
  EXPECT_EQ(d.status().message().find("shadow"), std::string::npos) << d.status();
}

// A plugin that closes descriptors it did not open while it loads (a
// daemon-style close-everything loop) takes the runner's control channel:
// the start fails saying so, where the host saw an exit with code 0 and
// restarted it over and over.
TEST_F(FaultTest, APluginClosingTheRunnersChannelIsToldSo) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/closer";
  mkdir(dir.c_str(), 0755);
  const std::string manifest =
      WriteFile("closer/faulty.toml", "name = 'faulty'\ndevices = ['faulty']\nlibrary = '" +
                                          Runfile("backends/testing/libcodecvisor_faulty.so") +
                                          "'\nabi_version = 1\n[config]\nclose_channel = '1'\n");
  auto host = Host::Create(options_);  // a host of its own: this one's 'faulty' closes the channel
  ASSERT_TRUE(host.ok()) << host.status();
  ASSERT_TRUE((*host)->LoadBackend(manifest).ok());
  DecoderOptions options;
  options.device = "faulty";
  auto d = (*host)->OpenDecoder(WriteSyntheticVideo("x.syn"), options);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("the plugin closed or replaced the runner's control channel, descriptors 3 "
                                      "and 4, while it loaded"),
            std::string::npos)
      << d.status();
  for (const BackendStatus& b : (*host)->Backends()) {
    if (b.name == "faulty") EXPECT_EQ(b.state, "failed") << b.diagnostic;
  }
}

// A plugin whose only device another backend took first (a vendor naming
// "cpu") is named with why, when its own name is asked for as a device:
// the message listed it as installed and said to put it on the path, where
// it already was.
TEST_F(FaultTest, APluginWhoseDevicesOthersTookSaysSoWhenItsNameIsAskedFor) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/clash";
  mkdir(dir.c_str(), 0755);
  WriteFile("clash/acme.toml", "name = 'acme'\ndevices = ['cpu']\nlibrary = '" +
                                   Runfile("backends/testing/libcodecvisor_synthetic.so") + "'\nabi_version = 1\n");
  options_.discovery->search_path = {dir};
  StartHost();
  auto d = Open(WriteSyntheticVideo("x.syn"), "acme");
  ASSERT_EQ(d.status().code(), absl::StatusCode::kNotFound) << d.status();
  EXPECT_NE(d.status().message().find("acme (no device of its own: its device 'cpu' went to a backend found before it"),
            std::string::npos)
      << d.status();
  EXPECT_NE(d.status().message().find("synthetic (synthetic)"), std::string::npos) << d.status();
}

// A broken manifest left on the search path (an old install's) once kept
// its name from a sound manifest loaded later, a pip plugin's: opening on
// the device raised the stale file's parse error.
TEST_F(FaultTest, ABrokenManifestYieldsItsNameToASoundOneLoadedLater) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/stale";
  mkdir(dir.c_str(), 0755);
  WriteFile("stale/synthetic.toml", "name = [");
  options_.discovery->search_path = {dir};
  StartHost();  // loads the sound synthetic.toml after discovery
  FaultRow& row = Row("broken manifest on the path, a sound one of its name loaded after");
  ++row.tries;
  const BackendStatus stale = StatusOf("synthetic (" + dir + "/synthetic.toml)");
  row.Note("broken one listed as 'synthetic (...)': " + stale.state);
  EXPECT_EQ(stale.state, "failed");
  EXPECT_NE(stale.diagnostic.find("stale/synthetic.toml"), std::string::npos) << stale.diagnostic;
  auto d = Open(WriteSyntheticVideo("x.syn"), "synthetic");
  row.Saw("open on synthetic: " + CodeName(d.status()));
  ASSERT_TRUE(d.ok()) << d.status();
  auto f = (*d)->GetFrameAt(3);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(IsSyntheticFrame(*f, 3));
}

// A plugin that ships a library of its own beside it and finds it through
// its $ORIGIN rpath (a relocatable vendor package) loads when its manifest
// lets the sandbox read its folder; without that, its error says how.
TEST_F(FaultTest, APluginsOwnLibraryBesideItIsFoundThroughOrigin) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/bundled";
  mkdir(dir.c_str(), 0755);
  for (const char* file : {"libcodecvisor_bundled.so", "libbundled_helper.so"}) {
    std::filesystem::copy_file(Runfile(std::string("backends/testing/") + file), dir + "/" + file,
                               std::filesystem::copy_options::overwrite_existing);
  }
  std::string manifest = ReadFileText(Runfile("backends/testing/bundled.toml"));
  WriteFile("bundled/bundled.toml", manifest);
  manifest.erase(manifest.find("[sandbox]"));
  absl::StrReplaceAll({{"name = \"bundled\"", "name = \"unread\""}, {"devices = [\"bundled\"]", "devices = [\"unread\"]"}},
                      &manifest);
  WriteFile("bundled/unread.toml", manifest);
  ASSERT_TRUE(host_->LoadBackend(dir + "/bundled.toml").ok());
  ASSERT_TRUE(host_->LoadBackend(dir + "/unread.toml").ok());
  FaultRow& row = Row("a plugin linked against a library beside it ($ORIGIN), with and without read_paths = [\".\"]");
  ++row.tries;
  auto d = Open(WriteSyntheticVideo("bundled.syn"), "bundled");
  row.Saw("with read_paths: open " + CodeName(d.status()));
  ASSERT_TRUE(d.ok()) << d.status();
  auto f = (*d)->GetFrameAt(2);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(IsSyntheticFrame(*f, 2));
  // The same library under a manifest that grants nothing: opened through
  // its descriptor, so $ORIGIN is not its folder.
  auto unread = Open(WriteSyntheticVideo("unread.syn"), "unread");
  row.Saw("without: open " + CodeName(unread.status()));
  ASSERT_FALSE(unread.ok());
  EXPECT_NE(unread.status().message().find("libbundled_helper.so"), std::string::npos) << unread.status();
  EXPECT_NE(unread.status().message().find("read_paths = [\".\"]"), std::string::npos) << unread.status();
}

// A manifest asking for more memory than the host may use (a petabyte,
// or more than a container's limit) gets a cgroup limit of what the host
// may use: the backend is stopped by its own limit, not by the machine's
// OOM killer choosing among every process.
TEST_F(FaultTest, AManifestsMemoryIsCappedAtWhatTheHostMayUse) {
  // The synthetic library under a manifest of its own, in a host that
  // loads no other.
  host_.reset();
  auto host = internal::Host::Create(options_);
  ASSERT_TRUE(host.ok()) << host.status();
  host_ = *std::move(host);
  const std::string path =
      WriteFile("greedy.toml", "name='synthetic'\ndevices=['synthetic']\nlibrary='" +
                                   Runfile("backends/testing/libcodecvisor_synthetic.so") +
                                   "'\nabi_version=1\n[sandbox]\nmemory_mb=1073741824\n");
  ASSERT_TRUE(host_->LoadBackend(path).ok());
  auto decoder = Open(WriteSyntheticVideo("greedy.syn"), "synthetic");
  ASSERT_TRUE(decoder.ok()) << decoder.status();
  const BackendStatus backend = StatusOf("synthetic");
  ASSERT_GT(backend.pid, 0);
  const std::vector<std::string> dirs =
      MemoryCgroupDirs(ReadFileText("/proc/" + std::to_string(backend.pid) + "/cgroup"), ReadFileText("/proc/self/mountinfo"));
  ASSERT_FALSE(dirs.empty());
  EXPECT_NE(dirs.front().find("codecvisor-"), std::string::npos) << dirs.front() << " is not the backend's own cgroup";
  EXPECT_EQ(LowestMemoryLimit({dirs.front()}, ReadFileText), UsableMemoryBytes()) << dirs.front();
}

// A plugin whose device another backend took first is listed saying so,
// not as a sound backend that serves nothing.
TEST_F(FaultTest, ABackendWhoseDeviceWasTakenSaysSo) {
  const std::string path =
      WriteFile("twin.toml", "name='twin'\ndevices=['synthetic', 'twin']\nlibrary='" +
                                 Runfile("backends/testing/libcodecvisor_synthetic.so") + "'\nabi_version=1\n");
  ASSERT_TRUE(host_->LoadBackend(path).ok());
  const BackendStatus twin = StatusOf("twin");
  EXPECT_EQ(twin.devices, std::vector<std::string>{"twin"});
  EXPECT_NE(twin.diagnostic.find("its device 'synthetic' went to a backend found before it"), std::string::npos)
      << twin.diagnostic;
  EXPECT_EQ(StatusOf("synthetic").diagnostic, "");
}

// A library that is a link to outside the folder its manifest grants is
// not readable by its path in the sandbox; the runner falls back to the
// descriptor the host opened, which works wherever the link points.
TEST_F(FaultTest, ALibraryLinkedFromOutsideTheReadPathsStillLoads) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/linked";
  mkdir(dir.c_str(), 0755);
  std::filesystem::create_symlink(Runfile("backends/testing/libcodecvisor_hostile.so"),
                                  dir + "/libcodecvisor_hostile.so");
  WriteFile("linked/hostile.toml",
            "name = \"hostile\"\ndevices = [\"hostile\"]\nlibrary = \"libcodecvisor_hostile.so\"\nabi_version = 1\n"
            "[sandbox]\nread_paths = [\".\"]\n");
  ASSERT_TRUE(host_->LoadBackend(dir + "/hostile.toml").ok());
  FaultRow& row = Row("a plugin library linked from outside its read_paths = [\".\"]");
  ++row.tries;
  auto d = Open(WriteSyntheticVideo("linked.syn"), "hostile");
  row.Saw("open " + CodeName(d.status()));
  ASSERT_TRUE(d.ok()) << d.status();
  auto f = (*d)->GetFrameAt(1);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(IsSyntheticFrame(*f, 1));
}

// A new folder in TEST_TMPDIR that every user may write, without the
// sticky bit: anyone may replace its entries.
std::string WorldWritableFolder(const std::string& name) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  EXPECT_EQ(mkdir(dir.c_str(), 0755), 0) << dir;
  EXPECT_EQ(chmod(dir.c_str(), 0777), 0) << dir;
  return dir;
}

// The runner applies Landlock and seccomp itself: one in a folder another
// user may write (an install copied somewhere shared) could be replaced by
// one that applies neither. It is refused as an untrusted manifest or
// library is, and no backend starts from it.
TEST_F(FaultTest, ARunnerOthersCouldReplaceIsRefused) {
  const std::string dir = WorldWritableFolder("shared_install");
  const std::string runner = dir + "/codecvisor-backend";
  std::filesystem::copy_file(Runfile("backends/sdk/runner/codecvisor-backend"), runner);
  options_.layout->runner = runner;
  StartHost();
  FaultRow& row = Row("a runner in a folder every user may write");
  ++row.tries;
  auto d = Open(WriteSyntheticVideo("shared_runner.syn"), "synthetic");
  row.Saw("open " + CodeName(d.status()));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kPermissionDenied) << d.status();
  EXPECT_NE(d.status().message().find("runner"), std::string::npos) << d.status();
  EXPECT_NE(d.status().message().find(dir), std::string::npos) << d.status();
  EXPECT_EQ(CountChildren(), 0);
}

// The built-in backend from an install others could change is refused as
// a plugin would be, but its way out is not a plugin's: autoloading off
// keeps it, and removing it leaves nothing to decode with.
TEST_F(FaultTest, AnUntrustedBuiltInBackendSaysToReinstall) {
  const std::string dir = WorldWritableFolder("shared_prefix");
  std::filesystem::copy_file(Runfile("backends/cpu/cpu.toml"), dir + "/cpu.toml");
  options_.discovery->builtin_dir = dir;
  StartHost();
  FaultRow& row = Row("the built-in cpu backend in a folder every user may write");
  ++row.tries;
  auto d = Open(WriteSyntheticVideo("untrusted_cpu.syn"), "cpu");
  row.Saw("open " + CodeName(d.status()));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kNotFound) << d.status();
  EXPECT_NE(d.status().message().find("reinstall codecvisor where no other user can write"), std::string::npos)
      << d.status();
  EXPECT_NE(d.status().message().find(dir + " may be written by every user"), std::string::npos) << d.status();
  EXPECT_EQ(d.status().message().find("CODECVISOR_DEVICE_BACKEND_AUTOLOAD"), std::string::npos) << d.status();
}

}  // namespace
}  // namespace codecvisor::testing
