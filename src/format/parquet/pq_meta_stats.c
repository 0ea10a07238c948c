// Merging column-chunk statistics over row groups (sl_pq_merge_column_stats).
// The sort order follows parquet.thrift's ColumnOrder/TypeDefinedOrder: the
// logical (or converted) type decides, then the physical type. The legacy
// min/max fields were written with signed comparison by old writers, so they
// are used only where that is the right order (see PITFALLS.md, Parquet).
#include <errno.h>
#include <math.h>
#include <string.h>

#include "pq_meta.h"
#include "../../core/sl_error.h"


static enum pq_stats_order stats_order_of(const struct pq_schema_element* e) {
  const struct pq_logical_type* lt = &e->logical;
  enum pq_converted_type ct = e->converted_type;
  int is_decimal = lt->kind == PQ_LOGICAL_DECIMAL ||
                   (lt->kind == PQ_LOGICAL_NONE && ct == PQ_CT_DECIMAL);
  if (lt->kind == PQ_LOGICAL_UNKNOWN_MEMBER || lt->kind == PQ_LOGICAL_VARIANT ||
      lt->kind == PQ_LOGICAL_GEOMETRY || lt->kind == PQ_LOGICAL_GEOGRAPHY ||
      (lt->kind == PQ_LOGICAL_NONE && ct == PQ_CT_INTERVAL)) {
    return PQ_STATS_ORDER_NONE;
  }
  switch (e->type) {
    case PQ_BOOLEAN: return PQ_STATS_ORDER_BOOL;
    case PQ_INT32: case PQ_INT64: {
      int is_unsigned = lt->kind == PQ_LOGICAL_INTEGER
                            ? !lt->is_signed
                            : lt->kind == PQ_LOGICAL_NONE && ct >= PQ_CT_UINT_8 &&
                                  ct <= PQ_CT_UINT_64;
      return is_unsigned ? PQ_STATS_ORDER_UNSIGNED : PQ_STATS_ORDER_SIGNED;
    }
    case PQ_INT96: return PQ_STATS_ORDER_NONE;
    case PQ_FLOAT: return PQ_STATS_ORDER_FLOAT;
    case PQ_DOUBLE: return PQ_STATS_ORDER_DOUBLE;
    case PQ_BYTE_ARRAY: return is_decimal ? PQ_STATS_ORDER_DECIMAL : PQ_STATS_ORDER_BYTES;
    case PQ_FIXED_LEN_BYTE_ARRAY:
      if (is_decimal) return PQ_STATS_ORDER_DECIMAL;
      if (lt->kind == PQ_LOGICAL_FLOAT16)
        return e->type_length == 2 ? PQ_STATS_ORDER_FLOAT16 : PQ_STATS_ORDER_NONE;
      return PQ_STATS_ORDER_BYTES;
  }
  return PQ_STATS_ORDER_NONE;
}

static uint64_t stats_le(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int b = n - 1; b >= 0; --b) v = (v << 8) | p[b];
  return v;
}

static double stats_half(uint16_t h) {
  int exponent = (h >> 10) & 0x1f;
  double v = exponent == 31 ? ((h & 0x3ff) != 0 ? NAN : INFINITY)
             : exponent == 0 ? ldexp(h & 0x3ff, -24)
                             : ldexp((h & 0x3ff) + 1024, exponent - 25);
  return (h & 0x8000) ? -v : v;
}

/// The bound as a double (float orders only).
static double stats_real(enum pq_stats_order order, const struct pq_bytes* b) {
  if (order == PQ_STATS_ORDER_FLOAT) {
    uint32_t bits = (uint32_t)stats_le(b->data, 4);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
  }
  if (order == PQ_STATS_ORDER_DOUBLE) {
    uint64_t bits = stats_le(b->data, 8);
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
  }
  return stats_half((uint16_t)stats_le(b->data, 2));
}

