// sluice_dataset_stats: per-column count, nulls, min and max. Each batch is
// reduced to a partial (the positions of its min and max, rendered to text
// right away, so no batch has to outlive its callback) and partials are merged
// under a mutex; the batch callback is safe to run on scan worker threads.
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "sluice.h"
#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_endian.h"
#include "core/sl_error.h"
#include "core/sl_read.h"
#include "core/sl_value_text.h"
#include "api/sluice_dataset_internal.h"
#include "api/sluice_stats_internal.h"
#include "scan/sl_scan.h"

struct stats_column {
  int64_t count;
  int64_t null_count;
  int has_min_max;
  struct sl_stats_key min, max;
  uint8_t* min_bytes;  ///< owned copies behind min.bytes / max.bytes
  size_t min_cap;
  uint8_t* max_bytes;
  size_t max_cap;
  struct sl_text min_text, max_text;
};

struct stats_state {
  struct sl_text_field row;  ///< parsed projected schema
  struct stats_column* columns;
  int64_t n_columns;
  /// When only some columns are scanned (the others came from stored
  /// statistics): batch child k is column scan_map[k]. NULL = all, in order.
  const int64_t* scan_map;
  int64_t n_scan;
  /// Column c is a repeat of column first[c] (`-c a,a`) when first[c] != c:
  /// it is computed once and copied. NULL = no column repeats.
  int64_t* first;
  pthread_mutex_t mutex;
  const struct sluice_allocator* alloc;
};

/// The first 8 bytes of a value as a big-endian number (zero-padded), so
/// that most byte-wise comparisons are one integer comparison.
static inline uint64_t bytes_prefix(const uint8_t* p, int64_t n) {
  if (n >= 8) return sl_load_be(p, 8);  // one load and a byte swap
  if (n <= 0) return 0;
  return sl_load_be(p, (int)n) << (8 * (8 - n));
}

/// Byte-wise order of values a and b of a binary column with 32- or 64-bit
/// offsets, given their prefixes: the prefix decides unless equal.
static int bytes_order(const uint8_t* data, int64_t a0, int64_t a1, uint64_t pa, int64_t b0,
                       int64_t b1, uint64_t pb) {
  if (pa != pb) return pa < pb ? -1 : 1;
  int64_t na = a1 - a0, nb = b1 - b0, n = na < nb ? na : nb;
  int c = n > 0 ? memcmp(data + a0, data + b0, (size_t)n) : 0;
  return c != 0 ? c : (na > nb) - (na < nb);
}

/// Min and max rows of a binary/string column without nulls (offsets of
/// `width` bytes), comparing 8-byte prefixes first.
static void bytes_min_max(const void* offsets, int width, const uint8_t* data, int64_t base,
                          int64_t length, int64_t* lo, int64_t* hi) {
#define SL_OFFSET(i) (width == 4 ? (int64_t)((const int32_t*)offsets)[base + (i)] \
                                 : ((const int64_t*)offsets)[base + (i)])
  int64_t lo0 = SL_OFFSET(0), lo1 = SL_OFFSET(1), hi0 = lo0, hi1 = lo1;
  uint64_t plo = bytes_prefix(data + lo0, lo1 - lo0), phi = plo;
  *lo = *hi = 0;
  for (int64_t r = 1; r < length; ++r) {
    int64_t v0 = SL_OFFSET(r), v1 = SL_OFFSET(r + 1);
    uint64_t pv = bytes_prefix(data + v0, v1 - v0);
    if (pv <= plo && bytes_order(data, v0, v1, pv, lo0, lo1, plo) < 0) {
      *lo = r, lo0 = v0, lo1 = v1, plo = pv;
    }
    if (pv >= phi && bytes_order(data, v0, v1, pv, hi0, hi1, phi) > 0) {
      *hi = r, hi0 = v0, hi1 = v1, phi = pv;
    }
  }
#undef SL_OFFSET
}

/// The first of v[from, to) whose bits are `bits` (+0 or -0), else `none`:
/// one pass that vectorises, then a search only when there is one.
static int64_t find_bits(const double* v, int64_t from, int64_t to, uint64_t bits, int64_t none) {
  int any = 0;
  for (int64_t r = from; r < to; ++r) {
    uint64_t u;
    memcpy(&u, &v[r], sizeof u);
    any |= u == bits;
  }
  for (int64_t r = from; any && r < to; ++r) {
    uint64_t u;
    memcpy(&u, &v[r], sizeof u);
    if (u == bits) return r;
  }
  return none;
}

