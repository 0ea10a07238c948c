// Hive-partitioned writes (sluice_write with partition_by), and datasets
// without partitions (max_rows_per_file alone: one partition, whose path
// is empty, so that its files go in the location itself). Each batch is
// split by its rows' partition values ("year=2024/city=Paris"), the pieces
// (partition columns dropped) are buffered per partition, and a partition
// is written out when the buffers outgrow their budget (the largest first)
// or at the end: pushed to the partition's open file (the format writer's
// push interface), which ends a row group, block or batch there. Local
// files are written in a hidden staging directory inside the destination
// and moved into it at the end; S3 objects stay staged and are uploaded at
// the end. On error everything made is removed, so nothing appears.
#include "sluice_write_partitioned.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../core/sl_alloc.h"
#include "../core/sl_array.h"
#include "../core/sl_array_scatter.h"
#include "../core/sl_checked_stream.h"
#include "../core/sl_error.h"
#include "../core/sl_hash.h"
#include "../core/sl_parallel.h"
#include "../core/sl_read.h"
#include "../core/sl_row_filter.h"
#include "../core/sl_type.h"
#include "../core/sl_value_text.h"
#include "../io/sl_compression.h"
#include "../io/sl_location.h"
#include "../io/sl_s3.h"
#include "../io/sl_sink.h"
#include "../io/sl_source.h"

#define DEFAULT_MAX_PARTITIONS 1024
#define DEFAULT_BUFFER_BYTES ((int64_t)256 << 20)
#define NULL_SEGMENT "__HIVE_DEFAULT_PARTITION__"
#define MAX_SEGMENT 255  // a file name's limit (NAME_MAX) on the usual file systems
// A file per partition stays open, so that a partition spilled many times
// still makes one file; past a limit, the least recently used is ended
// (the partition's next rows start part-<n+1>). Between spills an open file
// holds a descriptor and its footer's metadata (the writers' threads stop
// and the sink's buffer is freed), so the limit is a quarter of the
// descriptors the process may open, within these bounds. Compressed whole
// (x.csv.gz), each holds its compressor too, and on S3 every finished
// object holds its staged file until the uploads: the low bound then.
#define MIN_OPEN_FILES 64
#define MAX_OPEN_FILES 1024
// Descriptors left to the rest of the process (stdio, the input and its
// readers, Python's own), whatever the bounds above say: a soft limit of
// 64 allows 32 open files, not 64 that it could never hold with the rest.
#define OPEN_FILES_MARGIN 32
// The objects' places in the spool (mmap'd from there for the upload): a
// multiple of every page size.
#define SPOOL_ALIGN ((int64_t)1 << 16)
// S3 objects are uploaded (and replaced ones deleted) this many at a time:
// each is a request or a few that mostly wait on the network.
#define S3_THREADS 8

/// One partition: its path below the location and the pieces waiting.
struct partition {
  char* path;  ///< "k1=v1/k2=v2", escaped
  size_t path_len;
  char* key;  ///< the values as row_key spells them
  size_t key_len;
  uint64_t hash;  ///< of key
  struct ArrowArray* pieces;  ///< buffered, partition columns dropped
  int64_t n_pieces, cap_pieces;
  int64_t bytes;  ///< of the pieces
  int64_t files;  ///< written so far: the next is part-<base + files>
  int64_t base;   ///< S3, append and delete_matching: past the existing part-<n>
  /// The open file (NULL when none): its writer, sink and location,
  /// and when it last took pieces (w->clock).
  void* writer;
  struct sl_sink* sink;
  char* file_path;
  uint64_t last_used;
  int64_t file_rows;  ///< rows in the open file so far
  int64_t rows;       ///< rows handed to its files so far (errors count them)
};

/// A finished, uncommitted file: local, named in the staging directory;
/// S3, its bytes in the spool.
struct pending_file {
  int64_t offset, size;  ///< S3: where its bytes are in the spool
  int uploaded;  ///< S3: its upload succeeded (deleted again if another fails)
  char* path;  ///< its location, for removal when a later commit fails
};

/// A value of a one-integer key and its partition (part -1: empty).
struct int_cache_entry {
  uint64_t value;  ///< the value's bytes, zero-extended
  int64_t part;
};
#define INT_CACHE_BITS 10

struct partitioned_write {
  const struct sl_format_writer* writer;
  const struct sluice_write_options* options;
  struct sl_write_args* args;
  struct sl_remote_options remote;  ///< the sinks point at it
  const struct sluice_allocator* alloc;
  const char* location;
  char shown[4096];  ///< the location in messages (sl_location_shown)
  size_t root_len;  ///< of location, without trailing '/'
  /// Where the files go: the location (S3), or a hidden staging directory
  /// inside it (local), whose entries are moved into it at the end.
  char* root;
  size_t root_len_files;
  int is_s3;
  const char* extension;  ///< ".parquet", ".csv.gz", ...
  struct ArrowSchema schema;       ///< the input's
  struct ArrowSchema file_schema;  ///< without the partition columns
  int scatter;  ///< sl_array_scatter takes file_schema's batches
  int staged;   ///< local: the staging directory exists (removed on error)
  int64_t n_open;  ///< files open
  int64_t rows_before;  ///< input rows in the batches before this one (errors count from 0)
  int64_t max_open;  ///< open_file_limit()
  uint64_t clock;  ///< pushes so far
  int64_t n_keys;
  int64_t* key_columns;  ///< indexes into schema.children
  int64_t n_kept;
  int64_t* kept_columns;
  struct sl_text_field* key_fields;  ///< parsed once for rendering values
  struct partition* parts;
  int64_t n_parts, cap_parts, max_parts;
  int32_t* slots;  ///< open addressing over parts, -1 = empty; n_slots a power of 2
  int64_t n_slots;
  int64_t buffered, budget;
  int64_t max_file_rows;  ///< options->max_rows_per_file, 0 = no limit
  struct pending_file* pending;
  int64_t n_pending, cap_pending;
  /// S3: one staging file (TMPDIR, unlinked) holding every finished
  /// object's bytes until the uploads, at SPOOL_ALIGN boundaries: a file
  /// descriptor per object waiting made a write of more objects than the
  /// process's open-file limit fail.
  int spool_fd;
  int64_t spool_end;
  char** dirs;  ///< local directories made, in the order made
  int64_t n_dirs, cap_dirs;
  int existing;  ///< options->existing_data_behavior
  struct sl_location_list existing_keys;  ///< S3, existing data kept: the prefix's, sorted
  struct int_cache_entry int_cache[1 << INT_CACHE_BITS];  ///< one-integer keys
  struct sl_text key;    ///< scratch: a row's partition values (row_key)
  struct sl_text path;   ///< scratch: a row's partition path
  struct sl_text value;  ///< scratch: one rendered value
  /// A piece that is a view of the input batch (a batch of one partition,
  /// not copied): 1 + its partition (0: none) and its index there. It is
  /// copied if still held when the next batch is asked for, whose producer
  /// may refill the memory.
  int64_t borrowed_part, borrowed_piece;
};

static int oom(struct partitioned_write* w, struct sluice_error* error) {
  return sl_error_set(error, ENOMEM, "%s: out of memory writing partitions", w->shown);
}

/// `items` (cap entries of `size` bytes) with room for `need`: the same
/// array, or a bigger copy (the old one freed, *cap updated), or NULL
/// (items untouched).
static void* grow(const struct sluice_allocator* alloc, void* items, int64_t* cap, int64_t need,
                  size_t size) {
  if (need <= *cap) return items;
  int64_t cap2 = *cap > 0 ? *cap * 2 : 8;
  while (cap2 < need) cap2 *= 2;
  void* bigger = sl_alloc(alloc, (size_t)cap2 * size);
  if (bigger == NULL) return NULL;
  if (*cap > 0) memcpy(bigger, items, (size_t)*cap * size);
  sl_free(alloc, items, (size_t)*cap * size);
  *cap = cap2;
  return bigger;
}

/* ---- Path segments ---------------------------------------------------------- */

