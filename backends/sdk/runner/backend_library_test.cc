#include "backends/sdk/runner/backend_library.h"

#include <gtest/gtest.h>

#include <cstddef>

namespace codecvisor::runner {
namespace {

cv_status DecodeAtForTest(cv_session*, double, cv_frame_buffer*, cv_frame_info*, cv_error*) { return CV_OK; }

// Fields added after the first version 1 table are read only where the
// vendor's struct_size covers them: an older table's memory ends before.
TEST(OptionalEntriesTest, DecodingByTimeNeedsTheFieldInsideStructSizeAndSet) {
  cv_backend_v1 table{};
  table.struct_size = sizeof(table);
  table.decode_frame_at_seconds = &DecodeAtForTest;
  EXPECT_TRUE(DecodesAtSeconds(table));
  table.struct_size = offsetof(cv_backend_v1, decode_frame_at_seconds);
  EXPECT_FALSE(DecodesAtSeconds(table)) << "read a field past the table's struct_size";
  table.struct_size = CV_BACKEND_V1_MIN_SIZE;
  EXPECT_FALSE(DecodesAtSeconds(table));
  table.struct_size = sizeof(table);
  table.decode_frame_at_seconds = nullptr;
  EXPECT_FALSE(DecodesAtSeconds(table));
}

TEST(LoadFailureAdviceTest, AMissingPluginIsReinstalled) {
  EXPECT_EQ(LoadFailureAdvice("/p/libx.so: cannot open shared object file: No such file or directory", "/p/libx.so"),
            "; reinstall the plugin");
  EXPECT_EQ(LoadFailureAdvice("/p/libx.so: invalid ELF header", "/p/libx.so"), "; reinstall the plugin");
}

TEST(LoadFailureAdviceTest, AMissingDependencyIsNamed) {
  const std::string advice =
      LoadFailureAdvice("libdep.so.3: cannot open shared object file: No such file or directory", "/p/libx.so");
  EXPECT_EQ(advice.rfind("; the plugin is linked against libdep.so.3, which the loader cannot find", 0), 0u)
      << advice;
}

TEST(LibraryOpenPathTest, ThePathOnlyWhereTheSandboxMayReadTheFolder) {
  EXPECT_EQ(LibraryOpenPath("/site/acme/libacme.so", 5, {}), "/proc/self/fd/5");
  EXPECT_EQ(LibraryOpenPath("/site/acme/libacme.so", 5, {"/site/acme"}), "/site/acme/libacme.so");
  EXPECT_EQ(LibraryOpenPath("/site/acme/libacme.so", 5, {"/opt/m", "/site"}), "/site/acme/libacme.so");
  EXPECT_EQ(LibraryOpenPath("/site/acme/libacme.so", 5, {"/"}), "/site/acme/libacme.so");
  EXPECT_EQ(LibraryOpenPath("/site/acme/libacme.so", 5, {"/site/ac"}), "/proc/self/fd/5");
  EXPECT_EQ(LibraryOpenPath("/site/acme/libacme.so", 5, {"/site/acme/lib"}), "/proc/self/fd/5");
  EXPECT_EQ(LibraryOpenPath("/site/acme/libacme.so", -1, {}), "/site/acme/libacme.so");
}

TEST(LoadFailureAdviceTest, AnUndefinedSymbolSaysWhoNeedsItAndHowToLink) {
  const std::string own = LoadFailureAdvice("/p/libx.so: undefined symbol: vendor_dep_init", "/p/libx.so");
  EXPECT_EQ(own.rfind("; the plugin uses vendor_dep_init, which no library it is linked against defines: link the "
                      "plugin against the library that defines it",
                      0),
            0u)
      << own;
  EXPECT_EQ(own.find("reinstall"), std::string::npos) << own;
  const std::string dep = LoadFailureAdvice("/usr/lib/libdep.so.3: undefined symbol: helper", "/p/libx.so");
  EXPECT_EQ(dep.rfind("; /usr/lib/libdep.so.3 uses helper", 0), 0u) << dep;
}

}  // namespace
}  // namespace codecvisor::runner
