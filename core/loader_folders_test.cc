#include "core/loader_folders.h"

#include <gtest/gtest.h>

#include <map>

namespace codecvisor {
namespace {

TEST(LoaderFoldersTest, FoldersIncludesAndComments) {
  const std::map<std::string, std::vector<std::string>> files = {
      {"/etc/ld.so.conf.d/*.conf",
       {"# ROCm\n/opt/rocm/lib\n/opt/rocm/lib64/\n", "/opt/vendor/lib:/opt/other/lib, /opt/third\tinclude nothing\n",
        "include /etc/nested/*.conf\n"}},
      {"/etc/nested/*.conf", {"/opt/nested\n/opt/rocm/lib\n"}},
  };
  auto included = [&](const std::string& pattern) {
    auto it = files.find(pattern);
    return it == files.end() ? std::vector<std::string>{} : it->second;
  };
  EXPECT_EQ(ParseLoaderConfig("include /etc/ld.so.conf.d/*.conf\n\n/usr/local/lib # the default\nhwcap 0 nosegneg\n"
                              "relative/lib\n",
                              included),
            (std::vector<std::string>{"/opt/rocm/lib", "/opt/rocm/lib64", "/opt/vendor/lib", "/opt/other/lib",
                                      "/opt/third", "/opt/nested", "/usr/local/lib"}));
}

TEST(LoaderFoldersTest, IncludesThatLoopStop) {
  int calls = 0;
  auto included = [&](const std::string&) {
    ++calls;
    return std::vector<std::string>{"/opt/loop\ninclude /etc/self.conf\n"};
  };
  EXPECT_EQ(ParseLoaderConfig("include /etc/self.conf\n", included), std::vector<std::string>{"/opt/loop"});
  EXPECT_EQ(calls, 4);
}

TEST(LoaderFoldersTest, ThisMachinesFoldersExistAndAreNotTheSystems) {
  for (const std::string& f : LoaderFolders()) {
    EXPECT_FALSE(f.rfind("/usr/", 0) == 0 || f == "/usr" || f.rfind("/lib", 0) == 0) << f;
    EXPECT_NE(f, "/");
  }
  EXPECT_LE(LoaderFolders().size(), kMaxLoaderFolders);
}

}  // namespace
}  // namespace codecvisor
