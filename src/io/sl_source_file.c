// Local file sources. A regular file is mapped whole so that every view is a
// pointer into the mapping (zero copies); the mapping lives as long as any
// view (and so any array built on one) retains it. Pipes and devices cannot be
// mapped or read at offsets: they are read forward in chunks.
#include "sl_source_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/sl_alloc.h"
#include "../core/sl_error.h"
#include "sl_source_block.h"
#include "sl_source_http.h"
#include "sl_source_inflate.h"


const char* sl_errno_text(int errnum, char* buf, size_t cap) {
  // The XSI strerror_r (we build with _POSIX_C_SOURCE, not _GNU_SOURCE):
  // strerror() is not guaranteed thread-safe.
  if (strerror_r(errnum, buf, cap) != 0) snprintf(buf, cap, "error %d", errnum);
  return buf;
}

int sl_errno_code(int errnum) {
  switch (errnum) {
    case 0:
    case EINVAL:
    case EILSEQ:
    case ENOTSUP:
#if defined(EOPNOTSUPP) && EOPNOTSUPP != ENOTSUP
    case EOPNOTSUPP:
#endif
    case ERANGE:
    case EOVERFLOW:
    case ECANCELED:
    case EDOM:  // (an Avro enum's miss, which callers answer by writing again)
      return EIO;
    default:
      return errnum;
  }
}

int sl_errno_error(struct sluice_error* error, int code, const char* name, const char* what,
                   int errnum) {
  char text[128];
  return sl_error_set(error, code, "%s: %s: %s", name, what,
                      sl_errno_text(errnum, text, sizeof text));
}

/* ---- Mapped regular files ------------------------------------------------ */

struct sl_mapping {
  struct sl_ref ref;  // first: the ref pointer is the struct pointer
  const struct sluice_allocator* alloc;
  void* addr;
  size_t length;
  /// Where sl_ref_file_extent opens the file again, for its bytes to be
  /// copied file-to-file in the kernel. No descriptor is kept open: a
  /// mapping needs none, and a dataset of thousands of files must not hold
  /// one per file (RLIMIT_NOFILE is often 1024).
  char* path;  ///< absolute where it could be made so; NULL: none to open
  dev_t dev;   ///< what `path` must still be for its bytes to be the mapping's
  ino_t ino;
  /// `path` was found to be another file or none (replaced, removed): not
  /// opened again.
  atomic_int gone;
};

static void mapping_destroy(struct sl_ref* ref) {
  struct sl_mapping* m = (struct sl_mapping*)ref;
  munmap(m->addr, m->length);
  if (m->path != NULL) sl_free(m->alloc, m->path, strlen(m->path) + 1);
  sl_free(m->alloc, m, sizeof *m);
}

/// `path` made absolute against the current directory (so that a later
/// chdir does not lose it), or a plain copy if that cannot be; NULL when out
/// of memory.
static char* absolute_path(const struct sluice_allocator* alloc, const char* path) {
  char cwd[PATH_MAX];
  if (path[0] == '/' || getcwd(cwd, sizeof cwd) == NULL) return sl_strdup(alloc, path);
  size_t a = strlen(cwd), b = strlen(path);
  char* out = sl_alloc(alloc, a + 1 + b + 1);
  if (out == NULL) return NULL;
  memcpy(out, cwd, a);
  out[a] = '/';
  memcpy(out + a + 1, path, b + 1);
  return out;
}

