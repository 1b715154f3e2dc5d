#include "core/process_clone.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <sanitizer/asan_interface.h>  // a no-op unless built with ASan
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <system_error>
#include <thread>

#include "absl/strings/str_cat.h"
#include "base/small_file.h"
#include "ipc/unique_fd.h"

#if defined(__SANITIZE_THREAD__)
#define CODECVISOR_PROCESS_CLONE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CODECVISOR_PROCESS_CLONE_TSAN 1
#endif
#endif

namespace codecvisor::process_internal {
namespace {

#ifdef CODECVISOR_PROCESS_CLONE_TSAN
constexpr bool kShareMemory = false;  // see the header
#else
constexpr bool kShareMemory = true;
#endif

std::atomic<bool> force_legacy_clone{false};

// The child's stack: its own mapping, with a guard page below it. Generous
// for a sanitizer build's frames; untouched pages cost nothing.
constexpr size_t kStackBytes = size_t{1} << 20;

class ChildStack {
 public:
  explicit ChildStack(bool wanted) {
    if (!wanted) return;
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    size_ = kStackBytes + page;
    void* base =
        mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (base == MAP_FAILED) return;
    base_ = static_cast<char*>(base);
    if (mprotect(base_, page, PROT_NONE) != 0) {
      munmap(base_, size_);
      base_ = nullptr;
    }
  }
  ~ChildStack() {
    if (base_ == nullptr) return;
    // An ASan build's child leaves its frames' redzones poisoned in the
    // shadow memory it shares with the host; the next mapping here must
    // not inherit them.
    ASAN_UNPOISON_MEMORY_REGION(base_, size_);
    munmap(base_, size_);
  }
  ChildStack(const ChildStack&) = delete;
  ChildStack& operator=(const ChildStack&) = delete;

  bool valid() const { return base_ != nullptr; }
  char* base() const { return base_; }
  size_t size() const { return size_; }
  char* top() const { return base_ + size_; }  // page-aligned, so 16-byte aligned as every ABI wants