/// Appends `s` percent-escaped. A value (`name` 0) as pyarrow and DuckDB
/// escape partition values: every byte but A-Z a-z 0-9 - . _ ~ becomes
/// %XX. A column name only where it would break the path or its reading
/// (/ = % \ and control bytes): pyarrow writes names as they are, and
/// DuckDB does not decode them.
static int append_escaped(struct sl_text* out, const char* s, size_t n, int name) {
  static const char hex[] = "0123456789ABCDEF";
  if (sl_text_reserve(out, 3 * n + 1) != 0) return ENOMEM;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    int plain = name ? c >= 0x20 && c != 0x7f && c != '/' && c != '=' && c != '%' && c != '\\'
                     : (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                           (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
    if (plain) {
      out->data[out->len++] = (char)c;
    } else {
      out->data[out->len++] = '%';
      out->data[out->len++] = hex[c >> 4];
      out->data[out->len++] = hex[c & 15];
    }
  }
  out->data[out->len] = '\0';
  return 0;
}

/// Whether a directory name spells partition values of this type exactly (booleans
/// read back as strings, as pyarrow and DuckDB read them).
static int key_type_ok(const struct sl_text_field* f) {
  const struct sl_text_field* v = f->dictionary != NULL ? f->dictionary : f;
  switch (v->type.id) {
    case SL_TYPE_BOOL: case SL_TYPE_INT8: case SL_TYPE_UINT8: case SL_TYPE_INT16:
    case SL_TYPE_UINT16: case SL_TYPE_INT32: case SL_TYPE_UINT32: case SL_TYPE_INT64:
    case SL_TYPE_UINT64: case SL_TYPE_STRING: case SL_TYPE_LARGE_STRING: case SL_TYPE_DATE32:
      return 1;
    default:
      return 0;
  }
}

/// Sets w->path to row `row`'s partition path.
static int row_path(struct partitioned_write* w, const struct ArrowArray* batch, int64_t row,
                    struct sluice_error* error) {
  sl_text_clear(&w->path);
  for (int64_t k = 0; k < w->n_keys; k++) {
    const struct ArrowSchema* column = w->schema.children[w->key_columns[k]];
    const struct ArrowArray* values = batch->children[w->key_columns[k]];
    if (k > 0 && sl_text_append_char(&w->path, '/') != 0) return oom(w, error);
    size_t start = w->path.len;
    if (append_escaped(&w->path, column->name, strlen(column->name), 1) != 0 ||
        sl_text_append_char(&w->path, '=') != 0) {
      return oom(w, error);
    }
    int64_t at = batch->offset + row;  // a struct's offset applies to its children
    size_t unescaped = 0;  // a value's bytes left out of the path: too long for it
    if (sl_value_is_null(&w->key_fields[k], values, at)) {
      if (sl_text_append_str(&w->path, NULL_SEGMENT) != 0) return oom(w, error);
    } else {
      sl_text_clear(&w->value);
      SL_RETURN_NOT_OK(sl_value_render(&w->key_fields[k], values, at, SL_TEXT_PLAIN, &w->value,
                                       error));
      // Dates past 9999 render as +10000-01-01; pyarrow spells them without the sign.
      const char* text = w->value.data;
      size_t n = w->value.len;
      if (w->key_fields[k].type.id == SL_TYPE_DATE32 && n > 0 && text[0] == '+') {
        text++;
        n--;
      }
      // Escaping only lengthens a value: one past the limit is not escaped.
      if (n > MAX_SEGMENT) unescaped = n;
      else if (append_escaped(&w->path, text, n, 0) != 0) return oom(w, error);
    }
    size_t segment = w->path.len - start + unescaped;
    if (segment > MAX_SEGMENT) {
      return sl_error_set(error, EINVAL,
                          "%s: row %lld: the partition directory for column '%s' would be %s%zu "
                          "bytes long, past the %d a file name may have",
                          w->shown, (long long)(w->rows_before + row), column->name,
                          unescaped ? "over " : "", segment, MAX_SEGMENT);
    }
  }
  return 0;
}

/// Whether value i of `a` is valid (not null).
static inline int valid_at(const struct ArrowArray* a, int64_t i) {
  return a->null_count == 0 || a->buffers[0] == NULL || sl_bit_get(a->buffers[0], i);
}

/* ---- Partitions ------------------------------------------------------------- */

static int reserve_partition(struct partitioned_write* w, struct sluice_error* error);

/// Key column k's value in row `row`: *is_null, else its bytes (*data, *n;
/// a bool's byte is put in *bit). A dictionary's value, not its index.
static int key_value(const struct partitioned_write* w, const struct ArrowArray* batch,
                     int64_t k, int64_t row, int* is_null, const uint8_t** data, int64_t* n,
                     uint8_t* bit, struct sluice_error* error) {
  const struct sl_text_field* f = &w->key_fields[k];
  const struct ArrowArray* a = batch->children[w->key_columns[k]];
  int64_t i = a->offset + batch->offset + row;  // a struct's offset applies to its children
  *is_null = !valid_at(a, i);
  if (*is_null) return 0;
  if (f->dictionary != NULL) {  // the index, checked: the stream checks buffers, not values
    int64_t index = sl_int_value(f->type.id, a->buffers[1], i);  // a uint64 past 2^63 < 0
    if (index < 0 || a->dictionary == NULL || index >= a->dictionary->length) {
      return sl_error_set(error, EINVAL, "%s: row %lld: dictionary index %lld of column '%s' "
                          "is out of range", w->shown, (long long)(w->rows_before + row),
                          (long long)index,
                          w->schema.children[w->key_columns[k]]->name);
    }
    a = a->dictionary;
    f = f->dictionary;
    i = a->offset + index;
    *is_null = !valid_at(a, i);
    if (*is_null) return 0;
  }
  switch (f->type.id) {
    case SL_TYPE_BOOL:
      *bit = (uint8_t)sl_bit_get(a->buffers[1], i);
      *data = bit;
      *n = 1;
      return 0;
    case SL_TYPE_STRING: {
      const int32_t* o = a->buffers[1];
      *data = (const uint8_t*)a->buffers[2] + o[i];
      *n = o[i + 1] - o[i];
      return 0;
    }
    case SL_TYPE_LARGE_STRING: {
      const int64_t* o = a->buffers[1];
      *data = (const uint8_t*)a->buffers[2] + o[i];
      *n = o[i + 1] - o[i];
      return 0;
    }
    default:  // integers and date32 (key_type_ok)
      *n = sl_type_bit_width(&f->type) / 8;
      *data = (const uint8_t*)a->buffers[1] + i * *n;
      return 0;
  }
}

/// Sets w->key to row `row`'s partition values as bytes that tell them
/// apart (per column: a null flag, then the value's length and bytes):
/// cheaper to hash than the path, which is only spelled for a partition
/// met first.
static int row_key(struct partitioned_write* w, const struct ArrowArray* batch, int64_t row,
                   struct sluice_error* error) {
  w->key.len = 0;
  for (int64_t k = 0; k < w->n_keys; k++) {
    int is_null;
    const uint8_t* data = NULL;
    int64_t n = 0;
    uint8_t bit;
    SL_RETURN_NOT_OK(key_value(w, batch, k, row, &is_null, &data, &n, &bit, error));
    uint64_t len = (uint64_t)n;
    if (sl_text_room(&w->key, 1 + sizeof len + (size_t)n) != 0) return oom(w, error);
    char* at = w->key.data + w->key.len;
    *at++ = is_null ? 0 : 1;
    if (!is_null) {
      memcpy(at, &len, sizeof len);
      memcpy(at + sizeof len, data, (size_t)n);
      at += sizeof len + (size_t)n;
    }
    w->key.len = (size_t)(at - w->key.data);
  }
  return 0;
}


/// Whether row `row` has the same partition values as row `row - 1` (a
/// cheap test for runs; 0 when unsure, a bad value included: the lookup
/// reports it).
static int same_as_previous(const struct partitioned_write* w, const struct ArrowArray* batch,
                            int64_t row) {
  struct sluice_error ignored;
  for (int64_t k = 0; k < w->n_keys; k++) {
    int null_now, null_before;
    const uint8_t *now = NULL, *before = NULL;
    int64_t n_now = 0, n_before = 0;
    uint8_t bit_now, bit_before;
    if (key_value(w, batch, k, row, &null_now, &now, &n_now, &bit_now, &ignored) != 0 ||
        key_value(w, batch, k, row - 1, &null_before, &before, &n_before, &bit_before,
                  &ignored) != 0 ||
        null_now != null_before) {
      return 0;
    }
    if (!null_now && (n_now != n_before || memcmp(now, before, (size_t)n_now) != 0)) return 0;
  }
  return 1;
}

/// The index of the partition of row `row` (its values in w->key), added
/// if new.
static int find_partition(struct partitioned_write* w, const struct ArrowArray* batch, int64_t row,
                          int64_t* out, struct sluice_error* error) {
  uint64_t h = sl_hash_bytes(w->key.data, w->key.len);
  int64_t mask = w->n_slots - 1;
  for (int64_t s = (int64_t)(h & (uint64_t)mask);; s = (s + 1) & mask) {
    int32_t p = w->slots[s];
    if (p >= 0) {
      const struct partition* part = &w->parts[p];
      // (No partition_by: one partition, its key empty, w->key.data NULL.)
      if (part->hash == h && part->key_len == w->key.len &&
          (w->key.len == 0 || memcmp(part->key, w->key.data, w->key.len) == 0)) {
        *out = p;
        return 0;
      }
      continue;
    }
    SL_RETURN_NOT_OK(row_path(w, batch, row, error));
    // Values that differ but spell the same path (a null and the string
    // "__HIVE_DEFAULT_PARTITION__") share its partition: two partitions of
    // one directory would write the same file names.
    const char* path = sl_text_cstr(&w->path);  // ("" without partition_by)
    for (int64_t q = 0; q < w->n_parts && strstr(path, "=" NULL_SEGMENT) != NULL; q++) {
      if (w->parts[q].path_len == w->path.len &&
          memcmp(w->parts[q].path, w->path.data, w->path.len) == 0) {
        *out = q;
        return 0;
      }
    }
    if (w->n_parts == w->max_parts) {
      return sl_error_set(error, EINVAL,
                          "%s: more than %lld partitions (the next is %s); raise the limit "
                          "(max_partitions) or partition by fewer columns",
                          w->shown, (long long)w->max_parts, path);
    }
    if (w->n_parts + 1 > w->n_slots / 2) {  // keep the table at most half full
      SL_RETURN_NOT_OK(reserve_partition(w, error));
      return find_partition(w, batch, row, out, error);  // the slots moved
    }
    struct partition* part = &w->parts[w->n_parts];
    memset(part, 0, sizeof *part);
    part->path = sl_strndup(w->alloc, w->path.data, w->path.len);
    part->key = sl_alloc(w->alloc, w->key.len);
    if (part->path == NULL || part->key == NULL) {
      if (part->path != NULL) sl_free(w->alloc, part->path, w->path.len + 1);
      if (part->key != NULL) sl_free(w->alloc, part->key, w->key.len);
      return oom(w, error);
    }
    if (w->key.len > 0) memcpy(part->key, w->key.data, w->key.len);
    part->path_len = w->path.len;
    part->key_len = w->key.len;
    part->hash = h;
    w->slots[s] = (int32_t)w->n_parts;
    *out = w->n_parts++;
    return 0;
  }
}

static int add_piece(struct partitioned_write* w, int64_t p, struct ArrowArray* piece,
                     struct sluice_error* error) {
  struct partition* part = &w->parts[p];
  struct ArrowArray* pieces =
      grow(w->alloc, part->pieces, &part->cap_pieces, part->n_pieces + 1, sizeof *pieces);
  if (pieces == NULL) {
    piece->release(piece);
    return oom(w, error);
  }
  part->pieces = pieces;
  int64_t bytes = sl_array_byte_size(&w->file_schema, piece);
  sl_array_move(piece, &part->pieces[part->n_pieces++]);
  part->bytes += bytes;
  w->buffered += bytes;
  return 0;
}

/* ---- Writing files ----------------------------------------------------------- */

/// Releases a partition's pieces (written or not).
static void drop_pieces(struct partitioned_write* w, struct partition* part) {
  for (int64_t i = 0; i < part->n_pieces; i++) {
    if (part->pieces[i].release != NULL) part->pieces[i].release(&part->pieces[i]);
  }
  w->buffered -= part->bytes;
  part->n_pieces = 0;
  part->bytes = 0;
}

/// Adds `path`, a directory just made, to those removed on error; ENOMEM
/// removes it at once.
static int remember_directory(struct partitioned_write* w, const char* path) {
  char** dirs = grow(w->alloc, w->dirs, &w->cap_dirs, w->n_dirs + 1, sizeof *dirs);
  if (dirs != NULL) w->dirs = dirs;
  if (dirs == NULL || (dirs[w->n_dirs] = sl_strdup(w->alloc, path)) == NULL) {
    rmdir(path);
    return ENOMEM;
  }
  w->n_dirs++;
  return 0;
}

/// mkdir -p of the first `len` bytes of `path` (local outputs), each
/// directory made remembered for removal on error.
static int make_directories(struct partitioned_write* w, char* path, size_t len,
                            struct sluice_error* error) {
  for (size_t i = 1; i <= len; i++) {
    if (i < len && path[i] != '/') continue;
    char saved = path[i];
    path[i] = '\0';
    int made = mkdir(path, 0777) == 0;
    int e = errno;
    if (made && remember_directory(w, path) != 0) {
      path[i] = saved;
      return oom(w, error);
    }
    struct stat st;
    if (!made && (e != EEXIST || stat(path, &st) != 0 || !S_ISDIR(st.st_mode))) {
      char shown[4096];
      int rc = sl_error_set(error, e == EEXIST ? ENOTDIR : e, "%s: cannot make the directory: %s",
                            sl_escaped_line(path, shown, sizeof shown),
                            strerror(e == EEXIST ? ENOTDIR : e));
      path[i] = saved;
      return rc;
    }
    path[i] = saved;
  }
  return 0;
}

/// n when `name` is part-<n> or part-<n>.<anything> (the names sluice,
/// pyarrow and DuckDB give), else -1.
static int64_t part_index(const char* name, size_t len) {
  if (len < 6 || memcmp(name, "part-", 5) != 0) return -1;
  int64_t n = 0;
  size_t i = 5;
  for (; i < len && name[i] >= '0' && name[i] <= '9'; i++) {
    if (n > (INT64_MAX - 9) / 10) return -1;
    n = n * 10 + (name[i] - '0');
  }
  return i > 5 && (i == len || name[i] == '.') ? n : -1;
}

/// Appends "/<path>" of partition `part` to `out`: nothing for the one
/// partition of a write without partition_by (its files go in the
/// location itself). Non-zero when out of memory.
static int append_partition_dir(struct sl_text* out, const struct partition* part) {
  if (part->path_len == 0) return 0;
  return sl_text_append_char(out, '/') != 0 || sl_text_append(out, part->path, part->path_len) != 0;
}

/// `out` = "<location>/<path>/", the prefix of partition `part`'s objects.
static int partition_prefix(struct partitioned_write* w, const struct partition* part,
                            struct sl_text* out, struct sluice_error* error) {
  sl_text_clear(out);
  if (sl_text_append(out, w->location, w->root_len) != 0 ||
      append_partition_dir(out, part) != 0 || sl_text_append_char(out, '/') != 0) {
    return oom(w, error);
  }
  return 0;
}

/// The first key of the S3 listing taken at the start (sorted) that does
/// not sort before the first `len` bytes of `prefix`: where the keys
/// starting with it begin.
static size_t first_key_from(const struct partitioned_write* w, const char* prefix, size_t len) {
  const struct sl_location_list* keys = &w->existing_keys;
  size_t lo = 0, hi = keys->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (strncmp(keys->names[mid], prefix, len) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/// The first index past every part-<n> among `prefix`'s objects directly
/// under it (S3: the listing taken at the start).
static int64_t next_free_index_s3(const struct partitioned_write* w, const char* prefix,
                                  size_t len) {
  const struct sl_location_list* keys = &w->existing_keys;
  int64_t next = 0;
  for (size_t i = first_key_from(w, prefix, len);
       i < keys->n && strncmp(keys->names[i], prefix, len) == 0; i++) {
    const char* rest = keys->names[i] + len;
    if (strchr(rest, '/') != NULL) continue;  // deeper down
    int64_t n = part_index(rest, strlen(rest));
    if (n >= 0 && n + 1 > next) next = n + 1;
  }
  return next;
}

/// The location of partition `part`'s next file, <root>/<path>/part-<n><ext>
/// (sl_alloc'd; local: its directories made).
static int next_file(struct partitioned_write* w, struct partition* part, char** out,
                     struct sluice_error* error) {
  *out = NULL;
  // S3 objects are named past the partition's existing part-<n>, but for
  // overwrite_or_ignore (which replaces them): an upload that fails then
  // has replaced nothing, and delete_matching deletes only old objects.
  if (w->is_s3 && part->files == 0 && (w->existing == SLUICE_EXISTING_DATA_APPEND ||
                                       w->existing == SLUICE_EXISTING_DATA_DELETE_MATCHING)) {
    struct sl_text prefix;  // (locally the names are chosen when the files move in)
    sl_text_init(&prefix, w->alloc);
    int rc = partition_prefix(w, part, &prefix, error);
    if (rc == 0) part->base = next_free_index_s3(w, prefix.data, prefix.len);
    sl_text_reset(&prefix);
    SL_RETURN_NOT_OK(rc);
  }
  char name[64];
  snprintf(name, sizeof name, "/part-%lld", (long long)(part->base + part->files));
  struct sl_text location;
  sl_text_init(&location, w->alloc);
  int rc = sl_text_append(&location, w->root, w->root_len_files) != 0 ||
                   append_partition_dir(&location, part) != 0 ||
                   sl_text_append_str(&location, name) != 0 ||
                   sl_text_append_str(&location, w->extension) != 0
               ? oom(w, error)
               : 0;
  if (rc == 0 && !w->is_s3 && part->path_len > 0) {
    rc = make_directories(w, location.data, w->root_len_files + 1 + part->path_len, error);
  }
  if (rc == 0 && (*out = sl_strndup(w->alloc, location.data, location.len)) == NULL) {
    rc = oom(w, error);
  }
  sl_text_reset(&location);
  return rc;
}

/// Appends the finished S3 sink's staged bytes to the spool; *offset
/// receives their place.
static int spool_object(struct partitioned_write* w, const struct sl_sink* sink,
                        int64_t* offset, int64_t* size, struct sluice_error* error) {
  if (w->spool_fd < 0) SL_RETURN_NOT_OK(sl_staging_file(w->shown, &w->spool_fd, error));
  *offset = (w->spool_end + SPOOL_ALIGN - 1) / SPOOL_ALIGN * SPOOL_ALIGN;
  SL_RETURN_NOT_OK(sl_sink_copy_staged(sink, w->spool_fd, *offset, size, error));
  w->spool_end = *offset + *size;
  return 0;
}

/// Finishes `sink` (taken) and lists it for the commit, or aborts it on
/// error. `path` (taken) names it. A local file is named at once in the
/// staging directory (its descriptor closed: thousands of files may wait);
/// an S3 object's bytes go to the spool, its upload waits.
static int add_pending(struct partitioned_write* w, struct sl_sink* sink, char* path,
                       struct sluice_error* error) {
  struct pending_file* pending =
      grow(w->alloc, w->pending, &w->cap_pending, w->n_pending + 1, sizeof *pending);
  if (pending != NULL) w->pending = pending;
  int64_t offset = 0, size = 0;
  int rc = pending == NULL ? oom(w, error)
           : w->is_s3      ? sl_sink_finish(sink, error)  // its buffer freed
                           : sl_sink_commit(sink, error);
  if (!w->is_s3 && pending != NULL) sink = NULL;  // committed, or removed by the failed commit
  if (rc == 0 && w->is_s3) rc = spool_object(w, sink, &offset, &size, error);
  sl_sink_abort(sink);  // S3: its staged file, copied
  if (rc != 0) {
    sl_free(w->alloc, path, strlen(path) + 1);
    return rc;
  }
  w->pending[w->n_pending].offset = offset;
  w->pending[w->n_pending].size = size;
  w->pending[w->n_pending].path = path;
  w->pending[w->n_pending].uploaded = 0;
  w->n_pending++;
  return 0;
}

/// Ends partition `part`'s open file: the footer written,
/// the file finished and listed for the commit.
static int close_file(struct partitioned_write* w, struct partition* part,
                      struct sluice_error* error) {
  w->args->location = part->file_path;
  int rc = w->writer->finish(part->writer, error);
  w->args->location = w->location;
  if (rc != 0 && part->path_len > 0) {  // (a CSV file of nulls alone fails here)
    sl_error_prefix(error, "partition %.*s", (int)part->path_len, part->path);
  }
  w->writer->close(part->writer);
  part->writer = NULL;
  w->n_open--;
  struct sl_sink* sink = part->sink;
  char* path = part->file_path;
  part->sink = NULL;
  part->file_path = NULL;
  part->files++;
  if (rc != 0) {
    sl_sink_abort(sink);
    sl_free(w->alloc, path, strlen(path) + 1);
    return rc;
  }
  return add_pending(w, sink, path, error);
}

/// Opens partition `part`'s next file (closing the least recently used one
/// when w->max_open are open).
static int open_file(struct partitioned_write* w, struct partition* part,
                     struct sluice_error* error) {
  int rc = 0;
  if (w->n_open == w->max_open) {
    struct partition* lru = NULL;
    for (int64_t q = 0; q < w->n_parts; q++) {
      struct partition* o = &w->parts[q];
      if (o->writer != NULL && (lru == NULL || o->last_used < lru->last_used)) lru = o;
    }
    rc = close_file(w, lru, error);
  }
  if (rc == 0) rc = next_file(w, part, &part->file_path, error);
  if (rc == 0) {
    rc = sl_write_open_sink(w->writer, part->file_path, w->options, &w->remote, w->args,
                            &part->sink, error);
  }
  if (rc == 0) {
    w->args->location = part->file_path;
    w->args->first_row = part->rows;  // a row its errors name counts the partition's rows
    rc = w->writer->open(&w->file_schema, part->sink, w->args, &part->writer, error);
    w->args->location = w->location;
    w->args->first_row = 0;
    if (rc == 0) w->n_open++;
  }
  if (rc != 0) {
    sl_sink_abort(part->sink);
    part->sink = NULL;
    if (part->file_path != NULL) sl_free(w->alloc, part->file_path, strlen(part->file_path) + 1);
    part->file_path = NULL;
    return rc;
  }
  part->file_rows = 0;
  return 0;
}

/// Splits `*rows` (a struct array) after `n` rows: `*head` gets the first
/// n, `*rows` keeps the rest, both views of the same buffers through the
/// struct's offset and length. On error both are left released.
static int split_rows(struct partitioned_write* w, struct ArrowArray* rows, int64_t n,
                      struct ArrowArray* head, struct sluice_error* error) {
  memset(head, 0, sizeof *head);
  const struct ArrowArray* whole = NULL;
  struct sl_ref* owner = sl_array_share(rows, w->alloc, &whole);
  if (owner == NULL) {
    rows->release(rows);
    return oom(w, error);
  }
  int rc = sl_array_view(whole, owner, w->alloc, head, error);
  if (rc == 0) {
    rc = sl_array_view(whole, owner, w->alloc, rows, error);
    if (rc != 0) head->release(head);
  }
  sl_ref_release(owner);
  if (rc != 0) return rc;
  head->length = n;
  rows->offset += n;
  rows->length -= n;
  head->null_count = rows->null_count = whole->null_count == 0 ? 0 : -1;
  return 0;
}

/// Hands partition `p`'s pieces to its open file, opening one first; the
/// row group ends with them, so nothing stays buffered. With
/// max_file_rows, a file that has them is ended and the rows go on in the
/// partition's next file (a piece split between the two).
static int push_pieces(struct partitioned_write* w, int64_t p, struct sluice_error* error) {
  struct partition* part = &w->parts[p];
  int rc = 0;
  for (int64_t i = 0; i < part->n_pieces && rc == 0; i++) {
    struct ArrowArray* piece = &part->pieces[i];
    while (rc == 0 && piece->release != NULL) {
      if (part->writer == NULL && (rc = open_file(w, part, error)) != 0) break;
      int64_t room = w->max_file_rows > 0 ? w->max_file_rows - part->file_rows : INT64_MAX;
      if (room <= 0) {
        rc = close_file(w, part, error);
        continue;
      }
      struct ArrowArray head;
      int last = i + 1 == part->n_pieces;
      if (piece->length <= room) {
        sl_array_move(piece, &head);
      } else {
        rc = split_rows(w, piece, room, &head, error);
        last = 1;  // the file ends with this row group
      }
      if (rc != 0) break;
      part->file_rows += head.length;
      part->rows += head.length;
      w->args->location = part->file_path;
      int borrowed = w->borrowed_part == 1 + p && w->borrowed_piece == i;
      rc = w->writer->push(part->writer, &head,
                           (last ? SL_PUSH_END_ROW_GROUP : 0) | (borrowed ? 0 : SL_PUSH_OWNED),
                           error);
      w->args->location = w->location;
      if (rc != 0 && part->path_len > 0) {  // a writer counts the rows it was given
        sl_error_prefix(error, "partition %.*s (a row number counts its rows)",
                        (int)part->path_len, part->path);
      }
    }
  }
  // The file waits for the partition's next spill without a buffer.
  if (rc == 0 && part->sink != NULL) rc = sl_sink_idle(part->sink, error);
  part->last_used = ++w->clock;
  drop_pieces(w, part);  // what push did not take (after an error)
  return rc;
}

static int write_partition(struct partitioned_write* w, int64_t p, struct sluice_error* error) {
  return w->parts[p].n_pieces == 0 ? 0 : push_pieces(w, p, error);
}

/// Writes out the partitions holding the most until the buffers are within
/// budget again.
static int spill(struct partitioned_write* w, struct sluice_error* error) {
  while (w->buffered > w->budget) {
    int64_t largest = 0;
    for (int64_t p = 1; p < w->n_parts; p++) {
      if (w->parts[p].bytes > w->parts[largest].bytes) largest = p;
    }
    SL_RETURN_NOT_OK(write_partition(w, largest, error));
  }
  return 0;
}

/* ---- Splitting batches -------------------------------------------------------- */

/// Adds the rows of `batch` (taken, released on error too) to their
/// partitions' pieces. row_part: scratch for batch->length rows.
static int split_batch(struct partitioned_write* w, struct ArrowArray* batch, int64_t* row_part,
                       struct sluice_error* error) {
  int64_t n = batch->length;
  int single = 1;
  // One integer (or date) key: its values remember their partitions in a
  // small direct-mapped cache, checked before the general lookup.
  enum sl_type_id one = w->n_keys == 1 && w->key_fields[0].dictionary == NULL
                            ? w->key_fields[0].type.id
                            : SL_TYPE_NA;
  int ints = one != SL_TYPE_NA && one != SL_TYPE_BOOL && one != SL_TYPE_STRING &&
             one != SL_TYPE_LARGE_STRING;
  int previous_null = 0;  // (ints) row r - 1's value was null
  for (int64_t r = 0; r < n; r++) {
    struct int_cache_entry* hit = NULL;
    int is_null = 0;
    const uint8_t* data = NULL;
    int64_t width = 0;
    uint8_t bit;
    // The cache also catches runs; with another key, or a null, compare
    // with the row before. (No dictionary: key_value cannot fail here.)
    if (ints) (void)key_value(w, batch, 0, r, &is_null, &data, &width, &bit, error);
    int same = !ints ? r > 0 && same_as_previous(w, batch, r) : r > 0 && is_null && previous_null;
    previous_null = is_null;
    if (same) {
      row_part[r] = row_part[r - 1];
      continue;
    }
    if (ints && !is_null) {
      uint64_t v = 0;
      memcpy(&v, data, (size_t)width);
      hit = &w->int_cache[(v * 0x9E3779B97F4A7C15ull) >> (64 - INT_CACHE_BITS)];
      if (hit->part >= 0 && hit->value == v) {
        row_part[r] = hit->part;
        single &= row_part[r] == row_part[0];
        continue;
      }
      hit->value = v;
      hit->part = -1;  // filled below
    }
    int rc = row_key(w, batch, r, error);
    if (rc == 0) rc = find_partition(w, batch, r, &row_part[r], error);
    if (rc != 0) {
      batch->release(batch);
      return rc;
    }
    if (hit != NULL) hit->part = row_part[r];
    single &= row_part[r] == row_part[0];
  }
  struct ArrowArray kept;
  // Both branches below take the batch.
  SL_RETURN_NOT_OK(
      sl_array_project(batch, w->kept_columns, w->n_kept, w->alloc, &kept, error));
  if (single) {  // no copy (unless it is still held at the next batch)
    w->borrowed_part = 1 + row_part[0];
    w->borrowed_piece = w->parts[row_part[0]].n_pieces;
    return add_piece(w, row_part[0], &kept, error);
  }
  // Several partitions: the ones met, numbered in this batch (local).
  int64_t* slot = sl_alloc(w->alloc, (size_t)w->n_parts * sizeof *slot);  // partition -> local
  int64_t* local = sl_alloc(w->alloc, (size_t)w->n_parts * sizeof *local);  // local -> partition
  int64_t* counts = sl_calloc(w->alloc, (size_t)w->n_parts, sizeof *counts);
  int64_t n_local = 0, bytes = (n + 7) / 8;
  uint8_t* bits = NULL;
  int rc = slot == NULL || local == NULL || counts == NULL ? oom(w, error) : 0;
  if (rc == 0) {
    for (int64_t p = 0; p < w->n_parts; p++) slot[p] = -1;
    for (int64_t r = 0; r < n; r++) {
      int64_t p = row_part[r];
      if (slot[p] < 0) {
        slot[p] = n_local;
        local[n_local++] = p;
      }
      row_part[r] = slot[p];  // from here on: the local index
      counts[slot[p]]++;
    }
  }
  if (rc == 0 && w->scatter && kept.null_count == 0) {
    // One pass over each column deals the rows out.
    struct ArrowArray* pieces = sl_alloc(w->alloc, (size_t)n_local * sizeof *pieces);
    rc = pieces == NULL ? oom(w, error)
                        : sl_array_scatter(&w->file_schema, &kept, row_part, counts, n_local,
                                           w->alloc, pieces, error);
    for (int64_t l = 0; l < n_local && rc == 0; l++) {
      rc = add_piece(w, local[l], &pieces[l], error);
      if (rc != 0) {
        while (++l < n_local) pieces[l].release(&pieces[l]);
      }
    }
    sl_free(w->alloc, pieces, (size_t)n_local * sizeof *pieces);
  } else if (rc == 0) {
    // Other types: a selection bitmap per partition, each one's rows
    // copied out by sl_array_filter.
    bits = sl_calloc(w->alloc, (size_t)(n_local * bytes), 1);
    if (bits == NULL) rc = oom(w, error);
    for (int64_t r = 0; r < n && rc == 0; r++) {
      int64_t l = row_part[r];
      bits[l * bytes + (r >> 3)] |= (uint8_t)(1u << (r & 7));
    }
    for (int64_t l = 0; l < n_local && rc == 0; l++) {
      struct ArrowArray piece;
      rc = sl_array_filter(&w->file_schema, &kept, bits + l * bytes, counts[l], w->alloc,
                           &piece, error);
      if (rc == 0) rc = add_piece(w, local[l], &piece, error);
    }
  }
  sl_free(w->alloc, bits, (size_t)(n_local * bytes));
  sl_free(w->alloc, counts, (size_t)w->n_parts * sizeof *counts);
  sl_free(w->alloc, local, (size_t)w->n_parts * sizeof *local);
  sl_free(w->alloc, slot, (size_t)w->n_parts * sizeof *slot);
  kept.release(&kept);
  return rc;
}

/* ---- Set-up and the end ----------------------------------------------------------- */

static int column_index(const struct ArrowSchema* schema, const char* name) {
  for (int64_t i = 0; i < schema->n_children; i++) {
    if (schema->children[i]->name != NULL && strcmp(schema->children[i]->name, name) == 0) {
      return (int)i;
    }
  }
  return -1;
}

static int set_up(struct partitioned_write* w, struct ArrowArrayStream* stream,
                  struct sluice_error* error) {
  const struct sluice_write_options* o = w->options;
  int rc = stream->get_schema(stream, &w->schema);
  if (rc != 0) return sl_input_error(stream, rc, error);
  w->n_keys = o->n_partition_by;
  w->key_columns = sl_calloc(w->alloc, (size_t)w->n_keys, sizeof *w->key_columns);
  w->key_fields = sl_calloc(w->alloc, (size_t)w->n_keys, sizeof *w->key_fields);
  w->kept_columns = sl_calloc(w->alloc, (size_t)w->schema.n_children + 1, sizeof *w->kept_columns);
  if (w->key_columns == NULL || w->key_fields == NULL || w->kept_columns == NULL) return oom(w, error);
  for (int64_t k = 0; k < w->n_keys; k++) {
    const char* name = o->partition_by[k];
    int c = name != NULL ? column_index(&w->schema, name) : -1;
    if (c < 0) {
      return sl_error_set(error, EINVAL, "%s: no column '%s' to partition by", w->shown,
                          name != NULL ? name : "(null)");
    }
    if (name[0] == '_' || name[0] == '.') {  // <name>=<value>/ would be a hidden directory
      return sl_error_set(error, EINVAL, "%s: cannot partition by '%s': directories whose names "
                          "start with '_' or '.' are skipped by readers (sluice, pyarrow); "
                          "rename the column", w->shown, name);
    }
    for (int64_t j = c + 1; j < w->schema.n_children; j++) {
      if (w->schema.children[j]->name != NULL && strcmp(w->schema.children[j]->name, name) == 0) {
        return sl_error_set(error, EINVAL, "%s: the input has two columns named '%s'; partition "
                            "by a name that is not repeated", w->shown, name);
      }
    }
    for (int64_t j = 0; j < k; j++) {
      if (w->key_columns[j] == c) {
        return sl_error_set(error, EINVAL, "%s: column '%s' named twice in partition_by",
                            w->shown, name);
      }
    }
    w->key_columns[k] = c;
    rc = sl_text_field_init(&w->key_fields[k], w->schema.children[c], w->alloc, error);
    if (rc == ENOMEM) return rc;
    if (rc != 0 || !key_type_ok(&w->key_fields[k])) {
      char type[64];
      sl_type_name(&w->key_fields[k].type, type, sizeof type);
      return sl_error_set(error, EINVAL,
                          "%s: cannot partition by column '%s' (%s): partition values must be "
                          "integers, strings, dates (date32) or booleans, which a directory "
                          "name spells exactly (a float's, a timestamp's need not read back as "
                          "the same value; cast the column first). Booleans read back as the "
                          "strings 'true' and 'false' (as pyarrow and DuckDB read them)",
                          w->shown, name, rc != 0 ? w->schema.children[c]->format : type);
    }
  }
  for (int64_t c = 0; c < w->schema.n_children; c++) {
    int key = 0;
    for (int64_t k = 0; k < w->n_keys; k++) key |= w->key_columns[k] == c;
    if (!key) w->kept_columns[w->n_kept++] = c;
  }
  if (w->n_kept == 0) {
    return sl_error_set(error, EINVAL, "%s: %s: the files would hold no column", w->shown,
                        w->n_keys > 0 ? "every column is a partition column"
                                      : "the input has no columns");
  }
  SL_RETURN_NOT_OK(sl_schema_project(&w->schema, w->kept_columns, w->n_kept, w->alloc,
                                     &w->file_schema, error));
  w->scatter = sl_array_scatter_supported(&w->file_schema);
  w->max_parts = o->max_partitions > 0 ? o->max_partitions : DEFAULT_MAX_PARTITIONS;
  if (w->max_parts > ((int64_t)1 << 30)) w->max_parts = (int64_t)1 << 30;
  w->budget = sl_write_partitioned_budget(o);
  w->max_file_rows = o->max_rows_per_file;
  // The partition table grows with the partitions met, not up to the limit.
  return reserve_partition(w, error);
}

/// Doubles the partition table (room for n_slots / 2 parts).
static int reserve_partition(struct partitioned_write* w, struct sluice_error* error) {
  int64_t slots = w->n_slots > 0 ? w->n_slots * 2 : 64;
  struct partition* parts = grow(w->alloc, w->parts, &w->cap_parts, slots / 2, sizeof *parts);
  if (parts == NULL) return oom(w, error);
  w->parts = parts;
  int32_t* table = sl_alloc(w->alloc, (size_t)slots * sizeof *table);
  if (table == NULL) return oom(w, error);
  memset(table, 0xff, (size_t)slots * sizeof *table);
  for (int64_t p = 0; p < w->n_parts; p++) {
    int64_t s = (int64_t)(parts[p].hash & (uint64_t)(slots - 1));
    while (table[s] >= 0) s = (s + 1) & (slots - 1);
    table[s] = (int32_t)p;
  }
  sl_free(w->alloc, w->slots, (size_t)w->n_slots * sizeof *w->slots);
  w->slots = table;
  w->n_slots = slots;
  return 0;
}

/// Local outputs are written in a hidden directory made inside the
/// destination (which is made first if absent, its parents too),
/// `<dst>/.sluice-XXXXXX`, whose top-level partition directories are
/// renamed into the destination at the end. So the destination keeps its
/// own mode, owner and file system (a mount point, a symbolic link), and
/// a process killed before the end leaves only that hidden directory
/// (pyarrow.dataset and sluice skip it; a `**` glob of DuckDB or polars
/// does not).
static int make_staging(struct partitioned_write* w, struct sluice_error* error) {
  struct stat st;
  int rc = 0;
  if (stat(w->location, &st) != 0) {
    char* root = sl_strndup(w->alloc, w->location, w->root_len);
    if (root == NULL) return oom(w, error);
    rc = make_directories(w, root, w->root_len, error);
    sl_free(w->alloc, root, w->root_len + 1);
  }
  struct sl_text staging;
  sl_text_init(&staging, w->alloc);
  if (rc == 0 && (sl_text_append(&staging, w->location, w->root_len) != 0 ||
                  sl_text_append_str(&staging, "/.sluice-XXXXXX") != 0)) {
    rc = oom(w, error);
  }
  if (rc == 0 && mkdtemp(staging.data) == NULL) {
    rc = sl_error_set(error, errno, "%s: cannot make a staging directory in it: %s",
                      w->shown, strerror(errno));
  }
  if (rc == 0 && remember_directory(w, staging.data) != 0) rc = oom(w, error);
  if (rc == 0 && (w->root = sl_strndup(w->alloc, staging.data, staging.len)) == NULL) {
    rc = oom(w, error);  // (the directory is removed with the others)
  }
  if (rc == 0) {
    w->root_len_files = staging.len;
    w->staged = 1;
  }
  sl_text_reset(&staging);
  return rc;
}

/// fsyncs the destination directory, so that the renames into it last.
static void sync_location(struct partitioned_write* w) {
  int fd = open(w->location, O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
}

/// What is at the location already. A local one must be a directory if it
/// exists; with existing_data_behavior "error" it must be empty, an S3
/// prefix hold no object. Otherwise an S3 prefix's objects are listed, for
/// the names of the new ones and for the objects delete_matching replaces.
static int check_destination(struct partitioned_write* w, struct sluice_error* error) {
  if (!w->is_s3) {
    struct stat st;
    if (stat(w->location, &st) != 0) return 0;  // made with the staging directory
    if (!S_ISDIR(st.st_mode)) {
      return sl_error_set(error, ENOTDIR, "%s: exists and is not a directory", w->shown);
    }
    if (w->existing != SLUICE_EXISTING_DATA_ERROR) return 0;
    DIR* dir = opendir(w->location);
    if (dir == NULL) {
      return sl_error_set(error, errno, "%s: cannot read the directory: %s", w->shown,
                          strerror(errno));
    }
    int empty = 1, staging_only = 1;
    char staging[64] = "";
    for (struct dirent* e = readdir(dir); e != NULL; e = readdir(dir)) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      empty = 0;
      if (strncmp(e->d_name, ".sluice-", 8) == 0 && strlen(e->d_name) < sizeof staging) {
        snprintf(staging, sizeof staging, "%s", e->d_name);
      } else {
        staging_only = 0;
        break;
      }
    }
    closedir(dir);
    if (empty) return 0;
    // (a write killed before it committed leaves its staging directory;
    // another write may be filling it right now, so it is not removed here)
    return sl_error_set(error, EEXIST,
                        "%s: the directory is not empty%s%s%s; a dataset (--partition-by, "
                        "--max-rows-per-file) goes to a new or empty one unless "
                        "--existing-data (Python existing_data_behavior=) says what to do "
                        "with what is there (overwrite_or_ignore, delete_matching, append)",
                        w->shown, staging_only ? " (it holds only " : "",
                        staging_only ? staging : "",
                        staging_only ? ", the staging directory of a write that did not finish: "
                                       "remove it if no write is running)" : "");
  }
  // The prefix is a name, not a glob: its glob characters are escaped, or
  // `r[3]/` would list what the pattern matches (not the keys under it)
  // and find no data there to refuse, replace or append to.
  char prefix[4096];
  size_t len = 0, i = 0;
  for (; i < w->root_len && len + 3 < sizeof prefix; ++i) {
    if (strchr("*?[]\\", w->location[i]) != NULL) prefix[len++] = '\\';
    prefix[len++] = w->location[i];
  }
  if (i < w->root_len) {
    return sl_error_set(error, ENAMETOOLONG, "%s: location too long", w->shown);
  }
  prefix[len++] = '/';
  prefix[len] = '\0';
  struct sl_location_list* list = &w->existing_keys;
  int rc = sl_location_expand(prefix, &w->remote, w->alloc, list, error);
  if (rc == ENOENT) {
    sl_error_clear(error);
    sl_location_list_free(list, w->alloc);
    return 0;
  }
  if (rc == 0 && sl_location_list_sort(list, w->alloc) != 0) rc = oom(w, error);
  if (rc != 0 || list->n == 0 || w->existing != SLUICE_EXISTING_DATA_ERROR) return rc;
  return sl_error_set(error, EEXIST,
                      "%s: objects exist under this prefix; a dataset (partition_by, "
                      "max_rows_per_file) goes to an empty one unless existing_data_behavior "
                      "says what to do with them (overwrite_or_ignore, delete_matching, append)",
                      w->shown);
}

/// rm -r of `name` in the directory `at` (symbolic links removed, not
/// followed), as far as it goes: the old partitions delete_matching
/// replaced, once the new ones are in place.
static void remove_tree_at(int at, const char* name, int depth) {
  if (unlinkat(at, name, 0) == 0 || depth > 64) return;
  int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  if (fd < 0) return;
  DIR* dir = fdopendir(fd);
  if (dir == NULL) {
    close(fd);
    return;
  }
  for (struct dirent* e = readdir(dir); e != NULL; e = readdir(dir)) {
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
      remove_tree_at(fd, e->d_name, depth + 1);
    }
  }
  closedir(dir);  // closes fd
  (void)unlinkat(at, name, AT_REMOVEDIR);
}

/// The first index past every part-<n> in the local directory `path`.
static int64_t next_free_index_local(const char* path) {
  DIR* dir = opendir(path);
  int64_t next = 0;
  if (dir == NULL) return 0;
  for (struct dirent* e = readdir(dir); e != NULL; e = readdir(dir)) {
    int64_t n = part_index(e->d_name, strlen(e->d_name));
    if (n >= 0 && n + 1 > next) next = n + 1;
  }
  closedir(dir);
  return next;
}

/// Renames done by publish_staging and publish_merging, undone in reverse
/// on failure: the log holds "kind\0from\0to\0" triples.
struct moves {
  struct sl_text log;
};

enum move_kind {
  MOVE_RENAME = 'r',    ///< rename(from, to); undone by rename(to, from)
  MOVE_LINK = 'l',      ///< link(from, to), unlink(from): never replaces `to`
  MOVE_NEW = 'n',       ///< rename(from, to) that never replaces `to` (files or directories)
  MOVE_EXCHANGE = 'x',  ///< from and to swapped; undone by swapping again
};

/// Swaps two paths in one step (renameat2 RENAME_EXCHANGE, Linux 3.15+, on
/// file systems that have it), so that a reader or a crash never finds the
/// place empty.
static int exchange_paths(const char* a, const char* b) {
#ifdef SYS_renameat2
  return (int)syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, 1 << 1 /* RENAME_EXCHANGE */);
#else
  (void)a;
  (void)b;
  errno = ENOSYS;
  return -1;
#endif
}

/// A file's rename that never replaces `to` (EEXIST), on any file system.
static int link_then_unlink(const char* from, const char* to) {
  if (link(from, to) != 0) return -1;
  if (unlink(from) != 0) {
    int e = errno;
    (void)unlink(to);
    errno = e;
    return -1;
  }
  return 0;
}

/// MOVE_NEW: RENAME_NOREPLACE
/// where the file system has it; else a file is linked and unlinked, and a
/// directory renamed (which replaces only an empty one: ENOTEMPTY).
static int move_new(const char* from, const char* to) {
#ifdef SYS_renameat2
  if (syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, 1 << 0 /* RENAME_NOREPLACE */) == 0) {
    return 0;
  }
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) return -1;
#endif
  struct stat st;
  if (lstat(from, &st) != 0) return -1;
  return S_ISDIR(st.st_mode) ? rename(from, to) : link_then_unlink(from, to);
}

