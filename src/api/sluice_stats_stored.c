// Statistics as the data's metadata stores them (a Parquet footer), through
// the reader's optional stored_stats hook: nothing is decoded. Bounds are
// rendered with the same renderer as computed statistics, so that both
// spell a value the same way.
#include <string.h>

#include "sluice.h"
#include "core/sl_alloc.h"
#include "core/sl_error.h"
#include "api/sluice_dataset_internal.h"
#include "api/sluice_dataset_files.h"
#include "api/sluice_stats_internal.h"
#include "scan/sl_scan.h"

/// Renders row `i` of `column` into a new string (default allocator).
static int stored_render(const struct sl_text_field* field, const struct ArrowArray* column,
                         int64_t i, char** out, int64_t* len, struct sluice_error* error) {
  struct sl_text text;
  sl_text_init(&text, NULL);
  int rc = sl_value_render(field, column, i, SL_TEXT_PLAIN, &text, error);
  if (rc == 0) {
    *out = sl_strndup(NULL, sl_text_cstr(&text), text.len);
    *len = (int64_t)text.len;
    if (*out == NULL) rc = sl_error_set(error, ENOMEM, "stored statistics: out of memory");
  }
  sl_text_reset(&text);
  return rc;
}

/// One column's statistics merged over the objects of a dataset.
struct stored_merge {
  int64_t count, null_count;  ///< -1 once an object does not know
  int bounds;                 ///< 0 once an object with values has no bounds
  int any_values;             ///< some object has a non-null value
  struct sl_stats_key min, max;
  uint8_t* min_bytes;  ///< owned copies behind min.bytes / max.bytes
  uint8_t* max_bytes;
  size_t min_cap, max_cap;
  char* min_text;  ///< rendered; may hold NUL bytes (min_len, max_len)
  char* max_text;
  int64_t min_len, max_len;
  int min_exact, max_exact;
};

static void merge_release(struct stored_merge* m, const struct sluice_allocator* alloc) {
  sl_free(alloc, m->min_bytes, m->min_cap);
  sl_free(alloc, m->max_bytes, m->max_cap);
  if (m->min_text) sl_free(NULL, m->min_text, (size_t)m->min_len + 1);
  if (m->max_text) sl_free(NULL, m->max_text, (size_t)m->max_len + 1);
}

/// Replaces a bound (key and text) with row `at` of `bounds`; strings and
/// binaries are rendered from the key, which may be capped (cap_bound).
static int take_bound(const struct sl_text_field* field, const struct ArrowArray* bounds,
                      int64_t at, const struct sl_stats_key* key, struct sl_stats_key* dst,
                      uint8_t** storage, size_t* cap, char** text, int64_t* text_len,
                      const struct sluice_allocator* alloc, struct sluice_error* error) {
  if (sl_stats_key_store(dst, key, storage, cap, alloc) != 0)
    return sl_error_set(error, ENOMEM, "stored statistics: out of memory");
  char* fresh;
  int64_t fresh_len;
  if (key->kind == SL_KEY_BYTES) {
    if (sl_stats_bytes_string(field, key->bytes, key->n, &fresh, &fresh_len) != 0)
      return sl_error_set(error, ENOMEM, "stored statistics: out of memory");
  } else {
    SL_RETURN_NOT_OK(stored_render(field, bounds, at, &fresh, &fresh_len, error));
  }
  if (*text) sl_free(NULL, *text, (size_t)*text_len + 1);
  *text = fresh;
  *text_len = fresh_len;
  return 0;
}

