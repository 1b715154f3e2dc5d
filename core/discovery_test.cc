#include "core/discovery.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

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
  bool duplicate_name_failed = false;
  for (const auto& b : d.backends) {
    if (b.manifest_path.find("fake.toml") != std::string::npos) {
      duplicate_name_failed = !b.manifest.ok() && absl::IsAlreadyExists(b.manifest.status());
    }
  }
  EXPECT_TRUE(duplicate_name_failed);
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
  unsetenv("CODECVISOR_BACKEND_PATH");
  unsetenv("CODECVISOR_DEVICE_BACKEND_AUTOLOAD");
}

}  // namespace
}  // namespace codecvisor