/// The common case (fixed-width numbers, binary and strings, without nulls)
/// in tight loops; the rows of the min and max go to *min_row / *max_row. 0
/// if not applicable.
static int stats_fast_path(const struct sl_text_field* field, const struct ArrowArray* column,
                           int64_t first, int64_t length, int64_t* min_row, int64_t* max_row,
                           struct sl_stats_key* min, struct sl_stats_key* max) {
  if (field->dictionary != NULL || length <= 0 || column->n_buffers < 2 ||
      (column->null_count != 0 && column->buffers[0] != NULL)) {
    return 0;
  }
  int64_t base = column->offset + first, lo = 0, hi = 0;
  switch (field->type.id) {
    case SL_TYPE_INT32: case SL_TYPE_DATE32: case SL_TYPE_TIME32: {
      const int32_t* v = (const int32_t*)column->buffers[1] + base;
      for (int64_t r = 1; r < length; ++r) {
        if (v[r] < v[lo]) lo = r;
        if (v[r] > v[hi]) hi = r;
      }
      min->kind = max->kind = SL_KEY_I64;
      min->i = v[lo];
      max->i = v[hi];
      break;
    }
    case SL_TYPE_INT64: case SL_TYPE_DATE64: case SL_TYPE_TIME64: case SL_TYPE_TIMESTAMP:
    case SL_TYPE_DURATION: {
      const int64_t* v = (const int64_t*)column->buffers[1] + base;
      for (int64_t r = 1; r < length; ++r) {
        if (v[r] < v[lo]) lo = r;
        if (v[r] > v[hi]) hi = r;
      }
      min->kind = max->kind = SL_KEY_I64;
      min->i = v[lo];
      max->i = v[hi];
      break;
    }
    case SL_TYPE_DOUBLE: {
      const double* v = (const double*)column->buffers[1] + base;
      int64_t start = 0;
      while (start < length && isnan(v[start])) ++start;  // NaN is skipped
      if (start == length) return 0;
      lo = hi = start;
      for (int64_t r = start + 1; r < length; ++r) {  // comparisons with NaN are false
        if (v[r] < v[lo]) lo = r;
        if (v[r] > v[hi]) hi = r;
      }
      min->kind = max->kind = SL_KEY_F64;
      min->d = v[lo];
      max->d = v[hi];
      // -0 is below +0 (sl_stats_key_compare): a zero extreme takes a zero of
      // the other sign if there is one (a tie-break in the loop above made
      // columns full of zeros 4x slower).
      if (min->d == 0 && !signbit(min->d)) {
        lo = find_bits(v, start, length, UINT64_C(0x8000000000000000), lo);
        min->d = v[lo];
      }
      if (max->d == 0 && signbit(max->d)) {
        hi = find_bits(v, start, length, 0, hi);
        max->d = v[hi];
      }
      break;
    }
    case SL_TYPE_STRING: case SL_TYPE_BINARY: case SL_TYPE_LARGE_STRING:
    case SL_TYPE_LARGE_BINARY: {
      if (column->n_buffers < 3 || column->buffers[2] == NULL) return 0;
      int width = field->type.id == SL_TYPE_STRING || field->type.id == SL_TYPE_BINARY ? 4 : 8;
      bytes_min_max(column->buffers[1], width, column->buffers[2], base, length, &lo, &hi);
      sl_stats_key_of(field, column, first + lo, min);
      sl_stats_key_of(field, column, first + hi, max);
      break;
    }
    default:
      return 0;
  }
  *min_row = first + lo;
  *max_row = first + hi;
  return 1;
}

