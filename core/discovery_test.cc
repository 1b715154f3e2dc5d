#include "core/discovery.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

namespace codecvisor {
namespace {

class DiscoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::string(std::getenv("TEST_TMPDIR")) + "/" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (const char* d : {"", "/builtin", "/a", "/b"}) mkdir((root_ + d).c_str(), 0755);
    Write("builtin/cpu.toml", Manifest("cpu", "'cpu'"));
  }
  void Write(const std::string& rel, const std::string& text) { std::ofstream(root_ + "/" + rel) << text; }
  static std::string Manifest(const std::string& name, const std::string& devices) {
    return "name='" + name + "'\ndevices=[" + devices + "]\nlibrary='lib" + name + ".so'\nabi_version=1\n";
  }
  DiscoveryOptions Options() {
    DiscoveryOptions o;
    o.search_path = {root_ + "/a", root_ + "/b", root_ + "/missing"};
    o.builtin_dir = root_ + "/builtin";
    return o;
  }
  const DiscoveredBackend* Find(const Discovery& d, const std::string& name) {
    for (const auto& b : d.backends) {
      if (b.name == name) return &b;
    }
    return nullptr;
  }
  std::string root_;
};

TEST_F(DiscoveryTest, FindsManifestsInSearchOrderAndAlwaysTheBuiltin) {
  Write("a/acme.toml", Manifest("acme", "'acme'"));
  Write("b/zeta.toml", Manifest("zeta", "'zeta', 'z2'"));
  Write("b/notes.txt", "not a manifest");
  Discovery d = DiscoverBackends(Options());
  ASSERT_EQ(d.backends.size(), 3u);
  EXPECT_EQ(d.backends[0].name, "cpu");
  EXPECT_EQ(d.backends[1].name, "acme");
  EXPECT_EQ(d.backends[2].name, "zeta");
  EXPECT_EQ(d.backends[2].devices, (std::vector<std::string>{"zeta", "z2"}));
  EXPECT_TRUE(d.warnings.empty());
}

TEST_F(DiscoveryTest, BrokenManifestsAreRecordedNotFatal) {
  Write("a/broken.toml", "name = [");
  Write("a/good.toml", Manifest("good", "'good'"));
  Discovery d = DiscoverBackends(Options());
  const DiscoveredBackend* broken = Find(d, "broken");
  ASSERT_NE(broken, nullptr);
  EXPECT_FALSE(broken->manifest.ok());
  EXPECT_NE(broken->manifest.status().message().find("broken.toml"), std::string::npos);
  ASSERT_NE(Find(d, "good"), nullptr);
  EXPECT_TRUE(Find(d, "good")->manifest.ok());
}

// A broken manifest is listed under its file's stem; a broken `cpu.toml`
// on the search path once replaced the built-in's entry, and the host then
// routed device `cpu` to a backend that does not exist.
TEST_F(DiscoveryTest, ABrokenManifestNeverTakesAWorkingBackendsName) {
  Write("a/cpu.toml", "name = [");
  Write("a/acme.toml", Manifest("acme", "'acme'"));
  Write("b/acme.toml", "name = [");
  Write("b/twice.toml", "name = [");
  Write("a/twice.toml", "also = [");
  Discovery d = DiscoverBackends(Options());
  ASSERT_EQ(d.backends.size(), 6u);
  std::set<std::string> names;
  for (const auto& b : d.backends) names.insert(b.name);
  EXPECT_EQ(names.size(), d.backends.size()) << "every entry has its own name";
  ASSERT_NE(Find(d, "cpu"), nullptr);
  EXPECT_TRUE(Find(d, "cpu")->manifest.ok());
  EXPECT_EQ(Find(d, "cpu")->devices, (std::vector<std::string>{"cpu"}));
  ASSERT_NE(Find(d, "acme"), nullptr);
  EXPECT_TRUE(Find(d, "acme")->manifest.ok());
  const DiscoveredBackend* broken_cpu = Find(d, "cpu (" + root_ + "/a/cpu.toml)");
  ASSERT_NE(broken_cpu, nullptr);
  EXPECT_FALSE(broken_cpu->manifest.ok());
  EXPECT_NE(Find(d, "acme (" + root_ + "/b/acme.toml)"), nullptr);
  // Two broken ones with one stem: the first keeps it.
  EXPECT_NE(Find(d, "twice"), nullptr);
  EXPECT_NE(Find(d, "twice (" + root_ + "/b/twice.toml)"), nullptr);
}

TEST_F(DiscoveryTest, FirstClaimOfADeviceWinsWithAWarningNamingBoth) {
  Write("a/one.toml", Manifest("one", "'gpu', 'one'"));
  Write("b/two.toml", Manifest("two", "'gpu', 'two'"));
  Discovery d = DiscoverBackends(Options());
  EXPECT_EQ(Find(d, "one")->devices, (std::vector<std::string>{"gpu", "one"}));
  EXPECT_EQ(Find(d, "two")->devices, (std::vector<std::string>{"two"}));
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_NE(d.warnings[0].find("a/one.toml"), std::string::npos) << d.warnings[0];
  EXPECT_NE(d.warnings[0].find("b/two.toml"), std::string::npos) << d.warnings[0];
}

