#include "backends/sdk/runner/abi_convert.h"

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

namespace codecvisor::runner {
namespace {

cv_error Message(const char* text) {
  cv_error e{};
  std::snprintf(e.message, sizeof(e.message), "%s", text);
  return e;
}

TEST(VendorErrorTest, ADefinedStatusKeepsItsCodeAndMessage) {
  const absl::Status s = VendorError(CV_ERROR_CORRUPT_DATA, Message("bad slice"));
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_EQ(s.message(), "bad slice");
  EXPECT_EQ(VendorError(CV_ERROR_INTERNAL, Message("")).message(), ipc::kVendorErrorWithoutMessage);
}

// A vendor's own number (an uninitialised status, a code of its own) was
// reported as an error "without a message", hiding what went wrong.
TEST(VendorErrorTest, AStatusNoCvStatusHasIsNamed) {
  const absl::Status s = VendorError(42, Message(""));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnknown);
  EXPECT_NE(s.message().find("backend returned 42, which is no cv_status of codecvisor_backend.h"),
            std::string::npos)
      << s;
  EXPECT_NE(VendorError(-3, Message("oops")).message().find("returned -3, which is no cv_status"), std::string::npos);
  EXPECT_NE(VendorError(CV_OK, Message("oops")).message().find("returned 0"), std::string::npos);
}

}  // namespace
}  // namespace codecvisor::runner
