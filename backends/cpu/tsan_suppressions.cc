// ThreadSanitizer suppressions for the cpu backend's tests. FFmpeg's
// libraries are not instrumented, so TSan sees their worker threads' reads
// and writes only partly and reports races between them and frees made
// through av_buffer_unref on our thread, where FFmpeg's own locking orders
// them. Our code's races are still reported: only frames in these
// libraries are matched. Linked into every test; unused without TSan.

extern "C" const char* __tsan_default_suppressions() {
  return "race:libavcodec.so\n"
         "race:libavutil.so\n"
         "race:libavformat.so\n"
         "race:libswscale.so\n";
}
