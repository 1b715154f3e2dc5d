// The library the `bundled` test plugin links against and ships beside
// itself (BUILD).

extern "C" __attribute__((visibility("default"))) int codecvisor_bundled_helper(void) { return 42; }
