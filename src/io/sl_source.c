// Location → source: picks the source kind from the location's scheme.
#include "sl_source.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>  // strncasecmp
#include <unistd.h>

#include "../core/sl_alloc.h"
#include "../core/sl_error.h"
#include "../core/sl_value_text.h"
#include "sl_cql.h"
#include "sl_location.h"
#include "sl_source_file.h"
#include "sl_s3.h"
#include "sl_source_http.h"

void sl_view_release(struct sl_view* view) {
  if (view == NULL) return;
  sl_ref_release(view->owner);
  view->owner = NULL;
  view->data = NULL;
  view->size = 0;
}

int sl_view_detach(struct sl_view* view, const struct sluice_allocator* alloc,
                   struct sluice_error* error) {
  if (view->size == 0) return 0;
  void* copy = sl_alloc_buffer(alloc, (size_t)view->size);
  struct sl_ref* ref = copy != NULL ? sl_ref_wrap_buffer(alloc, copy, (size_t)view->size) : NULL;
  if (ref == NULL) {
    if (copy != NULL) sl_free_buffer(alloc, copy, (size_t)view->size);
    return sl_error_set(error, ENOMEM, "out of memory copying %lld bytes",
                        (long long)view->size);
  }
  memcpy(copy, view->data, (size_t)view->size);
  int64_t size = view->size;
  sl_view_release(view);
  view->data = copy;
  view->size = size;
  view->owner = ref;
  return 0;
}