/// Reduces one column of one batch, then merges under the mutex.
static int stats_column_batch(struct stats_state* state, int64_t c,
                              const struct ArrowArray* column, int64_t first, int64_t length,
                              struct sluice_error* error) {
  const struct sl_text_field* field = &state->row.children[c];
  // A column of nulls (the null type, or as many nulls as values) has no
  // value to look at: O(1) whatever its length (a null column of 2^40 rows
  // took an hour).
  enum sl_type_id id = field->type.id;
  if (id == SL_TYPE_NA ||
      (column->length > 0 && column->null_count == column->length && column->n_buffers > 0 &&
       column->buffers[0] != NULL && id != SL_TYPE_DENSE_UNION && id != SL_TYPE_SPARSE_UNION)) {
    pthread_mutex_lock(&state->mutex);
    state->columns[c].count += length;
    state->columns[c].null_count += length;
    pthread_mutex_unlock(&state->mutex);
    return 0;
  }
  int64_t nulls = 0, min_row = -1, max_row = -1;
  struct sl_stats_key min, max, key;
  memset(&min, 0, sizeof min);
  memset(&max, 0, sizeof max);
  memset(&key, 0, sizeof key);
  int fast = stats_fast_path(field, column, first, length, &min_row, &max_row, &min, &max);
  for (int64_t r = fast ? first + length : first; r < first + length; ++r) {
    if (sl_value_is_null(field, column, r)) {
      ++nulls;
      continue;
    }
    sl_stats_key_of(field, column, r, &key);
    if (key.kind == SL_KEY_NONE) continue;
    if (min_row < 0 || sl_stats_key_compare(&key, &min) < 0) min = key, min_row = r;
    if (max_row < 0 || sl_stats_key_compare(&key, &max) > 0) max = key, max_row = r;
  }
  // Strings and binaries: only the first SL_STATS_BYTES_CAP bytes of the
  // batch's extremes are kept (flagged truncated), and they are rendered at
  // the end from the merged key: a huge value is neither copied nor rendered.
  int bytes = min_row >= 0 && min.kind == SL_KEY_BYTES;
  if (bytes) {
    int utf8 = sl_stats_field_is_utf8(field);
    sl_stats_key_cap(&min, utf8);
    sl_stats_key_cap(&max, utf8);
  }
  struct sl_text min_text, max_text;
  sl_text_init(&min_text, state->alloc);
  sl_text_init(&max_text, state->alloc);
  int rc = 0;
  if (min_row >= 0 && !bytes) {
    rc = sl_value_render(field, column, min_row, SL_TEXT_PLAIN, &min_text, error);
    if (rc == 0) rc = sl_value_render(field, column, max_row, SL_TEXT_PLAIN, &max_text, error);
  }
  pthread_mutex_lock(&state->mutex);
  struct stats_column* merged = &state->columns[c];
  merged->count += length;
  merged->null_count += nulls;
  if (rc == 0 && min_row >= 0) {
    int first_values = !merged->has_min_max;
    int truncated = min.truncated;
    if (first_values || sl_stats_key_pick(&merged->min, &min, 0, &truncated)) {
      rc = sl_stats_key_store(&merged->min, &min, &merged->min_bytes, &merged->min_cap,
                           state->alloc);
      if (rc == 0 && !bytes) {
        sl_text_clear(&merged->min_text);
        rc = sl_text_append(&merged->min_text, sl_text_cstr(&min_text), min_text.len);
      }
    }
    merged->min.truncated = truncated;
    truncated = max.truncated;
    if (rc == 0 && (first_values || sl_stats_key_pick(&merged->max, &max, 1, &truncated))) {
      rc = sl_stats_key_store(&merged->max, &max, &merged->max_bytes, &merged->max_cap,
                           state->alloc);
      if (rc == 0 && !bytes) {
        sl_text_clear(&merged->max_text);
        rc = sl_text_append(&merged->max_text, sl_text_cstr(&max_text), max_text.len);
      }
    }
    merged->max.truncated = truncated;
    if (rc == 0) merged->has_min_max = 1;
    if (rc != 0) rc = sl_error_set(error, rc, "stats: out of memory");
  }
  pthread_mutex_unlock(&state->mutex);
  sl_text_reset(&min_text);
  sl_text_reset(&max_text);
  return rc;
}

/// The per-batch callback (sl_scan_args.on_batch shape): runs on any thread.
static int stats_on_batch(void* ctx, const struct ArrowArray* batch, struct sluice_error* error) {
  struct stats_state* state = ctx;
  int64_t expected = state->scan_map != NULL ? state->n_scan : state->n_columns;
  if (batch->n_children != expected) {
    return sl_error_set(error, EINVAL, "stats: batch has %lld columns, expected %lld",
                        (long long)batch->n_children, (long long)expected);
  }
  for (int64_t k = 0; k < expected; ++k) {
    int64_t c = state->scan_map != NULL ? state->scan_map[k] : k;
    if (state->first != NULL && state->first[c] != c) continue;
    SL_RETURN_NOT_OK(stats_column_batch(state, c, batch->children[k], batch->offset,
                                        batch->length, error));
  }
  return 0;
}

