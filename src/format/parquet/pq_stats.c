// Footer statistics -> sluice's stored statistics. The bounds are converted
// with the page decoder's own conversion (sl_pq_convert_plain_value) so that a
// min/max has exactly the type and value the data would decode to.
#include "pq_stats.h"

#include <inttypes.h>
#include <string.h>

#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_error.h"
#include "core/sl_utf8.h"
#include "pq_column.h"
#include "pq_column_internal.h"

static int oom(const char* name, struct sluice_error* error) {
  return sl_error_set(error, ENOMEM, "%s: out of memory", name);
}

/// A zero-filled owned buffer of `size` bytes as buffer i.
static int zero_buffer(struct ArrowArray* a, int64_t i, int64_t size,
                       const struct sluice_allocator* alloc, const char* name,
                       struct sluice_error* error, uint8_t** data) {
  size_t cap = (size_t)((size + 63) & ~(int64_t)63);
  if (cap == 0) cap = 64;
  uint8_t* p = sl_alloc_buffer(alloc, cap);
  if (p == NULL) return oom(name, error);
  memset(p, 0, cap);
  sl_array_set_buffer_owned(a, i, p, (int64_t)cap);
  if (data) *data = p;
  return 0;
}

/// An array of `length` nulls of field f's type (lists empty, structs with
/// children of `length` nulls; `top` = the min_max column itself, always
/// nullable).
static int null_array(const struct pq_field* f, int64_t length, int top,
                      const struct sluice_allocator* alloc, const char* name,
                      struct ArrowArray* out, struct sluice_error* error) {
  int64_t nb = 0, nc = 0, child_len = 0;
  int64_t bits = (length + 7) / 8 + 1;
  int64_t sizes[3] = {bits, 0, 0};
  if (f->kind == PQ_FIELD_LEAF) {
    if (f->conv == PQ_CONV_NULL) nb = 0;
    else if (f->dict) nb = 2, sizes[1] = (length + 1) * 8;
    else if (f->conv == PQ_CONV_BINARY) nb = 3, sizes[1] = (length + 1) * (f->large ? 8 : 4), sizes[2] = 1;
    else if (f->conv == PQ_CONV_BOOL) nb = 2, sizes[1] = bits;
    else nb = 2, sizes[1] = (length + 1) * f->out_width;
  } else if (f->kind == PQ_FIELD_STRUCT) {
    nb = 1, nc = f->n_children, child_len = length;
  } else if (f->fixed_size > 0) {
    nb = 1, nc = 1, child_len = length * f->fixed_size;
  } else {
    nb = 2, nc = 1, sizes[1] = (length + 1) * (f->large ? 8 : 4);
  }
  SL_RETURN_NOT_OK(sl_array_init(out, alloc, nb, nc, error));
  out->length = length;
  int nullable = top || f->nullable;
  out->null_count = f->conv == PQ_CONV_NULL && f->kind == PQ_FIELD_LEAF ? length : nullable ? length : 0;
  int rc = 0;
  for (int64_t i = 0; rc == 0 && i < nb; ++i)
    if (i > 0 || nullable) rc = zero_buffer(out, i, sizes[i], alloc, name, error, NULL);
  for (int64_t i = 0; rc == 0 && i < nc; ++i)
    rc = null_array(&f->children[i], child_len, 0, alloc, name, out->children[i], error);
  if (rc == 0 && f->kind == PQ_FIELD_LEAF && f->dict) {
    rc = sl_array_alloc_dictionary(out, error);
    if (rc == 0) rc = sl_array_init(out->dictionary, alloc, 3, 0, error);
    if (rc == 0) rc = zero_buffer(out->dictionary, 1, 4, alloc, name, error, NULL);
    if (rc == 0) rc = zero_buffer(out->dictionary, 2, 1, alloc, name, error, NULL);
  }
  if (rc != 0) out->release(out);
  return rc;
}