/// Byte `i` of a big-endian two's complement number of `n` bytes seen as `width` bytes.
static uint8_t stats_sign_extended(const struct pq_bytes* b, int64_t width, int64_t i) {
  int64_t pad = width - b->size;
  uint8_t sign = b->size > 0 && (b->data[0] & 0x80) ? 0xff : 0x00;
  return i < pad ? sign : b->data[i - pad];
}

static int stats_compare(enum pq_stats_order order, int width, const struct pq_bytes* a,
                         const struct pq_bytes* b) {
  switch (order) {
    case PQ_STATS_ORDER_BOOL: return (a->data[0] != 0) - (b->data[0] != 0);
    case PQ_STATS_ORDER_SIGNED: {
      int64_t x = width == 4 ? (int32_t)(uint32_t)stats_le(a->data, 4)
                             : (int64_t)stats_le(a->data, 8);
      int64_t y = width == 4 ? (int32_t)(uint32_t)stats_le(b->data, 4)
                             : (int64_t)stats_le(b->data, 8);
      return (x > y) - (x < y);
    }
    case PQ_STATS_ORDER_UNSIGNED: {
      uint64_t x = stats_le(a->data, width), y = stats_le(b->data, width);
      return (x > y) - (x < y);
    }
    case PQ_STATS_ORDER_FLOAT: case PQ_STATS_ORDER_DOUBLE: case PQ_STATS_ORDER_FLOAT16: {
      double x = stats_real(order, a), y = stats_real(order, b);
      return (x > y) - (x < y);
    }
    case PQ_STATS_ORDER_BYTES: {
      int64_t n = a->size < b->size ? a->size : b->size;
      int c = n > 0 ? memcmp(a->data, b->data, (size_t)n) : 0;
      if (c != 0) return c < 0 ? -1 : 1;
      return (a->size > b->size) - (a->size < b->size);
    }
    case PQ_STATS_ORDER_DECIMAL: {
      int64_t w = a->size > b->size ? a->size : b->size;
      uint8_t sa = stats_sign_extended(a, w, 0) & 0x80, sb = stats_sign_extended(b, w, 0) & 0x80;
      if (sa != sb) return sa ? -1 : 1;
      for (int64_t i = 0; i < w; ++i) {
        uint8_t x = stats_sign_extended(a, w, i), y = stats_sign_extended(b, w, i);
        if (x != y) return x < y ? -1 : 1;
      }
      return 0;
    }
    default: return 0;
  }
}

/// Whether a stored bound can be used: the right size for the type, and not NaN.
static int stats_bound_usable(enum pq_stats_order order, const struct pq_schema_element* e,
                              const struct pq_bytes* b) {
  if (!b->present) return 0;
  switch (order) {
    case PQ_STATS_ORDER_BOOL: return b->size == 1;
    case PQ_STATS_ORDER_SIGNED: case PQ_STATS_ORDER_UNSIGNED:
      return b->size == (e->type == PQ_INT32 ? 4 : 8);
    case PQ_STATS_ORDER_FLOAT: case PQ_STATS_ORDER_DOUBLE: case PQ_STATS_ORDER_FLOAT16: {
      int64_t want = order == PQ_STATS_ORDER_FLOAT ? 4 : order == PQ_STATS_ORDER_DOUBLE ? 8 : 2;
      return b->size == want && !isnan(stats_real(order, b));
    }
    case PQ_STATS_ORDER_BYTES: return e->type == PQ_BYTE_ARRAY || b->size == e->type_length;
    case PQ_STATS_ORDER_DECIMAL:
      return b->size > 0 && (e->type == PQ_BYTE_ARRAY || b->size == e->type_length);
    default: return 0;
  }
}

/// Exactness of a bound: the flag when written, else exact except for
/// variable-length byte arrays (whose bounds writers may truncate; a fixed
/// length one is used only at its full length, stats_bound_usable).
static int stats_exact(int flag, const struct pq_schema_element* e) {
  if (flag >= 0) return flag;
  return e->type != PQ_BYTE_ARRAY;
}