/// A new descriptor on the mapped file, or -1 (the caller copies through
/// memory).
static int mapping_open(struct sl_mapping* m) {
  if (m->path == NULL || atomic_load_explicit(&m->gone, memory_order_relaxed)) return -1;
  int fd;
  do {
    // (O_NONBLOCK: were the name a FIFO now, the open must not wait)
    fd = open(m->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    // Out of descriptors is for now only: a later run may get one.
    if (errno != EMFILE && errno != ENFILE && errno != ENOMEM && errno != EINTR) {
      atomic_store_explicit(&m->gone, 1, memory_order_relaxed);
    }
    return -1;
  }
  struct stat st;
  int flags = fcntl(fd, F_GETFL);
  // Only the very file that was mapped: never bytes of another one.
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_dev != m->dev ||
      st.st_ino != m->ino) {
    atomic_store_explicit(&m->gone, 1, memory_order_relaxed);
    close(fd);
    return -1;
  }
  if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/// A view of a large range of the mapping. When the last array built on it is
/// released, its pages are dropped from the process (MADV_DONTNEED): a scan of
/// a file much larger than memory then keeps only the batches in flight
/// resident, not every page it ever touched. Dropping is always safe, even if
/// another view still covers those pages: the mapping is read-only, so a later
/// access simply faults the same bytes back in from the page cache.
struct sl_range_ref {
  struct sl_ref ref;  // first
  struct sl_mapping* mapping;
  size_t offset;
  size_t length;
};

/// Views at least this large get their own range ref (one small allocation,
/// negligible next to the bytes it covers); smaller ones share the mapping's.
#define SL_RANGE_REF_MIN ((int64_t)256 << 10)

/// Drops the pages wholly inside [offset, offset + length) of the mapping
/// (the neighbours may belong to views still in use).
static void mapping_drop(struct sl_mapping* m, size_t offset, size_t length) {
  long page = sysconf(_SC_PAGESIZE);
  if (page <= 0 || offset >= m->length) return;
  if (length > m->length - offset) length = m->length - offset;
  size_t p = (size_t)page;
  uintptr_t start = (uintptr_t)m->addr + offset;
  uintptr_t end = start + length;
  uintptr_t first = (start + p - 1) / p * p;
  uintptr_t last = end / p * p;
  if (last > first) madvise((void*)first, last - first, MADV_DONTNEED);
}

static void range_ref_destroy(struct sl_ref* ref) {
  struct sl_range_ref* r = (struct sl_range_ref*)ref;
  struct sl_mapping* m = r->mapping;
  mapping_drop(m, r->offset, r->length);
  sl_free(m->alloc, r, sizeof *r);
  sl_ref_release(&m->ref);
}

struct sl_file_source {
  struct sl_source base;  // first
  const uint8_t* data;    // the mapping, or sl_empty_bytes for an empty file
  int64_t cursor;         // read_next position
};

static int file_read_at(struct sl_source* source, int64_t offset, int64_t length,
                        struct sl_view* out, struct sluice_error* error) {
  struct sl_file_source* f = (struct sl_file_source*)source;
  SL_RETURN_NOT_OK(sl_source_check_range(source, offset, length, out, error));
  out->data = length == 0 ? sl_empty_bytes : f->data + offset;
  out->size = length;
  if (length >= SL_RANGE_REF_MIN) {
    struct sl_range_ref* r = sl_alloc(source->alloc, sizeof *r);
    if (r != NULL) {
      sl_ref_init(&r->ref, range_ref_destroy);
      r->mapping = (struct sl_mapping*)sl_ref_retain(source->owner);
      r->offset = (size_t)offset;
      r->length = (size_t)length;
      out->owner = &r->ref;
      return 0;
    }
    // Out of memory for the bookkeeping only: the plain mapping ref will do.
  }
  out->owner = sl_ref_retain(source->owner);
  return 0;
}

static int file_read_next(struct sl_source* source, int64_t length, struct sl_view* out,
                          struct sluice_error* error) {
  return sl_source_read_forward(source, &((struct sl_file_source*)source)->cursor, length, out,
                                error);
}

static int file_seek(struct sl_source* source, int64_t offset, struct sluice_error* error) {
  (void)error;  // (sl_source_seek checked the offset)
  ((struct sl_file_source*)source)->cursor = offset;
  return 0;
}

static void file_drop(struct sl_source* source, int64_t offset, int64_t length) {
  if (source->owner == NULL || offset < 0 || length <= 0) return;
  mapping_drop((struct sl_mapping*)source->owner, (size_t)offset, (size_t)length);
}

static void file_close(struct sl_source* source) {
  const struct sluice_allocator* alloc = source->alloc;
  sl_ref_release(source->owner);
  sl_free(alloc, source->name, strlen(source->name) + 1);
  sl_free(alloc, source, sizeof(struct sl_file_source));
}

static const struct sl_source_ops sl_file_source_ops = {
    .read_at = file_read_at,
    .read_next = file_read_next,
    .close = file_close,
    .peek = NULL,
    .seek = file_seek,
    .drop = file_drop,
};

/// Maps the regular file open as `fd` (described by `st`); the caller closes
/// `fd`. `path` opens the file again for in-kernel copies (NULL: nothing
/// can, e.g. an unlinked spool file).
static int map_regular_file(int fd, const struct stat* st, const char* path, const char* name,
                            const struct sluice_allocator* alloc, struct sl_source** out,
                            struct sluice_error* error) {
  int64_t size = (int64_t)st->st_size;
  struct sl_file_source* f = sl_calloc(alloc, 1, sizeof *f);
  char* name_copy = sl_strdup(alloc, name);
  struct sl_mapping* m = size > 0 ? sl_alloc(alloc, sizeof *m) : NULL;
  char* path_copy = size > 0 && path != NULL ? absolute_path(alloc, path) : NULL;
  if (f == NULL || name_copy == NULL || (size > 0 && m == NULL) ||
      (size > 0 && path != NULL && path_copy == NULL)) {
    sl_free(alloc, f, sizeof *f);
    if (name_copy != NULL) sl_free(alloc, name_copy, strlen(name_copy) + 1);
    if (path_copy != NULL) sl_free(alloc, path_copy, strlen(path_copy) + 1);
    sl_free(alloc, m, sizeof *m);
    return sl_error_set(error, ENOMEM, "%s: out of memory opening the file", name);
  }
  f->data = sl_empty_bytes;
  if (size > 0) {
    if ((uint64_t)size > SIZE_MAX) {
      sl_free(alloc, f, sizeof *f);
      sl_free(alloc, name_copy, strlen(name_copy) + 1);
      if (path_copy != NULL) sl_free(alloc, path_copy, strlen(path_copy) + 1);
      sl_free(alloc, m, sizeof *m);
      return sl_error_set(error, EFBIG, "%s: file too large to map (%lld bytes)", name,
                          (long long)size);
    }
    void* addr = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr == MAP_FAILED) {
      int e = errno;
      sl_free(alloc, f, sizeof *f);
      sl_free(alloc, name_copy, strlen(name_copy) + 1);
      if (path_copy != NULL) sl_free(alloc, path_copy, strlen(path_copy) + 1);
      sl_free(alloc, m, sizeof *m);
      return sl_errno_error(error, sl_errno_code(e), name, "cannot map the file", e);
    }
    sl_ref_init(&m->ref, mapping_destroy);
    m->alloc = alloc;
    m->addr = addr;
    m->length = (size_t)size;
    m->path = path_copy;
    atomic_init(&m->gone, 0);
    m->dev = st->st_dev;
    m->ino = st->st_ino;
    f->data = addr;
    f->base.owner = &m->ref;
  }
  f->base.ops = &sl_file_source_ops;
  f->base.name = name_copy;
  f->base.size = size;
  f->base.alloc = alloc;
  f->base.mapped = 1;
  f->cursor = 0;
  *out = &f->base;
  return 0;
}

