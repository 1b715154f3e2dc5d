// ThreadSanitizer settings for the runner, used only in --config=tsan
// builds (the functions are weak hooks the TSan runtime calls; other builds
// never call them).
//
// - Vendor libraries (FFmpeg's, libdav1d) are not instrumented: TSan sees
//   their worker threads' memory accesses only partly and reports races
//   that their own locking orders. Frames in those libraries are
//   suppressed; races in our code are still reported.
// - symbolize=0: to symbolize a report TSan forks llvm-symbolizer, and the
//   sandbox denies fork, which killed the backend (a "sandbox violation:
//   syscall fork"). Reports come out with module+offset frames, which
//   suppressions by module name still match.

extern "C" const char* __tsan_default_options() { return "symbolize=0"; }

extern "C" const char* __tsan_default_suppressions() {
  return "race:libavcodec.so\n"
         "race:libavutil.so\n"
         "race:libavformat.so\n"
         "race:libswscale.so\n"
         "race:libdav1d.so\n";
}