/// The schema element of leaf `leaf` (NULL if out of range).
static const struct pq_schema_element* stats_leaf(const struct pq_file_meta* meta, int64_t leaf) {
  int64_t seen = 0;
  for (int64_t i = 1; i < meta->n_schema; ++i) {
    if (!meta->schema[i].has_type) continue;
    if (seen++ == leaf) return &meta->schema[i];
  }
  return NULL;
}

// -0.0 / +0.0 as PLAIN bytes (little-endian), for widening zero bounds.
static const uint8_t stats_float_neg_zero[4] = {0, 0, 0, 0x80};
static const uint8_t stats_float_pos_zero[4] = {0, 0, 0, 0};
static const uint8_t stats_double_neg_zero[8] = {0, 0, 0, 0, 0, 0, 0, 0x80};
static const uint8_t stats_double_pos_zero[8] = {0, 0, 0, 0, 0, 0, 0, 0};
static const uint8_t stats_half_neg_zero[2] = {0, 0x80};
static const uint8_t stats_half_pos_zero[2] = {0, 0};

/// A zero float bound: per parquet.thrift, a min of 0 may hide a -0.0 and a
/// max of 0 a +0.0, so the bound becomes -0.0 / +0.0 and is no longer exact.
static void stats_widen_zero(enum pq_stats_order order, struct pq_bytes* bound, int* exact,
                             int is_min) {
  if (order != PQ_STATS_ORDER_FLOAT && order != PQ_STATS_ORDER_DOUBLE &&
      order != PQ_STATS_ORDER_FLOAT16)
    return;
  if (stats_real(order, bound) != 0.0) return;
  const uint8_t* neg = order == PQ_STATS_ORDER_FLOAT    ? stats_float_neg_zero
                       : order == PQ_STATS_ORDER_DOUBLE ? stats_double_neg_zero
                                                        : stats_half_neg_zero;
  const uint8_t* pos = order == PQ_STATS_ORDER_FLOAT    ? stats_float_pos_zero
                       : order == PQ_STATS_ORDER_DOUBLE ? stats_double_pos_zero
                                                        : stats_half_pos_zero;
  bound->data = is_min ? neg : pos;
  *exact = 0;
}

int sl_pq_merge_column_stats(const struct pq_file_meta* meta, int64_t leaf,
                          struct pq_merged_stats* out, struct sluice_error* error) {
  return sl_pq_merge_column_stats_range(meta, leaf, 0, meta->n_row_groups, out, error);
}

