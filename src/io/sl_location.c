// Locations that name many objects (sl_location.h): the dispatch between
// S3 listing, the local directory walk and single objects, and the list the
// names are gathered in.
//
// The local walk uses opendir/readdir/stat. It follows symbolic links (to
// files and to directories, as `find -L` does) but never enters a directory
// that is already on the path from the walk's root to where it stands, so a
// link back to an ancestor ends that branch instead of looping. Two links to
// one directory from different places list its files under both names.
// Only regular files are listed: FIFOs, sockets and devices are left out, and
// so are dangling links (they name no object). A backslash escapes the
// character after it in a glob; a location whose glob characters are all
// escaped (`run\[1\].csv`) is the one object named without the escapes
// (sl_location_is_escaped); one with no `\` before a glob character is
// taken literally, backslashes included.
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "../core/sl_alloc.h"
#include "../core/sl_error.h"
#include "sl_location.h"
#include "sl_source.h"

static int has_prefix(const char* s, const char* prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

static const char* strip_file_scheme(const char* location) {
  if (!has_prefix(location, "file://")) return location;
  location += strlen("file://");
  return has_prefix(location, "localhost/") ? location + strlen("localhost") : location;
}

static int hex_digit(char c) {
  return c >= '0' && c <= '9' ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

static int is_glob_char(char c) { return c == '*' || c == '?' || c == '['; }

/// A file:// URL's path, %XX-decoded into out; with `as_pattern`, a glob
/// character, ']' or '\' spelled %XX is escaped with '\', as in the URL it
/// is a literal character of a name, not part of a glob.
static int decode_file_url(const char* location, int as_pattern, char* out, size_t cap,
                           struct sluice_error* error) {
  const char* p = strip_file_scheme(location);
  if (p[0] == '\0') return sl_error_set(error, EINVAL, "%s: empty path", location);
  size_t n = 0;
  for (; *p != '\0'; ++p) {
    char c = *p;
    int escape = 0;
    if (c == '%') {  // RFC 8089 / 3986: %XX is the byte XX
      int hi = hex_digit(p[1]), lo = hi < 0 ? -1 : hex_digit(p[2]);
      if (lo < 0 || (hi == 0 && lo == 0)) {
        return sl_error_set(error, EINVAL, "%s: bad %%-escape at character %zu (a %% is %%25)",
                            location, (size_t)(p - location));
      }
      c = (char)(hi * 16 + lo);
      p += 2;
      escape = as_pattern && (is_glob_char(c) || c == ']' || c == '\\');
    }
    if (n + 1 + escape >= cap) return sl_error_set(error, ENAMETOOLONG, "%s: path too long", location);
    if (escape) out[n++] = '\\';
    out[n++] = c;
  }
  out[n] = '\0';
  return 0;
}

int sl_file_url_path(const char* location, char* out, size_t cap, struct sluice_error* error) {
  return decode_file_url(location, 0, out, cap, error);
}

/// The local path `location` names: a file:// URL's path, %XX-decoded as
/// sl_source_open decodes it (into buf), else the location itself. NULL when
/// a file:// URL does not decode: it is then one object, whose open says why.
/// Before, directories and globs were looked for under the still-escaped
/// spelling (file:///d/sp%20ace/ "is a directory, not a file").
static const char* local_path(const char* location, char* buf, size_t cap) {
  if (!has_prefix(location, "file://")) return location;
  return sl_file_url_path(location, buf, cap, NULL) == 0 ? buf : NULL;
}

/// local_path as a glob pattern: in a file:// URL, %2A is a name's '*', not
/// a glob's (decode_file_url escapes it).
static const char* local_pattern(const char* location, char* buf, size_t cap) {
  if (!has_prefix(location, "file://")) return location;
  return decode_file_url(location, 1, buf, cap, NULL) == 0 ? buf : NULL;
}

/// 1 when [s, end) has a glob character that is not escaped with '\'.
static int has_glob(const char* s, const char* end) {
  for (; s < end; ++s) {
    if (*s == '\\' && s + 1 < end) {
      ++s;
    } else if (is_glob_char(*s)) {
      return 1;
    }
  }
  return 0;
}

/// End of the path segment starting at `p`: the next '/' that is not escaped.
static const char* segment_end(const char* p) {
  while (*p != '\0' && *p != '/') {
    if (*p == '\\' && p[1] != '\0') ++p;
    ++p;
  }
  return p;
}

/// 1 when [s, end) has a '\' before a glob character (or ']').
static int has_escaped_glob(const char* s, const char* end) {
  for (; s < end; ++s) {
    if (*s == '\\' && s + 1 < end) {
      ++s;
      if (is_glob_char(*s) || *s == ']') return 1;
    }
  }
  return 0;
}

int sl_location_is_escaped(const char* location) {
  if (location == NULL || location[0] == '\0' || sl_location_is_http(location)) return 0;
  size_t n = strlen(location);
  if (has_glob(location, location + n) || !has_escaped_glob(location, location + n)) return 0;
  if (has_prefix(location, "s3://")) return location[n - 1] != '/';
  char buf[4096];
  const char* path = local_path(location, buf, sizeof buf);
  if (path == NULL || strstr(path, "://") != NULL) return 0;
  // A file of this very spelling is that file, as a path that exists is
  // read whatever its characters (sl_location_is_many).
  struct stat st;
  return stat(path, &st) != 0;
}

int sl_location_is_many(const char* location) {
  if (location == NULL || location[0] == '\0') return 0;
  if (sl_location_is_http(location)) return 0;
  size_t n = strlen(location);
  if (has_prefix(location, "s3://")) {
    return has_glob(location, location + n) || location[n - 1] == '/';
  }
  char buf[4096];
  const char* path = local_path(location, buf, sizeof buf);
  if (path == NULL || path[0] == '\0' || strstr(path, "://") != NULL || strcmp(path, "-") == 0) {
    return 0;
  }
  // A path that exists is that file or directory, glob characters or not
  // (data[1].parquet), as DuckDB reads it; else they make it a glob.
  struct stat st;
  if (stat(path, &st) == 0) return S_ISDIR(st.st_mode);
  char pattern_buf[4096];
  const char* pattern = local_pattern(location, pattern_buf, sizeof pattern_buf);
  return pattern != NULL && has_glob(pattern, pattern + strlen(pattern));
}

void sl_location_list_free(struct sl_location_list* list, const struct sluice_allocator* alloc) {
  if (list == NULL) return;
  for (size_t i = 0; i < list->n; ++i) sl_free(alloc, list->names[i], strlen(list->names[i]) + 1);
  if (list->names != NULL) sl_free(alloc, list->names, list->cap * sizeof(char*));
  if (list->sizes != NULL) sl_free(alloc, list->sizes, list->cap * sizeof(int64_t));
  list->names = NULL;
  list->sizes = NULL;
  list->n = 0;
  list->cap = 0;
}

int sl_location_list_add(struct sl_location_list* list, const char* name, size_t n,
                         int64_t size, const struct sluice_allocator* alloc) {
  if (list->n == list->cap) {
    size_t cap = list->cap > 0 ? list->cap : 8;
    size_t name_bytes, size_bytes;
    if (sl_mul_size(cap, 2, &cap) != 0 || sl_mul_size(cap, sizeof(char*), &name_bytes) != 0 ||
        sl_mul_size(cap, sizeof(int64_t), &size_bytes) != 0) {
      return ENOMEM;
    }
    char** names = sl_alloc(alloc, name_bytes);
    int64_t* sizes = sl_alloc(alloc, size_bytes);
    if (names == NULL || sizes == NULL) {
      if (names != NULL) sl_free(alloc, names, name_bytes);
      if (sizes != NULL) sl_free(alloc, sizes, size_bytes);
      return ENOMEM;
    }
    if (list->n > 0) {
      memcpy(names, list->names, list->n * sizeof(char*));
      memcpy(sizes, list->sizes, list->n * sizeof(int64_t));
    }
    if (list->names != NULL) sl_free(alloc, list->names, list->cap * sizeof(char*));
    if (list->sizes != NULL) sl_free(alloc, list->sizes, list->cap * sizeof(int64_t));
    list->names = names;
    list->sizes = sizes;
    list->cap = cap;
  }
  char* copy = sl_strndup(alloc, name, n);
  if (copy == NULL) return ENOMEM;
  list->sizes[list->n] = size > 0 ? size : 0;
  list->names[list->n++] = copy;
  return 0;
}

struct named_size {
  char* name;
  int64_t size;
};

static int compare_names(const void* a, const void* b) {
  // strcmp compares as unsigned char: bytewise order.
  return strcmp(((const struct named_size*)a)->name, ((const struct named_size*)b)->name);
}

int sl_location_list_sort(struct sl_location_list* list, const struct sluice_allocator* alloc) {
  if (list->n < 2) return 0;
  size_t bytes;
  if (sl_mul_size(list->n, sizeof(struct named_size), &bytes) != 0) return ENOMEM;
  struct named_size* pairs = sl_alloc(alloc, bytes);
  if (pairs == NULL) return ENOMEM;
  for (size_t i = 0; i < list->n; ++i) pairs[i] = (struct named_size){list->names[i], list->sizes[i]};
  qsort(pairs, list->n, sizeof *pairs, compare_names);
  for (size_t i = 0; i < list->n; ++i) {
    list->names[i] = pairs[i].name;
    list->sizes[i] = pairs[i].size;
  }
  sl_free(alloc, pairs, bytes);
  return 0;
}

// ---------------------------------------------------------------------------
// The local walk.

/// A directory on the path from the walk's root to the current one.
struct dir_frame {
  dev_t dev;
  ino_t ino;
  const struct dir_frame* parent;
};

struct walk {
  const struct sluice_allocator* alloc;
  struct sl_location_list* out;
  struct sluice_error* error;
  /// The current path: `prefix` (empty or ending with '/') then the path
  /// relative to the root; what open(2) is given.
  char* path;
  size_t len;
  size_t cap;
  size_t prefix_len;
  /// The glob for paths relative to the root; NULL keeps every file.
  const char* pattern;
  /// The pattern's segments, each a C string, for pruning directories that
  /// cannot lead to a match; `first_globstar` is the index of the first `**`
  /// (n_segments when there is none).
  char** segments;
  size_t n_segments;
  size_t first_globstar;
  /// The caller's cancel hook (NULL = none), asked when the walk starts and
  /// then at most every SL_SOURCE_CANCEL_POLL_MS (a hook may be slow to ask:
  /// Python's takes the GIL), between entries: a `**` over a big tree, or a
  /// slow file system, kept a Ctrl-C waiting until the whole walk ended.
  const struct sl_remote_options* remote;
  const char* location;
  struct timespec asked_at;
  int asked;
};

/// Whether the caller's hook says the walk is cancelled (then the error).
static int walk_cancelled(struct walk* w) {
  if (w->remote == NULL || w->remote->cancelled == NULL) return 0;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  int64_t ms = (int64_t)(now.tv_sec - w->asked_at.tv_sec) * 1000 +
               (now.tv_nsec - w->asked_at.tv_nsec) / 1000000;
  if (w->asked && ms < SL_SOURCE_CANCEL_POLL_MS) return 0;
  w->asked = 1;
  w->asked_at = now;
  if (!w->remote->cancelled(w->remote->cancelled_user)) return 0;
  return sl_error_set(w->error, ECANCELED, "%s: interrupted while listing (at '%s')",
                      w->location, w->len > 0 ? w->path : ".");
}

/// Makes room for `need` bytes in w->path.
static int path_reserve(struct walk* w, size_t need) {
  if (need <= w->cap) return 0;
  size_t cap = w->cap > 0 ? w->cap : 256;
  while (cap < need) {
    if (sl_mul_size(cap, 2, &cap) != 0) return ENOMEM;
  }
  char* fresh = sl_alloc(w->alloc, cap);
  if (fresh == NULL) return ENOMEM;
  if (w->path != NULL) {
    memcpy(fresh, w->path, w->len + 1);
    sl_free(w->alloc, w->path, w->cap);
  }
  w->path = fresh;
  w->cap = cap;
  return 0;
}

/// path := path (a directory) + '/' + name; no '/' right after the prefix.
static int path_push(struct walk* w, const char* name) {
  size_t n = strlen(name);
  int slash = w->len > w->prefix_len;
  size_t need;
  if (sl_add_size(w->len, n, &need) != 0 || sl_add_size(need, 2, &need) != 0) return ENOMEM;
  if (path_reserve(w, need) != 0) return ENOMEM;
  if (slash) w->path[w->len++] = '/';
  memcpy(w->path + w->len, name, n + 1);
  w->len += n;
  return 0;
}

static void path_truncate(struct walk* w, size_t len) {
  w->len = len;
  w->path[len] = '\0';
}

static int out_of_memory(struct walk* w) {
  return sl_error_set(w->error, ENOMEM, "out of memory listing '%s'", w->path);
}

/// Whether a directory at `depth` (0 = a child of the root) named `name` can
/// contain a file the pattern matches.
static int may_descend(const struct walk* w, size_t depth, const char* name) {
  if (w->pattern == NULL || depth >= w->first_globstar) return 1;
  return depth + 1 < w->n_segments && sl_glob_match(w->segments[depth], name);
}

static int walk_dir(struct walk* w, const char* root_name, size_t depth,
                    const struct dir_frame* frame);

/// Visits the entry whose path is in w->path.
static int visit_entry(struct walk* w, const struct dirent* entry, size_t depth,
                       const struct dir_frame* frame) {
  int is_file = 0;
#ifdef DT_REG
  if (entry->d_type == DT_REG) is_file = 1;
#else
  (void)entry;
#endif
  if (!is_file) {
    struct stat st;
    if (stat(w->path, &st) != 0) {
      int e = errno;
      // A dangling link, or an entry removed while we walk: no object.
      if (e == ENOENT) return 0;
      return sl_error_set(w->error, e, "cannot stat '%s': %s", w->path, strerror(e));
    }
    if (S_ISDIR(st.st_mode)) {
      for (const struct dir_frame* f = frame; f != NULL; f = f->parent) {
        if (f->dev == st.st_dev && f->ino == st.st_ino) return 0;  // a cycle
      }
      if (!may_descend(w, depth, entry->d_name)) return 0;
      struct dir_frame child = {st.st_dev, st.st_ino, frame};
      return walk_dir(w, NULL, depth + 1, &child);
    }
    if (!S_ISREG(st.st_mode)) return 0;
  }
  const char* relative = w->path + w->prefix_len;
  if (w->pattern != NULL && !sl_glob_match(w->pattern, relative)) return 0;
  // A file named "-" in the current directory would read as standard input.
  if (w->prefix_len == 0 && strcmp(relative, "-") == 0) {
    if (sl_location_list_add(w->out, "./-", 3, 0, w->alloc) != 0) return out_of_memory(w);
    return 0;
  }
  if (sl_location_list_add(w->out, w->path, w->len, 0, w->alloc) != 0) return out_of_memory(w);
  return 0;
}

/// Lists the directory whose path is in w->path; the root is opened by its
/// own name `root_name` (the prefix without its '/', or "."), subdirectories
/// (root_name NULL) by w->path, which moves when it grows.
static int walk_dir(struct walk* w, const char* root_name, size_t depth,
                    const struct dir_frame* frame) {
  DIR* dir = opendir(root_name != NULL ? root_name : w->path);
  if (dir == NULL) {
    int e = errno;
    return sl_error_set(w->error, e, "cannot read directory '%s': %s",
                        root_name != NULL ? root_name : w->path, strerror(e));
  }
  size_t base = w->len;
  int rc = 0;
  for (;;) {
    errno = 0;
    struct dirent* entry = readdir(dir);
    if (entry == NULL) {
      int e = errno;
      if (e != 0) {
        rc = sl_error_set(w->error, e, "cannot read directory '%s': %s",
                          root_name != NULL ? root_name : w->path, strerror(e));
      }
      break;
    }
    // Hidden files, '.', '..', _SUCCESS and _temporary: not data, unless
    // the glob names them itself (_x*.csv).
    if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) continue;
    if ((entry->d_name[0] == '.' || entry->d_name[0] == '_') &&
        (w->pattern == NULL || !sl_glob_names_hidden(w->pattern, depth, entry->d_name[0]))) {
      continue;
    }
    if (path_push(w, entry->d_name) != 0) {
      rc = out_of_memory(w);
      break;
    }
    rc = walk_cancelled(w);
    if (rc == 0) rc = visit_entry(w, entry, depth, frame);
    path_truncate(w, base);
    if (rc != 0) break;
  }
  closedir(dir);
  return rc;
}

/// Copies `n` bytes of `s` into the path as the walk's prefix: escapes
/// removed (when `unescape`), runs of '/' made one, and a '/' appended
/// unless it is empty.
static int set_prefix(struct walk* w, const char* s, size_t n, int unescape) {
  size_t need;
  if (sl_add_size(n, 2, &need) != 0 || path_reserve(w, need) != 0) return ENOMEM;
  size_t len = 0;
  for (size_t i = 0; i < n; ++i) {
    char c = s[i];
    if (unescape && c == '\\' && i + 1 < n) c = s[++i];
    if (c == '/' && len > 0 && w->path[len - 1] == '/') continue;
    w->path[len++] = c;
  }
  if (len > 0 && w->path[len - 1] != '/') w->path[len++] = '/';
  w->path[len] = '\0';
  w->len = len;
  w->prefix_len = len;
  return 0;
}

/// Copies the glob for relative paths, runs of '/' made one (a trailing '/'
/// becomes "/*/**": every file under the directories it matches, none of the
/// files it matches, as Python's glob and DuckDB match directories only),
/// and splits
/// a second copy into segments for may_descend.
static int set_pattern(struct walk* w, const char* s, char** pattern, size_t* pattern_cap,
                       char** split, size_t* split_cap) {
  size_t n = strlen(s);
  size_t cap;
  if (sl_add_size(n, 5, &cap) != 0) return ENOMEM;
  char* p = sl_alloc(w->alloc, cap);
  if (p == NULL) return ENOMEM;
  *pattern = p;
  *pattern_cap = cap;
  size_t len = 0;
  int after_separator = 0;  // the last byte copied is an unescaped '/'
  for (size_t i = 0; i < n; ++i) {
    if (s[i] == '\\' && i + 1 < n) {
      p[len++] = s[i++];
      p[len++] = s[i];
      after_separator = 0;
      continue;
    }
    if (s[i] == '/' && after_separator) continue;
    after_separator = s[i] == '/';
    p[len++] = s[i];
  }
  if (after_separator) {
    memcpy(p + len, "*/**", 4);
    len += 4;
  }
  p[len] = '\0';

  char* copy = sl_strndup(w->alloc, p, len);
  if (copy == NULL) return ENOMEM;
  *split = copy;
  *split_cap = len + 1;
  size_t count = 1;
  for (const char* q = copy; *(q = segment_end(q)) != '\0'; ++q) ++count;
  size_t bytes;
  if (sl_mul_size(count, sizeof(char*), &bytes) != 0) return ENOMEM;
  w->segments = sl_alloc(w->alloc, bytes);
  if (w->segments == NULL) return ENOMEM;
  w->n_segments = count;
  w->first_globstar = count;
  char* q = copy;
  for (size_t i = 0; i < count; ++i) {
    char* end = (char*)segment_end(q);
    int last = *end == '\0';
    *end = '\0';
    w->segments[i] = q;
    if (w->first_globstar == count && strcmp(q, "**") == 0) w->first_globstar = i;
    q = last ? end : end + 1;
  }
  w->pattern = p;
  return 0;
}

/// Walks `path` (a directory when `glob_start` is NULL; else a glob whose
/// first segment with a glob character starts at `glob_start`).
static int expand_local(const char* location, const char* path, const char* glob_start,
                        const struct sl_remote_options* remote,
                        const struct sluice_allocator* alloc, struct sl_location_list* out,
                        struct sluice_error* error) {
  struct walk w;
  memset(&w, 0, sizeof w);
  w.alloc = alloc;
  w.out = out;
  w.error = error;
  w.remote = remote;
  w.location = location;
  char* pattern = NULL;
  char* split = NULL;
  size_t pattern_cap = 0;
  size_t split_cap = 0;
  char* root = NULL;
  int rc = 0;
  if (glob_start == NULL) {
    rc = set_prefix(&w, path, strlen(path), 0);
  } else {
    rc = set_prefix(&w, path, (size_t)(glob_start - path), 1);
    if (rc == 0) rc = set_pattern(&w, glob_start, &pattern, &pattern_cap, &split, &split_cap);
  }
  if (rc != 0) {
    rc = sl_error_set(error, ENOMEM, "out of memory listing '%s'", path);
    goto done;
  }

  // The root's name for opendir: the prefix without its trailing '/'.
  if (w.len == 0) {
    root = sl_strdup(alloc, ".");
  } else {
    root = sl_strndup(alloc, w.path, w.len > 1 ? w.len - 1 : w.len);
  }
  if (root == NULL) {
    rc = out_of_memory(&w);
    goto done;
  }
  struct stat st;
  int e = stat(root, &st) != 0 ? errno : (S_ISDIR(st.st_mode) ? 0 : ENOTDIR);
  if (e != 0) {
    // A glob under a directory that does not exist matches nothing.
    if (glob_start != NULL && (e == ENOENT || e == ENOTDIR)) goto done;
    rc = sl_error_set(error, e, "cannot read directory '%s': %s", root, strerror(e));
    goto done;
  }
  struct dir_frame top = {st.st_dev, st.st_ino, NULL};
  rc = walk_cancelled(&w);
  if (rc == 0) rc = walk_dir(&w, root, 0, &top);

done:
  if (root != NULL) sl_free(alloc, root, strlen(root) + 1);
  if (w.path != NULL) sl_free(alloc, w.path, w.cap);
  if (pattern != NULL) sl_free(alloc, pattern, pattern_cap);
  if (split != NULL) sl_free(alloc, split, split_cap);
  if (w.segments != NULL) sl_free(alloc, w.segments, w.n_segments * sizeof(char*));
  return rc;
}

/// The start of the first '/'-segment of `path` with a glob character, NULL
/// when there is none.
static const char* first_glob_segment(const char* path) {
  const char* p = path;
  for (;;) {
    const char* end = segment_end(p);
    if (has_glob(p, end)) return p;
    if (*end == '\0') return NULL;
    p = end + 1;
  }
}

/// Where the walk of local `location` starts: the path itself when it
/// exists (*glob NULL: that file or directory, whatever its characters),
/// else its glob spelling (local_pattern) with *glob at its first segment
/// that has a glob character. NULL when the location does not decode into
/// the 4096-byte buf / pattern_buf.
static const char* walk_start(const char* location, char* buf, char* pattern_buf,
                              const char** glob) {
  *glob = NULL;
  const char* path = local_path(location, buf, 4096);
  struct stat st;
  if (path == NULL || stat(path, &st) == 0) return path;
  path = local_pattern(location, pattern_buf, 4096);
  if (path != NULL) *glob = first_glob_segment(path);
  return path;
}

int sl_location_local_root(const char* location, char* root, size_t cap) {
  char buf[4096], pattern_buf[4096];
  const char* glob;
  const char* path = walk_start(location, buf, pattern_buf, &glob);  // as expand
  if (path == NULL || cap < 2) return 0;
  size_t end = glob == NULL ? strlen(path) : (size_t)(glob - path);
  size_t n = 0;
  for (size_t i = 0; i < end; ++i) {  // as set_prefix spells it
    char c = path[i];
    if (glob != NULL && c == '\\' && i + 1 < end) c = path[++i];
    if (c == '/' && n > 0 && root[n - 1] == '/') continue;
    if (n + 2 >= cap) return 0;
    root[n++] = c;
  }
  if (n > 0 && root[n - 1] != '/') root[n++] = '/';
  root[n] = '\0';
  return 1;
}

static int list_of_one(const char* location, const struct sluice_allocator* alloc,
                       struct sl_location_list* out, struct sluice_error* error) {
  size_t n = strlen(location);
  if (!sl_location_is_escaped(location)) {
    if (sl_location_list_add(out, location, n, 0, alloc) != 0) {
      return sl_error_set(error, ENOMEM, "%s: out of memory", location);
    }
    return 0;
  }
  // The name without its escapes, as a glob would match it.
  char* name = sl_alloc(alloc, n + 1);
  if (name == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", location);
  size_t k = 0;
  for (size_t i = 0; i < n; ++i) {
    if (location[i] == '\\' && i + 1 < n) ++i;
    name[k++] = location[i];
  }
  int rc = sl_location_list_add(out, name, k, 0, alloc);
  sl_free(alloc, name, n + 1);
  return rc != 0 ? sl_error_set(error, ENOMEM, "%s: out of memory", location) : 0;
}

int sl_location_expand(const char* location, const struct sl_remote_options* remote,
                       const struct sluice_allocator* alloc, struct sl_location_list* out,
                       struct sluice_error* error) {
  memset(out, 0, sizeof *out);
  if (location == NULL || location[0] == '\0') {
    return sl_error_set(error, EINVAL, "no location given (a path, a directory, a glob or a URL)");
  }
  if (!sl_location_is_many(location)) return list_of_one(location, alloc, out, error);
  int rc;
  int is_directory = 0;
  if (has_prefix(location, "s3://")) {
    rc = sl_s3_expand(location, remote, alloc, out, error);
  } else {
    char buf[4096], pattern_buf[4096];
    const char* glob;
    const char* path = walk_start(location, buf, pattern_buf, &glob);  // as is_many
    if (path == NULL) return sl_error_set(error, ENAMETOOLONG, "%s: path too long", location);
    is_directory = glob == NULL;
    rc = expand_local(location, path, glob, remote, alloc, out, error);
  }
  if (rc == 0 && out->n == 0) {
    rc = sl_error_set(error, ENOENT, "no files match '%s' (names starting with '.' or '_' are "
                      "skipped%s)", location,
                      is_directory ? "" : " unless the glob spells that character: _x*.csv");
  }
  if (rc == 0 && sl_location_list_sort(out, alloc) != 0) {
    rc = sl_error_set(error, ENOMEM, "%s: out of memory", location);
  }
  if (rc != 0) sl_location_list_free(out, alloc);
  return rc;
}
