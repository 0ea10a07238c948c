// Row-group pruning (sl_format_reader.split_may_match): whether a row
// group's column chunk statistics prove that no row passes a condition.
// The bounds are the ones `sluice stats` trusts (sl_pq_merge_column_stats_range:
// the sort order of the column's type, legacy min/max only where signed
// order is right, NaN bounds refused, zero bounds widened to -0.0 / +0.0,
// bounds under an unknown column order ignored), read as values of the
// condition's kind the way the page decoder turns values into the column's
// Arrow type (a dictionary-encoded column's values are those values, so its
// bounds serve as well, from writers known to compute them over every
// chunk: see dictionary_stats_trusted). Anything else (nested columns, FLBA,
// float16, INT96, a kind that does not match the order the bounds are in)
// is never pruned by its bounds.
#include "pq_stats.h"

#include <math.h>
#include <string.h>

#include "core/sl_row_filter.h"

static uint64_t le_bits(const uint8_t* p, int64_t n) {
  uint64_t v = 0;
  for (int64_t b = n - 1; b >= 0; --b) v = (v << 8) | p[b];
  return v;
}

/// The empty bound may have no data pointer; the filter gets a real one.
static const uint8_t k_no_bytes[1] = {0};

/// Whether the statistics of Arrow dictionary columns can be believed:
/// parquet-cpp-arrow before 11.0.0 computed them from the first chunk of a
/// column only (apache/arrow#15042), too narrow when later chunks hold other
/// values, and other writers of dictionary columns are not known to be
/// right; sluice's writer takes them over the chunk's whole dictionary.
static int dictionary_stats_trusted(const struct pq_file_meta* meta) {
  static const char arrow[] = "parquet-cpp-arrow version ", self[] = "sluice version ";
  const struct pq_bytes* by = &meta->created_by;
  size_t n = by->data != NULL && by->size > 0 ? (size_t)by->size : 0;
  const char* text = (const char*)by->data;
  if (n >= sizeof self - 1 && memcmp(text, self, sizeof self - 1) == 0) return 1;
  if (n < sizeof arrow - 1 || memcmp(text, arrow, sizeof arrow - 1) != 0) return 0;
  int major = 0;
  for (size_t i = sizeof arrow - 1; i < n && text[i] >= '0' && text[i] <= '9' && major < 1000; ++i)
    major = major * 10 + (text[i] - '0');
  return major >= 11;
}

