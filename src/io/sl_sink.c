// File and stdout sinks. A file is written in the target's own directory (so
// the final rename stays on one file system and is atomic) and renamed over
// the target only on commit. Where the file system allows (Linux O_TMPFILE:
// ext4, xfs, btrfs, tmpfs), the file has no name until the commit links it
// as "<dir>/.<name>.tmp-XXXXXX" (".sluice.tmp-XXXXXX" for a name too long
// for that) and renames that over the target, so a
// process killed mid-write (SIGKILL, the OOM killer, a second Ctrl-C while
// a producer blocks) leaves nothing behind; elsewhere it is created under
// that name at once (open O_CREAT | O_EXCL) and removed on error.
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE  // F_GETPIPE_SZ / F_SETPIPE_SZ, copy_file_range, splice
#endif
#include "sl_sink.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#if defined(__linux__)
#include <sys/vfs.h>
#endif
#include <time.h>
#include <unistd.h>

#include "../core/sl_alloc.h"
#include "../core/sl_error.h"
#include "../core/sl_value_text.h"
#include "sl_location.h"
#include "sl_s3.h"
#include "sl_source_file.h"
#include "core/sl_cores.h"

/// Writes smaller than this are gathered; larger ones go straight to write(2).
#define SL_SINK_BUFFER ((size_t)1 << 20)

/// The pipe buffer asked for when standard output is a pipe. Linux's default
/// of 64 KiB makes every large write a string of 16-page rounds, each waking
/// the reader; 1 MiB (the default /proc/sys/fs/pipe-max-size) cuts the
/// kernel time of piping a large table by about a tenth.
#define SL_SINK_PIPE_SIZE (1 << 20)

/// Large runs of a file's bytes bound for a file sink are not copied when
/// written: the sink leaves a hole of their size and copies them all on
/// commit, on several threads (an in-kernel copy runs on one core).
/// Runs shorter than this are copied at once.
#define SL_SINK_DEFER_MIN ((int64_t)SL_SINK_BUFFER)
_Static_assert(SL_SINK_COPY_MIN <= SL_SINK_DEFER_MIN && SL_SINK_COPY_MIN <= (int64_t)SL_SINK_BUFFER,
               "runs a caller writes from memory are ones the sink would too");
/// At most this many pending runs (adjacent ones merge) and source files; when
/// either is full, the pending runs are copied before more are taken.
#define SL_SINK_MAX_COPIES 256
#define SL_SINK_MAX_SOURCES 16
/// Copies are handed to threads in pieces of this size, and go through a
/// buffer of this size per thread (1 MiB: fits a core's L2; 0.22 s for 1.3 GB
/// on two threads against 0.24 s with 512 KiB and 0.41 s with 64 KiB).
#define SL_SINK_COPY_CHUNK ((int64_t)16 << 20)
#define SL_SINK_COPY_BUFFER SL_SINK_BUFFER
/// Threads copying at commit, at most.
#define SL_SINK_MAX_THREADS 4

/// A source file of deferred runs: our own descriptor on it (the caller's
/// may be closed before commit) and its identity.
struct sl_sink_source {
  int fd;
  dev_t dev;
  ino_t ino;
};

/// Bytes [src_off, src_off + len) of a source go to [dst_off, dst_off + len).
struct sl_sink_copy {
  int64_t src_off;
  int64_t dst_off;
  int64_t len;
  int64_t before;  // sum of the lengths of the runs before this one
  int source;      // index into sources
};

struct sl_sink {
  const struct sluice_allocator* alloc;
  const struct sl_remote_options* remote;  // s3:// outputs' TLS settings (NULL = defaults)
  int fd;
  int is_stdout;
  char* target;    // the final path, or the s3:// location (NULL for stdout)
  char* tmp_path;  // the temporary file (NULL for stdout)
  char* name;      // the location as messages show it (sl_location_shown)
  char* staging_dir;  // s3://: the directory of the staging file, for messages
  uint8_t* buf;
  size_t used;
  int64_t position;
  int is_pipe;     // fd is a pipe: file bytes go by splice(2)
  int is_s3;       // s3://: staged in a temporary file, uploaded on commit
  int in_place;    // an existing device, FIFO or socket: written directly, no rename
  int no_kernel_copy;  // copy_file_range/splice unsupported here: always write(2)
  int no_fsync;    // sl_sink_skip_fsync: commit renames without syncing first
  int unnamed;     // O_TMPFILE: tmp_path is only a template until the commit links it
  int finished;    // sl_sink_finish: every byte is in the file, the buffer freed
  int64_t file_size;  // once finished: the bytes in the file (compressed ones, if so)
  struct sl_compressor* compressor;  // the file is compressed (.csv.gz): bytes go through it
  struct sl_sink_copy* copies;      // pending runs, SL_SINK_MAX_COPIES (NULL until needed)
  int n_copies;
  struct sl_sink_source* sources;   // SL_SINK_MAX_SOURCES
  int n_sources;
};

static void drop_copies(struct sl_sink* sink) {
  for (int i = 0; i < sink->n_sources; i++) {
    if (sink->sources[i].fd >= 0) close(sink->sources[i].fd);
  }
  sink->n_sources = 0;
  sink->n_copies = 0;
}

static void free_string(const struct sluice_allocator* alloc, char* s) {
  if (s != NULL) sl_free(alloc, s, strlen(s) + 1);
}

