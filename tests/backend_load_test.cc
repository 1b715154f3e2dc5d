// A broken plugin never breaks the host: bad manifest, missing library,
// missing symbol, ABI mismatch, NULL table, failing init. Each is listed as
// failed with a precise diagnostic, and only a request for its device fails.

#include <sys/stat.h>

#include <atomic>
#include <cstdlib>
#include <thread>

#include "tests/fault_test_support.h"

namespace codecvisor::testing {
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
};

class BackendLoadTest : public FaultTest, public ::testing::WithParamInterface<LoadCase> {};

TEST_P(BackendLoadTest, BrokenPluginIsAPreciseErrorForItsDeviceOnly) {
  const LoadCase& c = GetParam();
  std::string library = c.library[0] == '/' ? c.library : Runfile(c.library);
  const std::string path = WriteFile(std::string(c.name) + ".toml", FaultyManifest(c.name, library, c.entry, c.extra));
  ASSERT_TRUE(host_->LoadBackend(path).ok());
  for (int run = 0; run < 20; ++run) {
    auto decoder = Open(WriteSyntheticVideo("load.syn"), c.name);
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
  EXPECT_EQ(precise.load(), 8);
  EXPECT_EQ(StatusOf(c.name).state, "failed");
  EXPECT_NE(StatusOf(c.name).diagnostic.find(c.diagnostic), std::string::npos) << StatusOf(c.name).diagnostic;
  auto other = Open(WriteSyntheticVideo("other.syn"), "synthetic");
  ASSERT_TRUE(other.ok()) << other.status();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BackendLoadTest,
    ::testing::Values(
        LoadCase{"nolib", "/nonexistent/libnothing.so", "codecvisor_backend_v1", "", "cannot open shared object"},
        LoadCase{"nosym", "backends/testing/libcodecvisor_faulty.so", "no_such_entry", "",
                 "undefined symbol no_such_entry"},
        LoadCase{"badabi", "backends/testing/libcodecvisor_faulty.so", "faulty_wrong_abi", "", "ABI version 99"},
        LoadCase{"nulltable", "backends/testing/libcodecvisor_faulty.so", "faulty_null_table", "", "returned NULL"},
        LoadCase{"initfail", "backends/testing/libcodecvisor_faulty.so", "faulty_init_fails", "",
                 "init failed: synthetic backend told to fail at init"},
        LoadCase{"wrongname", "backends/testing/libcodecvisor_faulty.so", "codecvisor_backend_v1", "",
                 "is backend 'faulty', but its manifest says 'wrongname'"}),
    [](const ::testing::TestParamInfo<LoadCase>& info) { return std::string(info.param.name); });

TEST_F(FaultTest, MalformedManifestFailsOnlyItsOwnDevice) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/plugins";
  mkdir(dir.c_str(), 0755);
  WriteFile("plugins/broken.toml", "name = [");
  options_.discovery->search_path = {dir};
  StartHost();
  EXPECT_EQ(StatusOf("broken").state, "failed");
  EXPECT_NE(StatusOf("broken").diagnostic.find("broken.toml"), std::string::npos);
  auto d = Open(WriteSyntheticVideo("x.syn"), "broken");
  ASSERT_EQ(d.status().code(), absl::StatusCode::kFailedPrecondition) << d.status();
  EXPECT_NE(d.status().message().find("CODECVISOR_DEVICE_BACKEND_AUTOLOAD=0"), std::string::npos) << d.status();
  EXPECT_TRUE(Open(WriteSyntheticVideo("y.syn"), "synthetic").ok());
}

}  // namespace
}  // namespace codecvisor::testing