static int do_move(enum move_kind kind, const char* from, const char* to) {
  switch (kind) {
    case MOVE_EXCHANGE: return exchange_paths(from, to);
    case MOVE_LINK: return link_then_unlink(from, to);
    case MOVE_NEW: return move_new(from, to);
    default: return rename(from, to);
  }
}

/// Moves `from` to `to` as `kind` says and logs it. EEXIST of a MOVE_LINK,
/// EEXIST of a MOVE_NEW (ENOTEMPTY of a directory's too) and an exchange the
/// file system does not have (ENOSYS, EINVAL, ENOTSUP) return without a
/// message, for the caller to take another way or say what it means.
static int move(struct partitioned_write* w, struct moves* m, enum move_kind kind,
                const char* from, const char* to, struct sluice_error* error) {
  size_t at = m->log.len;
  char k[2] = {(char)kind, '\0'};
  if (sl_text_append(&m->log, k, 2) != 0 ||
      sl_text_append(&m->log, from, strlen(from) + 1) != 0 ||
      sl_text_append(&m->log, to, strlen(to) + 1) != 0) {
    m->log.len = at;  // whole triples only: undo_moves reads them from the end
    return oom(w, error);
  }
  if (do_move(kind, from, to) == 0) return 0;
  int e = errno;
  m->log.len = at;
  if (kind == MOVE_NEW && e == ENOTEMPTY) e = EEXIST;
  if ((kind == MOVE_LINK && e == EEXIST) || (kind == MOVE_NEW && e == EEXIST) ||
      (kind == MOVE_EXCHANGE && (e == ENOSYS || e == EINVAL || e == ENOTSUP))) {
    return e;
  }
  char shown_from[4096], shown_to[4096];
  return sl_error_set(error, e, "%s: cannot move %s to %s: %s", w->shown,
                      sl_escaped_line(from, shown_from, sizeof shown_from),
                      sl_escaped_line(to, shown_to, sizeof shown_to), strerror(e));
}