static void sink_free(struct sl_sink* sink) {
  const struct sluice_allocator* alloc = sink->alloc;
  sl_compressor_free(sink->compressor);
  free_string(alloc, sink->target);
  free_string(alloc, sink->tmp_path);
  free_string(alloc, sink->name);
  free_string(alloc, sink->staging_dir);
  if (sink->sources != NULL) drop_copies(sink);
  sl_free(alloc, sink->copies, SL_SINK_MAX_COPIES * sizeof *sink->copies);
  sl_free(alloc, sink->sources, SL_SINK_MAX_SOURCES * sizeof *sink->sources);
  if (sink->buf != NULL) sl_free(alloc, sink->buf, SL_SINK_BUFFER);
  sl_free(alloc, sink, sizeof *sink);
}

static int errno_error(struct sluice_error* error, const char* name, const char* what,
                       int errnum) {
  return sl_errno_error(error, sl_errno_code(errnum), name, what, errnum);
}

/// The directory s3:// outputs are staged in: $TMPDIR, else /tmp.
static const char* staging_dir(void) {
  const char* dir = getenv("TMPDIR");
  return dir == NULL || dir[0] == '\0' ? "/tmp" : dir;
}

/// errno_error for writing the sink's own file. An s3:// sink's is the
/// local staging file, which the message names: a full $TMPDIR is no fault
/// of the bucket's.
static int file_error(const struct sl_sink* sink, struct sluice_error* error, const char* what,
                      int errnum) {
  if (!sink->is_s3) return errno_error(error, sink->name, what, errnum);
  char where[128 + 4096], dir[4096];
  const char* d = sink->staging_dir != NULL ? sink->staging_dir : staging_dir();
  snprintf(where, sizeof where, "%s (the local staging file in '%s', TMPDIR)", what,
           sl_escaped(d, strlen(d), '\'', dir, sizeof dir));
  return errno_error(error, sink->name, where, errnum);
}

int sl_sink_cancelled(const struct sl_sink* sink, struct sluice_error* error) {
  if (!sl_remote_cancelled(sink->remote)) return 0;
  return sl_error_set(error, ECANCELED, "%s: interrupted", sink->name);
}

static int write_fd(struct sl_sink* sink, const uint8_t* data, size_t n,
                    struct sluice_error* error) {
  while (n > 0) {
    // Polled per buffer written (every path, compressed or not, ends here),
    // so that a write of one huge batch stops soon after Ctrl-C rather than
    // at its end.
    SL_RETURN_NOT_OK(sl_sink_cancelled(sink, error));
    // At most a buffer's worth per write(2): one call of many megabytes into
    // an ext4 file spent seconds in the kernel's copy into the page cache
    // (a 450 MB CSV: 1.7-3.0 s of system time against 0.5 s in 1 MiB calls;
    // W1 to Parquet: 1.9-4.3 s against 0.9 s).
    ssize_t w = write(sink->fd, data, n > SL_SINK_BUFFER ? SL_SINK_BUFFER : n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return file_error(sink, error, "write failed", errno);
    }
    data += w;
    n -= (size_t)w;
  }
  return 0;
}

static int write_compressed(void* ctx, const uint8_t* data, size_t n,
                            struct sluice_error* error) {
  return write_fd(ctx, data, n, error);
}

static int write_all(struct sl_sink* sink, const uint8_t* data, size_t n,
                     struct sluice_error* error) {
  if (sink->compressor != NULL) return sl_compressor_write(sink->compressor, data, n, error);
  return write_fd(sink, data, n, error);
}

static int flush(struct sl_sink* sink, struct sluice_error* error) {
  if (sink->used == 0) return 0;
  int rc = write_all(sink, sink->buf, sink->used, error);
  sink->used = 0;
  return rc;
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

/// Whether the symbolic link `path` is one of /proc's (/proc/self/fd/N,
/// where /dev/stdout and /dev/fd/N lead): it names an open descriptor (a
/// pipe, a terminal, a file the shell opened, maybe for appending), not a
/// file to replace.
static int is_proc_link(const char* path) {
#if defined(__linux__)
  char dir[4096];
  const char* slash = strrchr(path, '/');
  size_t n = slash == NULL ? 0 : slash == path ? 1 : (size_t)(slash - path);
  if (n >= sizeof dir) return 0;
  memcpy(dir, n == 0 ? "." : path, n == 0 ? 1 : n);
  dir[n == 0 ? 1 : n] = '\0';
  struct statfs fs;
  return statfs(dir, &fs) == 0 && fs.f_type == 0x9fa0;  // PROC_SUPER_MAGIC
#else
  return strncmp(path, "/proc/", 6) == 0 || strncmp(path, "/dev/fd/", 8) == 0;
#endif
}

/// The file a symbolic link `path` leads to, even when it does not exist
/// yet (a dangling link), into `out`: the temporary file and the rename
/// must happen there, or the rename would replace the link and leave its
/// target as it was. *descriptor is set (and `out` left unset) when the
/// chain reaches a link to an open descriptor (is_proc_link). 0, or an
/// errno (a loop, a name too long).
static int link_target(const char* path, char* out, size_t cap, int* descriptor) {
  char cur[4096], next[4096];
  *descriptor = 0;
  if (strlen(path) >= sizeof cur) return ENAMETOOLONG;
  strcpy(cur, path);
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st;
    int is_link = lstat(cur, &st) == 0 && S_ISLNK(st.st_mode);
    if (is_link && is_proc_link(cur)) {
      *descriptor = 1;
      return 0;
    }
    if (!is_link) {
      // The end of the chain: an existing file (realpath settles its
      // directories' links too) or a name still to be created.
      if (realpath(cur, out) != NULL) return 0;
      if (strlen(cur) >= cap) return ENAMETOOLONG;
      strcpy(out, cur);
      return 0;
    }
    ssize_t n = readlink(cur, next, sizeof next - 1);
    if (n < 0) return errno;
    next[n] = '\0';
    if (next[0] == '/') {
      strcpy(cur, next);
    } else {  // relative to the link's own directory
      const char* slash = strrchr(cur, '/');
      int dir = slash == NULL ? 0 : (int)(slash - cur) + 1;
      if ((size_t)dir + (size_t)n >= sizeof cur) return ENAMETOOLONG;
      memmove(cur + dir, next, (size_t)n + 1);
    }
  }
  return ELOOP;
}