int sl_ref_file_extent(const struct sl_ref* ref, const void* ptr, int64_t length, int* fd,
                       int64_t* offset) {
  struct sl_mapping* m = NULL;
  if (ref == NULL || ptr == NULL || length < 0) return 0;
  // (the mapping is never const: it notes a file gone)
  if (ref->destroy == range_ref_destroy) {
    m = ((const struct sl_range_ref*)ref)->mapping;
  } else if (ref->destroy == mapping_destroy) {
    m = (struct sl_mapping*)(uintptr_t)ref;
  }
  if (m == NULL) return 0;
  uintptr_t p = (uintptr_t)ptr;
  uintptr_t a = (uintptr_t)m->addr;
  if (p < a || p - a > m->length || (uint64_t)length > m->length - (p - a)) return 0;
  int got = mapping_open(m);
  if (got < 0) return 0;
  *fd = got;
  *offset = (int64_t)(p - a);
  return 1;
}

/* ---- Forward-only descriptors -------------------------------------------- */

struct sl_fd_source {
  struct sl_source base;  // first
  int fd;
  int owns_fd;
  int eof;
  struct sl_source_block block;
  int64_t consumed;  // bytes handed out by read_next so far
};

/// Makes at least `need` unconsumed bytes contiguous in the block, unless
/// the data ends first.
static int fd_fill(struct sl_fd_source* s, int64_t need, struct sluice_error* error) {
  struct sl_source_block* b = &s->block;
  if (b->end - b->start >= need || s->eof) return 0;
  SL_RETURN_NOT_OK(sl_source_block_room(b, need, s->base.alloc, s->base.name, error));
  while (b->end - b->start < need) {
    // A pipe may keep us waiting for as long as its writer likes: with a
    // cancel hook, wait in slices and ask it between them.
    if (sl_source_asks_here(&s->base)) {
      if (sl_source_cancelled(&s->base)) {
        return sl_error_set(error, ECANCELED, "%s: interrupted", s->base.name);
      }
      struct pollfd p = {.fd = s->fd, .events = POLLIN};
      int ready = poll(&p, 1, SL_SOURCE_CANCEL_POLL_MS);
      if (ready == 0 || (ready < 0 && errno == EINTR)) continue;
    }
    ssize_t r = read(s->fd, b->data + b->end, (size_t)(b->cap - b->end));
    if (r < 0) {
      if (errno == EINTR) continue;
      return sl_errno_error(error, sl_errno_code(errno), s->base.name, "read failed", errno);
    }
    if (r == 0) {
      s->eof = 1;
      break;
    }
    b->end += r;
  }
  return 0;
}

