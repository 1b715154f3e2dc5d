// ThreadSanitizer suppressions for the uninstrumented Debian libraries that
// run threads of their own inside our processes: FFmpeg (the cpu backend's
// frame threads) and libdav1d. Linked into every program and test that
// runs their code (the runner, the cpu backend's tests, codecvisor-bench's
// in-process decode, the CLI's PNG encoding); used only in --config=tsan
// builds: the function is a weak hook the TSan runtime calls, and other
// builds never do.
//
// Those libraries are not instrumented, so TSan sees their worker threads'
// reads and writes only partly, and reports races between them and frees
// made through av_buffer_unref on our thread that the libraries' own
// locking orders. Only reports with a frame in these libraries are
// suppressed; races in our code are still reported.

extern "C" const char* __tsan_default_suppressions() {
  return "race:libavcodec.so\n"
         "race:libavutil.so\n"
         "race:libavformat.so\n"
         "race:libswscale.so\n"
         "race:libdav1d.so\n";
}
