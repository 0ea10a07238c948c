// The public dataset API: open (source → format → reader → schema → splits),
// scan (the scan engine behind an ArrowArrayStream or a tagged scanner), and
// write (stream → format writer → atomic sink).
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sluice.h"
#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_buffer_cache.h"
#include "core/sl_checked_stream.h"
#include "core/sl_error.h"
#include "core/sl_options.h"
#include "core/sl_row_filter.h"
#include "core/sl_value_text.h"
#include "format/sl_format.h"
#include "io/sl_compression.h"
#include "io/sl_source_inflate.h"
#include "io/sl_source_memory.h"
#include "io/sl_cql.h"
#include "io/sl_http_pool.h"
#include "io/sl_location.h"
#include "io/sl_s3.h"
#include "io/sl_sink.h"
#include "io/sl_source.h"
#include "io/sl_source_file.h"
#include "scan/sl_scan.h"
#include "sluice_dataset_files.h"
#include "sluice_dataset_hive.h"
#include "sluice_dataset_internal.h"
#include "sluice_write_partitioned.h"
#include "core/sl_cores.h"

#define SL_DEFAULT_MEMORY_BUDGET ((int64_t)256 << 20)
/// Bytes handed to format detection: enough for any magic number and for a
/// text format's probe to see a few lines.
#define SL_DETECT_BYTES ((int64_t)64 << 10)

/// The dataset's internals, shared by the handle and every scan of it.
struct sluice_dataset {
  atomic_long refs;
  const struct sluice_allocator* alloc;  ///< the cache's, or the caller's allocator
  struct sluice_buffer_cache* cache;         ///< freed batch buffers (NULL: caller's allocator)
  char* location;
  struct sl_source* source;
  const struct sl_format_reader* format;
  void* reader;
  struct ArrowSchema full_schema;
  struct ArrowSchema schema;  // projected
  int64_t* columns;           // NULL = all
  int64_t n_columns;
  /// Per column of `columns`: NULL, or the struct field under it that a
  /// dotted name ("st.x") selects: {depth, child index per level}.
  int64_t** paths;  // NULL = no column is a field
  struct sl_split* splits;
  int64_t n_splits;
  int threads;
  int64_t memory_budget;
  int ordered;
  int64_t limit;
  struct sl_row_filter* filter;  // the conditions not on partition keys (NULL = none)
  /// The text `filter` was parsed from (owned, `filter_text_size` bytes):
  /// parsed again when sluice_dataset_refine changes a column's type.
  char* filter_text;
  size_t filter_text_size;
  /// A refine whose reader took the wider types but whose filter could not
  /// be parsed for them: the dataset cannot be scanned (its filter would be
  /// of the old types), and every scan gives this error.
  struct sluice_error unusable;
};

void sluice_open_options_init(struct sluice_open_options* options) {
  memset(options, 0, sizeof *options);
  options->format = NULL;
  options->columns = NULL;
  options->n_columns = 0;
  options->batch_size = 0;
  options->threads = 0;
  options->memory_budget = SL_DEFAULT_MEMORY_BUDGET;
  options->ordered = 1;
  options->limit = -1;
  options->allocator = NULL;
  options->hive_partitioning = 1;
}

void sluice_write_options_init(struct sluice_write_options* options) {
  memset(options, 0, sizeof *options);
}

const char* const* sluice_reader_formats(void) { return sl_format_reader_names(); }
const char* const* sluice_writer_formats(void) { return sl_format_writer_names(); }

/* ---- Dataset lifetime ------------------------------------------------------ */

static void dataset_destroy(struct sluice_dataset* ds) {
  const struct sluice_allocator* alloc = ds->alloc;
  sl_free(alloc, ds->splits, (size_t)ds->n_splits * sizeof *ds->splits);
  for (int64_t i = 0; ds->paths != NULL && i < ds->n_columns; ++i) {
    if (ds->paths[i] != NULL)
      sl_free(alloc, ds->paths[i], (size_t)(ds->paths[i][0] + 1) * sizeof *ds->paths[i]);
  }
  sl_free(alloc, ds->paths, (size_t)ds->n_columns * sizeof *ds->paths);
  sl_free(alloc, ds->columns, (size_t)ds->n_columns * sizeof *ds->columns);
  sl_row_filter_free(ds->filter);
  if (ds->filter_text != NULL) sl_free(alloc, ds->filter_text, ds->filter_text_size);
  if (ds->schema.release != NULL) ds->schema.release(&ds->schema);
  if (ds->full_schema.release != NULL) ds->full_schema.release(&ds->full_schema);
  if (ds->reader != NULL) ds->format->close(ds->reader);
  sl_source_close(ds->source);
  if (ds->location != NULL) sl_free(alloc, ds->location, strlen(ds->location) + 1);
  struct sluice_buffer_cache* cache = ds->cache;
  sl_free(alloc, ds, sizeof *ds);
  sl_buffer_cache_close(cache);  // gone once the last batch is freed too
}

void sl_dataset_retain(struct sluice_dataset* ds) {
  atomic_fetch_add_explicit(&ds->refs, 1, memory_order_relaxed);
}

void sl_dataset_release(struct sluice_dataset* ds) {
  if (ds == NULL) return;
  if (atomic_fetch_sub_explicit(&ds->refs, 1, memory_order_acq_rel) == 1) dataset_destroy(ds);
}

const struct sluice_allocator* sl_dataset_allocator(const struct sluice_dataset* ds) {
  return ds->alloc;
}

const char* sl_dataset_location(const struct sluice_dataset* ds) { return ds->location; }

int sl_dataset_name_error(const struct sluice_dataset* ds, int rc, struct sluice_error* error) {
  if (rc == 0 || ds == NULL || ds->location == NULL || error == NULL) return rc;
  if (!sl_files_reader_names_object(ds->format, ds->reader, error)) {
    sl_error_name(error, ds->location);
  }
  return rc;
}

struct sluice_buffer_cache* sl_dataset_buffer_cache(const struct sluice_dataset* ds) {
  return ds->cache;
}

void sluice_dataset_close(struct sluice_dataset* dataset) { sl_dataset_release(dataset); }

/* ---- Opening ---------------------------------------------------------------- */

/// `name` in single quotes for an error message, so that a comma, a space or
/// nothing in a name can be seen (sl_escaped spells what is between them);
/// cut with "..." to fit `cap` (at least 18).
static const char* quoted_name(const char* name, char* out, size_t cap) {
  out[0] = '\'';
  size_t n = strlen(sl_escaped(name, strlen(name), '\'', out + 1, cap - 2)) + 1;
  out[n++] = '\'';
  out[n] = '\0';
  return out;
}

/// "a, b, c" for error messages, shortened when the list is long.
static void format_name_list(const char* const* names, size_t n, char* out, size_t cap) {
  size_t used = 0;
  out[0] = '\0';
  for (size_t i = 0; i < n && names[i] != NULL; ++i) {
    int w = snprintf(out + used, cap - used, "%s%s", i == 0 ? "" : ", ", names[i]);
    if (w < 0 || (size_t)w >= cap - used) {
      if (cap > 8) snprintf(out + (used < cap - 6 ? used : cap - 6), 6, ", ...");
      return;
    }
    used += (size_t)w;
  }
}

static void format_list_of(const char* const* names, char* out, size_t cap) {
  size_t n = 0;
  while (names[n] != NULL) ++n;
  format_name_list(names, n, out, cap);
}

/// The column a filter condition `cond[0, len)` names, %XX-decoded
/// (sl_alloc'd), or NULL when out of memory.
static char* condition_column(const char* cond, size_t len, const struct sluice_allocator* alloc) {
  size_t name = strcspn(cond, "=!<>");
  return sl_percent_decoded(cond, name < len ? name : len, alloc);
}

