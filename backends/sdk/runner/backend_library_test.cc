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

cv_status CreateForTest(const char*, cv_backend**, cv_error*) { return CV_OK; }
void DestroyForTest(cv_backend*) {}
cv_status OpenForTest(cv_backend*, int, const cv_open_options*, cv_session**, cv_error*) { return CV_OK; }
void CloseForTest(cv_session*) {}
cv_status MetadataForTest(cv_session*, cv_stream_metadata*, cv_error*) { return CV_OK; }
cv_status LayoutForTest(cv_session*, cv_frame_layout*, cv_error*) { return CV_OK; }
cv_status InfoForTest(cv_session*, int64_t, cv_frame_info*, cv_error*) { return CV_OK; }
cv_status IndexForTest(cv_session*, double, int64_t*, cv_error*) { return CV_OK; }
cv_status DecodeForTest(cv_session*, int64_t, cv_frame_buffer*, cv_frame_info*, cv_error*) { return CV_OK; }

// A vendor who left a required function out learns which one.
TEST(CheckFunctionTableTest, AMissingFunctionIsNamed) {
  cv_backend_v1 table{};
  table.struct_size = sizeof(table);
  table.abi_version = CODECVISOR_BACKEND_ABI_VERSION;
  table.name = "acme";
  table.create = &CreateForTest;
  table.destroy = &DestroyForTest;
  table.open_session = &OpenForTest;
  table.close_session = &CloseForTest;
  table.get_metadata = &MetadataForTest;
  table.get_frame_layout = &LayoutForTest;
  table.get_frame_info = &InfoForTest;
  table.index_at_seconds = &IndexForTest;
  table.decode_frame = &DecodeForTest;
  EXPECT_TRUE(CheckFunctionTable(table, "/p/libacme.so", "acme").ok());
  cv_backend_v1 missing = table;
  missing.get_frame_info = nullptr;
  const absl::Status s = CheckFunctionTable(missing, "/p/libacme.so", "acme");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "library /p/libacme.so: the function table's get_frame_info is NULL, and every backend must have it");
  missing = table;
  missing.create = nullptr;
  EXPECT_NE(CheckFunctionTable(missing, "/p/libacme.so", "acme").message().find("'s create is NULL"), std::string::npos);
  EXPECT_NE(CheckFunctionTable(table, "/p/libacme.so", "other").message().find("its manifest says 'other'"),
            std::string::npos);
  missing = table;
  missing.name = nullptr;
  EXPECT_EQ(CheckFunctionTable(missing, "/p/libacme.so", "acme").message(),
            "library /p/libacme.so: the function table's name is NULL; it must be the backend's name, 'acme' as its "
            "manifest says");
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