/// The string that ends just before data[*end] (after its NUL); *end moves
/// to its start. *end > 0.
static const char* string_before(const char* data, size_t* end) {
  size_t start = *end - 1;  // its NUL
  while (start > 0 && data[start - 1] != '\0') start--;
  *end = start;
  return data + start;
}

static void undo_moves(struct moves* m) {
  size_t end = m->log.len;
  while (end > 0) {
    const char* to = string_before(m->log.data, &end);
    if (end == 0) break;  // (never: the log holds whole triples)
    const char* from = string_before(m->log.data, &end);
    if (end == 0) break;
    const char* kind = string_before(m->log.data, &end);
    (void)(kind[0] == MOVE_EXCHANGE ? exchange_paths(from, to) : rename(to, from));
  }
}

/// Moves the staging directory's entries (the first key's directories, or
/// without partition_by its files) into the destination, replacing nothing
/// (it was empty when the write began), and removes it. On failure the
/// entries moved are moved back, for clean_up to remove with the rest.
static int publish_staging(struct partitioned_write* w, struct sluice_error* error) {
  DIR* dir = opendir(w->root);
  if (dir == NULL) {
    char root[4096];
    return sl_error_set(error, errno, "%s: cannot read the staging directory %s: %s",
                        w->shown, sl_escaped_line(w->root, root, sizeof root), strerror(errno));
  }
  struct moves m;
  struct sl_text from, to;
  sl_text_init(&m.log, w->alloc);
  sl_text_init(&from, w->alloc);
  sl_text_init(&to, w->alloc);
  int rc = 0;
  for (struct dirent* e = readdir(dir); e != NULL && rc == 0; e = readdir(dir)) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    sl_text_clear(&from);
    sl_text_clear(&to);
    if (sl_text_append_str(&from, w->root) != 0 || sl_text_append_char(&from, '/') != 0 ||
        sl_text_append_str(&from, e->d_name) != 0 ||
        sl_text_append(&to, w->location, w->root_len) != 0 || sl_text_append_char(&to, '/') != 0 ||
        sl_text_append_str(&to, e->d_name) != 0) {
      rc = oom(w, error);
    } else if ((rc = move(w, &m, MOVE_NEW, from.data, to.data, error)) == EEXIST) {
      char name[1024];
      rc = sl_error_set(error, EEXIST, "%s: %s appeared in it during the write; nothing was "
                        "replaced", w->shown, sl_escaped_line(e->d_name, name, sizeof name));
    }
  }
  closedir(dir);
  if (rc != 0) {
    undo_moves(&m);  // back where clean_up looks for them
  } else if (rmdir(w->root) == 0) {
    w->staged = 0;
  }
  sl_text_reset(&m.log);
  sl_text_reset(&from);
  sl_text_reset(&to);
  return rc;
}