static void stats_state_reset(struct stats_state* state) {
  for (int64_t c = 0; c < state->n_columns; ++c) {
    struct stats_column* col = &state->columns[c];
    sl_free(state->alloc, col->min_bytes, col->min_cap);
    sl_free(state->alloc, col->max_bytes, col->max_cap);
    sl_text_reset(&col->min_text);
    sl_text_reset(&col->max_text);
  }
  sl_free(state->alloc, state->columns, (size_t)state->n_columns * sizeof *state->columns);
  sl_free(state->alloc, state->first, (size_t)state->n_columns * sizeof *state->first);
  sl_text_field_reset(&state->row);
  pthread_mutex_destroy(&state->mutex);
}

/// Consumer-side reduction through the public scanner: used with a row limit,
/// because the engine trims the last batch to the limit only at delivery,
/// after on_batch has seen it whole.
static int stats_run_scanner(struct sluice_dataset* dataset, struct stats_state* state,
                             struct sluice_error* error) {
  struct sluice_scanner* scanner = NULL;
  SL_RETURN_NOT_OK(sluice_scanner_open(dataset, &scanner, error));
  int rc = 0;
  for (;;) {
    struct ArrowArray batch;
    memset(&batch, 0, sizeof batch);
    rc = sluice_scanner_next(scanner, &batch, NULL, error);
    if (rc != 0 || batch.release == NULL) break;
    rc = stats_on_batch(state, &batch, error);
    batch.release(&batch);
    if (rc != 0) break;
  }
  sluice_scanner_close(scanner);
  return rc;
}

/// Reduces every batch on the scan's worker threads (on_batch); this thread
/// only drains and drops the batches. `subset` (n_subset full-schema column
/// indexes, matching state->scan_map) narrows the projection, or is NULL.
static int stats_run_scan(struct sluice_dataset* dataset, struct stats_state* state,
                          const int64_t* subset, int64_t n_subset, struct sluice_error* error) {
  struct sl_scan_args args;
  memset(&args, 0, sizeof args);
  sl_dataset_scan_args(dataset, &args);
  if (args.limit >= 0) return stats_run_scanner(dataset, state, error);
  if (subset != NULL) {
    args.columns = subset;
    args.n_columns = n_subset;
  }
  args.on_batch = stats_on_batch;
  args.on_batch_ctx = state;
  args.ordered = 0;  // order does not matter to a reduction
  struct sl_scan* scan = NULL;
  SL_RETURN_NOT_OK(sl_scan_start(&args, &scan, error));
  int rc = 0;
  for (;;) {
    struct ArrowArray batch;
    memset(&batch, 0, sizeof batch);
    rc = sl_scan_next(scan, &batch, NULL, error);
    if (rc != 0 || batch.release == NULL) break;
    batch.release(&batch);
  }
  sl_scan_stop(scan);
  return rc;
}

static char* stats_strdup(const char* s) { return sl_strdup(NULL, s); }