static int fd_view(struct sl_fd_source* s, int64_t length, int consume, struct sl_view* out,
                   struct sluice_error* error) {
  memset(out, 0, sizeof *out);
  if (length < 0) {
    return sl_error_set(error, EINVAL, "%s: negative read length %lld", s->base.name,
                        (long long)length);
  }
  SL_RETURN_NOT_OK(fd_fill(s, length, error));
  int64_t n = sl_source_block_view(&s->block, length, consume, out);
  if (consume) s->consumed += n;
  return 0;
}

static int fd_read_next(struct sl_source* source, int64_t length, struct sl_view* out,
                        struct sluice_error* error) {
  return fd_view((struct sl_fd_source*)source, length, 1, out, error);
}

static int fd_peek(struct sl_source* source, int64_t length, struct sl_view* out,
                   struct sluice_error* error) {
  return fd_view((struct sl_fd_source*)source, length, 0, out, error);
}

static void fd_close(struct sl_source* source) {
  struct sl_fd_source* s = (struct sl_fd_source*)source;
  const struct sluice_allocator* alloc = source->alloc;
  sl_source_block_free(&s->block);
  if (s->owns_fd) close(s->fd);
  sl_free(alloc, source->name, strlen(source->name) + 1);
  sl_free(alloc, s, sizeof *s);
}

static const struct sl_source_ops sl_fd_source_ops = {
    .read_at = NULL,
    .read_next = fd_read_next,
    .close = fd_close,
    .peek = fd_peek,
    .drop = NULL,
};