/// Gives the staged file or directory `path` the owner and mode of `old`,
/// which it replaces, as a single file's replacement gets them.
static void keep_owner_and_mode(const char* path, const struct stat* old) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return;  // best effort, as for a single file
  sl_keep_owner_and_mode(fd, old);
  close(fd);
}

/// Puts `staged` where `target` is, in one exchange where the file system
/// has it (the old entry then sits at `staged`, inside the staging
/// directory, removed at the end), else by moving the old entry to `trash`
/// first.
static int replace(struct partitioned_write* w, struct moves* m, const char* staged,
                   const char* target, const char* trash, struct sluice_error* error) {
  int rc = move(w, m, MOVE_EXCHANGE, staged, target, error);
  if (rc != ENOSYS && rc != EINVAL && rc != ENOTSUP) return rc;
  SL_RETURN_NOT_OK(move(w, m, MOVE_RENAME, target, trash, error));
  return move(w, m, MOVE_RENAME, staged, target, error);
}

/// `s` = the staging directory's <path>[/<name>] (name NULL = none).
static int staged_path(struct partitioned_write* w, const struct partition* part,
                       const char* name, struct sl_text* s, struct sluice_error* error) {
  sl_text_clear(s);
  if (sl_text_append(s, w->root, w->root_len_files) != 0 || append_partition_dir(s, part) != 0 ||
      (name != NULL && sl_text_append_str(s, name) != 0)) {
    return oom(w, error);
  }
  return 0;
}