/// The stored statistics (Parquet footer) of the columns they answer exactly:
/// known row and null counts, exact bounds wherever the column has values of
/// an ordered type, and no row limit. Those columns get from_metadata = 1;
/// the others must be scanned. *stored stays NULL when no column qualifies
/// (also when the reader fails to give them: the scan then decides).
static int stats_from_metadata(struct sluice_dataset* dataset, const struct stats_state* state,
                               struct sluice_column_stats** stored, struct sluice_error* error) {
  *stored = NULL;
  struct sl_scan_args args;
  memset(&args, 0, sizeof args);
  sl_dataset_scan_args(dataset, &args);
  int64_t n = state->n_columns;
  // (stored statistics are of whole columns, not of a struct's field)
  if (args.limit >= 0 || args.filter != NULL || args.format == NULL || n == 0 ||
      args.paths != NULL) {  // no hook: sl_stats_stored says so
    return 0;
  }
  struct sluice_column_stats* s = sl_calloc(NULL, (size_t)n, sizeof *s);
  if (s == NULL) return sl_error_set(error, ENOMEM, "stats: out of memory");
  int available = 0;
  int any = sl_stats_stored(dataset, &state->row, s, &available, error) == 0 && available;
  int64_t usable_columns = 0;
  for (int64_t c = 0; any && c < n; ++c) {
    struct sluice_column_stats* x = &s[c];
    int ordered = sl_stats_type_has_order(&state->row.children[c]);
    int all_null = x->null_count == x->count;
    int usable = x->count >= 0 && x->null_count >= 0 && x->null_count <= x->count &&
                 (all_null || !ordered || (x->has_min_max && x->min_exact && x->max_exact));
    if (!usable || all_null || !ordered) {  // drop bounds a scan would not give
      if (x->min != NULL) sl_free(NULL, x->min, (size_t)x->min_len + 1);
      if (x->max != NULL) sl_free(NULL, x->max, (size_t)x->max_len + 1);
      x->min = x->max = NULL;
      x->min_len = x->max_len = 0;
      x->has_min_max = x->min_exact = x->max_exact = 0;
    }
    x->from_metadata = usable;
    usable_columns += usable;
  }
  if (usable_columns == 0) {
    sluice_stats_free(s, n);
    sl_error_clear(error);
    return 0;
  }
  *stored = s;
  return 0;
}

SLUICE_EXPORT void sluice_stats_free(struct sluice_column_stats* stats, int64_t n) {
  if (stats == NULL) return;
  for (int64_t c = 0; c < n; ++c) {
    char* names[] = {stats[c].name, stats[c].type};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; ++k) {
      if (names[k] != NULL) sl_free(NULL, names[k], strlen(names[k]) + 1);
    }
    if (stats[c].min != NULL) sl_free(NULL, stats[c].min, (size_t)stats[c].min_len + 1);
    if (stats[c].max != NULL) sl_free(NULL, stats[c].max, (size_t)stats[c].max_len + 1);
  }
  sl_free(NULL, stats, (size_t)n * sizeof *stats);
}

/// Scans only the columns the stored statistics did not answer.
static int stats_scan_rest(struct sluice_dataset* dataset, struct stats_state* state,
                           const struct sluice_column_stats* stored, struct sluice_error* error) {
  int64_t n = state->n_columns, m = 0;
  for (int64_t c = 0; c < n; ++c) m += !stored[c].from_metadata;
  if (m == 0) return 0;
  struct sl_scan_args args;
  memset(&args, 0, sizeof args);
  sl_dataset_scan_args(dataset, &args);
  int64_t* map = sl_calloc(NULL, (size_t)m * 2, sizeof *map);  // scan_map, then subset
  if (map == NULL) return sl_error_set(error, ENOMEM, "stats: out of memory");
  int64_t k = 0;
  for (int64_t c = 0; c < n; ++c) {
    if (stored[c].from_metadata) continue;
    map[k] = c;
    map[m + k] = args.columns != NULL ? args.columns[c] : c;
    ++k;
  }
  state->scan_map = map;
  state->n_scan = m;
  int rc = stats_run_scan(dataset, state, map + m, m, error);
  state->scan_map = NULL;
  sl_free(NULL, map, (size_t)m * 2 * sizeof *map);
  return rc;
}

/// The result's bounds of a string or binary column from its merged keys: a
/// truncated min is reported as is (a prefix is below the value), a truncated
/// max as the bytes above its prefix; both inexact. When nothing is above the
/// prefix (all 0xFF), the column has no bounds, as for a type without order.
static int stats_bytes_result(const struct sl_text_field* field, const struct stats_column* col,
                              struct sluice_column_stats* r, struct sluice_error* error) {
  const struct sl_stats_key* max = &col->max;
  uint8_t* above = NULL;
  size_t above_cap = (size_t)max->n + 4;  // a code point may grow by 3 bytes
  int64_t above_n = -1;
  if (max->truncated) {
    above = sl_alloc(NULL, above_cap);
    if (above == NULL) return sl_error_set(error, ENOMEM, "stats: out of memory");
    sl_stats_bytes_above(max->bytes, max->n, sl_stats_field_is_utf8(field), above, &above_n);
    if (above_n < 0) {
      sl_free(NULL, above, above_cap);
      return 0;
    }
  }
  int rc = sl_stats_bytes_string(field, col->min.bytes, col->min.n, &r->min, &r->min_len);
  if (rc == 0) {
    rc = max->truncated ? sl_stats_bytes_string(field, above, above_n, &r->max, &r->max_len)
                        : sl_stats_bytes_string(field, max->bytes, max->n, &r->max, &r->max_len);
  }
  sl_free(NULL, above, above_cap);
  if (rc != 0) return sl_error_set(error, ENOMEM, "stats: out of memory");
  r->has_min_max = 1;
  r->min_exact = !col->min.truncated;
  r->max_exact = !max->truncated;
  return 0;
}