 private:
  char* base_ = nullptr;
  size_t size_ = 0;
};

// What the child's first code needs, on the cloning thread's stack.
struct Trampoline {
  int (*child)(void*, const sigset_t*);
  void* arg;
  int started_fd;
  sigset_t mask;  // the cloning thread's, before everything was blocked
};

// Each handler the host installed goes back to the default (an ignored
// signal stays ignored, as across execve). Raw calls: glibc's sigaction
// refuses its own two signals, whose handlers it installs too. A zeroed
// kernel sigaction is SIG_DFL with no flags on every layout, and the
// handler is its first word on every architecture this builds for.
CODECVISOR_CHILD_CODE void ResetSignalHandlers() {
  for (int sig = 1; sig <= 64; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    unsigned long old[4] = {};
    if (syscall(SYS_rt_sigaction, sig, nullptr, old, 8) != 0) continue;
    if (old[0] == reinterpret_cast<unsigned long>(SIG_DFL) || old[0] == reinterpret_cast<unsigned long>(SIG_IGN)) {
      continue;
    }
    const unsigned long default_action[4] = {};
    syscall(SYS_rt_sigaction, sig, default_action, nullptr, 8);
  }
}

// Never returns: the child execs or exits, and its stack has no frame to
// return to.
CODECVISOR_CHILD_CODE int TrampolineEntry(void* arg) {
  const auto* t = static_cast<const Trampoline*>(arg);
  ResetSignalHandlers();
  const char started = 's';
  (void)!syscall(SYS_write, t->started_fd, &started, 1);
  t->child(t->arg, &t->mask);
  ExitChild(127);
}

#if defined(__x86_64__)
// clone3 with the child on `args->stack`: no libc wrapper for it exists,
// and a plain syscall() would return into its caller on the new stack,
// where no frame is. The child sets its stack pointer itself (Linux before
// 5.3.11 took `stack` for the pointer, not the mapping's base), calls
// `fn(arg)` and exits. The parent gets the kernel's answer (a pid, or
// -errno).
long Clone3OnStack(clone_args* args, char* top, int (*fn)(void*), void* arg) {
  long ret;
  register int (*fn_reg)(void*) __asm__("r12") = fn;
  register void* arg_reg __asm__("r13") = arg;
  register char* top_reg __asm__("r14") = top;
  __asm__ volatile(
      "syscall\n\t"
      "test %%rax, %%rax\n\t"
      "jnz 1f\n\t"
      "mov %%r14, %%rsp\n\t"
      "xor %%ebp, %%ebp\n\t"  // the child's outermost frame
      "mov %%r13, %%rdi\n\t"
      "call *%%r12\n\t"
      "mov %%eax, %%edi\n\t"
      "mov %[exit_nr], %%eax\n\t"
      "syscall\n\t"
      "hlt\n\t"
      "1:\n\t"
      : "=a"(ret)
      : "0"(static_cast<long>(SYS_clone3)), "D"(args), "S"(sizeof(*args)), "r"(fn_reg), "r"(arg_reg),
        "r"(top_reg), [exit_nr] "i"(SYS_exit_group)
      : "rcx", "r11", "memory");
  return ret;
}
constexpr bool kHaveClone3OnStack = true;
#else
long Clone3OnStack(clone_args*, char*, int (*)(void*), void*) { return -ENOSYS; }
constexpr bool kHaveClone3OnStack = false;
#endif

}  // namespace

// gdb stops every other thread of a process while one of its threads is in
// a vfork, until the child execs: the helper, which lets the child go on,
// would never run.
bool HostIsTraced() {
  const std::optional<std::string> text = ReadSmallFile("/proc/thread-self/status");
  if (!text.has_value()) return false;
  const size_t field = text->find("\nTracerPid:");
  return field != std::string::npos && strtol(text->c_str() + field + strlen("\nTracerPid:"), nullptr, 10) != 0;
}

bool ChildExeced(pid_t pid) {
  struct stat child {
  }, self{};
  return stat(absl::StrCat("/proc/", pid, "/exe").c_str(), &child) == 0 && stat("/proc/self/exe", &self) == 0 &&
         (child.st_dev != self.st_dev || child.st_ino != self.st_ino);
}

namespace {

// Without CLONE_VM (a ThreadSanitizer build, or a traced host) the child
// runs on a copy of this thread's stack, as after fork, and plain system
// calls do.
long CloneCopying(uint64_t flags, uint64_t into_cgroup, bool clone3, clone_args* args, pid_t* child_pid,
                  std::atomic<bool>* born_in_cgroup, const char** call, Trampoline* trampoline) {
  long pid = -1;
  errno = ENOSYS;
  if (clone3) {
    args->flags = flags | CLONE_PIDFD | into_cgroup;
    pid = syscall(SYS_clone3, args, sizeof(*args));
  }
  if (pid < 0 && errno == ENOSYS) {
    *call = "clone";
    born_in_cgroup->store(false);
    // The parent's tid pointer is the third argument on x86_64 and aarch64.
    pid = syscall(SYS_clone, static_cast<unsigned long>(flags) | SIGCHLD, nullptr, child_pid, nullptr, nullptr);
  }
  if (pid == 0) TrampolineEntry(trampoline);
  return pid < 0 ? -errno : pid;
}

}  // namespace

void DiscardPendingSignals() {
  const uint64_t all = ~uint64_t{0};
  const timespec now{0, 0};
  while (syscall(SYS_rt_sigtimedwait, &all, nullptr, &now, sizeof(all)) > 0) {
  }
}

void ForceLegacyCloneForTesting(bool legacy) { force_legacy_clone.store(legacy); }

bool StartsShareHostMemory() { return kShareMemory; }

CloneResult CloneUntilExec(const CloneRequest& request) {
  CloneResult result;
  // A traced host's child is a copy that runs beside this thread, as after
  // fork: this thread waits for its exec on a pipe instead of in a vfork.
  const bool traced = HostIsTraced();
  const bool share = kShareMemory && !traced;
  result.copied = traced;
  ChildStack stack(share);
  if (share && !stack.valid()) {
    result.err = errno;
    result.call = "mmap (the child's stack)";
    return result;
  }
  int started_pipe[2];
  if (pipe2(started_pipe, O_CLOEXEC) != 0) {
    result.err = errno;
    result.call = "pipe2";
    return result;
  }
  ipc::UniqueFd started_read(started_pipe[0]), started_write(started_pipe[1]);
  // Traced: the child's copy of the write end closes at its exec (or
  // exit), which ends this thread's read.
  ipc::UniqueFd exec_read, exec_write;
  if (traced) {
    int exec_pipe[2];
    if (pipe2(exec_pipe, O_CLOEXEC) != 0) {
      result.err = errno;
      result.call = "pipe2";
      return result;
    }
    exec_read = ipc::UniqueFd(exec_pipe[0]);
    exec_write = ipc::UniqueFd(exec_pipe[1]);
  }

  Trampoline trampoline{request.child, request.child_arg, started_write.get(), {}};
  const bool clone3 = kHaveClone3OnStack && !force_legacy_clone.load();
  // Whether the clone that made the child asked for CLONE_INTO_CGROUP: set
  // before each call, read by the helper once the child has run.
  std::atomic<bool> born_in_cgroup{false};
  pid_t child_pid = 0;  // written by the kernel before the child runs (CLONE_PARENT_SETTID)
  int pidfd = -1;       // clone3 only: likewise
  bool deadline_passed = false;
  // The helper: the child's first byte ('s') or this thread's after the
  // clone returns ('r'), whichever comes first.
  auto help = [&] {
    char first = 0;
    const int ms = static_cast<int>(request.exec_deadline.count());
    if (traced) {
      // The cloning thread does not wait for the child here: the child's
      // 's', or its 'r' where no child was made, within the deadline.
      pollfd ready{started_read.get(), POLLIN, 0};
      if (ipc::RetryEintr([&] { return poll(&ready, 1, ms); }) == 0) {
        deadline_passed = true;
        if (child_pid > 0) kill(child_pid, SIGKILL);
        return;
      }
    }
    if (ipc::RetryEintr([&] { return read(started_read.get(), &first, 1); }) != 1 || first != 's') return;
    const pid_t pid = child_pid;
    // The clone fallback gives no pidfd: one is opened now, while the child
    // cannot have been reaped by this thread's caller (it waits for it to
    // exec), and handed back with the result.
    if (pidfd < 0) pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    // By the pid only where no pidfd could be had: a host that ignores
    // SIGCHLD (or reaps every child) may have let it go, and the pid with it.
    auto kill_child = [&] {
      if (pidfd >= 0) {
        syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0);
      } else {
        kill(pid, SIGKILL);
      }
    };
    if (request.started && !request.started(pid, born_in_cgroup.load())) {
      kill_child();
      return;
    }
    if (traced) {
      // The exec (or the child's end) closes its copy of the exec pipe; a
      // process another thread forked meanwhile may hold one too, so past
      // the deadline a child that has exec'd is started all the same.
      pollfd closed{exec_read.get(), POLLIN, 0};
      if (ipc::RetryEintr([&] { return poll(&closed, 1, ms); }) == 0 && !ChildExeced(pid)) {
        deadline_passed = true;
        kill_child();
      }
      return;
    }
    pollfd resumed{started_read.get(), POLLIN, 0};
    if (ipc::RetryEintr([&] { return poll(&resumed, 1, ms); }) == 0) {
      deadline_passed = true;
      kill_child();
    }
  };
  std::thread helper;
  try {
    helper = std::thread(help);
  } catch (const std::system_error& e) {
    result.err = e.code().value() != 0 ? e.code().value() : EAGAIN;
    result.call = "pthread_create";
    return result;
  } catch (const std::bad_alloc&) {
    result.err = ENOMEM;
    result.call = "pthread_create";
    return result;
  }