int sl_pq_merge_column_stats_range(const struct pq_file_meta* meta, int64_t leaf, int64_t first,
                                int64_t count, struct pq_merged_stats* out,
                                struct sluice_error* error) {
  memset(out, 0, sizeof *out);
  if (first < 0 || count < 0 || first > meta->n_row_groups || count > meta->n_row_groups - first) {
    return sl_error_set(error, EINVAL, "parquet statistics: no row groups %lld..%lld",
                        (long long)first, (long long)first + (long long)count);
  }
  const struct pq_schema_element* e = stats_leaf(meta, leaf);
  if (e == NULL) {
    return sl_error_set(error, EINVAL, "parquet statistics: no leaf column %lld", (long long)leaf);
  }
  enum pq_stats_order order = stats_order_of(e);
  // Bounds under a column order sluice does not know are not comparable.
  if (meta->column_orders != NULL && leaf < meta->n_column_orders &&
      meta->column_orders[leaf] != PQ_ORDER_TYPE_DEFINED &&
      meta->column_orders[leaf] != PQ_ORDER_IEEE754_TOTAL) {
    order = PQ_STATS_ORDER_NONE;
  }
  // Decimals in byte arrays compare as signed big-endian numbers only since
  // column_orders (TypeDefinedOrder) exist; writers before them compared the
  // bytes unsigned (PARQUET-1065: parquet-mr 1.8 stored min 2.00 over a 1.00
  // in fixed_length_decimal.parquet). Without the order the bounds are not
  // trusted: `sluice stats` computes them.
  if (order == PQ_STATS_ORDER_DECIMAL && e->type != PQ_INT32 && e->type != PQ_INT64 &&
      (meta->column_orders == NULL || leaf >= meta->n_column_orders ||
       meta->column_orders[leaf] != PQ_ORDER_TYPE_DEFINED)) {
    order = PQ_STATS_ORDER_NONE;
  }
  int width = e->type == PQ_INT32 ? 4 : 8;
  // Legacy min/max were compared as signed numbers: right only for these.
  int legacy_ok = order == PQ_STATS_ORDER_SIGNED || order == PQ_STATS_ORDER_FLOAT ||
                  order == PQ_STATS_ORDER_DOUBLE || order == PQ_STATS_ORDER_BOOL;
  int64_t null_count = 0;
  int bounds_ok = order != PQ_STATS_ORDER_NONE, have = 0;
  for (int64_t g = first; g < first + count; ++g) {
    const struct pq_row_group* rg = &meta->row_groups[g];
    if (leaf >= rg->n_columns) {
      return sl_error_set(error, EINVAL, "parquet statistics: row group %lld has no column %lld",
                          (long long)g, (long long)leaf);
    }
    const struct pq_column_chunk* cc = &rg->columns[leaf];
    if (!cc->has_meta_data) {  // encrypted metadata: nothing known
      null_count = -1;
      bounds_ok = 0;
      continue;
    }
    const struct pq_column_meta* cm = &cc->meta_data;
    const struct pq_statistics* s = &cm->statistics;
    if (cm->num_values == 0) continue;  // an empty chunk constrains nothing
    int64_t nulls = s->present ? s->null_count : -1;
    if (nulls < 0 || null_count < 0 || nulls > INT64_MAX - null_count) {
      null_count = -1;
    } else {
      null_count += nulls;
    }
    if (nulls >= 0 && nulls >= cm->num_values) continue;  // all null: no bounds needed
    if (!bounds_ok) continue;
    struct pq_bytes min = s->min_value, max = s->max_value;
    int min_exact = stats_exact(s->is_min_value_exact, e);
    int max_exact = stats_exact(s->is_max_value_exact, e);
    if (!min.present && legacy_ok) min = s->min, min_exact = 1;
    if (!max.present && legacy_ok) max = s->max, max_exact = 1;
    if (!s->present || !stats_bound_usable(order, e, &min) ||
        !stats_bound_usable(order, e, &max)) {
      bounds_ok = 0;
      continue;
    }
    if (!have) {
      out->min = min, out->min_exact = min_exact;
      out->max = max, out->max_exact = max_exact;
      have = 1;
      continue;
    }
    int c = stats_compare(order, width, &min, &out->min);
    if (c < 0 || (c == 0 && min_exact && !out->min_exact)) {  // ties: prefer the exact one
      out->min = min;
      out->min_exact = min_exact;
    }
    c = stats_compare(order, width, &max, &out->max);
    if (c > 0 || (c == 0 && max_exact && !out->max_exact)) {
      out->max = max;
      out->max_exact = max_exact;
    }
  }
  out->null_count = null_count;
  out->has_min_max = bounds_ok && have;
  out->order = out->has_min_max ? order : PQ_STATS_ORDER_NONE;
  if (out->has_min_max) {
    stats_widen_zero(order, &out->min, &out->min_exact, 1);
    stats_widen_zero(order, &out->max, &out->max_exact, 0);
  } else {
    memset(&out->min, 0, sizeof out->min);
    memset(&out->max, 0, sizeof out->max);
    out->min_exact = out->max_exact = 0;
  }
  return 0;
}
