// ThreadSanitizer suppressions, used only in --config=tsan builds of the
// programs that run FFmpeg or libdav1d: the runner, and the codecvisor
// binary (bench decode runs the cpu backend's code in process). The
// function is a weak hook the TSan runtime calls; other builds never do.
//
// Those libraries are not instrumented: TSan sees their worker threads'
// memory accesses only partly and reports races that their own locking
// orders. Reports with a frame in those libraries are suppressed; races in
// our code are still reported.

extern "C" const char* __tsan_default_suppressions() {
  return "race:libavcodec.so\n"
         "race:libavutil.so\n"
         "race:libavformat.so\n"
         "race:libswscale.so\n"
         "race:libdav1d.so\n";
}
