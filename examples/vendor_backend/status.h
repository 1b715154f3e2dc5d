// File: examples/vendor_backend/status.h
//
// The dav1d plugin's error value: a cv_status code plus a message, so that
// every layer can say what went wrong without exceptions crossing the C ABI.
// Header-only; no state. The plugin depends on nothing of codecvisor's but
// codecvisor_backend.h, so it carries this small type of its own.

#ifndef CODECVISOR_EXAMPLES_VENDOR_BACKEND_STATUS_H_
#define CODECVISOR_EXAMPLES_VENDOR_BACKEND_STATUS_H_

#include <cstdarg>
#include <cstdio>
#include <string>
#include <utility>

#include "sdk.h"

namespace dav1d_plugin {

// CV_OK with an empty message, or a failure code with the cause.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(cv_status code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == CV_OK; }
  cv_status code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  cv_status code_ = CV_OK;
  std::string message_;
};

// printf into a std::string; messages are short, so one retry at most.
[[gnu::format(printf, 1, 2)]] inline std::string Sprintf(const char* format, ...) {
  char small[256];
  va_list args;
  va_start(args, format);
  int n = std::vsnprintf(small, sizeof(small), format, args);
  va_end(args);
  if (n < 0) return "(unprintable message)";
  if (static_cast<size_t>(n) < sizeof(small)) return std::string(small, static_cast<size_t>(n));
  std::string out(static_cast<size_t>(n) + 1, '\0');
  va_start(args, format);
  std::vsnprintf(out.data(), out.size(), format, args);
  va_end(args);
  out.resize(static_cast<size_t>(n));
  return out;
}

}  // namespace dav1d_plugin

#endif  // CODECVISOR_EXAMPLES_VENDOR_BACKEND_STATUS_H_