TEST_F(DiscoveryTest, NoPluginMayTakeTheCpuDeviceOrName) {
  Write("a/evil.toml", Manifest("evil", "'cpu'"));
  Write("a/fake.toml", Manifest("cpu", "'other'"));
  Discovery d = DiscoverBackends(Options());
  EXPECT_EQ(d.backends[0].devices, (std::vector<std::string>{"cpu"}));
  EXPECT_TRUE(Find(d, "evil")->devices.empty());
  for (const auto& b : d.backends) EXPECT_EQ(b.manifest_path.find("fake.toml"), std::string::npos) << "not listed";
  bool said = false;
  for (const std::string& w : d.warnings) {
    said = said || (w.find("fake.toml is not used: backend 'cpu' is the built-in backend's name") != std::string::npos);
  }
  EXPECT_TRUE(said);
}

// A copy of a backend later in the search order (an installed one under a
// vendor's development build on CODECVISOR_BACKEND_PATH) is shadowed: not
// listed, not a failure (doctor passes), said in a warning naming both.
TEST_F(DiscoveryTest, ALaterCopyOfABackendIsShadowedNotFailed) {
  Write("a/acme.toml", Manifest("acme", "'acme'"));
  Write("b/acme.toml", Manifest("acme", "'acme'"));
  Discovery d = DiscoverBackends(Options());
  ASSERT_EQ(d.backends.size(), 2u);
  ASSERT_NE(Find(d, "acme"), nullptr);
  EXPECT_EQ(Find(d, "acme")->manifest_path, root_ + "/a/acme.toml");
  EXPECT_EQ(Find(d, "acme")->devices, (std::vector<std::string>{"acme"}));
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_NE(d.warnings[0].find(root_ +
                               "/b/acme.toml is not used: backend 'acme' is provided by a manifest "
                               "earlier in the search order, " +
                               root_ + "/a/acme.toml"),
            std::string::npos)
      << d.warnings[0];
}

// CODECVISOR_BACKEND_PATH=/d:/d, or a folder named two ways (or the
// install's own folder on the path): each manifest is read once, not
// listed again as another providing its name.
TEST_F(DiscoveryTest, AFolderListedTwiceIsReadOnce) {
  Write("a/acme.toml", Manifest("acme", "'acme'"));
  DiscoveryOptions o = Options();
  o.search_path = {root_ + "/a", root_ + "/a", root_ + "/b/../a", root_ + "/builtin"};
  Discovery d = DiscoverBackends(o);
  ASSERT_EQ(d.backends.size(), 2u);
  EXPECT_EQ(d.backends[0].name, "cpu");
  EXPECT_EQ(d.backends[1].name, "acme");
  EXPECT_TRUE(d.backends[1].manifest.ok());
  EXPECT_TRUE(d.warnings.empty());
}

TEST_F(DiscoveryTest, AutoloadOffKeepsOnlyTheBuiltin) {
  Write("a/acme.toml", Manifest("acme", "'acme'"));
  Write("builtin/installed.toml", Manifest("installed", "'inst'"));
  DiscoveryOptions o = Options();
  o.autoload = false;
  Discovery d = DiscoverBackends(o);
  ASSERT_EQ(d.backends.size(), 1u);
  EXPECT_EQ(d.backends[0].name, "cpu");
}

TEST_F(DiscoveryTest, EnvironmentIsRead) {
  setenv("CODECVISOR_BACKEND_PATH", "/x:/y::/z", 1);
  setenv("CODECVISOR_DEVICE_BACKEND_AUTOLOAD", "0", 1);
  DiscoveryOptions o = DiscoveryOptionsFromEnvironment("/b");
  EXPECT_EQ(o.search_path, (std::vector<std::string>{"/x", "/y", "/z"}));
  EXPECT_FALSE(o.autoload);
  // As torch reads TORCH_DEVICE_BACKEND_AUTOLOAD: only "1" (or unset) is on.
  for (const char* off : {"false", "off", ""}) {
    setenv("CODECVISOR_DEVICE_BACKEND_AUTOLOAD", off, 1);
    EXPECT_FALSE(DiscoveryOptionsFromEnvironment("/b").autoload) << "'" << off << "'";
  }
  setenv("CODECVISOR_DEVICE_BACKEND_AUTOLOAD", "1", 1);
  EXPECT_TRUE(DiscoveryOptionsFromEnvironment("/b").autoload);
  unsetenv("CODECVISOR_BACKEND_PATH");
  unsetenv("CODECVISOR_DEVICE_BACKEND_AUTOLOAD");
  EXPECT_TRUE(DiscoveryOptionsFromEnvironment("/b").autoload);
}

}  // namespace
}  // namespace codecvisor
