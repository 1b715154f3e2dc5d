// File: ipc/idle_cores.h
//
// How many cores have nothing to run, for WaitPolicy: from the kernel's
// count of runnable threads (/proc/loadavg) and the cores this process may
// use. Thread-safe.

#ifndef CODECVISOR_IPC_IDLE_CORES_H_
#define CODECVISOR_IPC_IDLE_CORES_H_

#include <optional>

#include "absl/strings/string_view.h"

namespace codecvisor::ipc {

// The runnable count in /proc/loadavg's text ("0.50 0.40 0.30 2/191 4242"
// gives 2); nullopt when the text is not in that form.
std::optional<int> RunnableFromLoadavg(absl::string_view text);

// Cores minus runnable threads, the caller not counted as runnable (it is
// about to wait), at least 0.
int IdleCoresFrom(int cores, int runnable);

// IdleCoresFrom this moment's figures, read at most once per 10 ms by the
// whole process (the value is that old at worst; a read costs ~10 us). -1 when /proc
// cannot be read (a sandboxed runner), without trying again.
int IdleCores();

}  // namespace codecvisor::ipc

#endif  // CODECVISOR_IPC_IDLE_CORES_H_
