#include "tools/bench/scratch_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

namespace codecvisor::bench {
namespace {

TEST(ScratchDirTest, HoldsFilesAndIsRemovedWithThem) {
  std::string path;
  {
    auto dir = ScratchDir::Create("test");
    ASSERT_TRUE(dir.ok()) << dir.status();
    path = (*dir)->path();
    auto file = (*dir)->WriteFile("a.txt", "hello");
    ASSERT_TRUE(file.ok()) << file.status();
    std::ifstream in(*file);
    std::string text;
    in >> text;
    EXPECT_EQ(text, "hello");
  }
  struct stat st;
  EXPECT_NE(stat(path.c_str(), &st), 0) << path << " outlived its ScratchDir";
}

}  // namespace
}  // namespace codecvisor::bench