/// Whether projected columns k and c are the same column, or the same
/// struct field of it ("st.x" twice, not "st.x" and "st.y").
static int same_selection(const struct sl_scan_args* args, int64_t k, int64_t c) {
  if (args->columns[k] != args->columns[c]) return 0;
  const int64_t* a = args->paths != NULL ? args->paths[k] : NULL;
  const int64_t* b = args->paths != NULL ? args->paths[c] : NULL;
  if (a == NULL || b == NULL) return a == b;
  return a[0] == b[0] && memcmp(a + 1, b + 1, (size_t)a[0] * sizeof *a) == 0;
}

/// Sets state->first when a column is asked for more than once.
static int stats_find_repeats(struct sluice_dataset* dataset, struct stats_state* state,
                              struct sluice_error* error) {
  struct sl_scan_args args;
  memset(&args, 0, sizeof args);
  sl_dataset_scan_args(dataset, &args);
  int64_t n = state->n_columns;
  if (args.columns == NULL || args.n_columns != n || !sl_columns_repeat(args.columns, n)) return 0;
  state->first = sl_alloc(state->alloc, (size_t)n * sizeof *state->first);
  if (state->first == NULL) return sl_error_set(error, ENOMEM, "stats: out of memory");
  for (int64_t c = 0; c < n; ++c) {
    int64_t k = 0;
    while (!same_selection(&args, k, c)) ++k;
    state->first[c] = k;
  }
  return 0;
}

/// A repeated column's result: a copy of its first mention's.
static int stats_copy(const struct sluice_column_stats* from, struct sluice_column_stats* to,
                      struct sluice_error* error) {
  *to = *from;
  to->name = stats_strdup(from->name);
  to->type = stats_strdup(from->type);
  to->min = from->min != NULL ? sl_strndup(NULL, from->min, (size_t)from->min_len) : NULL;
  to->max = from->max != NULL ? sl_strndup(NULL, from->max, (size_t)from->max_len) : NULL;
  if (to->name == NULL || to->type == NULL || (from->min != NULL && to->min == NULL) ||
      (from->max != NULL && to->max == NULL)) {
    return sl_error_set(error, ENOMEM, "stats: out of memory");
  }
  return 0;
}

