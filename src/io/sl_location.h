// Locations that name many objects: a directory, a glob (`data/*.csv`,
// `logs/**/*.parquet`), an S3 prefix (`s3://bucket/prefix/`) or an S3 glob
// (`s3://bucket/prefix/*.parquet`). Expanding one gives the objects it names,
// sorted by name, which the dataset then reads as one table.
#ifndef SL_LOCATION_H
#define SL_LOCATION_H

#include <stddef.h>

#include "sluice.h"
#include "sl_source.h"

/// Names of the objects a location expanded to, each an sl_alloc'd string
/// that sl_source_open_remote accepts (a local path, or s3://bucket/key),
/// with their sizes when a listing gave them.
struct sl_location_list {
  char** names;    ///< sl_alloc'd array of `cap` pointers, `n` used
  int64_t* sizes;  ///< sl_alloc'd, `cap` entries: bytes as listed, 0 = not known
  size_t n;
  size_t cap;
};

/// The local path of a file:// URL: file:///abs, file://localhost/abs or
/// file://rel (relative, as sluice has always taken it), with %XX escapes
/// decoded (file:///tmp/a%20b.csv is "/tmp/a b.csv"; %00 is refused).
int sl_file_url_path(const char* location, char* out, size_t cap, struct sluice_error* error);

/// 1 when `location` names a set of objects rather than one: a local
/// directory, a path or s3:// URL with an unescaped glob character (* ? [)
/// in it (one whose glob characters are all escaped is one object), or an
/// s3:// URL that ends with '/'. http(s):// locations are always single
/// objects (HTTP has no listing). A file:// URL is its path, %XX-decoded
/// (sl_file_url_path), as when it names one file.
int sl_location_is_many(const char* location);

/// 1 when `location` names one object through escapes: a `\` before a glob
/// character (`run\[1\].csv`, `s3://b/a\*b.csv`) and no unescaped one, and,
/// for a local path, no file of that very spelling. sl_location_expand
/// gives that object's name without the escapes (`run[1].csv`), without
/// touching the storage.
int sl_location_is_escaped(const char* location);

/// Expands `location` into the objects it names, sorted by name (bytewise).
/// A single-object location (sl_location_is_many() == 0) gives a list of one,
/// the location itself, without touching the storage. Directories are walked
/// recursively; files and directories whose names start with '.' or '_'
/// (.crc files, _SUCCESS markers, hidden files) are left out, as Spark, Hive
/// and pyarrow do, unless the glob spells that first character itself
/// (sl_glob_names_hidden). Nothing matching is an error (ENOENT) that names the
/// location. `remote`'s cancel hook (if any) is asked during the listing
/// (sl_s3_expand: before each page and while one is waited for; a local
/// walk: when it starts, then every SL_SOURCE_CANCEL_POLL_MS), and a yes
/// ends it with ECANCELED ("interrupted"). `out` is zeroed first and must be
/// freed with sl_location_list_free, also after an error.
int sl_location_expand(const char* location, const struct sl_remote_options* remote,
                       const struct sluice_allocator* alloc, struct sl_location_list* out,
                       struct sluice_error* error);

/// The directory every name sl_location_expand gives for a local `location`
/// starts with, spelled as it spells them: a file:// URL's path decoded, a
/// path that exists all of it (a directory whose name has glob characters,
/// `t=[x]/`, too), else up to the segment with the first unescaped glob
/// character, escapes removed; runs of '/' made one and a '/' at the end
/// ("" for a glob in the current directory). Written into root (cap bytes):
/// 1, or 0 when it does not fit or a file:// URL does not decode.
int sl_location_local_root(const char* location, char* root, size_t cap);

void sl_location_list_free(struct sl_location_list* list, const struct sluice_allocator* alloc);

/// Appends a copy of `name` (n bytes) to the list, with the object's size
/// (0 = not known). 0 or ENOMEM.
int sl_location_list_add(struct sl_location_list* list, const char* name, size_t n,
                         int64_t size, const struct sluice_allocator* alloc);

/// Sorts the list bytewise (sizes follow their names). 0 or ENOMEM.
int sl_location_list_sort(struct sl_location_list* list, const struct sluice_allocator* alloc);

/// 1 when `name` matches the glob `pattern`: `*` any run of characters but
/// '/', `?` one character but '/', `[abc]` / `[a-z]` / `[!a-z]` one of a set,
/// `**` as a whole path segment any number of segments (zero included),
/// `\` escapes the next character. Both are '/'-separated relative paths.
int sl_glob_match(const char* pattern, const char* name);

/// Whether a name segment at `depth` (0 = the pattern's first segment)
/// starting with `c` ('.' or '_': a hidden name, a _SUCCESS marker) is
/// named by the pattern itself: the pattern segment there (or any after a
/// `**`) starts with that character (`_x*.csv`, `.*`), as Python's glob and
/// DuckDB match such names only then. Names skipped otherwise.
int sl_glob_names_hidden(const char* pattern, size_t depth, char c);

/// The literal part of the S3 glob `pattern` (a key or a key pattern): its
/// characters before the first `*`, `?` or `[`, with each `\` escape
/// removed (`t=\[x\]/*.csv` gives `t=[x]/`), or the whole pattern as it is
/// when it has no glob character. Written into out (cap bytes, with its
/// NUL); returns its length, or -1 when it does not fit. *is_glob says
/// whether the pattern has a glob character.
long sl_glob_literal_prefix(const char* pattern, char* out, size_t cap, int* is_glob);

/// The S3 part of sl_location_expand (src/io/sl_s3_list.c): `location` is an
/// s3:// URL with a glob or a trailing '/'. Lists the keys under the literal
/// prefix before the first glob character with ListObjectsV2 (paginated with
/// continuation tokens, signed like every S3 request), keeps those that
/// sl_glob_match the pattern (a trailing '/' matches every key under it,
/// recursively, skipping path segments starting with '.' or '_') and appends
/// them to `out` as s3://bucket/key.
int sl_s3_expand(const char* location, const struct sl_remote_options* remote,
                 const struct sluice_allocator* alloc, struct sl_location_list* out,
                 struct sluice_error* error);

#endif
