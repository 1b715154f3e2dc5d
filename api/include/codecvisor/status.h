// File: codecvisor/status.h
//
// Status and Result<T>: how every fallible call of codecvisor's C++ API
// reports failure. Errors are values, never exceptions: a corrupt file, an
// index out of range or a backend that crashed twice on one request is a
// Status whose message names the file, the request and the cause.
//
// The codes and their numbers are those of absl::StatusCode (and gRPC), so
// callers can map them one to one.
//
// Thread-safety: value types; distinct objects may be used from any thread.

#ifndef CODECVISOR_STATUS_H_
#define CODECVISOR_STATUS_H_

#if __cplusplus <= 201703L  // GCC 10 says 201709 for -std=c++20
#error "codecvisor's headers need C++20 or later: compile with -std=c++20 (or a later standard)"
#endif

#include <optional>
#include <string>
#include <utility>

namespace codecvisor {

enum class StatusCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,    // a malformed argument or manifest
  kDeadlineExceeded = 4,   // a backend did not start in time (a request it hangs is replayed, then kAborted)
  kNotFound = 5,           // no such file, device, backend or (video) stream
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,  // e.g. a quarantined backend
  kAborted = 10,            // a poison request: it crashed its backend twice
  kOutOfRange = 11,         // an index or time outside the stream
  kUnimplemented = 12,      // e.g. a seek mode the backend does not offer
  kInternal = 13,
  kUnavailable = 14,        // the backend is gone (e.g. its Host was destroyed)
  kDataLoss = 15,           // a corrupt video
  kUnauthenticated = 16,
};

// "OK", "INVALID_ARGUMENT", ...
const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message);

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "OK", or "NOT_FOUND: <message>".
  std::string ToString() const;

  bool operator==(const Status&) const = default;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// A value or the Status that says why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  // NOLINTNEXTLINE(google-explicit-constructor): returned as `return value;`
  Result(T value) : value_(std::move(value)) {}
  // NOLINTNEXTLINE(google-explicit-constructor): returned as `return status;`
  Result(Status status) : status_(std::move(status)) {
    if (status_.ok()) status_ = Status(StatusCode::kInternal, "a Result was made from an OK status without a value");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  // The value; calling these on an error is a bug and terminates the process
  // with the status' message.
  T& value() & { Check(); return *value_; }
  const T& value() const& { Check(); return *value_; }
  T&& value() && { Check(); return std::move(*value_); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  void Check() const {
    if (!value_) FailOnMissingValue(status_);
  }
  [[noreturn]] static void FailOnMissingValue(const Status& status);

  Status status_;
  std::optional<T> value_;
};

namespace status_internal {
[[noreturn]] void DieOfMissingValue(const Status& status);
}  // namespace status_internal

template <typename T>
void Result<T>::FailOnMissingValue(const Status& status) {
  status_internal::DieOfMissingValue(status);
}

}  // namespace codecvisor

#endif  // CODECVISOR_STATUS_H_