/// delete_matching without partition_by: the one partition is the
/// location itself, which also holds the staging directory. Its other
/// entries are moved into the staging directory (logged: put back on
/// failure, removed with it at the end).
static int clear_location(struct partitioned_write* w, struct moves* m, struct sl_text* from,
                          struct sl_text* trash, struct sluice_error* error) {
  const char* staging = w->root + w->root_len + 1;  // its name in the location
  struct sl_text names;  // NUL-separated: none moved while the directory is read
  sl_text_init(&names, w->alloc);
  int rc = 0;
  DIR* dir = opendir(w->location);
  if (dir == NULL) {
    return sl_error_set(error, errno, "%s: cannot read the directory: %s", w->shown,
                        strerror(errno));
  }
  for (struct dirent* e = readdir(dir); e != NULL && rc == 0; e = readdir(dir)) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
        strcmp(e->d_name, staging) == 0) {
      continue;
    }
    if (sl_text_append(&names, e->d_name, strlen(e->d_name) + 1) != 0) rc = oom(w, error);
  }
  closedir(dir);
  int64_t n = 0;
  for (size_t at = 0; at < names.len && rc == 0; at += strlen(names.data + at) + 1, n++) {
    char name[64];
    snprintf(name, sizeof name, "/.replaced-%lld", (long long)n);
    sl_text_clear(from);
    sl_text_clear(trash);
    if (sl_text_append(from, w->location, w->root_len) != 0 ||
        sl_text_append_char(from, '/') != 0 || sl_text_append_str(from, names.data + at) != 0 ||
        sl_text_append(trash, w->root, w->root_len_files) != 0 ||
        sl_text_append_str(trash, name) != 0) {
      rc = oom(w, error);
    } else {
      rc = move(w, m, MOVE_RENAME, from->data, trash->data, error);
    }
  }
  sl_text_reset(&names);
  return rc;
}