/// Folds one object's stored statistics of column c into `m`. An object's
/// bounds widen the merged ones; a merged bound is exact when an object whose
/// bound it is says so (a truncated bound that ties an exact one is not the
/// extreme). `many`: more than one object (then bounds need an order).
static int merge_object(struct stored_merge* m, const struct sl_text_field* field,
                        int64_t row_count, const struct sl_stored_column_stats* s,
                        const struct ArrowArray* bounds, int many,
                        const struct sluice_allocator* alloc, struct sluice_error* error) {
  m->count = m->count < 0 || row_count < 0 ? -1 : m->count + row_count;
  m->null_count = m->null_count < 0 || s->null_count < 0 ? -1 : m->null_count + s->null_count;
  if (row_count >= 0 && s->null_count == row_count) return 0;  // no values: no bounds needed
  int64_t at = bounds->offset;
  if (!s->has_min_max || sl_value_is_null(field, bounds, at) ||
      sl_value_is_null(field, bounds, at + 1)) {
    m->bounds = 0;
    return 0;
  }
  struct sl_stats_key lo, hi;
  sl_stats_key_of(field, bounds, at, &lo);
  sl_stats_key_of(field, bounds, at + 1, &hi);
  if (many && (lo.kind == SL_KEY_NONE || hi.kind == SL_KEY_NONE)) {
    m->bounds = 0;  // no order to merge by
    return 0;
  }
  int lo_exact = s->min_exact != 0, hi_exact = s->max_exact != 0;
  // A stored bound longer than the cap goes the way of a computed one: its
  // prefix (below it) for the min, the bytes above that prefix for the max.
  int utf8 = sl_stats_field_is_utf8(field);
  if (lo.kind == SL_KEY_BYTES && lo.n > SL_STATS_BYTES_CAP) {
    sl_stats_key_cap(&lo, utf8);
    lo.truncated = 0;  // from here on a plain (inexact) bound
    lo_exact = 0;
  }
  uint8_t* above = NULL;
  size_t above_cap = (size_t)SL_STATS_BYTES_CAP + 4;
  if (hi.kind == SL_KEY_BYTES && hi.n > SL_STATS_BYTES_CAP) {
    sl_stats_key_cap(&hi, utf8);
    above = sl_alloc(alloc, above_cap);
    if (above == NULL) return sl_error_set(error, ENOMEM, "stored statistics: out of memory");
    sl_stats_bytes_above(hi.bytes, hi.n, utf8, above, &hi.n);
    if (hi.n < 0) {  // nothing above the prefix: no upper bound
      sl_free(alloc, above, above_cap);
      m->bounds = 0;
      return 0;
    }
    hi.bytes = above;
    hi.truncated = 0;
    hi_exact = 0;
  }
  int first = !m->any_values;
  m->any_values = 1;
  int rc = 0;
  int c = first ? -1 : sl_stats_key_compare(&lo, &m->min);
  if (c < 0) {
    rc = take_bound(field, bounds, at, &lo, &m->min, &m->min_bytes, &m->min_cap, &m->min_text,
                    &m->min_len, alloc, error);
    m->min_exact = lo_exact;
  } else if (c == 0 && lo_exact) {
    m->min_exact = 1;
  }
  c = first ? 1 : sl_stats_key_compare(&hi, &m->max);
  if (rc == 0 && c > 0) {
    rc = take_bound(field, bounds, at + 1, &hi, &m->max, &m->max_bytes, &m->max_cap,
                    &m->max_text, &m->max_len, alloc, error);
    m->max_exact = hi_exact;
  } else if (c == 0 && hi_exact) {
    m->max_exact = 1;
  }
  sl_free(alloc, above, above_cap);
  return rc;
}

/// Asks one object (of a dataset of many: `object` of the files reader; else
/// the dataset's one reader) and folds its answer into merged[0..n).
static int stored_object(const struct sl_format_reader* format, void* reader, int64_t object,
                         const struct sl_scan_args* args, const struct sl_text_field* row,
                         struct stored_merge* merged, int many,
                         const struct sluice_allocator* alloc, struct sluice_error* error) {
  int64_t n = row->n_children;
  struct sl_stored_column_stats* stats = sl_calloc(alloc, (size_t)n, sizeof *stats);
  if (stats == NULL) return sl_error_set(error, ENOMEM, "stored statistics: out of memory");
  int64_t row_count = -1;
  struct ArrowArray min_max;
  memset(&min_max, 0, sizeof min_max);
  const int64_t* columns = args->columns;
  int64_t n_columns = columns ? args->n_columns : n;
  int rc = many ? sl_files_reader_object_stats(reader, object, columns, n_columns, &row_count,
                                               stats, &min_max, error)
                : format->stored_stats(reader, columns, n_columns, &row_count, stats, &min_max,
                                       error);
  if (rc == 0 && (min_max.release == NULL || min_max.n_children != n || min_max.length < 2)) {
    rc = sl_error_set(error, EINVAL,
                      "stored statistics: the %s reader returned bounds of a wrong shape",
                      format->name);
  }
  for (int64_t c = 0; rc == 0 && c < n; ++c)
    rc = merge_object(&merged[c], &row->children[c], row_count, &stats[c], min_max.children[c],
                      many, alloc, error);
  if (min_max.release != NULL) min_max.release(&min_max);
  sl_free(alloc, stats, (size_t)n * sizeof *stats);
  return rc;
}