/// Splits filter text into the conditions on partition keys (*keys) and the
/// others (*rows), each NULL when it has none, else strlen(text) + 1 bytes.
/// A filter of several ';' groups that names a key filters rows with all of
/// it (the key is a column of every row) and *keys holds each group's key
/// conditions (';' between groups): an object whose directories fail every
/// group is not read (pyarrow takes such filters; a key condition alone
/// could not choose objects for one group). *choose = 0 when *keys cannot
/// choose objects: a group without key conditions may take any object.
static int split_filter(const char* text, const struct sl_hive* hive,
                        const struct sluice_allocator* alloc, char** keys, char** rows,
                        int* choose, struct sluice_error* error) {
  *keys = *rows = NULL;
  *choose = 1;
  if (sl_filter_has_empty_condition(text)) {
    char line[1024];  // (one line)
    return sl_error_set(error, EINVAL, "filter '%s': an empty condition (',' or ';' at an end, or "
                        "two in a row)", sl_escaped_line(text, line, sizeof line));
  }
  size_t n = strlen(text);
  char* k = sl_alloc(alloc, n + 1);
  char* r = sl_alloc(alloc, n + 1);
  if (k == NULL || r == NULL) {
    sl_free(alloc, k, n + 1);
    sl_free(alloc, r, n + 1);
    return sl_error_set(error, ENOMEM, "out of memory");
  }
  size_t nk = 0, nr = 0, group_start = 0;
  const int groups = strchr(text, ';') != NULL;
  int any_key = 0;
  for (const char* at = text; *at != '\0';) {
    size_t len = strcspn(at, ",;");
    char* decoded = condition_column(at, len, alloc);
    if (decoded == NULL) {
      sl_free(alloc, k, n + 1);
      sl_free(alloc, r, n + 1);
      return sl_error_set(error, ENOMEM, "out of memory");
    }
    int is_key = 0;
    for (int64_t i = 0; i < hive->n_keys && !is_key; ++i) is_key = strcmp(hive->keys[i], decoded) == 0;
    sl_free(alloc, decoded, strlen(decoded) + 1);
    any_key |= is_key;
    if (is_key) {
      if (nk > group_start) k[nk++] = ',';
      memcpy(k + nk, at, len);
      nk += len;
    } else if (!groups) {
      if (nr > 0) r[nr++] = ',';
      memcpy(r + nr, at, len);
      nr += len;
    }
    if (groups && at[len] != ',') {  // the group ends
      if (nk == group_start) *choose = 0;
      if (at[len] == ';' && nk > 0 && k[nk - 1] != ';') k[nk++] = ';';
      group_start = nk;
    }
    at += len + (at[len] != '\0');
  }
  if (groups) {  // every condition filters rows; the keys only choose objects
    memcpy(r, text, n);
    nr = n;
  }
  if (nk > 0 && k[nk - 1] == ';') --nk;
  k[nk] = '\0';
  r[nr] = '\0';
  if (any_key) *keys = k; else sl_free(alloc, k, n + 1);
  if (nr > 0) *rows = r; else sl_free(alloc, r, n + 1);
  return 0;
}

/// A filter's conditions on partition keys chose the objects by their
/// directories; a key that also names a column of the objects shows the
/// objects' own values instead, which such a choice would contradict (a
/// row showing k=99 in k=1/): refused rather than answered wrongly.
static int key_names_a_column(const struct sluice_dataset* ds, const char* key_text,
                              const struct sluice_allocator* alloc, struct sluice_error* error) {
  for (const char* at = key_text; *at != '\0';) {
    size_t len = strcspn(at, ",;");
    if (len == 0) {  // a group without key conditions
      ++at;
      continue;
    }
    char* key = condition_column(at, len, alloc);
    if (key == NULL) return sl_error_set(error, ENOMEM, "out of memory");
    int clash = sl_files_reader_key_is_column(ds->format, ds->reader, key);
    int rc = clash ? sl_error_set(error, EINVAL, "%s: filter on '%s': it is a partition key "
                                  "(%s=... directories) and a column of the objects, whose own "
                                  "values the rows show; read with hive_partitioning off "
                                  "(--no-hive), or with union_by_name, where conditions filter "
                                  "rows", ds->location, key, key)
                   : 0;
    sl_free(alloc, key, strlen(key) + 1);
    if (rc != 0) return rc;
    at += len + (at[len] != '\0');
  }
  return 0;
}

