#include "core/manifest.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <utility>

namespace codecvisor {
namespace {

constexpr char kGood[] = R"(
name = "acme"
devices = ["acme", "acme2"]
library = "lib/libacme.so"
entry = "acme_entry"
abi_version = 1
[config]
quality = "high"
threads = 4
)";

TEST(ManifestTest, ParsesEveryField) {
  auto m = ParseManifest(kGood, "/opt/plugins/acme.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->name, "acme");
  EXPECT_EQ(m->devices, (std::vector<std::string>{"acme", "acme2"}));
  EXPECT_EQ(m->library, "/opt/plugins/lib/libacme.so") << "relative to the manifest's folder";
  EXPECT_EQ(m->entry, "acme_entry");
  EXPECT_EQ(m->abi_version, 1);
  EXPECT_EQ(m->config, "quality=high\nthreads=4\n");
  EXPECT_TRUE(m->warnings.empty());
}

// A key of codecvisor's own tables that this version does not know loads
// (a later version's manifest), with a warning naming it: more often it is
// a typo whose setting would silently not apply.
TEST(ManifestTest, UnknownKeysAreWarnedOfNotFatal) {
  auto m = ParseManifest(
      "name='x'\ndevices=['x']\nlibrary='/l.so'\nabi_version=1\n[conformence]\nsamples=['a.y4m']\n"
      "[restart]\nmax_restart=2\nwarm_spare=true\n[config]\nanything='goes'\n",
      "/m/x.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->warm_spare);
  EXPECT_EQ(m->restart.max_restarts, RestartLimits{}.max_restarts) << "the misspelt key does not apply";
  ASSERT_EQ(m->warnings.size(), 2u);
  EXPECT_EQ(m->warnings[0], "manifest /m/x.toml: key 'conformence' is unknown and ignored (keys: name, devices, "
                            "library, entry, abi_version, restart, sandbox, conformance, config)");
  EXPECT_EQ(m->warnings[1],
            "manifest /m/x.toml: key 'restart.max_restart' is unknown and ignored ([restart] keys: "
            "max_restarts, window_seconds, backoff_initial_ms, backoff_max_ms, max_poison_in_a_row, "
            "heal_after_successes, warm_spare, start_timeout_seconds, close_timeout_seconds, quarantine_seconds)");
}

// A required key missing beside an unknown one: the error names the
// unknown key, most likely the misspelling (a vendor's 'libary' was told
// only that 'library' was missing).
TEST(ManifestTest, AMissingKeyNamesTheUnknownOnesBesideIt) {
  auto m = ParseManifest("name='x'\ndevices=['x']\nlibary='l.so'\nabi_version=1\n", "/m/x.toml");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(),
            "manifest /m/x.toml: key 'library': missing, or not a string (the manifest has an unknown key 'libary': "
            "a misspelling?)");
  m = ParseManifest("nmae='x'\ndevise=['x']\nlibrary='l.so'\nabi_version=1\n", "/m/x.toml");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("(the manifest has unknown keys 'devise', 'nmae': a misspelling?)"),
            std::string::npos)
      << m.status();
}

TEST(ManifestTest, EntryDefaultsToTheV1Symbol) {
  auto m = ParseManifest("name='x'\ndevices=['x']\nlibrary='/l.so'\nabi_version=1\n", "x.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->entry, "codecvisor_backend_v1");
  EXPECT_EQ(m->library, "/l.so");
}

TEST(ManifestTest, ErrorsNameTheFileAndTheKey) {
  struct Case {
    const char* text;
    const char* needle;
  } cases[] = {
      {"name = [", "line"},
      {"devices=['x']\nlibrary='l'\nabi_version=1", "key 'name'"},
      {"name='Bad Name'\ndevices=['x']\nlibrary='l'\nabi_version=1", "key 'name'"},
      {"name='x'\ndevices=[]\nlibrary='l'\nabi_version=1", "key 'devices'"},
      {"name='x'\ndevices=[1]\nlibrary='l'\nabi_version=1", "key 'devices'"},
      {"name='x'\ndevices=['x']\nabi_version=1", "key 'library'"},
      {"name='x'\ndevices=['x']\nlibrary='l'", "key 'abi_version'"},
      {"name='x'\ndevices=['x']\nlibrary='l'\nabi_version=99", "key 'abi_version': 99, but this codecvisor speaks"},
      {"name='x'\ndevices=['x']\nlibrary='l'\nabi_version=0", "set abi_version = 1"},
      {"name='x'\ndevices=['x']\nlibrary='l'\nabi_version=1\nconfig=3", "key 'config'"},
      // create() reads key=value lines: no value or key may make more.
      {"name='x'\ndevices=['x']\nlibrary='l'\nabi_version=1\n[config]\ninject=\"ok\\nfault=crash\"",
       "key 'config.inject': a config value is one line"},
      {"name='x'\ndevices=['x']\nlibrary='l'\nabi_version=1\n[config]\npem=\"\"\"a\nb\"\"\"", "key 'config.pem'"},
      {"name='x'\ndevices=['x']\nlibrary='l'\nabi_version=1\n[config]\n\"a=b\"=1", "without '='"},
      {"name='x'\ndevices=['x']\nlibrary='l'\nabi_version=1\n[config]\n\"a\\nb\"=1", "without '='"},
      {"name='x'\ndevices=['x']\nlibrary='l'\nabi_version=1\n[config]\nnul=\"a\\u0000b\"", "key 'config.nul'"},
  };
  for (const Case& c : cases) {
    auto m = ParseManifest(c.text, "/p/broken.toml");
    ASSERT_FALSE(m.ok()) << c.text;
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(m.status().message().find("/p/broken.toml"), std::string::npos) << m.status();
    EXPECT_NE(m.status().message().find(c.needle), std::string::npos) << m.status();
  }
}

TEST(ManifestTest, RestartTableOverridesTheDefaults) {
  auto m = ParseManifest(
      "name='x'\ndevices=['x']\nlibrary='/l.so'\nabi_version=1\n"
      "[restart]\nmax_restarts=2\nwindow_seconds=30\nbackoff_initial_ms=5\nbackoff_max_ms=100\nwarm_spare=true\n"
      "max_poison_in_a_row=3\nheal_after_successes=2\nquarantine_seconds=1800\n",
      "x.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->restart.max_restarts, 2);
  EXPECT_EQ(m->restart.quarantine, std::chrono::seconds(1800));
  EXPECT_EQ(m->restart.quarantine_max, std::chrono::seconds(1800)) << "never shorter than the first";
  EXPECT_EQ(m->restart.window, std::chrono::seconds(30));
  EXPECT_EQ(m->restart.backoff_initial, std::chrono::milliseconds(5));
  EXPECT_EQ(m->restart.backoff_max, std::chrono::milliseconds(100));
  EXPECT_EQ(m->restart.max_poison_in_a_row, 3);
  EXPECT_EQ(m->restart.heal_after_successes, 2);
  EXPECT_TRUE(m->warm_spare);
  EXPECT_FALSE(m->start_timeout.has_value());  // the host's, unless set
  EXPECT_EQ(m->close_timeout, std::chrono::seconds(60));
  auto slow = ParseManifest(
      "name='x'\ndevices=['x']\nlibrary='/l.so'\nabi_version=1\n[restart]\nstart_timeout_seconds=40\n"
      "close_timeout_seconds=5\n",
      "x.toml");
  ASSERT_TRUE(slow.ok()) << slow.status();
  EXPECT_EQ(slow->start_timeout, std::chrono::seconds(40));
  EXPECT_EQ(slow->close_timeout, std::chrono::seconds(5));
  for (const char* value : {"0", "3601"}) {
    auto out_of_range = ParseManifest(
        std::string("name='x'\ndevices=['x']\nlibrary='/l.so'\nabi_version=1\n[restart]\nclose_timeout_seconds=") +
            value + "\n",
        "x.toml");
    ASSERT_FALSE(out_of_range.ok()) << value;
    EXPECT_NE(out_of_range.status().message().find("restart.close_timeout_seconds': expected an integer in [1, 3600]"),
              std::string::npos)
        << out_of_range.status();
  }
  EXPECT_TRUE(slow->warnings.empty());
  auto bad = ParseManifest("name='x'\ndevices=['x']\nlibrary='/l.so'\nabi_version=1\n[restart]\nmax_restarts=-1\n",
                           "x.toml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("restart.max_restarts"), std::string::npos) << bad.status();
  // A start of no time at all is no setting: 1 to 120, as documented (0
  // was taken silently as the host's 10 s).
  auto instant = ParseManifest("name='x'\ndevices=['x']\nlibrary='/l.so'\nabi_version=1\n[restart]\n"
                               "start_timeout_seconds=0\n",
                               "x.toml");
  ASSERT_FALSE(instant.ok());
  EXPECT_NE(instant.status().message().find("restart.start_timeout_seconds': expected an integer in [1, 120]"),
            std::string::npos)
      << instant.status();
  auto never_heals = ParseManifest(
      "name='x'\ndevices=['x']\nlibrary='/l.so'\nabi_version=1\n[restart]\n"
      "heal_after_successes=0\n",
      "x.toml");
  ASSERT_FALSE(never_heals.ok());
  EXPECT_NE(never_heals.status().message().find("restart.heal_after_successes': expected an integer in [1, 1000000]"),
            std::string::npos)
      << never_heals.status();
}

// Below the runner's own descriptors the backend failed to start with a
// Landlock or loader message (and a suggestion to drop Landlock): the
// manifest is refused instead, naming the key and why.
TEST(ManifestTest, OpenFilesBelowTheRunnersOwnNeedIsRefused) {
  const std::string head = "name='gpu'\ndevices=['gpu']\nlibrary='/l.so'\nabi_version=1\n[sandbox]\n";
  for (const char* few : {"open_files=0", "open_files=5", "open_files=15"}) {
    auto m = ParseManifest(head + few + "\n", "gpu.toml");
    ASSERT_FALSE(m.ok()) << few;
    EXPECT_NE(m.status().message().find("key 'sandbox.open_files': expected an integer from 16 to"), std::string::npos)
        << m.status();
    EXPECT_NE(m.status().message().find("the runner holds about 10 descriptors of its own"), std::string::npos)
        << m.status();
  }
  auto least = ParseManifest(head + "open_files=16\n", "gpu.toml");
  ASSERT_TRUE(least.ok()) << least.status();
  EXPECT_EQ(least->sandbox.open_files, 16u);
}

TEST(ManifestTest, SandboxTableAndNoNetworkEver) {
  auto m = ParseManifest(
      "name='gpu'\ndevices=['gpu']\nlibrary='/l.so'\nabi_version=1\n"
      "[sandbox]\nread_paths=['/opt/models']\ndevices=['/dev/nvidia0', '/dev/nvidiactl']\nmemory_mb=2048\n"
      "cpu_seconds=60\nopen_files=64\nthreads=32\nallow_degraded=true\n",
      "gpu.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->sandbox.read_paths, (std::vector<std::string>{"/opt/models"}));
  EXPECT_EQ(m->sandbox.devices, (std::vector<std::string>{"/dev/nvidia0", "/dev/nvidiactl"}));
  EXPECT_EQ(m->sandbox.memory_mb, 2048u);
  EXPECT_EQ(m->sandbox.cpu_seconds, 60u);
  EXPECT_EQ(m->sandbox.open_files, 64u);
  EXPECT_EQ(m->sandbox.threads, 32u);
  EXPECT_TRUE(m->sandbox.allow_degraded);
  for (const char* bad : {"[sandbox]\nnetwork=true\n", "[sandbox]\nread_paths=['']\n",
                          "[sandbox]\nmemory_mb=0\n", "[sandbox]\nfoo=1\n",
                          // Devices are opened read-write: never a folder of files.
                          "[sandbox]\ndevices=['/home']\n", "[sandbox]\ndevices=['/dev/../home/u']\n",
                          "[sandbox]\ndevices=['/dev']\n", "[sandbox]\nread_paths=[\"/opt/\\u0000x\"]\n",
                          // Folders anyone may create files in, and terminals.
                          "[sandbox]\ndevices=['/dev/']\n", "[sandbox]\ndevices=['/dev/shm/x']\n",
                          "[sandbox]\ndevices=['/dev/shm']\n", "[sandbox]\ndevices=['/dev/mqueue/q']\n",
                          "[sandbox]\ndevices=['/dev/pts/0']\n", "[sandbox]\ndevices=['/dev/fd/3']\n",
                          "[sandbox]\ndevices=['/dev/./shm/x']\n", "[sandbox]\ndevices=['/dev//shm/x']\n",
                          // memory_mb << 20 must not wrap to a zero limit.
                          "[sandbox]\nmemory_mb=17592186044416\n", "[sandbox]\nthreads=9223372036854775807\n"}) {
    auto b = ParseManifest(std::string("name='x'\ndevices=['x']\nlibrary='/l.so'\nabi_version=1\n") + bad, "x.toml");
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_NE(b.status().message().find("sandbox."), std::string::npos) << b.status();
  }
}

TEST(ManifestTest, ConformanceClaims) {
  const std::string head = "name='x'\ndevices=['x']\nlibrary='/l.so'\nabi_version=1\n";
  auto defaults = ParseManifest(head, "x.toml");
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(defaults->conformance.codecs, (std::vector<std::string>{"h264"}));

  auto av1 = ParseManifest(head + "[conformance]\ncodecs=['av1','vp9']\n", "x.toml");
  ASSERT_TRUE(av1.ok()) << av1.status();
  EXPECT_EQ(av1->conformance.codecs, (std::vector<std::string>{"av1", "vp9"}));

  auto own = ParseManifest(head + "[conformance]\nsamples=['clip.y4m','/data/b.y4m']\n", "/v/x.toml");
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_TRUE(own->conformance.codecs.empty()) << "only the vendor's samples";
  EXPECT_EQ(own->conformance.samples, (std::vector<std::string>{"/v/clip.y4m", "/data/b.y4m"}));
  auto both = ParseManifest(head + "[conformance]\nsamples=['c.y4m']\ncodecs=['vp9']\n", "x.toml");
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ(both->conformance.codecs, (std::vector<std::string>{"vp9"}));

  // A mistake in the suite's table loads the backend all the same (users
  // lose nothing to a test setting), warns, and leaves the suite the
  // problem to refuse.
  auto y4m = ParseManifest(head + "[conformance]\ncodecs=['y4m']\n", "x.toml");
  ASSERT_TRUE(y4m.ok()) << y4m.status();
  EXPECT_NE(y4m->conformance.problem.find("cannot make 'y4m'"), std::string::npos) << y4m->conformance.problem;
  EXPECT_NE(y4m->conformance.problem.find("--sample"), std::string::npos) << y4m->conformance.problem;

  for (const char* bad : {"[conformance]\ncodecs=['prores']\n", "[conformance]\ncodecs=[]\n", "[conformance]\nsamples=[]\n",
                          "[conformance]\nsamples=['']\n", "[conformance]\nsamples=[3]\n", "[conformance]\ncodecs='av1'\n",
                          "[conformance]\ncodecs=[1]\n", "[conformance]\nexact=true\n", "conformance=1\n"}) {
    auto b = ParseManifest(head + bad, "x.toml");
    ASSERT_TRUE(b.ok()) << bad << b.status();
    EXPECT_EQ(b->devices, std::vector<std::string>{"x"}) << bad;
    EXPECT_NE(b->conformance.problem.find("manifest x.toml: key 'conformance"), std::string::npos)
        << bad << b->conformance.problem;
    EXPECT_TRUE(b->conformance.samples.empty()) << bad;
    ASSERT_EQ(b->warnings.size(), 1u) << bad;
    EXPECT_NE(b->warnings[0].find("the conformance suite refuses the manifest"), std::string::npos) << b->warnings[0];
  }
  EXPECT_TRUE(av1->conformance.problem.empty());
  EXPECT_TRUE(av1->warnings.empty());
}

TEST(ManifestTest, RejectsOversizedManifest) {
  std::string huge(kMaxManifestBytes + 1, '#');
  EXPECT_EQ(ParseManifest(huge, "big.toml").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ManifestTest, MissingFileIsNotFound) {
  EXPECT_EQ(LoadManifest("/nonexistent/x.toml").status().code(), absl::StatusCode::kNotFound);
}

// A FIFO named like a manifest once blocked discovery's open forever.
TEST(ManifestTest, OnlyARegularFileIsRead) {
  const std::string dir = std::getenv("TEST_TMPDIR");
  const std::string fifo = dir + "/fifo.toml", folder = dir + "/folder.toml";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  ASSERT_EQ(mkdir(folder.c_str(), 0755), 0);
  for (const auto& [path, why] : {std::pair{fifo, "a FIFO, not a file"}, {folder, "a folder, not a file"}}) {
    absl::StatusOr<BackendManifest> m = LoadManifest(path);
    EXPECT_EQ(m.status().code(), absl::StatusCode::kNotFound) << m.status();
    EXPECT_NE(m.status().message().find(why), std::string::npos) << m.status();
  }
}

// A relocatable plugin grants the sandbox its own folder.
TEST(ManifestTest, ReadPathsMayBeRelativeToTheManifest) {
  auto m = ParseManifest(
      "name='x'\ndevices=['x']\nlibrary='lib/x.so'\nabi_version=1\n"
      "[sandbox]\nread_paths=['.', 'lib/', 'models/../data', '/opt/m']\n",
      "/site/acme/x.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->sandbox.read_paths,
            (std::vector<std::string>{"/site/acme", "/site/acme/lib", "/site/acme/data", "/opt/m"}));
  auto outside = ParseManifest("name='x'\ndevices=['x']\nlibrary='../acme.libs/x.so'\nabi_version=1\n",
                               "/site/acme/x.toml");
  ASSERT_TRUE(outside.ok()) << outside.status();
  EXPECT_EQ(outside->library, "/site/acme.libs/x.so") << "normal, as the runner compares it with read paths";
  auto devices = ParseManifest("name='x'\ndevices=['x']\nlibrary='x.so'\nabi_version=1\n[sandbox]\ndevices=['dev/x']\n",
                               "/site/acme/x.toml");
  EXPECT_FALSE(devices.ok());
}

// The library resolves against the manifest's absolute folder, so a
// relative manifest path means the same after a chdir.
TEST(ManifestTest, ARelativePathIsMadeAbsolute) {
  const std::string dir = std::getenv("TEST_TMPDIR");
  {
    std::ofstream out(dir + "/rel.toml");
    out << "name = \"rel\"\ndevices = [\"rel\"]\nlibrary = \"librel.so\"\nabi_version = 1\n";
  }
  char cwd[4096];
  ASSERT_NE(getcwd(cwd, sizeof(cwd)), nullptr);
  ASSERT_EQ(chdir(dir.c_str()), 0);
  absl::StatusOr<BackendManifest> m = LoadManifest("rel.toml");
  ASSERT_EQ(chdir(cwd), 0);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->library, dir + "/librel.so");
}

// A manifest, or the library it names, that another user could change is
// not loaded; nor one whose devices are not device nodes a backend may have.
// A read path that is not there (a misspelled firmware file) is left out
// of the sandbox: said at load, where create() only met ENOENT.
TEST(ManifestTest, AReadPathThatDoesNotExistIsWarnedOf) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/missing_read_path";
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  std::ofstream(dir + "/libok.so") << "";
  std::ofstream(dir + "/ok.toml") << "name='ok'\ndevices=['ok']\nlibrary='libok.so'\nabi_version=1\n"
                                     "[sandbox]\nread_paths=['.', 'firmwre.bin']\n";
  absl::StatusOr<BackendManifest> m = LoadManifest(dir + "/ok.toml");
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->warnings.size(), 1u);
  EXPECT_EQ(m->warnings[0], "manifest " + dir + "/ok.toml: [sandbox] read_paths: " + dir +
                                "/firmwre.bin does not exist: the backend will not see it (a misspelled path, or a "
                                "file the plugin's package did not install)");
}

TEST(ManifestTest, OnlyFilesNoOtherUserCanChangeAreLoaded) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/shared";
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
    chmod((dir + "/" + name).c_str(), 0644);
    return dir + "/" + name;
  };
  const std::string lib = write("libok.so", "");
  const std::string good = write("ok.toml", "name='ok'\ndevices=['ok']\nlibrary='libok.so'\nabi_version=1\n");
  ASSERT_TRUE(LoadManifest(good).ok()) << LoadManifest(good).status();

  // The folder writable by every user, without the sticky bit.
  ASSERT_EQ(chmod(dir.c_str(), 0777), 0);
  absl::StatusOr<BackendManifest> m = LoadManifest(good);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kPermissionDenied) << m.status();
  EXPECT_NE(m.status().message().find("manifest " + good + " is not trusted: " + dir + " may be written by every user"),
            std::string::npos)
      << m.status();
  ASSERT_EQ(chmod(dir.c_str(), 0755), 0);

  // The library writable by every user.
  ASSERT_EQ(chmod(lib.c_str(), 0666), 0);
  m = LoadManifest(good);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("library " + lib + " is not trusted: " + lib + " may be written by every user"),
            std::string::npos)
      << m.status();
  ASSERT_EQ(chmod(lib.c_str(), 0644), 0);

  // A missing library still loads: its start says what is missing.
  const std::string no_lib = write("nolib.toml", "name='n'\ndevices=['n']\nlibrary='libnone.so'\nabi_version=1\n");
  EXPECT_TRUE(LoadManifest(no_lib).ok()) << LoadManifest(no_lib).status();

  // A device path that holds a terminal.
  struct stat tty {};
  if (stat("/dev/tty", &tty) == 0 && S_ISCHR(tty.st_mode)) {
    const std::string terminal = write(
        "tty.toml", "name='t'\ndevices=['t']\nlibrary='libok.so'\nabi_version=1\n[sandbox]\ndevices=['/dev/tty']\n");
    m = LoadManifest(terminal);
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().message().find("/dev/tty is a terminal"), std::string::npos) << m.status();
  }
}

}  // namespace
}  // namespace codecvisor