int sl_fd_source_open(int fd, int owns_fd, const char* name,
                      const struct sluice_allocator* alloc, struct sl_source** out,
                      struct sluice_error* error) {
  struct sl_fd_source* s = sl_calloc(alloc, 1, sizeof *s);
  char* name_copy = sl_strdup(alloc, name);
  if (s == NULL || name_copy == NULL) {
    sl_free(alloc, s, sizeof *s);
    if (name_copy != NULL) sl_free(alloc, name_copy, strlen(name_copy) + 1);
    if (owns_fd) close(fd);
    return sl_error_set(error, ENOMEM, "%s: out of memory opening the stream", name);
  }
  s->base.ops = &sl_fd_source_ops;
  s->base.name = name_copy;
  s->base.size = -1;
  s->base.alloc = alloc;
  s->base.owner = NULL;
  s->fd = fd;
  s->owns_fd = owns_fd;
  *out = &s->base;
  return 0;
}

int sl_file_source_open(const char* path, const char* name,
                        const struct sluice_allocator* alloc, struct sl_source** out,
                        struct sluice_error* error) {
  int fd;
  do {
    fd = open(path, O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    int e = errno;
    return sl_errno_error(error, sl_errno_code(e), name, "cannot open", e);
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return sl_errno_error(error, sl_errno_code(e), name, "cannot stat", e);
  }
  if (S_ISDIR(st.st_mode)) {
    close(fd);
    return sl_error_set(error, EISDIR, "%s: is a directory, not a file", name);
  }
  if (!S_ISREG(st.st_mode)) return sl_fd_source_open(fd, 1, name, alloc, out, error);
  int rc = map_regular_file(fd, &st, path, name, alloc, out, error);
  // The mapping keeps the file's pages reachable; the descriptor is not needed.
  close(fd);
  return rc;
}

/* ---- Spooling a stream to a temporary file -------------------------------- */

int sl_source_untouched(const struct sl_source* source) {
  // An HTTP server without Range support is a forward stream too, and so
  // is a body it sent with a Content-Encoding, which is inflated.
  if (source->ops != &sl_fd_source_ops) {
    return sl_http_source_untouched(source) || sl_source_inflate_untouched(source);
  }
  return ((const struct sl_fd_source*)source)->consumed == 0;
}

int sl_source_spool(struct sl_source* forward, struct sl_source** out,
                    struct sluice_error* error) {
  *out = NULL;
  const char* dir = getenv("TMPDIR");
  if (dir == NULL || dir[0] == '\0') dir = "/tmp";
  char path[4096];
  int n = snprintf(path, sizeof path, "%s/sluice-spool-XXXXXX", dir);
  if (n < 0 || (size_t)n >= sizeof path) {
    return sl_error_set(error, ENAMETOOLONG, "%s: temporary directory name too long",
                        forward->name);
  }
  int fd = mkstemp(path);
  if (fd < 0) {
    char what[4200];  // (names the directory: TMPDIR sets it, as for staging)
    snprintf(what, sizeof what, "cannot create a temporary file to spool into in %s "
             "(TMPDIR sets the directory)", dir);
    return sl_errno_error(error, EIO, forward->name, what, errno);
  }
  // Nobody else needs the name; the data lives until the mapping goes.
  unlink(path);
  int rc = 0;
  for (;;) {
    struct sl_view v;
    rc = sl_source_read_next(forward, SL_STREAM_CHUNK, &v, error);
    if (rc != 0) break;
    if (v.size == 0) {
      sl_view_release(&v);
      break;
    }
    const uint8_t* p = v.data;
    int64_t left = v.size;
    while (left > 0 && rc == 0) {
      ssize_t w = write(fd, p, (size_t)left);
      if (w < 0) {
        if (errno == EINTR) continue;
        rc = sl_errno_error(error, EIO, forward->name, "cannot spool to a temporary file", errno);
        break;
      }
      p += w;
      left -= w;
    }
    sl_view_release(&v);
    if (rc != 0) break;
  }
  struct stat st;
  if (rc == 0 && fstat(fd, &st) != 0) {
    rc = sl_errno_error(error, EIO, forward->name, "cannot stat the spooled data", errno);
  }
  // (unlinked: its bytes are copied out through memory, as no name opens it
  // again, and a dataset of many spooled objects holds no descriptor each)
  if (rc == 0) rc = map_regular_file(fd, &st, NULL, forward->name, forward->alloc, out, error);
  close(fd);
  return rc;
}