/// The row filter `text` parsed against `schema` (the reader's full one):
/// a value that a column's type inferred from a sample does not take is
/// pending (sl_filter_condition.pending), not an error, as the whole input
/// may widen the column to a type that does. Errors name `shown`.
static int parse_row_filter(struct sluice_dataset* ds, const char* text,
                            const struct ArrowSchema* schema, const char* shown,
                            struct sl_row_filter** out, struct sluice_error* error) {
  uint8_t* inferred = NULL;
  size_t n = (size_t)(schema->n_children > 0 ? schema->n_children : 1);
  if (ds->format->type_inferred != NULL) {
    inferred = sl_calloc(ds->alloc, n, 1);
    if (inferred == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", shown);
    for (int64_t i = 0; i < schema->n_children; ++i) {
      inferred[i] = (uint8_t)(ds->format->type_inferred(ds->reader, i) != 0);
    }
  }
  int rc = sl_row_filter_parse_inferred(text, schema, inferred, ds->alloc, out, error);
  if (inferred != NULL) sl_free(ds->alloc, inferred, n);
  if (rc != 0) return sl_error_prefix(error, "%s", shown);
  if (*out != NULL && (*out)->pending.code != 0) sl_error_prefix(&(*out)->pending, "%s", shown);
  return 0;
}

/// Drops the splits the reader's statistics show no row of passes the
/// filter (the others keep their index: readers know splits by it).
static int prune_splits(struct sluice_dataset* ds, struct sluice_error* error) {
  if (ds->format->split_may_match == NULL || ds->n_splits == 0) return 0;
  int64_t kept = 0;
  for (int64_t i = 0; i < ds->n_splits; ++i) {
    if (ds->format->split_may_match(ds->reader, &ds->splits[i], ds->filter)) {
      ds->splits[kept++] = ds->splits[i];
    }
  }
  if (kept == ds->n_splits) return 0;
  struct sl_split* exact = kept > 0 ? sl_alloc(ds->alloc, (size_t)kept * sizeof *exact) : NULL;
  if (kept > 0 && exact == NULL) return sl_error_set(error, ENOMEM, "out of memory");
  if (kept > 0) memcpy(exact, ds->splits, (size_t)kept * sizeof *exact);
  sl_free(ds->alloc, ds->splits, (size_t)ds->n_splits * sizeof *ds->splits);
  ds->splits = exact;
  ds->n_splits = kept;
  return 0;
}

/// The format of a gzip, zstd, bzip2 or xz object whose name does not tell
/// it (`gunzip`-able data.gz, `cat x.csv.gz | sluice cat -`): told from the
/// first bytes `head` inflates to, as `-f` would have read it. NULL (and 0)
/// when `head` is not compressed or its inflated bytes tell nothing; ENOTSUP
/// for a format that does not read compressed input (gzipped Parquet).
static int detect_inflated(struct sluice_dataset* ds, const struct sl_view* head,
                           const struct sl_format_reader** found, struct sluice_error* error) {
  *found = NULL;
  enum sl_compression kind = sl_compression_of_bytes(head->data, head->size);
  if (kind == SL_COMPRESS_NONE) return 0;
  struct sluice_error ignored;  // a head too short to inflate tells nothing
  memset(&ignored, 0, sizeof ignored);
  // bzip2 hands out nothing before a whole block (up to 900 kB) is in.
  struct sl_view bigger = {NULL, 0, NULL};
  if (kind == SL_COMPRESS_BZIP2 && head->size == SL_DETECT_BYTES &&
      sl_source_peek(ds->source, (int64_t)1 << 20, &bigger, &ignored) == 0) {
    head = &bigger;
  }
  struct sl_source* compressed = NULL;
  struct sl_source* inflated = NULL;
  if (sl_memory_source_open(head->data, (size_t)head->size, NULL, NULL, ds->source->name,
                            ds->alloc, &compressed, &ignored) == 0 &&
      sl_source_inflate_open(compressed, kind, &inflated, &ignored) == 0) {
    struct sl_view plain = {NULL, 0, NULL};
    // A quarter of the compressed head: text inflates to more than it takes.
    if (sl_source_peek(inflated, SL_DETECT_BYTES / 4, &plain, &ignored) == 0) {
      *found = sl_format_reader_detect(NULL, plain.data, plain.size);
      sl_view_release(&plain);
    }
  }
  if (inflated != NULL) sl_source_close(inflated);
  if (compressed != NULL) sl_source_close(compressed);
  sl_view_release(&bigger);
  if (*found == NULL || (*found)->inflates) return 0;
  return sl_error_set(error, ENOTSUP, "%s: compressed %s input (%s) is not read; decompress it "
                      "first", ds->source->name, (*found)->name, sl_compression_name(kind));
}

/// ds->source and the object's name `object`.
static int choose_reader(struct sluice_dataset* ds, const char* format_name, const char* object,
                         struct sluice_error* error) {
  char known[512];
  if (format_name != NULL) {
    ds->format = sl_format_reader_find(format_name);
    if (ds->format == NULL) {
      format_list_of(sl_format_reader_names(), known, sizeof known);
      char shown[256];  // (one line)
      return sl_error_set(error, EINVAL, "%s: unknown format '%s'; formats are: %s",
                          ds->location,
                          sl_escaped(format_name, strlen(format_name), '\'', shown, sizeof shown),
                          known);
    }
    return sl_format_refuse_compressed(ds->format, ds->source, object, error);
  }
  struct sl_view head = {NULL, 0, NULL};
  int rc = sl_source_peek(ds->source, SL_DETECT_BYTES, &head, error);
  if (rc != 0) return rc;
  ds->format = sl_format_reader_detect(object, head.data, head.size);
  const struct sl_format_writer* write_only = sl_format_write_only(object);
  if (ds->format == NULL && write_only == NULL) rc = detect_inflated(ds, &head, &ds->format, error);
  sl_view_release(&head);
  if (rc != 0) return rc;
  if (ds->format != NULL) return sl_format_refuse_compressed(ds->format, ds->source, object, error);
  format_list_of(sl_format_reader_names(), known, sizeof known);
  if (write_only != NULL) {
    return sl_error_set(error, ENOTSUP,
                        "%s: named as %s, a format sluice writes but cannot read; "
                        "to read it as another, name one of: %s",
                        ds->source->name, write_only->name, known);
  }
  return sl_error_set(error, EINVAL,
                      "%s: cannot tell the format from its first bytes or its name; "
                      "name one of: %s",
                      ds->source->name, known);
}

/// Objects read with the format detected from the first: one whose name
/// says another format (a.csv beside z/b.parquet) is an error, where it
/// was read as the first's format and failed with a confusing message.
static int same_format(const struct sluice_dataset* ds, const struct sl_location_list* objects,
                       struct sluice_error* error) {
  if (objects->n < 2) return 0;
  // The first's bytes may overrule its name (IPC streams named x.arrow):
  // a name like the first's is as good as its format.
  const struct sl_format_reader* first = sl_format_reader_detect(objects->names[0], NULL, 0);
  for (size_t i = 1; i < objects->n; ++i) {
    const struct sl_format_reader* named = sl_format_reader_detect(objects->names[i], NULL, 0);
    if (named != NULL && named != ds->format && named != first) {
      char shown[1024], shown_first[1024];  // no password in messages
      sl_location_shown(objects->names[i], shown, sizeof shown);
      sl_location_shown(objects->names[0], shown_first, sizeof shown_first);
      return sl_error_set(error, EINVAL, "%s: '%s' is %s by its name, where '%s', the first "
                          "object, is %s: read them separately, or name the format",
                          ds->location, shown, named->name, shown_first, ds->format->name);
    }
  }
  return 0;
}

/// The reader of a database location (cql://): the format is implied, and
/// such a location stands alone.
static int choose_database_reader(struct sluice_dataset* ds, const char* format_name,
                                  size_t n_locations, struct sluice_error* error) {
  if (format_name != NULL && strcmp(format_name, "cql") != 0) {
    return sl_error_set(error, EINVAL, "%s: a cql:// location is a Cassandra table, not '%s'",
                        ds->location, format_name);
  }
  if (n_locations > 1) {
    return sl_error_set(error, EINVAL, "%s: a cql:// location cannot be read with others",
                        ds->location);
  }
  ds->format = sl_format_reader_find("cql");
  return ds->format != NULL ? 0 : sl_error_set(error, ENOTSUP, "%s: built without cql://", ds->location);
}

/// The field of `s` named `name` (len bytes), or -1; *matches counts them.
static int64_t child_named(const struct ArrowSchema* s, const char* name, size_t len,
                           int64_t* matches) {
  int64_t found = -1;
  *matches = 0;
  for (int64_t c = 0; c < s->n_children; ++c) {
    const char* n = s->children[c]->name;
    if (n != NULL && strlen(n) == len && memcmp(n, name, len) == 0) {
      if (found < 0) found = c;
      ++*matches;
    }
  }
  return found;
}

/// A dotted name that is no column ("st.x"), as pyarrow's read_table takes
/// it: split at every dot, the first part a column, each next a field of the
/// struct before it. 0 with *column and a new path ({depth, indexes}) in
/// *path; ENOENT when the first part is no column (the caller lists the
/// columns); else an error naming the part that fails.
static int resolve_path(struct sluice_dataset* ds, const char* name, int64_t* column,
                        int64_t** path, struct sluice_error* error) {
  const struct ArrowSchema* s = &ds->full_schema;
  const char* dot = strchr(name, '.');
  if (dot == NULL) return ENOENT;
  int64_t matches = 0;
  *column = child_named(s, name, (size_t)(dot - name), &matches);
  if (*column < 0) return ENOENT;
  if (matches > 1)
    return sl_error_set(error, EINVAL, "column '%.*s' appears %lld times in %s: selecting '%s' "
                        "is ambiguous", (int)(dot - name), name, (long long)matches,
                        ds->location, name);
  int64_t depth = 0;
  for (const char* p = dot; p != NULL; p = strchr(p + 1, '.')) ++depth;
  if (depth > 64) return sl_error_set(error, EINVAL, "'%s': a path of more than 64 fields", name);
  *path = sl_alloc(ds->alloc, (size_t)(depth + 1) * sizeof **path);
  if (*path == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", ds->location);
  (*path)[0] = depth;
  s = s->children[*column];
  int rc = 0;
  for (int64_t k = 1; rc == 0 && k <= depth; ++k) {
    const char* part = dot + 1;
    dot = strchr(part, '.');
    size_t len = dot != NULL ? (size_t)(dot - part) : strlen(part);
    int sub = (int)(part - 1 - name);  // the path so far, for messages
    if (strcmp(s->format, "+s") != 0 || s->dictionary != NULL) {
      char type[96], values[64];
      if (s->dictionary != NULL)  // (its format is the index's)
        snprintf(type, sizeof type, "a dictionary of %s",
                 sl_format_name(s->dictionary->format, values, sizeof values));
      else
        sl_format_name(s->format, type, sizeof type);
      rc = sl_error_set(error, EINVAL, "no column '%s' in %s: '%.*s' is %s, not a struct (a "
                        "dotted name selects fields of structs only, as pyarrow's read_table)",
                        name, ds->location, sub, name, type);
      break;
    }
    (*path)[k] = child_named(s, part, len, &matches);
    if (matches > 1) {
      rc = sl_error_set(error, EINVAL, "struct '%.*s' has %lld fields named '%.*s' in %s: "
                        "selecting '%s' is ambiguous", sub, name, (long long)matches, (int)len,
                        part, ds->location, name);
    } else if ((*path)[k] < 0) {
      char list[512];
      size_t used = 0;
      list[0] = '\0';
      for (int64_t c = 0; c < s->n_children && used < sizeof list; ++c) {
        int w = snprintf(list + used, sizeof list - used, "%s%s", c == 0 ? "" : ", ",
                         s->children[c]->name != NULL ? s->children[c]->name : "");
        if (w < 0) break;
        used += (size_t)w;
      }
      rc = sl_error_set(error, EINVAL, "no column '%s' in %s: struct '%.*s' has no field "
                        "'%.*s'; its fields are: %s", name, ds->location, sub, name, (int)len,
                        part, list);
    }
    if (rc == 0) s = s->children[(*path)[k]];
  }
  if (rc == 0 && strncmp(s->format, "+u", 2) == 0)
    rc = sl_error_set(error, ENOTSUP, "'%s' in %s: a union field cannot be selected alone (a "
                      "union has no nulls of its own); select its struct whole", name,
                      ds->location);
  if (rc != 0) {
    sl_free(ds->alloc, *path, (size_t)(depth + 1) * sizeof **path);
    *path = NULL;
  }
  return rc;
}

static int resolve_columns(struct sluice_dataset* ds, const char* const* names, size_t n,
                           struct sluice_error* error) {
  const struct ArrowSchema* schema = &ds->full_schema;
  ds->columns = sl_alloc(ds->alloc, n * sizeof *ds->columns);
  if (ds->columns == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", ds->location);
  ds->n_columns = (int64_t)n;
  for (size_t i = 0; i < n; ++i) {
    int64_t found = -1, matches = 0;
    for (int64_t c = 0; c < schema->n_children; ++c) {
      const char* name = schema->children[c]->name;
      if (names[i] != NULL && name != NULL && strcmp(name, names[i]) == 0) {
        if (found < 0) found = c;
        matches++;
      }
    }
    // Taking the first would silently drop the others (pyarrow refuses too).
    if (matches > 1)
      return sl_error_set(error, EINVAL, "column '%s' appears %lld times in %s: selecting "
                          "it by name is ambiguous (read without selecting columns, or rename "
                          "them at the source)", names[i], (long long)matches, ds->location);
    if (found < 0 && names[i] != NULL) {  // a field of a struct column ("st.x")?
      int64_t* path = NULL;
      int rc = resolve_path(ds, names[i], &found, &path, error);
      if (rc != 0 && rc != ENOENT) return rc;
      if (rc == ENOENT) found = -1;
      if (path != NULL && ds->paths == NULL) {
        ds->paths = sl_calloc(ds->alloc, n, sizeof *ds->paths);
        if (ds->paths == NULL) {
          sl_free(ds->alloc, path, (size_t)(path[0] + 1) * sizeof *path);
          return sl_error_set(error, ENOMEM, "%s: out of memory", ds->location);
        }
      }
      if (path != NULL) ds->paths[i] = path;
    }
    if (found < 0) {
      char list[768], wanted[160], quoted[160];
      size_t used = 0;
      list[0] = '\0';
      for (int64_t c = 0; c < schema->n_children; ++c) {
        const char* name = schema->children[c]->name != NULL ? schema->children[c]->name : "";
        int w = snprintf(list + used, sizeof list - used, "%s%s", c == 0 ? "" : ", ",
                         quoted_name(name, quoted, sizeof quoted));
        if (w < 0 || (size_t)w >= sizeof list - used) {
          snprintf(list + sizeof list - 6, 6, ", ...");
          break;
        }
        used += (size_t)w;
      }
      return sl_error_set(error, EINVAL, "no column %s in %s; columns are: %s",
                          names[i] != NULL ? quoted_name(names[i], wanted, sizeof wanted)
                                           : "(null)", ds->location, list);
    }
    ds->columns[i] = found;
  }
  return 0;
}

/// The schema of the dataset's projection of `full` (all columns when it
/// selects none): a column that is a struct field ("st.x") is that field,
/// nullable when a struct above it is (its rows are null where those are).
static int project_schema(const struct sluice_dataset* ds, const struct ArrowSchema* full,
                          struct ArrowSchema* out, struct sluice_error* error) {
  if (ds->columns == NULL) return sl_schema_copy(full, ds->alloc, out, error);
  SL_RETURN_NOT_OK(sl_schema_project(full, ds->columns, ds->n_columns, ds->alloc, out, error));
  for (int64_t i = 0; ds->paths != NULL && i < ds->n_columns; ++i) {
    const int64_t* path = ds->paths[i];
    if (path == NULL) continue;
    const struct ArrowSchema* s = full->children[ds->columns[i]];
    int64_t nullable = 0;
    for (int64_t k = 1; k <= path[0]; ++k) {
      if (path[k] < 0 || path[k] >= s->n_children) {  // (refine changed the structs)
        out->release(out);
        return sl_error_set(error, EINVAL, "%s: column %lld's struct field is gone",
                            ds->location, (long long)i);
      }
      nullable |= s->flags & ARROW_FLAG_NULLABLE;
      s = s->children[path[k]];
    }
    struct ArrowSchema field;
    int rc = sl_schema_copy(s, ds->alloc, &field, error);
    if (rc != 0) {
      out->release(out);
      return rc;
    }
    field.flags |= nullable;
    out->children[i]->release(out->children[i]);
    memcpy(out->children[i], &field, sizeof field);
  }
  return 0;
}

/// The objects of `locations` (n >= 1) in that order, each expanded when it
/// names many (sorted within it). 0 or an error naming the location.
static int expand_locations(const char* const* locations, size_t n,
                            const struct sl_remote_options* remote,
                            const struct sluice_allocator* alloc, struct sl_location_list* out,
                            struct sluice_error* error) {
  for (size_t i = 0; i < n; ++i) {
    struct sl_location_list one = {NULL, NULL, 0, 0};
    int rc = sl_location_expand(locations[i], remote, alloc, &one, error);
    for (size_t k = 0; rc == 0 && k < one.n; ++k) {
      if (sl_location_list_add(out, one.names[k], strlen(one.names[k]), one.sizes[k], alloc) != 0) {
        rc = sl_error_set(error, ENOMEM, "out of memory listing %s", locations[i]);
      }
    }
    sl_location_list_free(&one, alloc);
    if (rc != 0) return rc;
  }
  return 0;
}

/// timeout_s of the open and write options: seconds >= 0 (0 = the defaults).
static int check_timeout(const char* location, double timeout_s, struct sluice_error* error) {
  if (timeout_s >= 0) return 0;  // (NaN is not)
  return sl_error_set(error, EINVAL, "%s: timeout_s is %g; seconds >= 0 (0 = the defaults)",
                      location, timeout_s);
}

/// A reader option given twice with different values: which was meant is a
/// guess, so neither silently wins (as for the writers' options given both
/// ways). The same value twice is fine.
static int check_format_options(const char* location, const char* list,
                                struct sluice_error* error) {
  struct sl_option a, b;
  if (list == NULL || !sl_option_conflict(list, &a, &b)) return 0;
  char key[64], first[64], second[64];
  sl_escaped(a.key, a.key_len, 0, key, sizeof key);
  // The CLI's flags that are these options.
  const char* flag = strcmp(key, "schema") == 0          ? "; --schema X is -O schema=X"
                     : strcmp(key, "reader_schema") == 0 ? "; --reader-schema X is -O reader_schema=X"
                     : strcmp(key, "length_prefix") == 0 ? "; --length-prefix X is -O length_prefix=X"
                                                         : "";
  return sl_error_set(error, EINVAL, "%s: format option %s given twice with different values "
                      "('%s' and '%s'%s): give one", location, key,
                      sl_escaped(a.value, a.value_len, '\'', first, sizeof first),
                      sl_escaped(b.value, b.value_len, '\'', second, sizeof second), flag);
}

/// Bytes to read in place of a location (sluice_dataset_open_memory); `taken`
/// is set once the source owns them (and so calls release).
struct memory_args {
  const void* data;
  size_t size;
  void (*release)(void*);
  void* release_ctx;
  int taken;
};

static int open_dataset(const char* const* locations, size_t n_locations,
                        struct memory_args* memory, const struct sluice_open_options* options,
                        struct sluice_dataset** out, struct sluice_error* error);

int sluice_dataset_open(const char* location, const struct sluice_open_options* options,
                        struct sluice_dataset** out, struct sluice_error* error) {
  SL_ERROR_OR_SCRATCH(error);
  if (out != NULL) *out = NULL;
  if (location == NULL || out == NULL) {
    return sl_error_set(error, EINVAL, "sluice_dataset_open: NULL location or output");
  }
  int rc = open_dataset(&location, 1, NULL, options, out, error);
  // s3://b/logs that is no object but has objects under logs/: read as that
  // prefix, as pyarrow reads it and as a local directory is read. (The GET
  // comes first: an object of that name is the object.)
  size_t n = strlen(location);
  char dir[2400];
  if (rc == ENOENT && strncmp(location, "s3://", 5) == 0 && n > 0 && location[n - 1] != '/' &&
      strchr(location + 5, '/') != NULL && !sl_location_is_many(location) &&
      !sl_location_is_escaped(location) && n + 2 <= sizeof dir) {
    memcpy(dir, location, n);
    memcpy(dir + n, "/", 2);
    struct sluice_error first = *error;
    const char* as_prefix = dir;
    int again = open_dataset(&as_prefix, 1, NULL, options, out, error);
    // Objects found under it, which then failed (a column not there, a
    // filter, types that differ): that error, not the GET's 404.
    if (again != ENOENT && again != EACCES && again != EPERM) return again;
    *error = first;  // no objects under it either (or no listing): the GET's error
  }
  return rc;
}

int sluice_dataset_open_memory(const void* data, size_t size, const char* name,
                               void (*release)(void*), void* release_ctx,
                               const struct sluice_open_options* options,
                               struct sluice_dataset** out, struct sluice_error* error) {
  SL_ERROR_OR_SCRATCH(error);
  if (out != NULL) *out = NULL;
  if (name == NULL) name = "<memory>";
  struct memory_args m = {data, size, release, release_ctx, 0};
  int rc = out == NULL ? sl_error_set(error, EINVAL, "sluice_dataset_open_memory: NULL output")
                       : open_dataset(&name, 1, &m, options, out, error);
  // Failed before the source took the bytes: they go back now all the same.
  if (!m.taken && release != NULL) release(release_ctx);
  return rc;
}

int sluice_dataset_open_many(const char* const* locations, size_t n,
                             const struct sluice_open_options* options,
                             struct sluice_dataset** out, struct sluice_error* error) {
  SL_ERROR_OR_SCRATCH(error);
  if (out != NULL) *out = NULL;
  if (locations == NULL || n == 0 || out == NULL) {
    return sl_error_set(error, EINVAL, "sluice_dataset_open_many: no locations or no output");
  }
  for (size_t i = 0; i < n; ++i) {
    if (locations[i] == NULL || strcmp(locations[i], "-") == 0) {
      return sl_error_set(error, EINVAL, "location %zu of %zu is %s", i + 1, n,
                          locations[i] == NULL ? "NULL"
                                               : "'-': standard input cannot be read with "
                                                 "other locations");
    }
  }
  return open_dataset(locations, n, NULL, options, out, error);
}

/// A failed open's message, led by the dataset's `label` unless it names
/// the dataset already: the label, an object of it (a file under a
/// directory, what a glob matched: their directory), or a location
/// itself. An allocation's message names nothing.
static void name_open_error(const struct sluice_dataset* ds, const char* const* locations,
                            size_t n_locations, const char* label, struct sluice_error* error) {
  if (sl_error_names(error, label)) return;
  if (ds->reader != NULL && sl_files_reader_names_object(ds->format, ds->reader, error)) return;
  for (size_t i = 0; i < n_locations; ++i) {
    if (sl_error_names(error, locations[i])) return;
    char root[1024];
    sl_location_shown(locations[i], root, sizeof root);
    size_t n = strcspn(root, "*?[{");
    if (root[n] != '\0') {  // a glob: the directory its matches are under
      while (n > 0 && root[n - 1] != '/') --n;
    }
    root[n] = '\0';
    if (n > 0 && sl_error_names(error, root)) return;
  }
  sl_error_name(error, label);
}

static int open_dataset(const char* const* locations, size_t n_locations,
                        struct memory_args* memory, const struct sluice_open_options* options,
                        struct sluice_dataset** out, struct sluice_error* error) {
  const char* location = locations[0];
  char line[1024];  // how messages name it: on one line
  const char* named = sl_escaped_line(location, line, sizeof line);
  struct sluice_open_options defaults;
  if (options == NULL) {
    sluice_open_options_init(&defaults);
    options = &defaults;
  }
  if (options->n_columns > 0 && options->columns == NULL) {
    return sl_error_set(error, EINVAL, "%s: n_columns is %zu but columns is NULL", named,
                        options->n_columns);
  }
  SL_RETURN_NOT_OK(check_timeout(named, options->timeout_s, error));
  SL_RETURN_NOT_OK(check_format_options(named, options->format_options, error));
  // Negative counts are mistakes, not defaults (as sluice_scan_options'
  // checks take them): named rather than silently replaced.
  const char* negative = options->threads < 0         ? "threads"
                         : options->memory_budget < 0 ? "memory_budget"
                         : options->batch_size < 0    ? "batch_size"
                                                      : NULL;
  if (negative != NULL) {
    return sl_error_set(error, EINVAL, "%s: sluice_open_options.%s is negative (0 is the "
                        "default)", named, negative);
  }
  if (options->limit < -1) {
    return sl_error_set(error, EINVAL, "%s: sluice_open_options.limit is %lld (-1 is no limit)",
                        named, (long long)options->limit);
  }
  int64_t budget = options->memory_budget > 0 ? options->memory_budget : SL_DEFAULT_MEMORY_BUDGET;
  // With the default allocator, freed batch buffers are kept for the next
  // batches, up to a quarter of the budget (sl_buffer_cache.h) and a few
  // batches' columns (a batch of W1 is five buffers, a wide table's many
  // more; those beyond are freed as before).
  struct sluice_buffer_cache* cache =
      options->allocator == NULL ? sl_buffer_cache_create(NULL, budget / 4, 64) : NULL;
  if (options->allocator == NULL && cache == NULL) {
    return sl_error_set(error, ENOMEM, "%s: out of memory", named);
  }
  const struct sluice_allocator* alloc =
      cache != NULL ? sl_buffer_cache_allocator(cache) : options->allocator;
  struct sluice_dataset* ds = sl_calloc(alloc, 1, sizeof *ds);
  if (ds == NULL) {
    sl_buffer_cache_close(cache);
    return sl_error_set(error, ENOMEM, "%s: out of memory", named);
  }
  atomic_init(&ds->refs, 1);
  ds->alloc = alloc;
  ds->cache = cache;
  ds->threads = options->threads;
  ds->memory_budget = budget;
  ds->ordered = options->ordered;
  ds->limit = options->limit < 0 ? -1 : options->limit;
  // A database table (cql://) is read by its reader, not through bytes.
  int database = memory == NULL && strncmp(location, "cql://", 6) == 0;
  // How messages name the dataset: its location, or the first of several.
  char label[512];
  sl_location_shown(location, label, sizeof label);  // no password in messages
  if (!database && n_locations > 1) {
    size_t k = strlen(label);
    snprintf(label + k, sizeof label - k, " (and %zu more locations)", n_locations - 1);
  }
  ds->location = sl_strdup(alloc, label);
  int rc = ds->location == NULL ? sl_error_set(error, ENOMEM, "%s: out of memory", named) : 0;
  // Remote readahead gets an eighth of the budget (the default 256 MiB gives
  // 32 parts of 1 MiB); decoded batches get the rest.
  struct sl_remote_options remote = {.tls_insecure = options->tls_insecure,
                                     .ca_bundle = options->ca_bundle,
                                     .timeout_s = options->timeout_s,
                                     .readahead_bytes = ds->memory_budget / 8,
                                     .s3 = options->s3,
                                     // (asked by the listing of a directory,
                                     // glob or prefix too)
                                     .cancelled = options->cancelled,
                                     .cancelled_user = options->cancelled_user};
  // The objects share request handles, so a connection opened for one
  // object serves the next (sl_http_pool.h), and a quarter of the budget for
  // small objects held whole (all objects are opened before the scan; the
  // rest are read by ranges). The sources hold it from here.
  int remote_objects = 0;
  for (size_t i = 0; memory == NULL && i < n_locations; ++i) {
    remote_objects |= sl_location_is_remote(locations[i]);
  }
  // Remote splits wait on their requests as well as decode: two per core
  // keep the link busy while the cores decode (W1 Avro over S3 on
  // loopback: 1.95 -> 1.62 s; CSV 4.1 -> 3.8 s).
  if (remote_objects && options->threads <= 0) {
    ds->threads = 2 * sl_cores(128);  // (the scan caps it)
  }
  if (rc == 0 && !database && remote_objects) {
    rc = sl_http_pool_create(alloc, location, ds->memory_budget / 4, &remote.http_pool, error);
  }
  // A directory, glob or prefix names many objects; read as one table.
  struct sl_location_list objects = {NULL, NULL, 0, 0};
  // One object named with escapes (run\[1\].csv): its name without them.
  int escaped = memory == NULL && !database && n_locations == 1 &&
                sl_location_is_escaped(location);
  if (rc == 0 && memory == NULL &&
      (n_locations > 1 || sl_location_is_many(location) || escaped)) {
    rc = expand_locations(locations, n_locations, &remote, alloc, &objects, error);
  }
  // key=value directories below the location (a single object in one
  // counts too: its partition values are still columns). Not for a list of
  // locations: they have no one root to count segments from.
  struct sl_hive hive;
  memset(&hive, 0, sizeof hive);
  if (rc == 0 && objects.n > 0 && n_locations == 1 && !escaped && options->hive_partitioning) {
    rc = sl_hive_detect(location, &objects, alloc, &hive, error);
  }
  // A filter's conditions on partition keys choose objects; the others
  // filter rows (parsed once the schema is known).
  // With union_by_name every condition filters rows: a key may also be a
  // column of some objects, whose values then differ from the directory's.
  char* row_text = NULL;
  char* key_text = NULL;  // kept until the objects' columns are known (key_names_a_column)
  if (rc == 0 && options->filter != NULL && options->union_by_name) {
    row_text = sl_strdup(alloc, options->filter);
    if (row_text == NULL) rc = sl_error_set(error, ENOMEM, "out of memory");
  } else if (rc == 0 && options->filter != NULL) {
    int choose = 0;
    rc = split_filter(options->filter, &hive, alloc, &key_text, &row_text, &choose, error);
    if (rc == 0 && key_text != NULL && choose) {
      rc = sl_hive_filter(&hive, &objects, key_text, 0, alloc, error);
    }
  }
  // Objects a partition filter refuses are never opened, but with
  // union_by_name, whose columns are every object's: opened for their
  // columns only, so that the table has the same columns whatever is chosen.
  if (rc == 0 && options->partition_filter != NULL) {
    rc = hive.n_keys > 0 ? sl_hive_filter(&hive, &objects, options->partition_filter,
                                          options->union_by_name, alloc, error)
                         : sl_error_set(error, EINVAL, "%s: a partition filter, but no key=value "
                                        "directories below the location", named);
  }
  const char* first = objects.n > 0 ? objects.names[0] : location;
  if (rc == 0 && database) rc = choose_database_reader(ds, options->format, n_locations, error);
  if (rc == 0 && memory != NULL) {
    memory->taken = 1;
    rc = sl_memory_source_open(memory->data, memory->size, memory->release, memory->release_ctx,
                               location, alloc, &ds->source, error);
  } else if (rc == 0 && !database) {
    remote.size_hint = objects.n > 0 ? objects.sizes[0] : 0;
    // A named footer format opens by the object's end (the files reader
    // does the same for the objects after the first).
    const struct sl_format_reader* named =
        options->format != NULL ? sl_format_reader_find(options->format) : NULL;
    remote.tail_first = named != NULL && named->tail_first;
    // A stream format (named, or by the object's name) is opened by its
    // download, unless compressed: an inflated object samples by ranges.
    const struct sl_format_reader* guess =
        options->format != NULL ? named : sl_format_reader_detect(first, NULL, 0);
    remote.stream_first = guess != NULL && guess->streams &&
                          sl_compression_for_name(first) == SL_COMPRESS_NONE;
    // The open's waits (a pipe, a trickling body) ask the caller's cancel
    // hook (remote.cancelled): on this object, and on the others the files
    // reader opens (it asks between objects too, and takes the hook off when
    // it is done).
    rc = sl_source_open_remote(first, &remote, alloc, &ds->source, error);
    if (rc == 0) {
      sl_source_ask_cancel(ds->source, options->cancelled, options->cancelled_user);
    }
    remote.size_hint = 0;  // that object's only
    remote.tail_first = 0;
    remote.stream_first = 0;
  }
  if (rc == 0 && !database) rc = choose_reader(ds, options->format, first, error);
  if (rc == 0 && !database && options->format == NULL) rc = same_format(ds, &objects, error);
  struct sl_reader_args args = {.source = ds->source, .location = location, .alloc = alloc,
                                .batch_size = options->batch_size,
                                .memory_budget = ds->memory_budget,
                                .format_options = options->format_options,
                                .tls_insecure = options->tls_insecure,
                                .ca_bundle = options->ca_bundle,
                                .timeout_s = options->timeout_s,
                                .columns_by_name = options->union_by_name};
  if (rc == 0 && (objects.n > 1 || hive.n_keys > 0)) {
    struct sl_source* source = ds->source;
    ds->source = NULL;  // the files reader owns it from here, also on error
    rc = sl_files_reader_open(ds->format, &objects, source, &remote, &args, &hive,
                              options->union_by_name, &ds->format, &ds->reader, error);
    if (rc != 0) ds->reader = NULL;
  } else if (rc == 0) {
    // (a format with a footer read from a pipe reads a temporary copy)
    rc = sl_format_open_spooling(ds->format, &args, &ds->reader, error);
    ds->source = args.source;
  }
  sl_hive_free(&hive, alloc);  // (empty when the files reader took it)
  sl_location_list_free(&objects, alloc);
  if (rc == 0) rc = ds->format->schema(ds->reader, &ds->full_schema, error);
  if (rc == 0 && options->columns != NULL) {
    rc = resolve_columns(ds, options->columns, options->n_columns, error);
  }
  if (rc == 0) {
    rc = project_schema(ds, &ds->full_schema, &ds->schema, error);
  }
  if (rc == 0 && row_text != NULL) {
    char shown[1024];
    sl_location_shown(location, shown, sizeof shown);
    rc = parse_row_filter(ds, row_text, &ds->full_schema, shown, &ds->filter, error);
  }
  if (rc == 0 && key_text != NULL) rc = key_names_a_column(ds, key_text, alloc, error);
  if (ds->filter != NULL) {  // kept for sluice_dataset_refine
    ds->filter_text = row_text;
    ds->filter_text_size = strlen(options->filter) + 1;
    row_text = NULL;
  }
  if (row_text != NULL) sl_free(alloc, row_text, strlen(options->filter) + 1);
  if (key_text != NULL) sl_free(alloc, key_text, strlen(options->filter) + 1);
  if (rc == 0) {
    rc = ds->format->plan_splits(ds->reader, &ds->splits, &ds->n_splits, error);
    if (rc != 0) {
      // A failed plan hands nothing over.
      ds->splits = NULL;
      ds->n_splits = 0;
    }
  }
  if (rc == 0 && ds->filter != NULL) rc = prune_splits(ds, error);
  // The hook is the open's only: scans may outlive its caller's state.
  if (ds->source != NULL) {
    sl_source_stop_asking(ds->source);
  }
  sl_http_pool_release(remote.http_pool);
  if (rc != 0) {
    name_open_error(ds, locations, n_locations, label, error);
    dataset_destroy(ds);
    return rc;
  }
  *out = ds;
  return 0;
}

const char* sluice_dataset_format(const struct sluice_dataset* dataset) {
  return dataset != NULL && dataset->format != NULL ? dataset->format->name : NULL;
}

int sluice_dataset_schema(struct sluice_dataset* dataset, struct ArrowSchema* out,
                          struct sluice_error* error) {
  SL_ERROR_OR_SCRATCH(error);
  if (dataset == NULL || out == NULL) {
    return sl_error_set(error, EINVAL, "sluice_dataset_schema: NULL argument");
  }
  return sl_dataset_name_error(dataset, sl_schema_copy(&dataset->schema, dataset->alloc, out, error),
                               error);
}

int sluice_dataset_full_schema(struct sluice_dataset* dataset, struct ArrowSchema* out,
                               struct sluice_error* error) {
  SL_ERROR_OR_SCRATCH(error);
  if (dataset == NULL || out == NULL) {
    return sl_error_set(error, EINVAL, "sluice_dataset_full_schema: NULL argument");
  }
  return sl_dataset_name_error(
      dataset, sl_schema_copy(&dataset->full_schema, dataset->alloc, out, error), error);
}

int sluice_dataset_is_partition_key(struct sluice_dataset* dataset, const char* column) {
  if (dataset == NULL || column == NULL) return 0;
  return sl_files_reader_is_partition_column(dataset->format, dataset->reader, column);
}

int sluice_dataset_refine(struct sluice_dataset* ds, int* changed, struct sluice_error* error) {
  SL_ERROR_OR_SCRATCH(error);
  if (ds == NULL || changed == NULL) {
    return sl_error_set(error, EINVAL, "sluice_dataset_refine: NULL argument");
  }
  *changed = 0;
  if (ds->format->refine == NULL) return 0;
  // Open scans hold references, and their splits read the reader's types.
  if (atomic_load(&ds->refs) > 1) {
    return sl_error_set(error, EBUSY, "%s: a scan of the dataset is still open", ds->location);
  }
  int rc = ds->format->refine(ds->reader, changed, error);
  if (rc != 0 && *changed) {
    // Some objects took wider types, the others or the dataset's could not
    // follow: no scan may run on what is left.
    sl_dataset_name_error(ds, rc, error);
    ds->unusable = *error;
    if (ds->unusable.code == 0) ds->unusable.code = rc;
    return rc;
  }
  if (rc != 0) return sl_dataset_name_error(ds, rc, error);
  if (!*changed) return 0;
  struct ArrowSchema full, projected;
  memset(&full, 0, sizeof full);
  memset(&projected, 0, sizeof projected);
  struct sl_row_filter* filter = NULL;
  rc = ds->format->schema(ds->reader, &full, error);
  if (rc == 0) {
    rc = project_schema(ds, &full, &projected, error);
  }
  // The row filter compares values as its columns' types: parsed again for
  // the new ones (the old one pointed into the schema freed below).
  if (rc == 0 && ds->filter_text != NULL) {
    rc = parse_row_filter(ds, ds->filter_text, &full, ds->location, &filter, error);
  }
  if (rc != 0) {
    // The reader has the new types already: no scan may run with the old
    // schema and filter.
    sl_dataset_name_error(ds, rc, error);
    ds->unusable = *error;
    if (ds->unusable.code == 0) ds->unusable.code = rc;
    if (full.release != NULL) full.release(&full);
    if (projected.release != NULL) projected.release(&projected);
    return rc;
  }
  ds->full_schema.release(&ds->full_schema);
  ds->schema.release(&ds->schema);
  ds->full_schema = full;
  ds->schema = projected;
  if (filter != NULL) {
    sl_row_filter_free(ds->filter);
    ds->filter = filter;
  }
  return 0;
}

int64_t sluice_dataset_num_splits(struct sluice_dataset* dataset) {
  return dataset != NULL ? dataset->n_splits : 0;
}

int64_t sluice_dataset_rows_skipped(struct sluice_dataset* dataset, char* first_reason,
                                    size_t cap) {
  if (first_reason != NULL && cap > 0) first_reason[0] = '\0';
  if (dataset == NULL || dataset->format->rows_skipped == NULL) return 0;
  return dataset->format->rows_skipped(dataset->reader, first_reason, cap);
}

int sl_dataset_usable(const struct sluice_dataset* ds, struct sluice_error* error) {
  if (ds->unusable.code == 0) return 0;
  if (error != NULL) *error = ds->unusable;
  return ds->unusable.code;
}

int sluice_dataset_type_inferred(struct sluice_dataset* dataset, const char* column) {
  if (dataset == NULL || column == NULL || dataset->format->type_inferred == NULL) return 0;
  for (int64_t i = 0; i < dataset->full_schema.n_children; ++i) {
    const char* name = dataset->full_schema.children[i]->name;
    if (name != NULL && strcmp(name, column) == 0) {
      return dataset->format->type_inferred(dataset->reader, i);
    }
  }
  return 0;
}

/// 1 (with its path from the column in `path`) if `s` or a field under it
/// has a type only described, never read.
static int unreadable_field(const struct ArrowSchema* s, char* path, size_t cap, size_t len,
                            const char** format) {
  if (s->name != NULL && s->name[0] != '\0' && len < cap - 1) {
    int n = snprintf(path + len, cap - len, "%s%s", len > 0 ? "." : "", s->name);
    if (n > 0) len += (size_t)n;
    if (len > cap - 1) len = cap - 1;
  }
  static const char* const k_unreadable[] = {"+r", "+vl", "+vL"};
  for (size_t i = 0; i < sizeof k_unreadable / sizeof k_unreadable[0]; ++i) {
    if (strcmp(s->format, k_unreadable[i]) == 0) {
      *format = s->format;
      return 1;
    }
  }
  if (s->dictionary != NULL && unreadable_field(s->dictionary, path, cap, len, format)) return 1;
  for (int64_t i = 0; i < s->n_children; ++i)
    if (unreadable_field(s->children[i], path, cap, len, format)) return 1;
  path[len] = '\0';
  return 0;
}

int sl_dataset_readable(const struct sluice_dataset* ds, struct sluice_error* error) {
  for (int64_t i = 0; i < ds->schema.n_children; ++i) {
    char path[256] = "";
    const char* format = NULL;
    if (!unreadable_field(ds->schema.children[i], path, sizeof path, 0, &format)) continue;
    char type[64];
    sl_format_name(format, type, sizeof type);
    return sl_error_set(error, ENOTSUP, "%s: field '%s': type %s is not supported (cast it to "
                        "%s first, or select only other columns: -c, columns=)", ds->location,
                        path, type, format[1] == 'r' ? "its value type" : "a list");
  }
  return 0;
}

void sl_dataset_scan_args(struct sluice_dataset* ds, struct sl_scan_args* args) {
  memset(args, 0, sizeof *args);
  args->format = ds->format;
  args->reader = ds->reader;
  args->splits = ds->splits;
  args->n_splits = ds->n_splits;
  args->columns = ds->columns;
  args->n_columns = ds->n_columns;
  args->paths = (const int64_t* const*)ds->paths;
  args->schema = &ds->full_schema;
  args->threads = ds->threads;
  args->memory_budget = ds->memory_budget;
  args->ordered = ds->ordered;
  args->limit = ds->limit;
  args->filter = ds->filter;
  args->alloc = ds->alloc;
  args->on_batch = NULL;
  args->on_batch_ctx = NULL;
  args->slow_split = -1;
  args->slow_split_delay_us = 0;
}

/* ---- Scanning --------------------------------------------------------------- */

// struct sluice_scanner is in sluice_dataset_internal.h; scanners of all or
// some splits are opened in sluice_scan_range.c.
int sluice_scanner_open(struct sluice_dataset* dataset, struct sluice_scanner** out,
                        struct sluice_error* error) {
  return sluice_scanner_open_with(dataset, NULL, out, error);
}

int sluice_scanner_next(struct sluice_scanner* scanner, struct ArrowArray* out,
                        struct sluice_batch_tag* tag, struct sluice_error* error) {
  SL_ERROR_OR_SCRATCH(error);
  if (scanner == NULL || out == NULL) {
    if (out != NULL) out->release = NULL;
    return sl_error_set(error, EINVAL, "sluice_scanner_next: NULL argument");
  }
  int rc = sl_scan_next(scanner->scan, out, tag, error);
  if (rc == 0 && tag != NULL && out->release != NULL) tag->split += scanner->first_split;
  // The engine's and a split's own messages may name no object (an
  // allocation's): the caller learns which dataset failed.
  return sl_dataset_name_error(scanner->dataset, rc, error);
}

void sluice_scanner_close(struct sluice_scanner* scanner) {
  if (scanner == NULL) return;
  struct sluice_dataset* ds = scanner->dataset;
  sl_scan_stop(scanner->scan);
  sl_free(ds->alloc, scanner, sizeof *scanner);
  sl_dataset_release(ds);
}

/// What an ArrowArrayStream from sluice_dataset_scan carries.
struct scan_stream {
  struct sluice_scanner* scanner;
  struct sluice_error error;  // the last failure, for get_last_error
};

static int stream_get_schema(struct ArrowArrayStream* stream, struct ArrowSchema* out) {
  struct scan_stream* s = stream->private_data;
  sl_error_clear(&s->error);
  return sluice_dataset_schema(s->scanner->dataset, out, &s->error);
}

static int stream_get_next(struct ArrowArrayStream* stream, struct ArrowArray* out) {
  struct scan_stream* s = stream->private_data;
  sl_error_clear(&s->error);
  return sluice_scanner_next(s->scanner, out, NULL, &s->error);
}

static const char* stream_get_last_error(struct ArrowArrayStream* stream) {
  struct scan_stream* s = stream->private_data;
  return s->error.message[0] != '\0' ? s->error.message : NULL;
}

static void stream_release(struct ArrowArrayStream* stream) {
  if (stream->release == NULL) return;
  struct scan_stream* s = stream->private_data;
  const struct sluice_allocator* alloc = s->scanner->dataset->alloc;
  sluice_scanner_close(s->scanner);
  sl_free(alloc, s, sizeof *s);
  stream->private_data = NULL;
  stream->release = NULL;
}

int sluice_dataset_scan(struct sluice_dataset* dataset, struct ArrowArrayStream* out,
                        struct sluice_error* error) {
  SL_ERROR_OR_SCRATCH(error);
  if (out != NULL) out->release = NULL;
  if (dataset == NULL || out == NULL) {
    return sl_error_set(error, EINVAL, "sluice_dataset_scan: NULL argument");
  }
  struct scan_stream* s = sl_calloc(dataset->alloc, 1, sizeof *s);
  if (s == NULL) {
    return sl_error_set(error, ENOMEM, "%s: out of memory starting a scan", dataset->location);
  }
  int rc = sluice_scanner_open(dataset, &s->scanner, error);
  if (rc != 0) {
    sl_free(dataset->alloc, s, sizeof *s);
    return rc;
  }
  out->get_schema = stream_get_schema;
  out->get_next = stream_get_next;
  out->get_last_error = stream_get_last_error;
  out->release = stream_release;
  out->private_data = s;
  return 0;
}

/* ---- Writing ---------------------------------------------------------------- */

/// Freed writer buffers kept for reuse during one sluice_write (a
/// partitioned write's buffered rows besides) and the blocks that makes
/// (of 64 KiB and more).
#define WRITE_CACHE_BYTES ((int64_t)64 << 20)
#define WRITE_CACHE_BLOCKS(bytes) ((int)((bytes) >> 16 < 1024 ? 1024 : (bytes) >> 16 < 16384 ? (bytes) >> 16 : 16384))

void sl_write_remote_options(const struct sluice_write_options* options,
                             struct sl_remote_options* out) {
  memset(out, 0, sizeof *out);
  out->tls_insecure = options->tls_insecure;
  out->ca_bundle = options->ca_bundle;
  out->timeout_s = options->timeout_s;
  out->s3 = options->s3;
  out->cancelled = options->cancelled;
  out->cancelled_user = options->cancelled_user;
}

int sl_write_open_sink(const struct sl_format_writer* writer, const char* location,
                       const struct sluice_write_options* options,
                       const struct sl_remote_options* remote, struct sl_write_args* args,
                       struct sl_sink** out, struct sluice_error* error) {
  *out = NULL;
  // x.csv.gz: the CSV compressed whole. A format asked for by name keeps its
  // own layout whatever the suffix (x.arrow.zst with ZSTD buffers inside).
  enum sl_compression compression =
      writer->compressible ? sl_compression_for_name(location) : SL_COMPRESS_NONE;
  char shown[4096];  // the location in messages, as the sink shows it
  sl_location_shown(location, shown, sizeof shown);
  if (writer->compressible && options->compression != NULL && options->compression[0] != '\0') {
    // Asked by name (pandas' to_csv(compression="gzip"), its spellings
    // too): over the suffix.
    const char* c = options->compression;
    if (sl_compression_of_option(c, &compression) != 0)
      return sl_error_set(error, EINVAL, "%s: the %s writer compresses with gzip, zstd, bz2, xz "
                          "or none, not '%s'", shown, writer->name, c);
    args->compression = NULL;  // the whole file's, not the format's own
  } else if (writer->compressible &&
             ((compression == SL_COMPRESS_NONE &&
               sl_unwritten_compression_suffix_length(location) > 0) ||
              sl_archive_suffix_length(location) > 0)) {
    // x.csv.lz4 (-t csv): plain text under a compressed name would mislead
    // every reader; so would a gzipped CSV named x.tar.gz or x.tgz, which
    // readers (pandas) open as a tar archive.
    size_t len = sl_location_name_length(location);
    size_t archive = sl_archive_suffix_length(location);
    const char* suffix =
        location + len - (archive > 0 ? archive : sl_unwritten_compression_suffix_length(location));
    char named[64];
    return sl_error_set(error, EINVAL, "%s: the %s writer compresses whole files with gzip, "
                        "zstd, bzip2 or xz (.gz, .zst, .bz2, .xz), not %s", shown,
                        writer->name, sl_escaped(suffix, (size_t)(location + len - suffix), 0,
                                                 named, sizeof named));
  }
  struct sl_sink* sink = NULL;
  SL_RETURN_NOT_OK(sl_sink_open_remote(location, remote, args->alloc, &sink, error));
  if (options->no_fsync) sl_sink_skip_fsync(sink);
  int rc = sl_sink_compress(sink, compression, error);
  if (rc != 0) {
    sl_sink_abort(sink);
    return rc;
  }
  *out = sink;
  return 0;
}

/// A failed write's message, led by the file or object it was writing
/// (`shown`: the location as sl_location_shown spells it) unless it names
/// it already (the sink's own errors do).
static int name_destination(const char* shown, int rc, struct sluice_error* error) {
  // Not "-" (standard output): "-: reading the input: ..." read like a bad
  // argument, and the sink names standard output in its own errors.
  // A partitioned write's own errors name a file below it ("dir/k=1/...").
  size_t n = strlen(shown);
  if (error == NULL || strcmp(shown, "-") == 0) return rc;
  if (strncmp(error->message, shown, n) == 0 &&
      (error->message[n] == ':' || error->message[n] == '/')) {
    return rc;
  }
  // A long message was cut in its middle (sl_error_set_ends): it still
  // names the location when it starts with it up to the cut.
  const char* cut = strstr(error->message, " [...] ");
  size_t k = cut != NULL ? (size_t)(cut - error->message) : 0;
  if (k > 0 && k < n && strncmp(error->message, shown, k) == 0) return rc;
  sl_error_prefix(error, "%s", shown);
  return rc;
}

int sl_write_options_check(const char* location, const struct sluice_write_options* options,
                           struct sluice_error* error) {
  char shown[4096];  // one line; no password
  if (strncmp(location, "cql://", 6) == 0) snprintf(shown, sizeof shown, "cql://");
  else sl_location_shown(location, shown, sizeof shown);
  // Negative counts are mistakes, not defaults (as the open and scan
  // options take them): named rather than silently replaced.
  const char* negative = options->n_partition_by < 0           ? "n_partition_by"
                         : options->max_partitions < 0         ? "max_partitions"
                         : options->partition_buffer_bytes < 0 ? "partition_buffer_bytes"
                         : options->max_rows_per_file < 0      ? "max_rows_per_file"
                                                               : NULL;
  if (negative != NULL) {
    return sl_error_set(error, EINVAL, "%s: sluice_write_options.%s is negative (0 is the "
                        "default)", shown, negative);
  }
  if (options->n_partition_by > 0 && options->partition_by == NULL) {
    return sl_error_set(error, EINVAL, "%s: n_partition_by is %lld but partition_by is NULL",
                        shown, (long long)options->n_partition_by);
  }
  // A part size S3 would refuse, before the output is written (S3 would
  // refuse its first part only after the whole output was staged).
  if (strncmp(location, "s3://", 5) == 0) {
    int64_t part;
    SL_RETURN_NOT_OK(sl_s3_part_size(options->s3 != NULL ? options->s3->part_size : 0, location,
                                     &part, error));
  }
  return 0;
}

/// sluice_write to one file or object: written, then committed.
static int write_file(const struct sl_format_writer* writer, struct ArrowArrayStream* stream,
                      const char* location, const char* shown,
                      const struct sluice_write_options* options, struct sl_write_args* args,
                      struct sluice_error* error) {
  struct sl_remote_options remote;  // the sink keeps a pointer: lives until the commit
  sl_write_remote_options(options, &remote);
  struct sl_sink* sink = NULL;
  SL_RETURN_NOT_OK(sl_write_open_sink(writer, location, options, &remote, args, &sink, error));
  int rc = writer->write(stream, sink, args, error);
  if (rc != 0) {
    sl_sink_abort(sink);
    return name_destination(shown, rc, error);
  }
  rc = sl_sink_commit(sink, error);
  return rc != 0 ? name_destination(shown, rc, error) : 0;
}

int sluice_write(struct ArrowArrayStream* stream, const char* location,
                 const struct sluice_write_options* options, struct sluice_error* error) {
  SL_ERROR_OR_SCRATCH(error);
  if (stream == NULL || stream->release == NULL || location == NULL) {
    return sl_error_set(error, EINVAL, "sluice_write: NULL or released stream, or no location");
  }
  struct sluice_write_options defaults;
  if (options == NULL) {
    sluice_write_options_init(&defaults);
    options = &defaults;
  }
  const struct sl_format_writer* writer = NULL;
  char known[512];
  char shown[4096];  // the location in messages: one line, no password
  sl_location_shown(location, shown, sizeof shown);
  int table = strncmp(location, "cql://", 6) == 0;
  if (table && options->format != NULL && strcmp(options->format, "cql") != 0) {
    char shown[1024];  // no password in messages
    sl_cql_redacted(location, shown, sizeof shown);
    return sl_error_set(error, EINVAL, "%s: a cql:// location is a Cassandra table, not '%s'",
                        shown, options->format);
  }
  SL_RETURN_NOT_OK(check_timeout(shown, options->timeout_s, error));
  if (options->format != NULL) {
    writer = sl_format_writer_find(options->format);
    if (writer == NULL) {
      format_list_of(sl_format_writer_names(), known, sizeof known);
      char format[256];  // (one line)
      return sl_error_set(error, EINVAL, "%s: unknown output format '%s'; formats are: %s",
                          shown,
                          sl_escaped(options->format, strlen(options->format), '\'', format,
                                     sizeof format),
                          known);
    }
  } else {
    writer = sl_format_writer_for_path(location);
    if (writer == NULL) {
      format_list_of(sl_format_writer_names(), known, sizeof known);
      return sl_error_set(error, EINVAL,
                          "%s: cannot choose an output format from the name; "
                          "name one of: %s",
                          shown, known);
    }
  }
  if (writer->table != table) {
    return sl_error_set(error, EINVAL, "%s: the '%s' format writes to cql:// tables only",
                        shown, writer->name);
  }
  SL_RETURN_NOT_OK(sl_write_options_check(location, options, error));
  // A dataset (a directory or prefix of part-<n> files) is written for
  // partition_by, and without it for max_rows_per_file (pyarrow's
  // write_dataset without partitioning): files of at most that many rows.
  int dataset = options->n_partition_by > 0 || options->max_rows_per_file > 0;
  if (options->existing_data_behavior != SLUICE_EXISTING_DATA_ERROR && !dataset) {
    return sl_error_set(error, EINVAL, "%s: existing_data_behavior is for dataset output "
                        "(partition_by or max_rows_per_file); a single file is always "
                        "replaced whole",
                        table ? "cql://" : shown);
  }
  if (table && dataset) {
    char shown[1024];
    sl_cql_redacted(location, shown, sizeof shown);
    return sl_error_set(error, EINVAL, "%s: a cql:// table is not written as files "
                        "(partition_by and max_rows_per_file are for files and s3:// prefixes)",
                        shown);
  }
  // A writer fills buffers of about the same size batch after batch: with
  // the default allocator they are recycled through a cache (as a dataset's
  // are), not mapped and faulted in afresh each time (sl_buffer_cache.h). A
  // partitioned write's buffered rows, freed as partitions are written
  // out, are what the next batches are dealt into (a mixed-key write of W1
  // faulted its 455 MB in page by page with only 64 blocks kept).
  int64_t cache_bytes = WRITE_CACHE_BYTES;
  if (dataset) {
    int64_t budget = sl_write_partitioned_budget(options);
    cache_bytes = budget > INT64_MAX - cache_bytes ? INT64_MAX : cache_bytes + budget;
  }
  struct sluice_buffer_cache* cache =
      options->allocator == NULL
          ? sl_buffer_cache_create(NULL, cache_bytes, WRITE_CACHE_BLOCKS(cache_bytes))
          : NULL;
  const struct sluice_allocator* alloc =
      options->allocator != NULL ? options->allocator
      : cache != NULL            ? sl_buffer_cache_allocator(cache)
                                 : sluice_default_allocator();
  // "" is no codec asked for, as NULL, for every format (the Parquet writer
  // refused it while the others took it so).
  const char* compression =
      options->compression != NULL && options->compression[0] != '\0' ? options->compression : NULL;
  struct sl_write_args args = {alloc, compression, options->format_options,
                               options->batch_metadata, options->batch_metadata_user, location,
                               options->tls_insecure, options->ca_bundle, options->timeout_s, 0};
  // Every batch is checked against the schema before a writer walks it.
  struct ArrowArrayStream checked;
  int rc = sl_checked_stream_init(stream, alloc, options->cancelled, options->cancelled_user,
                                  &checked, error);
  if (rc != 0 && !table) name_destination(shown, rc, error);
  if (rc == 0) {
    rc = table     ? writer->write(&checked, NULL, &args, error)  // no file
         : dataset ? sl_write_partitioned(writer, &checked, location, options, &args, error)
                   : write_file(writer, &checked, location, shown, options, &args, error);
    if (rc != 0 && dataset) name_destination(shown, rc, error);
    checked.release(&checked);
  }
  sl_buffer_cache_close(cache);
  return rc;
}

int sluice_dataset_count_split_rows(struct sluice_dataset* dataset, struct sluice_error* error) {
  SL_ERROR_OR_SCRATCH(error);
  if (dataset == NULL) return sl_error_set(error, EINVAL, "sluice_dataset_count_split_rows: NULL");
  if (dataset->format->count_split_rows == NULL || dataset->n_splits == 0) return 0;
  // Into the plan itself: scans started afterwards copy the counts with it.
  int rc = dataset->format->count_split_rows(dataset->reader, dataset->splits, dataset->n_splits,
                                             error);
  return sl_dataset_name_error(dataset, rc, error);
}