int sl_stats_stored(struct sluice_dataset* dataset, const struct sl_text_field* row,
                    struct sluice_column_stats* result, int* available,
                    struct sluice_error* error) {
  int64_t n = row->n_children;
  *available = 0;
  for (int64_t c = 0; c < n; ++c) result[c].count = result[c].null_count = -1;
  struct sl_scan_args args;
  memset(&args, 0, sizeof args);
  sl_dataset_scan_args(dataset, &args);
  // A dataset of many objects: each object's footer, merged.
  const struct sl_format_reader* format = args.format;
  int64_t objects = sl_files_reader_objects(args.format, args.reader, &format);
  int many = objects > 0;
  if (!many) objects = 1;
  if (format == NULL || format->stored_stats == NULL || n == 0) return 0;
  const struct sluice_allocator* alloc = sl_dataset_allocator(dataset);
  struct stored_merge* merged = sl_calloc(alloc, (size_t)n, sizeof *merged);
  if (merged == NULL) return sl_error_set(error, ENOMEM, "stored statistics: out of memory");
  for (int64_t c = 0; c < n; ++c) merged[c].bounds = 1;
  int rc = 0;
  for (int64_t o = 0; rc == 0 && o < objects; ++o) {
    if (many && sl_files_reader_object_excluded(args.reader, o)) continue;  // no rows scanned
    rc = stored_object(format, args.reader, o, &args, row, merged, many, alloc, error);
  }
  for (int64_t c = 0; rc == 0 && c < n; ++c) {
    struct sluice_column_stats* r = &result[c];
    struct stored_merge* m = &merged[c];
    r->count = m->count;
    r->null_count = m->null_count;
    r->from_metadata = 1;
    if (m->bounds && m->any_values) {
      r->has_min_max = 1;
      r->min = m->min_text;
      r->max = m->max_text;
      r->min_len = m->min_len;
      r->max_len = m->max_len;
      m->min_text = m->max_text = NULL;  // now the result's
      r->min_exact = m->min_exact;
      r->max_exact = m->max_exact;
    }
  }
  for (int64_t c = 0; c < n; ++c) merge_release(&merged[c], alloc);
  sl_free(alloc, merged, (size_t)n * sizeof *merged);
  if (rc == 0) *available = 1;
  return rc;
}

SLUICE_EXPORT int sluice_dataset_stored_stats(struct sluice_dataset* dataset,
                                              struct sluice_column_stats** out, int64_t* n_out,
                                              struct sluice_error* error) {
  SL_ERROR_OR_SCRATCH(error);
  if (dataset == NULL || out == NULL || n_out == NULL) {
    return sl_error_set(error, EINVAL, "sluice_dataset_stored_stats: NULL argument");
  }
  *out = NULL;
  *n_out = 0;
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  SL_RETURN_NOT_OK(sluice_dataset_schema(dataset, &schema, error));
  struct sl_text_field row;
  int rc = sl_text_field_init(&row, &schema, NULL, error);
  if (rc != 0) {
    schema.release(&schema);
    return rc;
  }
  int64_t n = row.n_children;
  struct sluice_column_stats* result = NULL;
  if (n > 0) {
    result = sl_calloc(NULL, (size_t)n, sizeof *result);
    if (result == NULL) rc = sl_error_set(error, ENOMEM, "stored statistics: out of memory");
  }
  for (int64_t c = 0; rc == 0 && c < n; ++c) {
    result[c].name = sl_strdup(NULL, row.children[c].name);
    result[c].type = sl_strdup(NULL, schema.children[c]->format);
    if (result[c].name == NULL || result[c].type == NULL) {
      rc = sl_error_set(error, ENOMEM, "stored statistics: out of memory");
    }
  }
  int available;
  if (rc == 0) rc = sl_stats_stored(dataset, &row, result, &available, error);
  if (rc == 0) {
    *out = result;
    *n_out = n;
  } else {
    sluice_stats_free(result, n);
  }
  sl_text_field_reset(&row);
  schema.release(&schema);
  return rc;
}
