// File and stdout sinks. A file is written to "<dir>/.<name>.tmp-XXXXXX" in the
// target's own directory (so the final rename stays on one file system and is
// atomic) and renamed over the target only on commit.
#include "sl_sink.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/sl_alloc.h"
#include "../core/sl_error.h"
#include "sl_source_file.h"

/// Writes smaller than this are gathered; larger ones go straight to write(2).
#define SL_SINK_BUFFER ((size_t)1 << 20)

struct sl_sink {
  const struct sluice_allocator* alloc;
  int fd;
  int is_stdout;
  char* target;    // the final path (NULL for stdout)
  char* tmp_path;  // the temporary file (NULL for stdout)
  char* name;      // the location as written, for messages
  uint8_t* buf;
  size_t used;
  int64_t position;
};

static void free_string(const struct sluice_allocator* alloc, char* s) {
  if (s != NULL) sl_free(alloc, s, strlen(s) + 1);
}

static void sink_free(struct sl_sink* sink) {
  const struct sluice_allocator* alloc = sink->alloc;
  free_string(alloc, sink->target);
  free_string(alloc, sink->tmp_path);
  free_string(alloc, sink->name);
  sl_free(alloc, sink->buf, SL_SINK_BUFFER);
  sl_free(alloc, sink, sizeof *sink);
}

static int errno_error(struct sluice_error* error, const char* name, const char* what,
                       int errnum) {
  char text[128];
  return sl_error_set(error, errnum == ENOSPC || errnum == EACCES || errnum == ENOENT ? errnum : EIO,
                      "%s: %s: %s", name, what, sl_errno_text(errnum, text, sizeof text));
}

static int write_all(struct sl_sink* sink, const uint8_t* data, size_t n,
                     struct sluice_error* error) {
  while (n > 0) {
    ssize_t w = write(sink->fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno_error(error, sink->name, "write failed", errno);
    }
    data += w;
    n -= (size_t)w;
  }
  return 0;
}

static int flush(struct sl_sink* sink, struct sluice_error* error) {
  int rc = write_all(sink, sink->buf, sink->used, error);
  sink->used = 0;
  return rc;
}

/// The mode a new file gets from open(..., 0666): mkstemp creates 0600, which
/// would make our output less readable than any other tool's. umask(2) cannot
/// be read without changing it (racy in a library), so ask /proc.
static mode_t new_file_mode(void) {
  mode_t mask = 022;
  FILE* f = fopen("/proc/self/status", "re");
  if (f != NULL) {
    char line[256];
    while (fgets(line, sizeof line, f) != NULL) {
      if (strncmp(line, "Umask:", 6) == 0) {
        mask = (mode_t)strtol(line + 6, NULL, 8);
        break;
      }
    }
    fclose(f);
  }
  return (mode_t)(0666 & ~mask);
}

static int open_file_sink(struct sl_sink* sink, const char* path, struct sluice_error* error) {
  const struct sluice_allocator* alloc = sink->alloc;
  const char* slash = strrchr(path, '/');
  size_t dir_len = slash == NULL ? 0 : (size_t)(slash - path) + 1;  // keeps the '/'
  const char* base = path + dir_len;
  if (base[0] == '\0') return sl_error_set(error, EINVAL, "%s: not a file name", sink->name);
  size_t n = dir_len + 1 + strlen(base) + strlen(".tmp-XXXXXX") + 1;
  sink->tmp_path = sl_alloc(alloc, n);
  sink->target = sl_strdup(alloc, path);
  if (sink->tmp_path == NULL || sink->target == NULL) {
    return sl_error_set(error, ENOMEM, "%s: out of memory", sink->name);
  }
  snprintf(sink->tmp_path, n, "%.*s.%s.tmp-XXXXXX", (int)dir_len, path, base);
  sink->fd = mkstemp(sink->tmp_path);
  if (sink->fd < 0) {
    int e = errno;
    free_string(alloc, sink->tmp_path);
    sink->tmp_path = NULL;
    char what[64 + 256];
    snprintf(what, sizeof what, "cannot create a temporary file in '%.*s'",
             dir_len == 0 ? 1 : (int)dir_len, dir_len == 0 ? "." : path);
    return errno_error(error, sink->name, what, e);
  }
  // Replacing a file keeps its permissions; a new one gets the usual ones.
  struct stat st;
  mode_t mode = stat(path, &st) == 0 ? (st.st_mode & 07777) : new_file_mode();
  if (fchmod(sink->fd, mode) != 0) {
    // Not fatal: the data is still right, only less widely readable.
  }
  return 0;
}