  // Every signal, glibc's own two included (its pthread_sigmask leaves
  // them out), as glibc's posix_spawn blocks them.
  const uint64_t all = ~uint64_t{0};
  sigemptyset(&trampoline.mask);
  syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &trampoline.mask, sizeof(all));
  const uint64_t flags = request.flags | CLONE_PARENT_SETTID | (traced ? 0 : static_cast<uint64_t>(CLONE_VFORK)) |
                         (share ? static_cast<uint64_t>(CLONE_VM) : 0);
  clone_args args{};
  args.pidfd = reinterpret_cast<uint64_t>(&pidfd);
  args.parent_tid = reinterpret_cast<uint64_t>(&child_pid);
  args.exit_signal = SIGCHLD;
  if (request.cgroup_dir >= 0) args.cgroup = static_cast<uint64_t>(request.cgroup_dir);
  const uint64_t into_cgroup = request.cgroup_dir >= 0 ? static_cast<uint64_t>(CLONE_INTO_CGROUP) : 0;
  born_in_cgroup = clone3 && into_cgroup != 0;
  long pid = -ENOSYS;
  if (!share) {
    pid = CloneCopying(flags, into_cgroup, clone3, &args, &child_pid, &born_in_cgroup, &result.call, &trampoline);
  } else {
    if (clone3) {
      args.flags = flags | CLONE_PIDFD | into_cgroup;
      args.stack = reinterpret_cast<uint64_t>(stack.base());
      args.stack_size = stack.size();
      pid = Clone3OnStack(&args, stack.top(), TrampolineEntry, &trampoline);
    }
    if (pid == -ENOSYS) {
      result.call = "clone";
      born_in_cgroup = false;  // before the child can run: the helper reads it after the child's byte
      pid = clone(TrampolineEntry, stack.top(), static_cast<int>(flags) | SIGCHLD, &trampoline, &child_pid);
      if (pid < 0) pid = -errno;
    }
  }
  syscall(SYS_rt_sigprocmask, SIG_SETMASK, &trampoline.mask, nullptr, sizeof(all));
  // Traced, the helper waits for the exec, and hears from this thread only
  // where no child was made.
  exec_write.reset();
  if (!traced || pid < 0) {
    const char resumed = 'r';
    (void)!write(started_write.get(), &resumed, 1);
  }
  helper.join();

  if (pid < 0) {
    // No pidfd either: a clone that fails after the kernel wrote its
    // number leaves the number there but frees it, for any thread to take.
    result.err = static_cast<int>(-pid);
    return result;
  }
  result.pid = static_cast<pid_t>(pid);
  result.born_in_cgroup = born_in_cgroup.load();
  result.deadline_passed = deadline_passed;
  if (pidfd < 0) {
    pidfd = static_cast<int>(syscall(SYS_pidfd_open, result.pid, 0));
    if (pidfd < 0) {
      result.err = errno;
      result.call = "pidfd_open";
      kill(result.pid, SIGKILL);
      waitpid(result.pid, nullptr, 0);
      result.pid = -1;
      return result;
    }
  }
  result.pidfd = ipc::UniqueFd(pidfd);
  return result;
}

}  // namespace codecvisor::process_internal