static int stats_once(struct sluice_dataset* dataset, struct sluice_column_stats** out,
                      int64_t* n_out, struct sluice_error* error) {
  *out = NULL;
  *n_out = 0;
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  SL_RETURN_NOT_OK(sluice_dataset_schema(dataset, &schema, error));
  struct stats_state state;
  memset(&state, 0, sizeof state);
  state.alloc = NULL;  // results are freed by sluice_stats_free, which has no handle
  int rc = sl_text_field_init(&state.row, &schema, state.alloc, error);
  if (rc != 0) {
    schema.release(&schema);
    return rc;
  }
  if (pthread_mutex_init(&state.mutex, NULL) != 0) {
    sl_text_field_reset(&state.row);
    schema.release(&schema);
    return sl_error_set(error, ENOMEM, "stats: cannot create a mutex");
  }
  state.n_columns = state.row.n_children;
  if (state.n_columns > 0) {
    state.columns = sl_calloc(state.alloc, (size_t)state.n_columns, sizeof *state.columns);
    if (state.columns == NULL) {
      state.n_columns = 0;
      rc = sl_error_set(error, ENOMEM, "stats: out of memory");
    }
  }
  for (int64_t c = 0; c < state.n_columns; ++c) {
    sl_text_init(&state.columns[c].min_text, state.alloc);
    sl_text_init(&state.columns[c].max_text, state.alloc);
  }
  if (rc == 0) rc = stats_find_repeats(dataset, &state, error);
  struct sluice_column_stats* stored = NULL;
  if (rc == 0) rc = stats_from_metadata(dataset, &state, &stored, error);
  if (rc == 0 && stored == NULL) rc = stats_run_scan(dataset, &state, NULL, 0, error);
  if (rc == 0 && stored != NULL) rc = stats_scan_rest(dataset, &state, stored, error);
  struct sluice_column_stats* result = NULL;
  if (rc == 0 && state.n_columns > 0) {
    result = sl_calloc(NULL, (size_t)state.n_columns, sizeof *result);
    if (result == NULL) rc = sl_error_set(error, ENOMEM, "stats: out of memory");
  }
  for (int64_t c = 0; rc == 0 && c < state.n_columns; ++c) {
    const struct stats_column* col = &state.columns[c];
    struct sluice_column_stats* r = &result[c];
    if (state.first != NULL && state.first[c] != c) {
      rc = stats_copy(&result[state.first[c]], r, error);
      continue;
    }
    r->name = stats_strdup(state.row.children[c].name);
    r->type = stats_strdup(schema.children[c]->format);
    if (stored != NULL && stored[c].from_metadata) {  // hand over the stored figures
      struct sluice_column_stats* from = &stored[c];
      r->count = from->count;
      r->null_count = from->null_count;
      r->has_min_max = from->has_min_max;
      r->min = from->min;
      r->max = from->max;
      r->min_len = from->min_len;
      r->max_len = from->max_len;
      from->min = from->max = NULL;
      r->min_exact = r->max_exact = r->has_min_max;
      r->from_metadata = 1;
      if (r->name == NULL || r->type == NULL) {
        rc = sl_error_set(error, ENOMEM, "stats: out of memory");
      }
      continue;
    }
    r->count = col->count;
    r->null_count = col->null_count;
    if (col->has_min_max && col->min.kind == SL_KEY_BYTES) {
      rc = stats_bytes_result(&state.row.children[c], col, r, error);
    } else if (col->has_min_max) {
      r->has_min_max = r->min_exact = r->max_exact = 1;
      r->min = sl_strndup(NULL, sl_text_cstr(&col->min_text), col->min_text.len);
      r->max = sl_strndup(NULL, sl_text_cstr(&col->max_text), col->max_text.len);
      r->min_len = (int64_t)col->min_text.len;
      r->max_len = (int64_t)col->max_text.len;
    }
    if (rc == 0 && (r->name == NULL || r->type == NULL || (r->has_min_max && (!r->min || !r->max)))) {
      rc = sl_error_set(error, ENOMEM, "stats: out of memory");
    }
  }
  if (rc == 0) {
    *out = result;
    *n_out = state.n_columns;
  } else {
    sluice_stats_free(result, state.n_columns);
  }
  sluice_stats_free(stored, state.n_columns);
  stats_state_reset(&state);
  schema.release(&schema);
  return rc;
}

SLUICE_EXPORT int sluice_dataset_stats(struct sluice_dataset* dataset,
                                       struct sluice_column_stats** out, int64_t* n_out,
                                       struct sluice_error* error) {
  SL_ERROR_OR_SCRATCH(error);
  if (dataset == NULL || out == NULL || n_out == NULL) {
    return sl_error_set(error, EINVAL, "sluice_dataset_stats: NULL argument");
  }
  SL_RETURN_NOT_OK(sl_dataset_usable(dataset, error));
  SL_RETURN_NOT_OK(sl_dataset_readable(dataset, error));
  for (;;) {
    int rc = stats_once(dataset, out, n_out, error);
    if (rc == 0) return 0;
    // A value that did not fit a type inferred from a sample widens it:
    // then count again with the wider types (each round widens a column).
    // A refine that fails after widening (a filter the wider type cannot
    // take) says why, not the value that asked for it.
    struct sluice_error refine_error;
    memset(&refine_error, 0, sizeof refine_error);
    int changed = 0;
    int refined = sluice_dataset_refine(dataset, &changed, &refine_error);
    if (refined != 0 && changed) {  // widened, but unusable so (as sluice.h says)
      *error = refine_error;
      return refined;
    }
    if (refined != 0 || !changed) return rc;
    sl_error_clear(error);
  }
}