/// Makes the last six characters of `name` ("XXXXXX" in a template) into
/// the next candidate of a sequence seeded by *x (0 to start one).
static void next_name(char* name, uint64_t* x) {
  static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  if (*x == 0) {
    *x = ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)name ^ (uint64_t)time(NULL);
    *x |= 1;  // xorshift never leaves 0
  }
  size_t len = strlen(name);
  for (size_t i = len - 6; i < len; ++i) {
    *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;  // xorshift: names need only differ
    name[i] = letters[*x % 62];
  }
}

/// Creates the file `name` with its "XXXXXX" made into a free name, as
/// open(O_CREAT | O_EXCL, mode) does: unlike mkstemp's 0600 (and a chmod
/// after), the kernel applies the umask or the directory's default ACL
/// exactly as for any new file. The descriptor, or -1 (errno set).
static int create_named(char* name, mode_t mode) {
  uint64_t x = 0;
  for (int attempt = 0; attempt < 100; ++attempt) {
    next_name(name, &x);
    int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

#if defined(O_TMPFILE)
/// Links the unnamed file `fd` under `name` with its last six characters
/// ("XXXXXX" in the template) made into a free name. 0, or an errno.
static int link_fd(int fd, char* name) {
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
  uint64_t x = 0;
  for (int attempt = 0; attempt < 100; ++attempt) {
    next_name(name, &x);
    if (linkat(AT_FDCWD, proc, AT_FDCWD, name, AT_SYMLINK_FOLLOW) == 0) return 0;
    if (errno != EEXIST) return errno;
  }
  return EEXIST;
}
#endif

/// A file without a name (O_TMPFILE) in the directory of path[0, dir_len),
/// which the commit names after `name_template` ("...XXXXXX", left as it is),
/// or -1 where there is none (then a named one is made). A file system may
/// make such files and still refuse to link them (FUSE, some sandboxes, no
/// /proc): one is linked and removed first, so that the commit does not
/// find that out with the output written.
static int open_unnamed(const char* path, size_t dir_len, mode_t mode, char* name_template) {
#if defined(O_TMPFILE)
  char dir[4096];
  if (dir_len >= sizeof dir) return -1;
  memcpy(dir, dir_len == 0 ? "." : path, dir_len == 0 ? 1 : dir_len);
  dir[dir_len == 0 ? 1 : dir_len] = '\0';
  int probe = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
  if (probe < 0) return -1;
  int linked = link_fd(probe, name_template) == 0;
  if (linked) unlink(name_template);
  close(probe);
  memcpy(name_template + strlen(name_template) - 6, "XXXXXX", 6);
  return linked ? open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, mode) : -1;
#else
  (void)path;
  (void)dir_len;
  (void)mode;
  (void)name_template;
  return -1;
#endif
}

/// Gives the unnamed file its name after sink->tmp_path's template, to be
/// renamed over the target. 0, or an errno.
static int link_unnamed(struct sl_sink* sink) {
#if defined(O_TMPFILE)
  int e = link_fd(sink->fd, sink->tmp_path);
  if (e == 0) sink->unnamed = 0;  // named now: removed like a named one on error
  return e;
#else
  (void)sink;
  return ENOTSUP;
#endif
}

/// Gives the file that replaces `old` (open as `fd`: a directory too) the old one's owner and
/// group where this process may (root; or the group, for a member of it), as
/// GNU sed -i does, and its mode. The set-user-ID and set-group-ID bits
/// are kept only when both owner and group were: a root run must not turn
/// another user's setuid file into a setuid root one. Best effort: the
/// data is right either way.
void sl_keep_owner_and_mode(int fd, const struct stat* old) {
  if (fchown(fd, old->st_uid, old->st_gid) != 0) (void)fchown(fd, (uid_t)-1, old->st_gid);
  struct stat now;
  mode_t mode = old->st_mode & 07777;
  if (fstat(fd, &now) != 0 || now.st_uid != old->st_uid || now.st_gid != old->st_gid) {
    mode &= (mode_t)~(S_ISUID | S_ISGID);
  }
  (void)fchmod(fd, mode);  // after fchown, which clears both bits
}

static int open_file_sink(struct sl_sink* sink, const char* path, struct sluice_error* error) {
  const struct sluice_allocator* alloc = sink->alloc;
  struct stat link;
  char resolved[4096];
  if (lstat(path, &link) == 0 && S_ISLNK(link.st_mode)) {
    int descriptor = 0;
    int e = link_target(path, resolved, sizeof resolved, &descriptor);
    if (descriptor) {
      // /dev/stdout, /dev/fd/N, /proc/self/fd/N: whatever the descriptor is
      // (a redirected file, a pipe), it is written in place, as cp does.
      // Other links, under /dev too (/dev/shm), are followed to what they
      // name, and a regular file there is replaced atomically.
      sink->fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
      if (sink->fd < 0) return errno_error(error, sink->name, "cannot open for writing", errno);
      grow_pipe(sink->fd);
      struct stat st;
      sink->is_pipe = fstat(sink->fd, &st) == 0 && S_ISFIFO(st.st_mode);
      sink->in_place = 1;
      return 0;
    }
    if (e != 0) return errno_error(error, sink->name, "cannot follow the symbolic link", e);
    path = resolved;
  }
  struct stat existing;
  int exists = stat(path, &existing) == 0;
  if (exists && S_ISDIR(existing.st_mode))
    return sl_error_set(error, EISDIR, "%s: is a directory", sink->name);
  if (exists && !S_ISREG(existing.st_mode)) {
    // A device, FIFO or socket (/dev/null, a named pipe): written in place,
    // as cp does. Renaming a temporary file over it would replace the device
    // with a plain file; there is nothing to commit atomically anyway.
    sink->fd = open(path, O_WRONLY | O_CLOEXEC);
    if (sink->fd < 0) return errno_error(error, sink->name, "cannot open for writing", errno);
    grow_pipe(sink->fd);
    sink->is_pipe = S_ISFIFO(existing.st_mode);
    sink->in_place = 1;
    return 0;
  }
  // The rename needs only the directory's permission; a file the caller may
  // not write (mode 0444, another user's) is refused as cp, pyarrow and
  // open(O_WRONLY) refuse it. Root passes, as with them.
  if (exists && faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) != 0 &&
      (errno == EACCES || errno == EPERM || errno == EROFS)) {
    return errno_error(error, sink->name, "cannot replace the existing file", errno);
  }
  const char* slash = strrchr(path, '/');
  size_t dir_len = slash == NULL ? 0 : (size_t)(slash - path) + 1;  // keeps the '/'
  const char* base = path + dir_len;
  if (base[0] == '\0') return sl_error_set(error, EINVAL, "%s: not a file name", sink->name);
  // ".<name>.tmp-XXXXXX" is 12 bytes longer than the name: a name that
  // fits but that one does not (244-255 bytes) gets a short one instead.
  static const char suffix[] = ".tmp-XXXXXX";
  static const char short_name[] = ".sluice.tmp-XXXXXX";
  size_t base_len = strlen(base);
  if (base_len > NAME_MAX) {  // refused now, not by the rename after the work
    return errno_error(error, sink->name, "cannot create the file", ENAMETOOLONG);
  }
  int long_name = 1 + base_len + strlen(suffix) > NAME_MAX;
  size_t n = dir_len + (long_name ? strlen(short_name) : 1 + base_len + strlen(suffix)) + 1;
  sink->target = sl_strdup(alloc, path);
  if (sink->target == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", sink->name);
  // Filled at once: sink_free sizes the string with strlen.
  sink->tmp_path = sl_alloc(alloc, n);
  if (sink->tmp_path == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", sink->name);
  if (long_name) {
    snprintf(sink->tmp_path, n, "%.*s%s", (int)dir_len, path, short_name);
  } else {
    snprintf(sink->tmp_path, n, "%.*s.%s%s", (int)dir_len, path, base, suffix);
  }
  // A new file is made as open(path, O_CREAT, 0666) would make it (umask or
  // the directory's default ACL); a replacement stays private until it gets
  // the old file's owner and mode.
  struct stat st;
  int replacing = stat(path, &st) == 0;
  mode_t mode = replacing ? 0600 : 0666;
  sink->fd = open_unnamed(path, dir_len, mode, sink->tmp_path);
  sink->unnamed = sink->fd >= 0;
  if (sink->fd < 0) sink->fd = create_named(sink->tmp_path, mode);
  if (sink->fd < 0) {
    int e = errno;
    free_string(alloc, sink->tmp_path);
    sink->tmp_path = NULL;
    char what[64 + 256], dir[256];
    snprintf(what, sizeof what, "cannot create a temporary file in '%s'",
             sl_escaped(dir_len == 0 ? "." : path, dir_len == 0 ? 1 : dir_len, '\'', dir,
                        sizeof dir));
    return errno_error(error, sink->name, what, e);
  }
  if (replacing) sl_keep_owner_and_mode(sink->fd, &st);
  return 0;
}

/// An s3:// output is staged in a file of its own in TMPDIR (or /tmp), so
/// that a failed write never reaches the bucket. mkstemp makes a new file
/// (no link or device another user left under a known name is followed),
/// and it is unlinked at once: nothing is left behind, however the process
/// ends.
int sl_staging_file(const char* name, int* fd, struct sluice_error* error) {
  const char* dir = staging_dir();
  char staging[4096];
  if ((size_t)snprintf(staging, sizeof staging, "%s/.sluice-s3-upload.tmp-XXXXXX", dir) >=
      sizeof staging)
    return sl_error_set(error, ENAMETOOLONG, "%s: TMPDIR is too long", name);
  *fd = mkstemp(staging);
  if (*fd < 0) {
    char what[64 + 4096], shown[4096];
    snprintf(what, sizeof what, "cannot create the staging file in '%s' (TMPDIR)",
             sl_escaped(dir, strlen(dir), '\'', shown, sizeof shown));
    return errno_error(error, name, what, errno);
  }
  unlink(staging);
  return 0;
}

int sl_sink_copy_staged(const struct sl_sink* sink, int dst, int64_t offset, int64_t* size,
                        struct sluice_error* error) {
  if (!sink->is_s3 || !sink->finished) {
    return sl_error_set(error, EINVAL, "%s: not a finished staged object", sink->name);
  }
  *size = sink->file_size;
  int64_t in = 0, out = offset, left = sink->file_size;
#if defined(__linux__) && defined(SPLICE_F_MOVE)
  while (left > 0) {  // in the kernel where the file system can
    loff_t i = (loff_t)in, o = (loff_t)out;
    ssize_t n = copy_file_range(sink->fd, &i, dst, &o, (size_t)left, 0);
    if (n <= 0) break;  // not across these file systems, or an error: by hand below
    in += n, out += n, left -= n;
  }
#endif
  if (left == 0) return 0;
  size_t cap = SL_SINK_BUFFER;
  uint8_t* buf = sl_alloc(sink->alloc, cap);
  if (buf == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", sink->name);
  int rc = 0;
  while (rc == 0 && left > 0) {
    ssize_t n = pread(sink->fd, buf, (size_t)(left < (int64_t)cap ? left : (int64_t)cap), (off_t)in);
    ssize_t m = n > 0 ? pwrite(dst, buf, (size_t)n, (off_t)out) : n;
    if (n <= 0 || m != n) {
      rc = file_error(sink, error, "cannot copy the staged object",
                      n == 0 || m >= 0 ? EIO : errno);
    } else {
      in += n, out += n, left -= n;
    }
  }
  sl_free(sink->alloc, buf, cap);
  return rc;
}

int sl_sink_open(const char* location, const struct sluice_allocator* alloc,
                 struct sl_sink** out, struct sluice_error* error) {
  return sl_sink_open_remote(location, NULL, alloc, out, error);
}

int sl_sink_open_remote(const char* location, const struct sl_remote_options* remote,
                        const struct sluice_allocator* alloc, struct sl_sink** out,
                        struct sluice_error* error) {
  *out = NULL;
  if (location == NULL || location[0] == '\0') {
    return sl_error_set(error, EINVAL, "no output location given (a path or \"-\")");
  }
  // Messages show the location on one line, as the read side does.
  char shown[4096];
  sl_location_shown(location, shown, sizeof shown);
  const char* colon = strstr(location, "://");
  const char* path = location;
  char file_path[4096];
  int is_s3 = 0;
  if (strncmp(location, "file://", 7) == 0) {
    SL_RETURN_NOT_OK(sl_file_url_path(location, file_path, sizeof file_path, error));
    path = file_path;
  } else if (strncmp(location, "s3://", 5) == 0) {
    // A key ending in '/' is a directory marker that listings skip: refused
    // before any work, as a local path ending in '/' is.
    if (location[strlen(location) - 1] == '/') {
      return sl_error_set(error, EINVAL, "%s: not a file name (an S3 key ending in '/' names "
                          "a directory)", shown);
    }
    is_s3 = 1;
  } else if (colon != NULL) {
    char scheme[64];
    return sl_error_set(error, ENOTSUP, "%s: writing to '%s' locations is not supported yet",
                        shown, sl_escaped(location, (size_t)(colon - location), '\'', scheme,
                                          sizeof scheme));
  }
  struct sl_sink* sink = sl_calloc(alloc, 1, sizeof *sink);
  if (sink == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", shown);
  sink->alloc = alloc;
  sink->remote = remote;
  sink->fd = -1;
  sink->name = sl_strdup(alloc, shown);
  sink->buf = sl_alloc(alloc, SL_SINK_BUFFER);
  if (sink->name == NULL || sink->buf == NULL) {
    sink_free(sink);
    return sl_error_set(error, ENOMEM, "%s: out of memory", shown);
  }
  if (strcmp(location, "-") == 0) {
    sink->is_stdout = 1;
    sink->fd = STDOUT_FILENO;
    grow_pipe(sink->fd);
    struct stat st;
    sink->is_pipe = fstat(sink->fd, &st) == 0 && S_ISFIFO(st.st_mode);
  } else if (is_s3) {
    sink->is_s3 = 1;
    sink->staging_dir = sl_strdup(alloc, staging_dir());
    sink->target = sl_strdup(alloc, location);
    int rc = sink->staging_dir == NULL || sink->target == NULL
                 ? sl_error_set(error, ENOMEM, "%s: out of memory", shown)
                 : sl_staging_file(sink->name, &sink->fd, error);
    if (rc != 0) {
      sink_free(sink);
      return rc;
    }
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

/// The buffer again after sl_sink_idle freed it.
static int ensure_buffer(struct sl_sink* sink, struct sluice_error* error) {
  if (sink->buf != NULL) return 0;
  sink->buf = sl_alloc(sink->alloc, SL_SINK_BUFFER);
  return sink->buf != NULL ? 0 : sl_error_set(error, ENOMEM, "%s: out of memory", sink->name);
}

int sl_sink_write(struct sl_sink* sink, const void* data, int64_t n, struct sluice_error* error) {
  if (n < 0) return sl_error_set(error, EINVAL, "%s: negative write length", sink->name);
  if (n == 0) return 0;
  SL_RETURN_NOT_OK(ensure_buffer(sink, error));
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

/* ---- Deferred copies ---------------------------------------------------- */

/// One round of pending copies, shared by the threads running it.
struct copy_round {
  const struct sl_sink_copy* copies;
  int n_copies;
  const struct sl_sink_source* sources;
  int dst;
  int64_t total;      // bytes of all runs
  atomic_llong next;  // next byte (of the runs end to end) to hand out
  atomic_int failed;  // the first error's errno, 0 if none
  const char* what;   // what failed (written by the thread that set `failed`)
  const struct sl_remote_options* remote;  // its cancel is polled per piece (NULL: none)
};

struct copy_worker {
  struct copy_round* round;
  uint8_t* buf;
  size_t buf_size;
  pthread_t thread;
};

static void copy_failed(struct copy_round* r, int errnum, const char* what) {
  int none = 0;
  if (atomic_compare_exchange_strong(&r->failed, &none, errnum)) r->what = what;
}

/// Copies bytes [src_off, src_off + len) of `in` to `dst_off` of the sink,
/// through the worker's buffer. Not copy_file_range: that copies page by page
/// of the source, every page under the destination's inode lock, so threads
/// only queue for it; read(2) copies in parallel, outside that lock, and
/// write(2) then fills whole destination pages. Converting a 1.3 GB IPC file
/// on ext4: 0.40 s on one thread against 0.63 s with copy_file_range, 0.22 s
/// on two against 0.45 s.
static int copy_range(struct copy_worker* w, int in, int64_t src_off, int64_t dst_off,
                      int64_t len) {
  struct copy_round* r = w->round;
  while (len > 0) {
    if (atomic_load_explicit(&r->failed, memory_order_relaxed) != 0) return -1;
    size_t want = len > (int64_t)w->buf_size ? w->buf_size : (size_t)len;
    ssize_t n = pread(in, w->buf, want, (off_t)src_off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      copy_failed(r, n < 0 ? errno : EIO,
                  n < 0 ? "cannot read a source file"
                        : "a source file is shorter than when it was written (changed?)");
      return -1;
    }
    for (ssize_t done = 0; done < n;) {
      ssize_t k = pwrite(r->dst, w->buf + done, (size_t)(n - done), (off_t)(dst_off + done));
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) {
        copy_failed(r, k < 0 ? errno : EIO, "write failed");
        return -1;
      }
      done += k;
    }
    src_off += n;
    dst_off += n;
    len -= n;
  }
  return 0;
}

/// Takes pieces of SL_SINK_COPY_CHUNK bytes of the runs (laid end to end)
/// until none are left or a copy failed.
static void copy_work(struct copy_worker* w) {
  struct copy_round* r = w->round;
  for (;;) {
    int64_t at = atomic_fetch_add(&r->next, SL_SINK_COPY_CHUNK);
    if (at >= r->total || atomic_load_explicit(&r->failed, memory_order_relaxed) != 0) return;
    if (sl_remote_cancelled(r->remote)) {
      copy_failed(r, ECANCELED, "interrupted");
      return;
    }
    int64_t end = r->total - at < SL_SINK_COPY_CHUNK ? r->total : at + SL_SINK_COPY_CHUNK;
    // The last run that starts at or before `at`.
    int lo = 0, hi = r->n_copies - 1;
    while (lo < hi) {
      int mid = lo + (hi - lo + 1) / 2;
      if (r->copies[mid].before <= at) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    for (int i = lo; i < r->n_copies && at < end; i++) {
      const struct sl_sink_copy* c = &r->copies[i];
      int64_t skip = at - c->before;
      int64_t len = c->len - skip < end - at ? c->len - skip : end - at;
      if (copy_range(w, r->sources[c->source].fd, c->src_off + skip, c->dst_off + skip, len) != 0) {
        return;
      }
      at += len;
    }
  }
}

static void* copy_thread(void* arg) {
  copy_work(arg);
  return NULL;
}

/// Copies the pending runs (on up to SL_SINK_MAX_THREADS threads, this one
/// included) and forgets them, copied or not.
static int run_copies(struct sl_sink* sink, struct sluice_error* error) {
  if (sink->n_copies == 0) return 0;
  int rc = flush(sink, error);  // sink->buf is free from here on
  if (rc == 0) rc = ensure_buffer(sink, error);
  if (rc != 0) {
    drop_copies(sink);
    return rc;
  }
  const struct sl_sink_copy* last = &sink->copies[sink->n_copies - 1];
  struct copy_round r = {.copies = sink->copies,
                         .n_copies = sink->n_copies,
                         .sources = sink->sources,
                         .dst = sink->fd,
                         .total = last->before + last->len,
                         .what = NULL,
                         .remote = sink->remote};
  atomic_init(&r.next, 0);
  atomic_init(&r.failed, 0);
#if defined(__linux__)
  // Blocks for the holes first: filling allocated (unwritten) extents costs
  // ext4 much less than delayed allocation page by page (0.37 s -> 0.28 s for
  // 1.3 GB on two threads). Best effort: where unsupported (or the disk is
  // full) the writes allocate, or fail, as usual.
  for (int i = 0; i < sink->n_copies; i++) {
    const struct sl_sink_copy* c = &sink->copies[i];
    if (fallocate(sink->fd, 0, (off_t)c->dst_off, (off_t)c->len) != 0) break;
  }
#endif
  int64_t chunks = (r.total + SL_SINK_COPY_CHUNK - 1) / SL_SINK_COPY_CHUNK;
  int n = sl_cores(SL_SINK_MAX_THREADS);
  if (n > chunks) n = (int)chunks;
  // A buffer per thread (SL_SINK_COPY_BUFFER); without memory for them, the
  // sink's own buffer, shared.
  size_t extra = (size_t)(n - 1) * SL_SINK_COPY_BUFFER;
  uint8_t* more = extra > 0 ? sl_alloc(sink->alloc, extra) : NULL;
  struct copy_worker w[SL_SINK_MAX_THREADS];
  for (int i = 0; i < n; i++) {
    w[i].round = &r;
    if (extra == 0 || more != NULL) {
      w[i].buf = i == 0 ? sink->buf : more + (size_t)(i - 1) * SL_SINK_COPY_BUFFER;
      w[i].buf_size = SL_SINK_COPY_BUFFER;
    } else {
      w[i].buf_size = SL_SINK_BUFFER / (size_t)n;
      w[i].buf = sink->buf + (size_t)i * w[i].buf_size;
    }
  }
  // Helpers take no signals: those stay with the caller's threads. One that
  // cannot be started only leaves more pieces to the others.
  int started = 1;
  if (n > 1) {
    sigset_t all, old;
    sigfillset(&all);
    int masked = pthread_sigmask(SIG_SETMASK, &all, &old) == 0;
    while (started < n && pthread_create(&w[started].thread, NULL, copy_thread, &w[started]) == 0) {
      started++;
    }
    if (masked) pthread_sigmask(SIG_SETMASK, &old, NULL);
  }
  copy_work(&w[0]);
  for (int i = 1; i < started; i++) pthread_join(w[i].thread, NULL);
  sl_free(sink->alloc, more, extra);
  drop_copies(sink);
  int e = atomic_load(&r.failed);
  return e == 0 ? 0 : file_error(sink, error, r.what, e);
}

/// Takes bytes [offset, offset + n) of `fd` as a run to copy later, leaving a
/// hole for them. *taken is 0 when they must be copied now instead (not a
/// regular readable file, the range is past its end, no descriptor left).
static int defer_copy(struct sl_sink* sink, int fd, int64_t offset, int64_t n, int* taken,
                      struct sluice_error* error) {
  *taken = 0;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || offset > (int64_t)st.st_size - n) return 0;
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || (flags & O_ACCMODE) == O_WRONLY) return 0;
  if (sink->copies == NULL) {
    sink->copies = sl_alloc(sink->alloc, SL_SINK_MAX_COPIES * sizeof *sink->copies);
    sink->sources = sl_alloc(sink->alloc, SL_SINK_MAX_SOURCES * sizeof *sink->sources);
    if (sink->copies == NULL || sink->sources == NULL) {
      sl_free(sink->alloc, sink->copies, SL_SINK_MAX_COPIES * sizeof *sink->copies);
      sl_free(sink->alloc, sink->sources, SL_SINK_MAX_SOURCES * sizeof *sink->sources);
      sink->copies = NULL;
      sink->sources = NULL;
      return 0;  // copied now, which needs no memory
    }
  }
  int rc = flush(sink, error);
  if (rc != 0) return rc;
  int src = -1;
  for (int i = 0; i < sink->n_sources && src < 0; i++) {
    if (sink->sources[i].dev == st.st_dev && sink->sources[i].ino == st.st_ino) src = i;
  }
  int64_t dst_off = sink->position;
  if (sink->n_copies > 0) {
    struct sl_sink_copy* last = &sink->copies[sink->n_copies - 1];
    if (src >= 0 && last->source == src && last->src_off + last->len == offset &&
        last->dst_off + last->len == dst_off) {
      if (lseek(sink->fd, (off_t)(dst_off + n), SEEK_SET) < 0) {
        return file_error(sink, error, "seek failed", errno);
      }
      last->len += n;  // the common case: the next buffer of the same file
      *taken = 1;
      return 0;
    }
  }
  if (sink->n_copies == SL_SINK_MAX_COPIES || (src < 0 && sink->n_sources == SL_SINK_MAX_SOURCES)) {
    rc = run_copies(sink, error);
    if (rc != 0) return rc;
    src = -1;
  }
  if (src < 0) {
    int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (own < 0) return 0;  // out of descriptors: copied now
    src = sink->n_sources++;
    sink->sources[src] = (struct sl_sink_source){.fd = own, .dev = st.st_dev, .ino = st.st_ino};
  }
  if (lseek(sink->fd, (off_t)(dst_off + n), SEEK_SET) < 0) {
    return file_error(sink, error, "seek failed", errno);
  }
  int64_t before = 0;
  if (sink->n_copies > 0) {
    const struct sl_sink_copy* last = &sink->copies[sink->n_copies - 1];
    before = last->before + last->len;
  }
  sink->copies[sink->n_copies++] = (struct sl_sink_copy){
      .src_off = offset, .dst_off = dst_off, .len = n, .before = before, .source = src};
  *taken = 1;
  return 0;
}

int sl_sink_write_from_file(struct sl_sink* sink, int fd, int64_t offset, const void* data,
                            int64_t n, struct sluice_error* error) {
  if (!sink->is_stdout && !sink->no_kernel_copy && n >= SL_SINK_DEFER_MIN && fd >= 0 &&
      offset >= 0) {
    int taken = 0;
    int rc = defer_copy(sink, fd, offset, n, &taken, error);
    if (rc != 0) return rc;
    if (taken) {
      sink->position += n;
      return 0;
    }
  }
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

int sl_sink_compress(struct sl_sink* sink, enum sl_compression kind,
                     struct sluice_error* error) {
  if (kind == SL_COMPRESS_NONE || sink->compressor != NULL) return 0;
  if (sink->position > 0) {
    return sl_error_set(error, EINVAL, "%s: compression must start before the first byte",
                        sink->name);
  }
  sink->no_kernel_copy = 1;  // every byte goes through the compressor
  return sl_compressor_open(kind, sink->name, sink->alloc, write_compressed, sink,
                            &sink->compressor, error);
}

void sl_sink_skip_fsync(struct sl_sink* sink) { sink->no_fsync = 1; }

/// fsyncs the directory that holds `path`, so that the rename that made the
/// file visible survives a crash too. Best effort: the file is in place by
/// now, and some file systems refuse to sync a directory.
static void sync_directory(const struct sluice_allocator* alloc, const char* path) {
  const char* slash = strrchr(path, '/');
  size_t n = slash == NULL ? 1 : slash == path ? 1 : (size_t)(slash - path);
  char* dir = sl_alloc(alloc, n + 1);
  if (dir == NULL) return;
  memcpy(dir, slash == NULL ? "." : path, n);
  dir[n] = '\0';
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
  sl_free(alloc, dir, n + 1);
}

int sl_sink_idle(struct sl_sink* sink, struct sluice_error* error) {
  if (sink->finished) return 0;
  int rc = flush(sink, error);
  if (rc == 0) rc = run_copies(sink, error);
  if (rc == 0 && sink->compressor == NULL) {
    sl_free(sink->alloc, sink->buf, SL_SINK_BUFFER);
    sink->buf = NULL;
  }
  return rc;
}

int sl_sink_finish(struct sl_sink* sink, struct sluice_error* error) {
  if (sink->finished) return 0;
  int rc = flush(sink, error);
  if (rc == 0) rc = run_copies(sink, error);
  if (rc == 0 && sink->compressor != NULL) rc = sl_compressor_finish(sink->compressor, error);
  if (rc == 0) {
    sink->finished = 1;
    sl_free(sink->alloc, sink->buf, SL_SINK_BUFFER);
    sink->buf = NULL;
    // The file's size, then the compressor's state goes too (a zstd
    // context holds megabytes; a partitioned write may keep many files).
    if (sink->compressor != NULL) {
      sink->file_size = sl_compressor_output_bytes(sink->compressor);
      sl_compressor_free(sink->compressor);
      sink->compressor = NULL;
    } else {
      sink->file_size = sink->position;
    }
  }
  return rc;
}

int sl_sink_commit(struct sl_sink* sink, struct sluice_error* error) {
  int rc = sl_sink_finish(sink, error);
  if (sink->is_stdout) {
    sink_free(sink);
    return rc;
  }
  // Last call for a cancel: past this point the output is committed (an S3
  // multipart upload polls it on until its CompleteMultipartUpload).
  if (rc == 0) rc = sl_sink_cancelled(sink, error);
  if (rc == 0 && sink->is_s3) {
    rc = sl_s3_upload_file(sink->target, sink->remote, sink->fd, 0, sink->file_size, sink->alloc,
                           error);
  }
  // A local file reaches the disk before the rename makes it visible: after
  // a crash the target holds the old file or the whole new one, never a
  // renamed file whose blocks were not written yet. (S3's staging file is
  // uploaded; devices and FIFOs have nothing to commit.)
  int durable = !sink->is_s3 && !sink->in_place && !sink->no_fsync;
  if (rc == 0 && durable && fsync(sink->fd) != 0) {
    rc = errno_error(error, sink->name, "cannot sync the file to disk", errno);
  }
  if (rc == 0 && sink->unnamed) {
    int e = link_unnamed(sink);
    if (e != 0) rc = errno_error(error, sink->name, "cannot name the finished file", e);
  }
  // close() can report a deferred write error (NFS, quotas): check it.
  if (close(sink->fd) != 0 && rc == 0) rc = errno_error(error, sink->name, "close failed", errno);
  sink->fd = -1;
  if (sink->in_place) {
    sink_free(sink);
    return rc;
  }
  if (rc == 0 && !sink->is_s3 && rename(sink->tmp_path, sink->target) != 0) {
    rc = errno_error(error, sink->name, "cannot rename the temporary file into place", errno);
  }
  if (rc == 0 && durable) sync_directory(sink->alloc, sink->target);
  if (rc != 0 && sink->tmp_path != NULL && !sink->unnamed) unlink(sink->tmp_path);
  sink_free(sink);
  return rc;
}

void sl_sink_abort(struct sl_sink* sink) {
  if (sink == NULL) return;
  // A stream (standard output, a pipe, a device) already has the bytes
  // flushed before: what the writer wrote since and is still gathered here
  // goes out too, so that the output ends where a message or block the
  // writer finished ends, not after the header of one whose body was
  // gathered (a reader then fails on a truncated body instead of seeing the
  // last whole one). Compressed, a partial frame is no better: dropped.
  if ((sink->is_stdout || sink->in_place) && sink->compressor == NULL) {
    struct sluice_error ignored;
    (void)flush(sink, &ignored);
  }
  if (!sink->is_stdout) {
    if (sink->fd >= 0) close(sink->fd);
    if (sink->tmp_path != NULL && !sink->unnamed) unlink(sink->tmp_path);
  }
  sink_free(sink);
}