static int has_prefix(const char* s, const char* prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

int sl_location_is_http(const char* location) {
  return location != NULL && (has_prefix(location, "http://") || has_prefix(location, "https://"));
}

int sl_location_is_remote(const char* location) {
  return sl_location_is_http(location) || (location != NULL && has_prefix(location, "s3://"));
}

/// Text appended to out[cap] as snprintf would write it: len counts all of
/// it, out holds what fits, NUL-terminated.
struct shown_text {
  char* out;
  size_t cap;
  size_t len;
};

static void shown_put(struct shown_text* t, const char* p, size_t n) {
  if (t->cap > 0 && t->len < t->cap - 1) {
    size_t room = t->cap - 1 - t->len;
    memcpy(t->out + t->len, p, n < room ? n : room);
    t->out[t->len + (n < room ? n : room)] = '\0';
  }
  t->len += n;
}

/// Query parameters of presigned URLs whose values are credentials
/// (S3's SigV4 and V2, Google Cloud Storage's, an Azure SAS's signature).
static int secret_parameter(const char* name, size_t n) {
  static const char* const k_secret[] = {"X-Amz-Signature", "X-Amz-Credential",
                                         "X-Amz-Security-Token", "Signature", "AWSAccessKeyId",
                                         "X-Goog-Signature", "X-Goog-Credential", "sig"};
  for (size_t i = 0; i < sizeof k_secret / sizeof k_secret[0]; ++i) {
    if (strlen(k_secret[i]) == n && strncasecmp(name, k_secret[i], n) == 0) return 1;
  }
  return 0;
}

static size_t location_shown(const char* location, char* out, size_t cap);

/// Whether s[0, n) is a URL scheme (RFC 3986: a letter, then letters,
/// digits, '+', '-', '.').
static int is_scheme(const char* s, size_t n) {
  if (n == 0 || !isalpha((unsigned char)s[0])) return 0;
  for (size_t i = 1; i < n; ++i) {
    if (!isalnum((unsigned char)s[i]) && s[i] != '+' && s[i] != '-' && s[i] != '.') return 0;
  }
  return 1;
}

size_t sl_location_shown(const char* location, char* out, size_t cap) {
  // One line, as messages are: a newline or a control byte in the name is
  // spelled (\n, \x01), not copied.
  char line[4096];
  return location_shown(sl_escaped_line(location, line, sizeof line), out, cap);
}

static size_t location_shown(const char* location, char* out, size_t cap) {
  if (has_prefix(location, "cql://")) {
    char shown[4096];
    sl_cql_redacted(location, shown, sizeof shown);
    return (size_t)snprintf(out, cap, "%s", shown);
  }
  const char* rest = strstr(location, "://");
  if (rest == NULL || !is_scheme(location, (size_t)(rest - location))) {
    return (size_t)snprintf(out, cap, "%s", location);
  }
  if (cap > 0) out[0] = '\0';
  struct shown_text t = {out, cap, 0};
  rest += 3;
  // The userinfo ends at the last '@' of the authority, which ends at the
  // first '/', '?' or '#' (RFC 3986: a password has them escaped).
  size_t authority = strcspn(rest, "/?#");
  const char* at = NULL;
  for (size_t i = 0; i < authority; ++i) {
    if (rest[i] == '@') at = rest + i;
  }
  const char* colon = at != NULL ? memchr(rest, ':', (size_t)(at - rest)) : NULL;
  const char* p = location;
  if (colon != NULL) {
    shown_put(&t, location, (size_t)(colon - location));
    shown_put(&t, ":***", 4);
    p = at;
  }
  // (A URL of another scheme: where a redirect led, ftp://user:pw@host/.)
  if (!sl_location_is_http(location)) {
    shown_put(&t, p, strlen(p));
    return t.len;
  }
  // A presigned URL's signature is as good as a password until it expires.
  const char* query = strchr(rest + authority, '?');
  const char* fragment = strchr(rest + authority, '#');
  if (query == NULL || (fragment != NULL && fragment < query)) {
    shown_put(&t, p, strlen(p));
    return t.len;
  }
  shown_put(&t, p, (size_t)(query + 1 - p));
  const char* end = fragment != NULL ? fragment : query + strlen(query);
  for (const char* q = query + 1; q < end;) {
    size_t item = strcspn(q, "&#");
    if (q + item > end) item = (size_t)(end - q);
    const char* eq = memchr(q, '=', item);
    if (eq != NULL && secret_parameter(q, (size_t)(eq - q))) {
      shown_put(&t, q, (size_t)(eq + 1 - q));
      shown_put(&t, "***", 3);
    } else {
      shown_put(&t, q, item);
    }
    q += item;
    if (q < end) shown_put(&t, q++, 1);  // the '&'
  }
  shown_put(&t, end, strlen(end));
  return t.len;
}

int sl_source_open(const char* location, const struct sluice_allocator* alloc,
                   struct sl_source** out, struct sluice_error* error) {
  return sl_source_open_remote(location, NULL, alloc, out, error);
}

int sl_source_open_remote(const char* location, const struct sl_remote_options* remote,
                          const struct sluice_allocator* alloc, struct sl_source** out,
                          struct sluice_error* error) {
  *out = NULL;
  if (location == NULL || location[0] == '\0') {
    return sl_error_set(error, EINVAL, "no location given (a path, \"-\" or a URL)");
  }
  if (strcmp(location, "-") == 0) {
    return sl_fd_source_open(STDIN_FILENO, 0, "<stdin>", alloc, out, error);
  }
  if (has_prefix(location, "file://")) {
    char path[4096];
    SL_RETURN_NOT_OK(sl_file_url_path(location, path, sizeof path, error));
    char line[4096];  // (messages are one line)
    return sl_file_source_open(path, sl_escaped_line(location, line, sizeof line), alloc, out,
                               error);
  }
  struct sl_remote_options defaults = {0};
  if (remote == NULL) remote = &defaults;
  if (sl_location_is_http(location)) {
    return sl_http_source_open(location, remote, alloc, out, error);
  }
  if (has_prefix(location, "s3://")) return sl_s3_source_open(location, remote, alloc, out, error);
  const char* colon = strstr(location, "://");
  if (colon != NULL) {
    return sl_error_set(error, ENOTSUP, "%s: unknown scheme '%.*s'", location,
                        (int)(colon - location), location);
  }
  char line[4096];  // (messages are one line)
  return sl_file_source_open(location, sl_escaped_line(location, line, sizeof line), alloc, out,
                             error);
}

int sl_source_read_at(struct sl_source* source, int64_t offset, int64_t length,
                      struct sl_view* out, struct sluice_error* error) {
  if (source->ops->read_at == NULL) {
    out->data = NULL;
    out->size = 0;
    out->owner = NULL;
    return sl_error_set(error, ENOTSUP,
                        "%s: ranged reads are not possible on a forward-only stream "
                        "(offset %lld)",
                        source->name, (long long)offset);
  }
  return source->ops->read_at(source, offset, length, out, error);
}

int sl_source_read_next(struct sl_source* source, int64_t length, struct sl_view* out,
                        struct sluice_error* error) {
  return source->ops->read_next(source, length, out, error);
}

int sl_source_read_some(struct sl_source* source, int64_t length, struct sl_view* out,
                        struct sluice_error* error) {
  if (source->ops->read_some != NULL) return source->ops->read_some(source, length, out, error);
  return sl_source_read_next(source, length, out, error);
}

int sl_source_peek(struct sl_source* source, int64_t length, struct sl_view* out,
                   struct sluice_error* error) {
  if (source->ops->read_at != NULL) {
    if (source->size >= 0 && length > source->size) length = source->size;
    return source->ops->read_at(source, 0, length, out, error);
  }
  if (source->ops->peek != NULL) return source->ops->peek(source, length, out, error);
  out->data = NULL;
  out->size = 0;
  out->owner = NULL;
  return sl_error_set(error, ENOTSUP, "%s: cannot look at the first bytes of this source",
                      source->name);
}

void sl_source_drop(struct sl_source* source, int64_t offset, int64_t length) {
  if (source != NULL && source->ops->drop != NULL) source->ops->drop(source, offset, length);
}

void sl_source_trim(struct sl_source* source) {
  if (source != NULL && source->ops->trim != NULL) source->ops->trim(source);
}

void sl_source_prefetch(struct sl_source* source) {
  if (source != NULL && source->ops->prefetch != NULL) source->ops->prefetch(source);
}

int sl_source_seek(struct sl_source* source, int64_t offset, struct sluice_error* error) {
  const char* name = source->name != NULL ? source->name : "source";
  if (source->ops->seek == NULL) {
    return sl_error_set(error, ENOTSUP, "%s: a stream is read once: it cannot start again", name);
  }
  if (offset < 0 || (source->size >= 0 && offset > source->size)) {
    return sl_error_set(error, EINVAL, "%s: cannot read on from offset %lld (size %lld)", name,
                        (long long)offset, (long long)source->size);
  }
  return source->ops->seek(source, offset, error);
}

const uint8_t sl_empty_bytes[1] = {0};

void sl_source_close(struct sl_source* source) {
  if (source != NULL) source->ops->close(source);
}

int sl_source_check_range(const struct sl_source* source, int64_t offset, int64_t length,
                          struct sl_view* out, struct sluice_error* error) {
  out->data = NULL;
  out->size = 0;
  out->owner = NULL;
  if (offset < 0 || length < 0 || offset > source->size || length > source->size - offset) {
    return sl_error_set(error, EIO,
                        "%s: read of %lld bytes at offset %lld is past the end (size %lld)",
                        source->name, (long long)length, (long long)offset,
                        (long long)source->size);
  }
  return 0;
}

int sl_source_read_forward(struct sl_source* source, int64_t* cursor, int64_t length,
                           struct sl_view* out, struct sluice_error* error) {
  if (length < 0) {
    return sl_error_set(error, EINVAL, "%s: negative read length %lld", source->name,
                        (long long)length);
  }
  int64_t left = source->size - *cursor;
  int64_t n = length < left ? length : left;
  int rc = source->ops->read_at(source, *cursor, n, out, error);
  if (rc == 0) *cursor += n;
  return rc;
}
