#!/usr/bin/env bash
# Prints the `bazel test` flags that keep the cgroup hierarchies writable in
# Bazel's test sandbox (which mounts /sys read-only): the host makes a
# cgroup per backend process (core/cgroup.h). The v1 memory and pids
# hierarchies where they are mounted (hybrid hosts), else the v2 one.
for dir in /sys/fs/cgroup/memory /sys/fs/cgroup/pids; do
  mountpoint -q "$dir" 2>/dev/null && printf -- '--sandbox_writable_path=%s\n' "$dir"
done | grep . || {
  [ "$(stat -f -c %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ] && printf -- '--sandbox_writable_path=/sys/fs/cgroup\n'
}
exit 0
