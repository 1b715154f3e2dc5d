// File: base/kernel_file_system.cc

#include "base/kernel_file_system.h"

#include <linux/magic.h>
#include <sys/vfs.h>

#include <cstdint>

namespace codecvisor {

bool OnAKernelFileSystem(int fd) {
  struct statfs fs {};
  if (fstatfs(fd, &fs) != 0) return false;
  constexpr uint64_t kKernels[] = {PROC_SUPER_MAGIC, SYSFS_MAGIC,   DEBUGFS_MAGIC,      SECURITYFS_MAGIC,
                                   TRACEFS_MAGIC,    BPF_FS_MAGIC,  CGROUP_SUPER_MAGIC, CGROUP2_SUPER_MAGIC,
                                   EFIVARFS_MAGIC,   PSTOREFS_MAGIC};
  for (const uint64_t magic : kKernels) {
    if (static_cast<uint64_t>(fs.f_type) == magic) return true;
  }
  return false;
}

}  // namespace codecvisor