/// The 2-row bounds array of a leaf with usable statistics.
static int bounds_array(const struct pq_field* f, const struct pq_merged_stats* m,
                        const struct sluice_allocator* alloc, const char* name,
                        struct ArrowArray* out, struct sluice_error* error) {
  const struct pq_bytes* b[2] = {&m->min, &m->max};
  int64_t nb = f->conv == PQ_CONV_BINARY ? 3 : 2;
  SL_RETURN_NOT_OK(sl_array_init(out, alloc, nb, 0, error));
  out->length = 2;
  uint8_t* validity = NULL;
  int rc = zero_buffer(out, 0, 1, alloc, name, error, &validity);
  if (rc == 0) validity[0] = 3;
  if (rc == 0 && f->conv == PQ_CONV_BINARY) {
    uint8_t* offs = NULL;
    uint8_t* data = NULL;
    rc = zero_buffer(out, 1, 24, alloc, name, error, &offs);
    if (rc == 0) rc = zero_buffer(out, 2, b[0]->size + b[1]->size, alloc, name, error, &data);
    int32_t o[3] = {0, (int32_t)b[0]->size, (int32_t)(b[0]->size + b[1]->size)};
    int64_t o64[3] = {0, b[0]->size, b[0]->size + b[1]->size};
    if (rc == 0) {
      if (f->large) memcpy(offs, o64, sizeof o64);
      else memcpy(offs, o, sizeof o);
      if (b[0]->size) memcpy(data, b[0]->data, (size_t)b[0]->size);
      if (b[1]->size) memcpy(data + b[0]->size, b[1]->data, (size_t)b[1]->size);
    }
  } else if (rc == 0 && f->conv == PQ_CONV_BOOL) {
    uint8_t* bits = NULL;
    rc = zero_buffer(out, 1, 1, alloc, name, error, &bits);
    for (int i = 0; rc == 0 && i < 2; ++i) {
      uint8_t v;
      rc = sl_pq_convert_plain_value(f, b[i]->data, b[i]->size, &v, error);
      if (rc == 0 && v) bits[0] |= (uint8_t)(1u << i);
    }
  } else if (rc == 0) {
    uint8_t* vals = NULL;
    rc = zero_buffer(out, 1, 2 * f->out_width, alloc, name, error, &vals);
    for (int i = 0; rc == 0 && i < 2; ++i)
      rc = sl_pq_convert_plain_value(f, b[i]->data, b[i]->size, vals + i * f->out_width, error);
  }
  if (rc != 0) {
    if (rc != ENOMEM) sl_error_prefix(error, "%s: column %s: statistics", name, f->path);
    out->release(out);
  }
  return rc;
}

int sl_pq_stored_stats(const struct pq_file_meta* meta, const struct pq_schema* schema,
                    const struct sluice_allocator* alloc, const char* name,
                    const int64_t* columns, int64_t n_columns, int64_t* row_count,
                    struct sl_stored_column_stats* stats, struct ArrowArray* min_max,
                    struct sluice_error* error) {
  const struct pq_field* root = &schema->root;
  if (columns == NULL) n_columns = root->n_children;
  // The row groups' counts, as every reader goes by (their sum cannot
  // overflow: the footer's check): FileMetaData.num_rows is 0 from some
  // writers, and was taken for the column counts.
  *row_count = 0;
  for (int64_t g = 0; g < meta->n_row_groups; ++g) *row_count += meta->row_groups[g].num_rows;
  SL_RETURN_NOT_OK(sl_array_init(min_max, alloc, 1, n_columns, error));
  min_max->length = 2;
  int rc = 0;
  for (int64_t i = 0; rc == 0 && i < n_columns; ++i) {
    int64_t c = columns ? columns[i] : i;
    if (c < 0 || c >= root->n_children) {
      rc = sl_error_set(error, EINVAL, "%s: column index %" PRId64 " out of range", name, c);
      break;
    }
    const struct pq_field* f = &root->children[c];
    stats[i] = (struct sl_stored_column_stats){.null_count = -1};
    int usable = 0;
    struct pq_merged_stats m;
    if (f->kind == PQ_FIELD_LEAF) {
      rc = sl_pq_merge_column_stats(meta, f->leaf, &m, error);
      if (rc != 0) break;
      stats[i].null_count = m.null_count;
      // (An empty bound, the empty string, may have no data pointer.)
      usable = m.has_min_max && f->conv != PQ_CONV_NULL && f->conv != PQ_CONV_INT96 &&
               (m.min.data != NULL || m.min.size == 0) &&
               (m.max.data != NULL || m.max.size == 0) && !f->dict;
      if (usable && f->is_string) {
        // A truncated bound may end inside a character: cut the min back to
        // whole characters (still a lower bound); a max like that is unusable.
        int64_t bad = sl_utf8_invalid_at(m.min.data, m.min.size);
        if (bad >= 0) {
          m.min.size = bad;
          m.min_exact = 0;
        }
        if (sl_utf8_invalid_at(m.max.data, m.max.size) >= 0) usable = 0;
      }
    }
    if (usable) {
      struct sluice_error ignored = {0};
      if (bounds_array(f, &m, alloc, name, min_max->children[i], &ignored) == 0) {
        stats[i].has_min_max = 1;
        stats[i].min_exact = m.min_exact;
        stats[i].max_exact = m.max_exact;
        continue;
      }
      if (ignored.code == ENOMEM) {
        rc = oom(name, error);
        break;
      }
    }
    rc = null_array(f, 2, 1, alloc, name, min_max->children[i], error);
  }
  if (rc != 0) min_max->release(min_max);
  return rc;
}
