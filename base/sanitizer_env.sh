# Sourced by test scripts that load codecvisor's instrumented libraries into
# programs built without a sanitizer (Python, a C++ program compiled by the
# test): sanitizer_env NAME sets what that needs, for NAME in asan, ubsan,
# tsan or "" (none):
#   SANITIZER_PRELOAD  the sanitizer's runtime, for LD_PRELOAD
#   SANITIZER_CFLAGS   flags for a C++ program linked against libcodecvisor.so
sanitizer_env() {
  SANITIZER_PRELOAD=""
  SANITIZER_CFLAGS=()
  local runtime=""
  case ${1:-} in
    "") return 0 ;;
    asan) runtime=libclang_rt.asan-x86_64.so; SANITIZER_CFLAGS=(-fsanitize=address) ;;
    ubsan) runtime=libclang_rt.ubsan_standalone-x86_64.so; SANITIZER_CFLAGS=(-fsanitize=undefined) ;;
    tsan) runtime=libclang_rt.tsan-x86_64.so; SANITIZER_CFLAGS=(-fsanitize=thread) ;;
    *) echo "unknown sanitizer '$1'" >&2; return 1 ;;
  esac
  SANITIZER_PRELOAD=$(clang -print-file-name="$runtime")
  if [[ ! -f $SANITIZER_PRELOAD ]]; then
    echo "the $1 runtime $runtime is missing (clang -print-file-name)" >&2
    return 1
  fi
}

# The ASAN_OPTIONS for a Python process: Python and the tools it starts
# keep memory until exit by design, so LeakSanitizer is off there
# (codecvisor's own leaks are checked by its C++ tests and the Python leak
# test), and freed memory is quarantined up to 8 MiB rather than 256, so
# that the leak test's RSS figure measures codecvisor, not the quarantine.
python_asan_options() {
  echo "${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0:quarantine_size_mb=8"
}
