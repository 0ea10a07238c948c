// File and stdout sinks. A file is written to "<dir>/.<name>.tmp-XXXXXX" in the
// target's own directory (so the final rename stays on one file system and is
// atomic) and renamed over the target only on commit.
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE  // F_GETPIPE_SZ / F_SETPIPE_SZ, copy_file_range, splice
#endif
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

/// The pipe buffer asked for when standard output is a pipe. Linux's default
/// of 64 KiB makes every large write a string of 16-page rounds, each waking
/// the reader; 1 MiB (the default /proc/sys/fs/pipe-max-size) cuts the
/// kernel time of piping a large table by about a tenth.
#define SL_SINK_PIPE_SIZE (1 << 20)

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
  int is_pipe;     // fd is a pipe: file bytes go by splice(2)
  int no_kernel_copy;  // copy_file_range/splice unsupported here: always write(2)
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

/// Grows the pipe behind `fd`, if it is one. Best effort: a pipe limit
/// (pipe-max-size, pipe-user-pages-soft) or another OS only means the default.
static void grow_pipe(int fd) {
#if defined(F_GETPIPE_SZ) && defined(F_SETPIPE_SZ)
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) return;
  int size = fcntl(fd, F_GETPIPE_SZ);
  if (size >= 0 && size < SL_SINK_PIPE_SIZE) (void)fcntl(fd, F_SETPIPE_SZ, SL_SINK_PIPE_SIZE);
#else
  (void)fd;
#endif
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
    grow_pipe(sink->fd);
    struct stat st;
    sink->is_pipe = fstat(sink->fd, &st) == 0 && S_ISFIFO(st.st_mode);
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

/// One in-kernel copy of up to `len` bytes from `fd` at `*offset` to the sink.
static ssize_t kernel_copy(struct sl_sink* sink, int fd, int64_t* offset, size_t len) {
#if defined(__linux__) && defined(SPLICE_F_MOVE)
  loff_t in = (loff_t)*offset;
  ssize_t w = sink->is_pipe ? splice(fd, &in, sink->fd, NULL, len, 0)
                            : copy_file_range(fd, &in, sink->fd, NULL, len, 0);
  if (w > 0) *offset += w;
  return w;
#else
  (void)sink, (void)fd, (void)offset, (void)len;
  errno = ENOSYS;
  return -1;
#endif
}

int sl_sink_write_from_file(struct sl_sink* sink, int fd, int64_t offset, const void* data,
                            int64_t n, struct sluice_error* error) {
  // Small runs are cheaper gathered in the buffer than copied one by one.
  if (n < (int64_t)SL_SINK_BUFFER || sink->no_kernel_copy || fd < 0 || offset < 0) {
    return sl_sink_write(sink, data, n, error);
  }
  int rc = flush(sink, error);
  if (rc != 0) return rc;
  int64_t done = 0;
  while (done < n) {
    int64_t left = n - done;
    size_t len = left > ((int64_t)1 << 30) ? (size_t)1 << 30 : (size_t)left;
    ssize_t w = kernel_copy(sink, fd, &offset, len);
    if (w > 0) {
      done += w;
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP ||
                  errno == EBADF || errno == EPERM || errno == ETXTBSY)) {
      sink->no_kernel_copy = 1;  // this pair of files cannot: stop asking
    }
    // Anything else (a short source, a real I/O error): write(2) the rest from
    // memory, which either succeeds or reports the error as it always did.
    rc = write_all(sink, (const uint8_t*)data + done, (size_t)left, error);
    if (rc != 0) return rc;
    break;
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
