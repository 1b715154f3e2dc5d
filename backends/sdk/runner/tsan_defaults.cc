// ThreadSanitizer settings for the runner, used only in --config=tsan
// builds (the function is a weak hook the TSan runtime calls; other builds
// never call it).
//
// - Vendor libraries' races are suppressed by
//   third_party/tsan_suppressions.cc.
// - symbolize=0: to symbolize a report TSan forks llvm-symbolizer, and the
//   sandbox denies fork, which killed the backend (a "sandbox violation:
//   syscall fork"). Reports come out with module+offset frames, which
//   suppressions by module name still match.

extern "C" const char* __tsan_default_options() { return "symbolize=0"; }