int sl_sink_open(const char* location, const struct sluice_allocator* alloc,
                 struct sl_sink** out, struct sluice_error* error) {
  *out = NULL;
  if (location == NULL || location[0] == '\0') {
    return sl_error_set(error, EINVAL, "no output location given (a path or \"-\")");
  }
  const char* colon = strstr(location, "://");
  const char* path = location;
  if (strncmp(location, "file://", 7) == 0) {
    path = location + 7;
  } else if (colon != NULL) {
    return sl_error_set(error, ENOTSUP, "%s: writing to '%.*s' locations is not supported yet",
                        location, (int)(colon - location), location);
  }
  struct sl_sink* sink = sl_calloc(alloc, 1, sizeof *sink);
  if (sink == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", location);
  sink->alloc = alloc;
  sink->fd = -1;
  sink->name = sl_strdup(alloc, location);
  sink->buf = sl_alloc(alloc, SL_SINK_BUFFER);
  if (sink->name == NULL || sink->buf == NULL) {
    sink_free(sink);
    return sl_error_set(error, ENOMEM, "%s: out of memory", location);
  }
  if (strcmp(location, "-") == 0) {
    sink->is_stdout = 1;
    sink->fd = STDOUT_FILENO;
  } else {
    int rc = open_file_sink(sink, path, error);
    if (rc != 0) {
      sink_free(sink);
      return rc;
    }
  }
  *out = sink;
  return 0;
}

int sl_sink_write(struct sl_sink* sink, const void* data, int64_t n, struct sluice_error* error) {
  if (n < 0) return sl_error_set(error, EINVAL, "%s: negative write length", sink->name);
  if (n == 0) return 0;
  const uint8_t* p = data;
  size_t len = (size_t)n;
  if (sink->used + len <= SL_SINK_BUFFER) {
    memcpy(sink->buf + sink->used, p, len);
    sink->used += len;
  } else {
    int rc = flush(sink, error);
    if (rc != 0) return rc;
    if (len >= SL_SINK_BUFFER) {
      rc = write_all(sink, p, len, error);
      if (rc != 0) return rc;
    } else {
      memcpy(sink->buf, p, len);
      sink->used = len;
    }
  }
  sink->position += n;
  return 0;
}

int64_t sl_sink_position(const struct sl_sink* sink) { return sink->position; }

int sl_sink_commit(struct sl_sink* sink, struct sluice_error* error) {
  int rc = flush(sink, error);
  if (sink->is_stdout) {
    sink_free(sink);
    return rc;
  }
  // close() can report a deferred write error (NFS, quotas): check it.
  if (close(sink->fd) != 0 && rc == 0) rc = errno_error(error, sink->name, "close failed", errno);
  sink->fd = -1;
  if (rc == 0 && rename(sink->tmp_path, sink->target) != 0) {
    rc = errno_error(error, sink->name, "cannot rename the temporary file into place", errno);
  }
  if (rc != 0) unlink(sink->tmp_path);
  sink_free(sink);
  return rc;
}

void sl_sink_abort(struct sl_sink* sink) {
  if (sink == NULL) return;
  if (!sink->is_stdout) {
    if (sink->fd >= 0) close(sink->fd);
    if (sink->tmp_path != NULL) unlink(sink->tmp_path);
  }
  sink_free(sink);
}
