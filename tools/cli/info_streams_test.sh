#!/usr/bin/env bash
# `codecvisor info` lists every stream of the file with its index and type:
# on a Matroska file made here (video, audio, subtitles, an attachment)
# through the cpu backend; through a plugin built here that lies in its
# list as the file it opens says (each lie is refused with a clear error);
# and through the same plugin built as if against an older SDK header,
# without get_streams (the streams are unknown, and info still works).
set -euo pipefail

cv="$TEST_SRCDIR/codecvisor/tools/codecvisor"
sdk="$TEST_SRCDIR/codecvisor/backends/sdk"
tmp="$TEST_TMPDIR"
ffmpeg=(/usr/bin/ffmpeg -nostdin -v error)
source "$TEST_SRCDIR/codecvisor/tools/cli/cli_checks.sh"

# ---- a real file through the cpu backend
multi="$tmp/multi.mkv"
printf '1\n00:00:00,000 --> 00:00:00,500\nhello\n' >"$tmp/subs.srt"
printf 'not really a font' >"$tmp/font.ttf"
"${ffmpeg[@]}" -y -f lavfi -i testsrc=size=96x64:rate=25 -f lavfi -i sine=frequency=440:sample_rate=22050 \
  -i "$tmp/subs.srt" -map 0:v -map 1:a -map 2:s -t 1 -c:v libx264 -pix_fmt yuv420p -c:a aac -ac 2 -c:s srt \
  -attach "$tmp/font.ttf" -metadata:s:t mimetype=application/x-truetype-font "$multi"

check "info lists the streams" run_cv 0 "$tmp/out" "$tmp/err" info "$multi"
check "their number" grep -qE '^streams +4$' "$tmp/out"
check "stream 0 is the video" grep -qE '^stream 0 +video h264 96x64$' "$tmp/out"
check "stream 1 is the audio" grep -qE '^stream 1 +audio aac 22050 Hz 2 channels$' "$tmp/out"
check "stream 2 is the subtitles" grep -qE '^stream 2 +subtitle subrip$' "$tmp/out"
check "stream 3 is the attachment" grep -qE '^stream 3 +attachment ttf$' "$tmp/out"
check "info --json lists the streams" run_cv 0 "$tmp/out" "$tmp/err" info "$multi" --json
check "info json streams" contains "$(cat "$tmp/out")" \
  '"streams":[{"index":0,"type":"video","codec":"h264","width":96,"height":64},{"index":1,"type":"audio","codec":"aac","sample_rate":22050,"channels":2},{"index":2,"type":"subtitle","codec":"subrip"},{"index":3,"type":"attachment","codec":"ttf"}]}'
check "the schema version stays 1" contains "$(cat "$tmp/out")" '{"schema_version":1,'

# ---- a plugin whose list is what the opened file says: "honest" or a lie
plugins="$tmp/plugins"
mkdir -p "$plugins"
cat >"$tmp/liar.c" <<'C'
#define _POSIX_C_SOURCE 200809L /* pread */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codecvisor_backend.h"

struct cv_backend { int unused; };
struct cv_session { char says[16]; };

static cv_status create(const char* config, cv_backend** out, cv_error* error) {
  (void)config, (void)error;
  *out = calloc(1, sizeof(cv_backend));
  return CV_OK;
}
static void destroy(cv_backend* backend) { free(backend); }
static cv_status open_session(cv_backend* backend, int fd, const cv_open_options* options, cv_session** out,
                              cv_error* error) {
  (void)backend, (void)options, (void)error;
  *out = calloc(1, sizeof(cv_session));
  if (pread(fd, (*out)->says, sizeof((*out)->says) - 1, 0) < 0) return CV_ERROR_CORRUPT_DATA;
  return CV_OK;
}
static void close_session(cv_session* session) { free(session); }
static cv_status get_metadata(cv_session* session, cv_stream_metadata* m, cv_error* error) {
  (void)session, (void)error;
  memset(m, 0, sizeof(*m));
  m->num_video_streams = 1;
  strcpy(m->codec, "liar");
  strcpy(m->pixel_format, "rgb24");
  m->width = m->height = 16;
  m->num_frames_from_header = m->num_frames_from_scan = 1;
  m->average_fps = 25;
  m->duration_seconds = m->end_stream_seconds = 0.04;
  m->time_base_num = 1;
  m->time_base_den = 25;
  return CV_OK;
}
static cv_status get_frame_layout(cv_session* session, cv_frame_layout* l, cv_error* error) {
  (void)session, (void)error;
  memset(l, 0, sizeof(*l));
  l->width = l->height = 16;
  l->format = CV_OUTPUT_RGB24;
  strcpy(l->pixel_format, "rgb24");
  l->num_planes = 1;
  l->plane_stride[0] = 48;
  l->plane_rows[0] = 16;
  l->size = 768;
  return CV_OK;
}
static cv_status get_frame_info(cv_session* s, int64_t i, cv_frame_info* f, cv_error* e) {
  (void)s, (void)i, (void)f, (void)e;
  return CV_ERROR_UNSUPPORTED;
}
static cv_status index_at_seconds(cv_session* s, double t, int64_t* i, cv_error* e) {
  (void)s, (void)t, (void)i, (void)e;
  return CV_ERROR_UNSUPPORTED;
}
static cv_status decode_frame(cv_session* s, int64_t i, cv_frame_buffer* b, cv_frame_info* f, cv_error* e) {
  (void)s, (void)i, (void)b, (void)f, (void)e;
  return CV_ERROR_UNSUPPORTED;
}
/* Stream 0, the video it opens, and stream 1, audio; then the lie. */
static cv_status get_streams(cv_session* session, cv_stream_info* out, uint32_t capacity, uint32_t* count,
                             cv_error* error) {
  (void)error;
  memset(out, 0, 2 * sizeof(*out));
  out[0].type = CV_STREAM_VIDEO;
  strcpy(out[0].codec, "liar");
  out[0].width = out[0].height = 16;
  out[1].index = 1;
  out[1].type = CV_STREAM_AUDIO;
  *count = 2;
  const char* says = session->says;
  if (strncmp(says, "duplicate", 9) == 0) out[1].index = 0;
  if (strncmp(says, "range", 5) == 0) out[1].index = 5000;
  if (strncmp(says, "notvideo", 8) == 0) out[0].type = CV_STREAM_AUDIO;
  if (strncmp(says, "type", 4) == 0) out[1].type = 42;
  if (strncmp(says, "count", 5) == 0) *count = capacity + 1;
  return CV_OK;
}

