// File: examples/vendor_backend/log_level.h
//
// How much FFmpeg (the demuxer) and libdav1d may write to stderr: quiet
// unless the host's CODECVISOR_BACKEND_LOG_LEVEL_ENV names a level
// (ffmpeg's -loglevel names). Errors reach the user through cv_error.

#ifndef CODECVISOR_EXAMPLES_VENDOR_BACKEND_LOG_LEVEL_H_
#define CODECVISOR_EXAMPLES_VENDOR_BACKEND_LOG_LEVEL_H_

#include <cstdarg>

namespace dav1d_plugin {

// The AV_LOG_* level the environment asks for; AV_LOG_QUIET when unset or
// not a level name.
int RequestedLogLevel();

// Sets libavformat's level from RequestedLogLevel(), once per process
// (av_log_set_level is process-wide; the runner process is the plugin's).
void ApplyLogLevel();

// libdav1d's logger for Dav1dSettings::logger: its messages are errors, so
// they reach stderr when the requested level shows errors, never otherwise.
void Dav1dLog(void* cookie, const char* format, va_list ap);

}  // namespace dav1d_plugin

#endif  // CODECVISOR_EXAMPLES_VENDOR_BACKEND_LOG_LEVEL_H_