/// Bound `b` (PLAIN bytes in order m->order) of leaf `f` as a value of kind
/// `kind`: 1 when every value the decoder produces from a physical value
/// between the bounds lies between the converted bounds; 0 when the bound
/// cannot be used (then the condition prunes nothing).
static int bound_value(const struct pq_field* f, const struct pq_merged_stats* m,
                       enum sl_filter_kind kind, const struct pq_bytes* b,
                       union sl_filter_value* out) {
  const struct pq_schema_element* e = f->element;
  if (e == NULL || (b->data == NULL && b->size != 0)) return 0;
  int narrow = f->conv == PQ_CONV_I32_TO_I8 || f->conv == PQ_CONV_I32_TO_I16;
  int int_conv = f->conv == PQ_CONV_COPY || narrow;
  switch (kind) {
    case SL_FILTER_INT: {
      if (m->order != PQ_STATS_ORDER_SIGNED || !int_conv) return 0;
      if (e->type == PQ_INT32 && b->size == 4) {
        int64_t v = (int32_t)(uint32_t)le_bits(b->data, 4);
        // The decoder keeps the low bits of an INT(8) / INT(16) value: a
        // bound past the narrow type's range says nothing about the output.
        if (f->conv == PQ_CONV_I32_TO_I8 && (v < INT8_MIN || v > INT8_MAX)) return 0;
        if (f->conv == PQ_CONV_I32_TO_I16 && (v < INT16_MIN || v > INT16_MAX)) return 0;
        out->i = v;
        return 1;
      }
      if (e->type == PQ_INT64 && b->size == 8 && f->conv == PQ_CONV_COPY) {
        out->i = (int64_t)le_bits(b->data, 8);
        return 1;
      }
      return 0;
    }
    case SL_FILTER_UINT: {
      if (m->order != PQ_STATS_ORDER_UNSIGNED || !int_conv) return 0;
      if (e->type == PQ_INT32 && b->size == 4) {
        uint64_t v = le_bits(b->data, 4);
        if (f->conv == PQ_CONV_I32_TO_I8 && v > UINT8_MAX) return 0;
        if (f->conv == PQ_CONV_I32_TO_I16 && v > UINT16_MAX) return 0;
        out->u = v;
        return 1;
      }
      if (e->type == PQ_INT64 && b->size == 8 && f->conv == PQ_CONV_COPY) {
        out->u = le_bits(b->data, 8);
        return 1;
      }
      return 0;
    }
    case SL_FILTER_FLOAT: {
      if (f->conv != PQ_CONV_COPY) return 0;
      double v;
      if (m->order == PQ_STATS_ORDER_FLOAT && e->type == PQ_FLOAT && b->size == 4) {
        uint32_t bits = (uint32_t)le_bits(b->data, 4);
        float x;
        memcpy(&x, &bits, sizeof x);
        v = x;
      } else if (m->order == PQ_STATS_ORDER_DOUBLE && e->type == PQ_DOUBLE && b->size == 8) {
        uint64_t bits = le_bits(b->data, 8);
        memcpy(&v, &bits, sizeof v);
      } else {
        return 0;
      }
      if (isnan(v)) return 0;
      out->f = v;
      return 1;
    }
    case SL_FILTER_BOOL:
      if (m->order != PQ_STATS_ORDER_BOOL || f->conv != PQ_CONV_BOOL || b->size != 1 ||
          b->data[0] > 1)
        return 0;
      out->i = b->data[0];
      return 1;
    case SL_FILTER_DECIMAL: {
      // Unscaled values: INT32 / INT64 in signed order, or fixed-length
      // big-endian two's complement (binary ones may be truncated bounds).
      uint8_t le[32];
      int64_t size = b->size;
      if ((f->conv == PQ_CONV_DEC_I32 && e->type == PQ_INT32 && size == 4) ||
          (f->conv == PQ_CONV_DEC_I64 && e->type == PQ_INT64 && size == 8)) {
        if (m->order != PQ_STATS_ORDER_SIGNED) return 0;
        memcpy(le, b->data, (size_t)size);
      } else if (f->conv == PQ_CONV_DEC_BE && e->type == PQ_FIXED_LEN_BYTE_ARRAY &&
                 size == e->type_length && size >= 1 && size <= 32) {
        if (m->order != PQ_STATS_ORDER_DECIMAL) return 0;
        for (int64_t k = 0; k < size; ++k) le[k] = b->data[size - 1 - k];
      } else {
        return 0;
      }
      sl_filter_decimal_widen(le, (int)size, out->d);
      return 1;
    }
    case SL_FILTER_BYTES:
      // Byte-array bounds may be truncated (is_*_exact = 0): a truncated min
      // is a prefix, still a lower bound; writers truncate a max by raising
      // its last kept byte, so it stays an upper bound. Both compare
      // bytewise like the filter, UTF-8 or not.
      if (m->order != PQ_STATS_ORDER_BYTES || f->conv != PQ_CONV_BINARY ||
          e->type != PQ_BYTE_ARRAY)
        return 0;
      out->bytes.s = b->size > 0 ? b->data : k_no_bytes;
      out->bytes.len = b->size;
      return 1;
    case SL_FILTER_NULL:  // (not judged by pruning)
      return 0;
  }
  return 0;
}

int sl_pq_condition_stats_may_match(const struct pq_row_group_judge* j,
                                 const struct sl_filter_condition* c) {
  if (j->rg < 0 || j->rg >= j->meta->n_row_groups) return 1;
  const struct pq_row_group* g = &j->meta->row_groups[j->rg];
  if (c->column < 0 || c->column >= j->schema->root.n_children) return 1;
  const struct pq_field* f = &j->schema->root.children[c->column];
  // Only a column of its own: a leaf's nulls in a struct or list say
  // nothing about the rows.
  if (f->kind != PQ_FIELD_LEAF || f->rep != 0 || f->leaf < 0 || f->leaf >= g->n_columns)
    return 1;
  struct pq_merged_stats m;
  struct sluice_error ignored = {0, {0}};
  if (sl_pq_merge_column_stats_range(j->meta, f->leaf, j->rg, 1, &m, &ignored) != 0) return 1;
  // Every value null: no row passes (a null passes no condition), whatever
  // the column's type.
  const struct pq_column_chunk* cc = &g->columns[f->leaf];
  if (m.null_count >= 0 && cc->has_meta_data && m.null_count == g->num_rows &&
      cc->meta_data.num_values == g->num_rows)
    return 0;
  if (!m.has_min_max) return 1;
  // min/max ignore NaN, and NaN passes !=: a chunk of 2.0 and NaN has
  // min = max = 2.0 and a row that passes x != 2.
  if (c->kind == SL_FILTER_FLOAT && c->op == SL_FILTER_NE) return 1;
  union sl_filter_value lo, hi;
  if (f->dict && !dictionary_stats_trusted(j->meta)) return 1;
  if (!bound_value(f, &m, c->kind, &m.min, &lo) || !bound_value(f, &m, c->kind, &m.max, &hi))
    return 1;
  return sl_filter_range_may_pass(c, &lo, &hi) != 0;
}
