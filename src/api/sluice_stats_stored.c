// Statistics as the data's metadata stores them (a Parquet footer), through
// the reader's optional stored_stats hook: nothing is decoded. Bounds are
// rendered with the same renderer as computed statistics, so that both
// spell a value the same way.
#include <string.h>

#include "sluice.h"
#include "core/sl_alloc.h"
#include "core/sl_error.h"
#include "api/sluice_dataset_internal.h"
#include "api/sluice_stats_internal.h"
#include "scan/sl_scan.h"

/// Renders row `i` of `column` into a new string (default allocator).
static int stored_render(const struct sl_text_field* field, const struct ArrowArray* column,
                         int64_t i, char** out, struct sluice_error* error) {
  struct sl_text text;
  sl_text_init(&text, NULL);
  int rc = sl_value_render(field, column, i, SL_TEXT_PLAIN, &text, error);
  if (rc == 0) {
    *out = sl_strdup(NULL, sl_text_cstr(&text));
    if (*out == NULL) rc = sl_error_set(error, ENOMEM, "stored statistics: out of memory");
  }
  sl_text_reset(&text);
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
  if (args.format == NULL || args.format->stored_stats == NULL || n == 0) return 0;
  const struct sluice_allocator* alloc = sl_dataset_allocator(dataset);
  struct sl_stored_column_stats* stats = sl_calloc(alloc, (size_t)n, sizeof *stats);
  if (stats == NULL) return sl_error_set(error, ENOMEM, "stored statistics: out of memory");
  int64_t row_count = -1;
  struct ArrowArray min_max;
  memset(&min_max, 0, sizeof min_max);
  int rc = args.format->stored_stats(args.reader, args.columns, args.columns ? args.n_columns : n,
                                     &row_count, stats, &min_max, error);
  if (rc == 0 && (min_max.release == NULL || min_max.n_children != n || min_max.length < 2)) {
    rc = sl_error_set(error, EINVAL,
                      "stored statistics: the %s reader returned bounds of a wrong shape",
                      args.format->name);
  }
  for (int64_t c = 0; rc == 0 && c < n; ++c) {
    struct sluice_column_stats* r = &result[c];
    const struct sl_stored_column_stats* s = &stats[c];
    const struct ArrowArray* bounds = min_max.children[c];
    r->count = row_count < 0 ? -1 : row_count;
    r->null_count = s->null_count < 0 ? -1 : s->null_count;
    r->from_metadata = 1;
    int64_t at = min_max.offset;
    if (!s->has_min_max || sl_value_is_null(&row->children[c], bounds, at) ||
        sl_value_is_null(&row->children[c], bounds, at + 1)) {
      continue;
    }
    rc = stored_render(&row->children[c], bounds, at, &r->min, error);
    if (rc == 0) rc = stored_render(&row->children[c], bounds, at + 1, &r->max, error);
    if (rc == 0) {
      r->has_min_max = 1;
      r->min_exact = s->min_exact != 0;
      r->max_exact = s->max_exact != 0;
    }
  }
  if (min_max.release != NULL) min_max.release(&min_max);
  sl_free(alloc, stats, (size_t)n * sizeof *stats);
  if (rc == 0) *available = 1;
  return rc;
}

SLUICE_EXPORT int sluice_dataset_stored_stats(struct sluice_dataset* dataset,
                                              struct sluice_column_stats** out, int64_t* n_out,
                                              struct sluice_error* error) {
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