/// Moves one partition's staged files into the destination, as
/// w->existing says: in place of its directory (delete_matching), over
/// files of the same names (overwrite_or_ignore), or beside what is there,
/// named past its part-<n> (append). Replaced entries go into the staging
/// directory, removed at the end.
static int merge_partition(struct partitioned_write* w, const struct partition* part,
                           int64_t index, struct moves* m, struct sl_text* from,
                           struct sl_text* to, struct sl_text* trash,
                           struct sluice_error* error) {
  sl_text_clear(to);
  if (sl_text_append(to, w->location, w->root_len) != 0 || append_partition_dir(to, part) != 0) {
    return oom(w, error);
  }
  size_t parent = to->len;
  while (parent > w->root_len && to->data[parent] != '/') parent--;
  struct stat st;
  char name[96];
  if (w->existing == SLUICE_EXISTING_DATA_DELETE_MATCHING && part->path_len == 0) {
    // Emptied first, then the files move in as below (to = the location).
    SL_RETURN_NOT_OK(clear_location(w, m, from, trash, error));
  } else if (w->existing == SLUICE_EXISTING_DATA_DELETE_MATCHING) {
    SL_RETURN_NOT_OK(staged_path(w, part, NULL, from, error));
    if (lstat(to->data, &st) != 0) {
      SL_RETURN_NOT_OK(make_directories(w, to->data, parent, error));
      return move(w, m, MOVE_RENAME, from->data, to->data, error);
    }
    if (!S_ISDIR(st.st_mode)) {
      char shown[4096];
      return sl_error_set(error, ENOTDIR, "%s: exists and is not a directory",
                          sl_escaped_line(to->data, shown, sizeof shown));
    }
    keep_owner_and_mode(from->data, &st);
    snprintf(name, sizeof name, "/.replaced-%lld", (long long)index);
    sl_text_clear(trash);
    if (sl_text_append(trash, w->root, w->root_len_files) != 0 ||
        sl_text_append_str(trash, name) != 0) {
      return oom(w, error);
    }
    return replace(w, m, from->data, to->data, trash->data, error);
  }
  SL_RETURN_NOT_OK(make_directories(w, to->data, to->len, error));
  int64_t next = w->existing == SLUICE_EXISTING_DATA_APPEND ? next_free_index_local(to->data) : 0;
  size_t dir_len = to->len;
  for (int64_t i = 0; i < part->files; i++) {
    snprintf(name, sizeof name, "/part-%lld%s", (long long)i, w->extension);
    SL_RETURN_NOT_OK(staged_path(w, part, name, from, error));
    int rc;
    do {
      to->len = dir_len;
      snprintf(name, sizeof name, "/part-%lld%s", (long long)next++, w->extension);
      if (sl_text_append_str(to, name) != 0) return oom(w, error);
      // A file that appeared since the name was chosen is never replaced
      // in append mode: linked, the name taken gives EEXIST.
      rc = move(w, m, MOVE_LINK, from->data, to->data, error);
      if (rc == EEXIST && w->existing == SLUICE_EXISTING_DATA_OVERWRITE_OR_IGNORE) {
        int found = lstat(to->data, &st) == 0;
        if (found && S_ISDIR(st.st_mode)) {
          char shown[4096];
          return sl_error_set(error, EISDIR, "%s: is a directory",
                              sl_escaped_line(to->data, shown, sizeof shown));
        }
        if (found && S_ISREG(st.st_mode)) keep_owner_and_mode(from->data, &st);
        snprintf(name, sizeof name, "/.replaced-%lld-%lld", (long long)index, (long long)i);
        sl_text_clear(trash);
        if (sl_text_append(trash, w->root, w->root_len_files) != 0 ||
            sl_text_append_str(trash, name) != 0) {
          return oom(w, error);
        }
        rc = replace(w, m, from->data, to->data, trash->data, error);
      }
    } while (rc == EEXIST);
    SL_RETURN_NOT_OK(rc);
  }
  return 0;
}

/// publish_staging for a destination that may hold data: partition by
/// partition. On failure every move is undone (the old partitions back in
/// place, the new files back in staging for clean_up).
static int publish_merging(struct partitioned_write* w, struct sluice_error* error) {
  struct moves m;
  struct sl_text from, to, trash;
  sl_text_init(&m.log, w->alloc);
  sl_text_init(&from, w->alloc);
  sl_text_init(&to, w->alloc);
  sl_text_init(&trash, w->alloc);
  int rc = 0;
  for (int64_t p = 0; p < w->n_parts && rc == 0; p++) {
    if (w->parts[p].files > 0) {
      rc = merge_partition(w, &w->parts[p], p, &m, &from, &to, &trash, error);
    }
  }
  if (rc != 0) {
    undo_moves(&m);
  } else {
    // Left: the replaced partitions and the emptied directories.
    remove_tree_at(AT_FDCWD, w->root, 0);
    w->staged = 0;
  }
  sl_text_reset(&m.log);
  sl_text_reset(&from);
  sl_text_reset(&to);
  sl_text_reset(&trash);
  return rc;
}

/// The objects delete_matching deletes (indexes into existing_keys).
struct doomed {
  struct partitioned_write* w;
  int64_t* keys;
};

static int delete_doomed(void* ctx, int64_t i, struct sluice_error* error) {
  struct doomed* d = ctx;
  return sl_s3_delete_object(d->w->existing_keys.names[d->keys[i]], &d->w->remote, d->w->alloc,
                             error);
}

/// delete_matching on S3, after the uploads: the objects listed at the start
/// under the prefixes of the partitions written (the new ones were named
/// past them, so none is among them).
static int delete_replaced_objects(struct partitioned_write* w, struct sluice_error* error) {
  const struct sl_location_list* keys = &w->existing_keys;
  struct doomed d = {w, keys->n > 0 ? sl_alloc(w->alloc, keys->n * sizeof(int64_t)) : NULL};
  if (keys->n > 0 && d.keys == NULL) return oom(w, error);
  int64_t n = 0;
  struct sl_text prefix;
  sl_text_init(&prefix, w->alloc);
  int rc = 0;
  for (int64_t p = 0; p < w->n_parts && rc == 0; p++) {
    if (w->parts[p].files == 0) continue;
    rc = partition_prefix(w, &w->parts[p], &prefix, error);
    for (size_t i = rc == 0 ? first_key_from(w, prefix.data, prefix.len) : keys->n;
         i < keys->n && strncmp(keys->names[i], prefix.data, prefix.len) == 0; i++) {
      d.keys[n++] = (int64_t)i;
    }
  }
  sl_text_reset(&prefix);
  int64_t deleted = 0;
  if (rc == 0) rc = sl_parallel_for(n, S3_THREADS, delete_doomed, &d, &deleted, error);
  if (rc != 0 && n > 0) {
    sl_error_prefix(error, "every new object was uploaded, and %lld of the %lld old objects of "
                    "the partitions written were deleted before this failure",
                    (long long)deleted, (long long)n);
  }
  sl_free(w->alloc, d.keys, keys->n * sizeof(int64_t));
  return rc;
}

/// Uploads staged object i (sl_parallel_for).
static int upload_pending(void* ctx, int64_t i, struct sluice_error* error) {
  struct partitioned_write* w = ctx;
  const struct pending_file* f = &w->pending[i];
  if (sl_remote_cancelled(&w->remote)) {  // as a sink's commit checks before its upload
    char shown[4096];
    sl_location_shown(f->path, shown, sizeof shown);
    return sl_error_set(error, ECANCELED, "%s: interrupted", shown);
  }
  SL_RETURN_NOT_OK(sl_s3_upload_file(f->path, &w->remote, w->spool_fd, f->offset, f->size,
                                     w->alloc, error));
  w->pending[i].uploaded = 1;
  return 0;
}

/// Whether `key` was listed under the prefix at the start.
static int existed(const struct partitioned_write* w, const char* key) {
  size_t i = first_key_from(w, key, strlen(key));  // key itself sorts first among its prefixes
  return i < w->existing_keys.n && strcmp(w->existing_keys.names[i], key) == 0;
}

/// After a failed upload: deletes the objects uploaded by this write that
/// replaced nothing, so that the prefix is as it was (overwrite_or_ignore
/// cannot give back the objects it replaced).
static int delete_new_objects(void* ctx, int64_t i, struct sluice_error* error) {
  struct partitioned_write* w = ctx;
  if (!w->pending[i].uploaded || existed(w, w->pending[i].path)) return 0;
  return sl_s3_delete_object(w->pending[i].path, &w->remote, w->alloc, error);
}

/// Makes the written files appear (the end of a write that succeeded):
/// the staging directory's partitions moved into the location, or each S3
/// object uploaded.
static int commit_all(struct partitioned_write* w, struct sluice_error* error) {
  if (!w->is_s3) {
    SL_RETURN_NOT_OK(w->existing == SLUICE_EXISTING_DATA_ERROR ? publish_staging(w, error)
                                                               : publish_merging(w, error));
    if (!w->options->no_fsync) sync_location(w);
    return 0;
  }
  int64_t uploaded = 0;
  int rc = sl_parallel_for(w->n_pending, S3_THREADS, upload_pending, w, &uploaded, error);
  if (rc != 0 && uploaded > 0) {
    struct sluice_error undo;
    memset(&undo, 0, sizeof undo);
    if (sl_parallel_for(w->n_pending, S3_THREADS, delete_new_objects, w, NULL, &undo) == 0) {
      sl_error_prefix(error, "the %lld objects uploaded before this failure were deleted "
                      "again", (long long)uploaded);
    } else {
      sl_error_prefix(error, "%lld objects were uploaded before this failure, and deleting "
                      "them again failed too (%s)", (long long)uploaded, undo.message);
    }
  }
  if (rc != 0) return rc;
  return w->existing == SLUICE_EXISTING_DATA_DELETE_MATCHING ? delete_replaced_objects(w, error)
                                                             : 0;
}

