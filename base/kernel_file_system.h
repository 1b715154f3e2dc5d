// File: base/kernel_file_system.h
//
// Whether a descriptor is on one of the kernel's own file systems (procfs,
// sysfs, debugfs, cgroupfs, ...), whose "regular files" are views of
// kernel and process state: /proc/self/mem is the reading process's
// memory. A host hands a backend only files of ordinary file systems.

#ifndef CODECVISOR_BASE_KERNEL_FILE_SYSTEM_H_
#define CODECVISOR_BASE_KERNEL_FILE_SYSTEM_H_

namespace codecvisor {

// False where fstatfs fails (the open that follows says why).
bool OnAKernelFileSystem(int fd);

}  // namespace codecvisor

#endif  // CODECVISOR_BASE_KERNEL_FILE_SYSTEM_H_
