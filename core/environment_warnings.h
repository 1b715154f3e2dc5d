// File: core/environment_warnings.h
//
// The CODECVISOR_* variables a user sets, checked when a Host is made: a
// value codecvisor would not take as written (a typo such as
// CODECVISOR_BACKEND_LOG_LEVEL=warn, a folder on CODECVISOR_BACKEND_PATH
// that is not there) is otherwise silently read as the default. Each gives
// one warning among the host's (the CLI prints them, Python's
// codecvisor.backends.warnings() lists them) naming the variable, its
// value, what it takes and what happens instead. Pure logic: the variables
// and folders are read through the functions given.

#ifndef CODECVISOR_CORE_ENVIRONMENT_WARNINGS_H_
#define CODECVISOR_CORE_ENVIRONMENT_WARNINGS_H_

#include <string>
#include <vector>

#include "absl/functional/function_ref.h"

namespace codecvisor {

// `get(name)`: the variable's value, or null when unset (std::getenv).
// `is_folder(path)`: whether `path` is a folder this process can list.
std::vector<std::string> EnvironmentWarnings(absl::FunctionRef<const char*(const char*)> get,
                                             absl::FunctionRef<bool(const std::string&)> is_folder);

}  // namespace codecvisor

#endif  // CODECVISOR_CORE_ENVIRONMENT_WARNINGS_H_