static void clean_up(struct partitioned_write* w, int failed) {
  // Open files first: without O_TMPFILE their temporary names sit in the
  // directories removed below.
  for (int64_t p = 0; p < w->n_parts; p++) {
    struct partition* part = &w->parts[p];
    if (part->writer != NULL) w->writer->close(part->writer);
    part->writer = NULL;
    sl_sink_abort(part->sink);
    part->sink = NULL;
  }
  if (w->spool_fd >= 0) close(w->spool_fd);
  w->spool_fd = -1;
  for (int64_t i = 0; i < w->n_pending; i++) {
    // Local files were named in the staging directory as they were done.
    if (failed && w->staged) unlink(w->pending[i].path);
    sl_free(w->alloc, w->pending[i].path, strlen(w->pending[i].path) + 1);
  }
  sl_free(w->alloc, w->pending, (size_t)w->cap_pending * sizeof *w->pending);
  for (int64_t i = w->n_dirs - 1; i >= 0; i--) {
    if (failed) rmdir(w->dirs[i]);  // empty once the files are gone (staging's last)
    sl_free(w->alloc, w->dirs[i], strlen(w->dirs[i]) + 1);
  }
  if (w->root != w->location && w->root != NULL) {
    sl_free(w->alloc, w->root, strlen(w->root) + 1);
  }
  sl_free(w->alloc, w->dirs, (size_t)w->cap_dirs * sizeof *w->dirs);
  for (int64_t p = 0; p < w->n_parts; p++) {
    struct partition* part = &w->parts[p];
    if (part->file_path != NULL) sl_free(w->alloc, part->file_path, strlen(part->file_path) + 1);
    drop_pieces(w, &w->parts[p]);
    sl_free(w->alloc, w->parts[p].pieces, (size_t)w->parts[p].cap_pieces * sizeof(struct ArrowArray));
    sl_free(w->alloc, w->parts[p].path, w->parts[p].path_len + 1);
    sl_free(w->alloc, w->parts[p].key, w->parts[p].key_len);
  }
  sl_free(w->alloc, w->parts, (size_t)w->cap_parts * sizeof *w->parts);
  sl_free(w->alloc, w->slots, (size_t)w->n_slots * sizeof *w->slots);
  for (int64_t k = 0; k < w->n_keys && w->key_fields != NULL; k++) {
    sl_text_field_reset(&w->key_fields[k]);
  }
  sl_free(w->alloc, w->key_fields, (size_t)w->n_keys * sizeof *w->key_fields);
  sl_free(w->alloc, w->key_columns, (size_t)w->n_keys * sizeof *w->key_columns);
  sl_free(w->alloc, w->kept_columns,
          (size_t)(w->schema.release != NULL ? w->schema.n_children + 1 : 0) *
              sizeof *w->kept_columns);
  if (w->file_schema.release != NULL) w->file_schema.release(&w->file_schema);
  if (w->schema.release != NULL) w->schema.release(&w->schema);
  sl_text_reset(&w->key);
  sl_text_reset(&w->path);
  sl_text_reset(&w->value);
  sl_location_list_free(&w->existing_keys, w->alloc);
}

/// Before the next batch is asked for: the piece that is still a view of
/// this one is copied.
static int copy_borrowed(struct partitioned_write* w, struct sluice_error* error) {
  if (w->borrowed_part == 0) return 0;
  struct partition* part = &w->parts[w->borrowed_part - 1];
  w->borrowed_part = 0;
  if (w->borrowed_piece >= part->n_pieces) return 0;  // written
  struct ArrowArray* piece = &part->pieces[w->borrowed_piece];
  if (piece->release == NULL) return 0;
  struct ArrowArray copy;
  SL_RETURN_NOT_OK(sl_array_copy(&w->file_schema, piece, 0, piece->length, w->alloc, &copy,
                                 error));
  piece->release(piece);
  sl_array_move(&copy, piece);
  return 0;
}

static int run(struct partitioned_write* w, struct ArrowArrayStream* stream,
               struct sluice_error* error) {
  SL_RETURN_NOT_OK(set_up(w, stream, error));
  SL_RETURN_NOT_OK(check_destination(w, error));
  if (!w->is_s3) SL_RETURN_NOT_OK(make_staging(w, error));
  int64_t* row_part = NULL;
  int64_t cap_rows = 0;
  int rc = 0;
  for (;;) {
    struct ArrowArray batch;
    rc = stream->get_next(stream, &batch);
    if (rc != 0) {
      rc = sl_input_error(stream, rc, error);
      break;
    }
    if (batch.release == NULL) break;
    if (batch.length > cap_rows) {
      sl_free(w->alloc, row_part, (size_t)cap_rows * sizeof *row_part);
      cap_rows = batch.length;
      row_part = sl_alloc(w->alloc, (size_t)cap_rows * sizeof *row_part);
      if (row_part == NULL) {
        batch.release(&batch);
        rc = oom(w, error);
        break;
      }
    }
    if (batch.length > 0) {
      int64_t rows = batch.length;
      rc = split_batch(w, &batch, row_part, error);  // takes the batch
      w->rows_before += rows;
    } else {
      batch.release(&batch);
    }
    if (rc == 0) rc = spill(w, error);
    if (rc == 0) rc = copy_borrowed(w, error);
    if (rc != 0) break;
  }
  sl_free(w->alloc, row_part, (size_t)cap_rows * sizeof *row_part);
  for (int64_t p = 0; p < w->n_parts && rc == 0; p++) rc = write_partition(w, p, error);
  for (int64_t p = 0; p < w->n_parts && rc == 0; p++) {
    if (w->parts[p].writer != NULL) rc = close_file(w, &w->parts[p], error);
  }
  // (No rows: the staging directory becomes an empty one, as DuckDB leaves it.)
  if (rc == 0) rc = commit_all(w, error);
  return rc;
}

/// How many files may stay open at once (see MIN_OPEN_FILES and
/// OPEN_FILES_MARGIN); `compressed`:
/// each file compressed whole.
static int64_t open_file_limit(int is_s3, int compressed) {
  struct rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return MIN_OPEN_FILES;
  if (limit.rlim_cur == RLIM_INFINITY) return is_s3 || compressed ? MIN_OPEN_FILES : MAX_OPEN_FILES;
  const uint64_t cur = (uint64_t)limit.rlim_cur;
  int64_t want = MIN_OPEN_FILES;
  if (!is_s3 && !compressed && cur / 4 > MIN_OPEN_FILES) {
    want = cur / 4 >= MAX_OPEN_FILES ? MAX_OPEN_FILES : (int64_t)(cur / 4);
  }
  const uint64_t room = cur > 2 * OPEN_FILES_MARGIN ? cur - OPEN_FILES_MARGIN : cur / 2;
  if (room < (uint64_t)want) want = room > 0 ? (int64_t)room : 1;
  return want;
}

int64_t sl_write_partitioned_budget(const struct sluice_write_options* options) {
  return options->partition_buffer_bytes > 0 ? options->partition_buffer_bytes
                                             : DEFAULT_BUFFER_BYTES;
}

int sl_write_partitioned(const struct sl_format_writer* writer, struct ArrowArrayStream* stream,
                         const char* location, const struct sluice_write_options* options,
                         struct sl_write_args* args, struct sluice_error* error) {
  struct partitioned_write w;
  memset(&w, 0, sizeof w);
  w.location = location;
  sl_location_shown(location, w.shown, sizeof w.shown);
  if (strcmp(location, "-") == 0 || strncmp(location, "file://", 7) == 0 ||
      (strstr(location, "://") != NULL && strncmp(location, "s3://", 5) != 0)) {
    return sl_error_set(error, ENOTSUP,
                        "%s: a dataset (partition_by, max_rows_per_file) goes to a local "
                        "directory or an s3:// prefix",
                        w.shown);
  }
  if (writer->open == NULL) {
    return sl_error_set(error, ENOTSUP, "%s: the %s writer cannot write partitions", w.shown,
                        writer->name);
  }
  if (options->existing_data_behavior < SLUICE_EXISTING_DATA_ERROR ||
      options->existing_data_behavior > SLUICE_EXISTING_DATA_APPEND) {
    return sl_error_set(error, EINVAL, "%s: unknown existing_data_behavior %d", w.shown,
                        options->existing_data_behavior);
  }
  w.spool_fd = -1;
  w.writer = writer;
  w.existing = options->existing_data_behavior;
  w.options = options;
  w.args = args;
  w.alloc = args->alloc;
  w.root_len = strlen(location);
  while (w.root_len > 1 && location[w.root_len - 1] == '/') w.root_len--;
  w.is_s3 = strncmp(location, "s3://", 5) == 0;
  if (w.root_len == 0 || (w.is_s3 && w.root_len <= 5)) {
    return sl_error_set(error, EINVAL, "no output location given for the partitioned output "
                        "(a directory or an s3:// prefix)");
  }
  if (!w.is_s3) {  // "/", "//", "/tmp/..": the root of the file system is never a dataset
    char* real = realpath(location, NULL);
    int root = real != NULL && strcmp(real, "/") == 0;
    int e = errno;
    free(real);
    if (root) {
      return sl_error_set(error, EINVAL, "%s: is /: a dataset goes to a directory of its own",
                          w.shown);
    }
    if (real == NULL && e != ENOENT) {
      return sl_error_set(error, e, "%s: cannot resolve the path: %s", w.shown, strerror(e));
    }
  }
  for (size_t i = 0; i < sizeof w.int_cache / sizeof w.int_cache[0]; i++) w.int_cache[i].part = -1;
  w.root = (char*)location;  // S3; local outputs get a staging directory
  w.root_len_files = w.root_len;
  sl_write_remote_options(options, &w.remote);
  sl_text_init(&w.key, w.alloc);
  sl_text_init(&w.path, w.alloc);
  sl_text_init(&w.value, w.alloc);
  // part-0.parquet; part-0.csv.gz when the CSV is compressed whole; the
  // format's extension the output is named by, if any (out.tsv/ ->
  // part-0.tsv, tab-separated as the CSV writer and reader take that name),
  // and its whole-file compression: out.tsv.gz/ holds part-0.tsv.gz, as
  // out.tsv.gz is one such file (the parts were plain part-0.csv).
  static const char* const none[] = {"", NULL};
  const char* const* ext = writer->extensions != NULL ? writer->extensions : none;
  char root_name[4096];
  size_t root_len = strlen(location);
  while (root_len > 1 && location[root_len - 1] == '/') --root_len;
  if (root_len >= sizeof root_name) root_len = 0;  // (too long to name a file anyway)
  memcpy(root_name, location, root_len);
  root_name[root_len] = '\0';
  enum sl_compression kind =
      writer->compressible ? sl_compression_for_name(root_name) : SL_COMPRESS_NONE;
  if (kind != SL_COMPRESS_NONE) root_len -= sl_compression_suffix_length(root_name);
  for (const char* const* e = ext + 1; *e != NULL; ++e) {
    if (sl_name_ends_with(root_name, root_len, *e)) ext = e;
  }
  char extension[64];
  // A compression asked for by name wins over the suffix, as for one file.
  if (writer->compressible && options->compression != NULL && options->compression[0] != '\0')
    (void)sl_compression_of_option(options->compression, &kind);  // (the sink refuses others)
  const char* whole = sl_compression_suffix(kind);
  snprintf(extension, sizeof extension, "%s%s", ext[0] != NULL ? ext[0] : "", whole);
  w.extension = extension;
  w.max_open = open_file_limit(w.is_s3, whole[0] != '\0');
  int rc = run(&w, stream, error);
  clean_up(&w, rc != 0);
  return rc;
}