static const cv_backend_v1 table = {
    .struct_size = STRUCT_SIZE,
    .abi_version = CODECVISOR_BACKEND_ABI_VERSION,
    .name = NAME,
    .version = "1",
    .exact_cpu_output = 1,
    .create = create,
    .destroy = destroy,
    .open_session = open_session,
    .close_session = close_session,
    .get_metadata = get_metadata,
    .get_frame_layout = get_frame_layout,
    .get_frame_info = get_frame_info,
    .index_at_seconds = index_at_seconds,
    .decode_frame = decode_frame,
    .get_streams = get_streams,
};
CODECVISOR_BACKEND_EXPORT const cv_backend_v1* codecvisor_backend_v1(void) { return &table; }
C
manifest() {  # manifest NAME: a manifest for lib$NAME.so whose restarts cost no time
  printf 'name = "%s"\ndevices = ["%s"]\nlibrary = "lib%s.so"\nabi_version = 1\n' "$1" "$1" "$1"
  printf '[restart]\nmax_restarts = 100\nwindow_seconds = 60\nbackoff_initial_ms = 1\nbackoff_max_ms = 2\n'
}
cc -std=c11 -shared -fPIC -fvisibility=hidden -I"$sdk" -DNAME='"liar"' -DSTRUCT_SIZE='sizeof(cv_backend_v1)' \
  -o "$plugins/libliar.so" "$tmp/liar.c"
manifest liar >"$plugins/liar.toml"
# The same plugin as if built against a header from before get_streams.
cc -std=c11 -shared -fPIC -fvisibility=hidden -I"$sdk" -DNAME='"older"' \
  -DSTRUCT_SIZE='offsetof(cv_backend_v1, get_streams)' -include stddef.h -o "$plugins/libolder.so" "$tmp/liar.c"
manifest older >"$plugins/older.toml"

says() { printf '%s' "$2" >"$tmp/$1.video"; echo "$tmp/$1.video"; }
liar=(--backend-manifest "$plugins/liar.toml" --device liar)

check "an honest plugin's list" run_cv 0 "$tmp/out" "$tmp/err" info "$(says honest honest)" "${liar[@]}"
check "its streams" grep -qE '^stream 1 +audio \(codec unknown\)$' "$tmp/out"
check "a duplicate index is refused" run_cv 1 "$tmp/out" "$tmp/err" info "$(says duplicate duplicate)" "${liar[@]}"
check "the duplicate is named" grep -q "the backend's list of the file's streams is invalid: entry 1 has stream index 0 after 0" \
  "$tmp/err"
check "an index out of range is refused" run_cv 1 "$tmp/out" "$tmp/err" info "$(says range range)" "${liar[@]}"
check "the index is named" grep -q "entry 1 has stream index 5000, outside \[0, 1024)" "$tmp/err"
check "the opened stream not a video is refused" run_cv 1 "$tmp/out" "$tmp/err" info "$(says notvideo notvideo)" "${liar[@]}"
check "the opened stream is named" grep -q "the opened stream 0 is not listed as a video stream" "$tmp/err"
check "an unknown type is refused" run_cv 1 "$tmp/out" "$tmp/err" info "$(says type type)" "${liar[@]}"
check "the type is named" grep -q "backend 'liar' listed stream 1 with type 42, which no CV_STREAM_\* names" "$tmp/err"
check "a count past the room given is refused" run_cv 1 "$tmp/out" "$tmp/err" info "$(says count count)" "${liar[@]}"
check "the count is named" grep -q "backend 'liar' listed 1025 streams in room for 1024" "$tmp/err"

# ---- a plugin without get_streams: unknown, not an error
older=(--backend-manifest "$plugins/older.toml" --device older)
check "an older plugin's info" run_cv 0 "$tmp/out" "$tmp/err" info "$(says older honest)" "${older[@]}"
check "says the streams are unknown" grep -qE "^streams +unknown \(the backend does not list the file's streams\)$" \
  "$tmp/out"
check "an older plugin's info --json" run_cv 0 "$tmp/out" "$tmp/err" info "$(says older honest)" "${older[@]}" --json
check "streams is null" contains "$(cat "$tmp/out")" '"streams":null}'

[[ $fails == 0 ]] || { echo "$fails checks failed" >&2; exit 1; }
