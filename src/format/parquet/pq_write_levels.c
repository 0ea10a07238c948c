// Definition / repetition levels and dense physical values of one leaf over
// the rows of a row group, computed from the Arrow validity bitmaps and list
// offsets along the leaf's path (the Dremel encoding). A flat column takes a
// fast path straight from its validity bitmap; nested ones are walked row by
// row. Values are gathered as runs of positions in the leaf array, then
// converted to their Parquet physical form in bulk.
#include <string.h>
#define XXH_INLINE_ALL  // from its header, as pq_bloom.c: no library to link
#include <xxhash.h>

#include "core/sl_alloc.h"
#include "core/sl_error.h"
#include "core/sl_read.h"
#include "format/parquet/pq_write_internal.h"

struct walk_ctx {
  const struct pqw_leaf* leaf;
  struct pqw_column_data* d;
  int64_t row;  ///< for messages: as the input counts it
};

void sl_pqw_column_data_init(struct pqw_column_data* d, const struct sluice_allocator* alloc) {
  memset(d, 0, sizeof *d);
  sl_buffer_init(&d->def, alloc);
  sl_buffer_init(&d->rep, alloc);
  sl_buffer_init(&d->values, alloc);
  sl_buffer_init(&d->runs, alloc);
  sl_buffer_init(&d->seed, alloc);
}

void sl_pqw_column_data_free(struct pqw_column_data* d) {
  sl_buffer_reset(&d->def);
  sl_buffer_reset(&d->rep);
  sl_buffer_reset(&d->values);
  sl_buffer_reset(&d->runs);
  sl_buffer_reset(&d->seed);
}

static int oom(struct sluice_error* error) {
  return sl_error_set(error, ENOMEM, "parquet writer: out of memory (column data)");
}

static inline int array_null(const struct ArrowArray* a, int64_t p) {
  return a->null_count != 0 && a->n_buffers > 0 && a->buffers[0] != NULL &&
         !sl_bit_get(a->buffers[0], p);
}

static int emit_level(struct walk_ctx* c, int16_t def, int16_t rep, struct sluice_error* error) {
  struct pqw_column_data* d = c->d;
  if (c->leaf->max_def > 0) {
    if (d->def.size + 2 > d->def.capacity && sl_buffer_reserve(&d->def, 2) != 0) return oom(error);
    memcpy(d->def.data + d->def.size, &def, 2);
    d->def.size += 2;
  }
  if (c->leaf->max_rep > 0) {
    if (d->rep.size + 2 > d->rep.capacity && sl_buffer_reserve(&d->rep, 2) != 0) return oom(error);
    memcpy(d->rep.data + d->rep.size, &rep, 2);
    d->rep.size += 2;
  }
  d->n_levels++;
  return 0;
}

static int add_position(struct walk_ctx* c, int64_t p, int64_t n, struct sluice_error* error) {
  struct sl_buffer* r = &c->d->runs;
  if (r->size >= 16) {
    int64_t* last = (int64_t*)(r->data + r->size - 16);
    if (last[0] + last[1] == p) {
      last[1] += n;
      return 0;
    }
  }
  int64_t run[2] = {p, n};
  if (sl_buffer_append(r, run, 16) != 0) return oom(error);
  return 0;
}

static int dict_value_null(const struct ArrowArray* a, const struct pqw_leaf* leaf, int64_t p) {
  const struct ArrowArray* dict = a->dictionary;
  int64_t idx = sl_int_value(leaf->index_type.id, a->buffers[1], p);
  if (dict == NULL || idx < 0 || idx >= dict->length) return 0;  // reported on conversion
  return array_null(dict, dict->offset + idx);
}

static int null_error(struct walk_ctx* c, struct sluice_error* error) {
  return sl_error_set(error, EINVAL, "parquet writer: column '%s' row %lld: a null in a "
                      "non-nullable field", c->leaf->name, (long long)c->row);
}

/// Visits element `i` (logical, before a->offset) of the node at step `s`.
static int walk(struct walk_ctx* c, int s, const struct ArrowArray* a, int64_t i, int16_t def,
                int16_t rep, struct sluice_error* error) {
  const struct pqw_step* st = &c->leaf->steps[s];
  int64_t p = a->offset + i;
  int is_null = c->leaf->conv == PQW_CV_NULL && st->kind == PQW_LEAF;
  if (!is_null) is_null = array_null(a, p);
  if (!is_null && st->kind == PQW_LEAF && c->leaf->is_dict) is_null = dict_value_null(a, c->leaf, p);
  if (is_null) {
    if (!st->nullable) return null_error(c, error);
    return emit_level(c, def, rep, error);
  }
  if (st->nullable) def++;
  switch (st->kind) {
    case PQW_LEAF:
      SL_RETURN_NOT_OK(emit_level(c, def, rep, error));
      return add_position(c, p, 1, error);
    case PQW_STRUCT:
      if (st->child >= a->n_children)
        return sl_error_set(error, EINVAL, "parquet writer: column '%s': struct array has %lld "
                            "children", c->leaf->name, (long long)a->n_children);
      return walk(c, s + 1, a->children[st->child], p, def, rep, error);
    default: break;
  }
  int64_t b, e;
  if (st->kind == PQW_LIST || st->kind == PQW_MAP) {
    const int32_t* off = a->buffers[1];
    b = off[p];
    e = off[p + 1];
  } else if (st->kind == PQW_LARGE_LIST) {
    const int64_t* off = a->buffers[1];
    b = off[p];
    e = off[p + 1];
  } else {
    b = p * st->list_size;
    e = b + st->list_size;
  }
  if (e < b || a->n_children != 1)
    return sl_error_set(error, EINVAL, "parquet writer: column '%s': bad list offsets",
                        c->leaf->name);
  if (b == e) return emit_level(c, def, rep, error);
  const struct ArrowArray* child = a->children[0];
  int64_t base = 0;
  if (st->kind == PQW_MAP) {
    if (child->n_children != 2)
      return sl_error_set(error, EINVAL, "parquet writer: column '%s': map entries without "
                          "key and value", c->leaf->name);
    base = child->offset;
    child = child->children[st->child];
  }
  for (int64_t j = b; j < e; ++j) {
    SL_RETURN_NOT_OK(walk(c, s + 1, child, base + j, (int16_t)(def + 1),
                          j == b ? rep : st->rep_level, error));
  }
  return 0;
}

/// The leaf array under a top-level column array.
static const struct ArrowArray* leaf_array(const struct pqw_leaf* leaf,
                                           const struct ArrowArray* a) {
  for (int s = 0; s + 1 < leaf->n_steps && a != NULL; ++s) {
    const struct pqw_step* st = &leaf->steps[s];
    if (st->kind == PQW_STRUCT) {
      a = st->child < a->n_children ? a->children[st->child] : NULL;
    } else if (st->kind == PQW_MAP) {
      a = a->n_children == 1 && a->children[0]->n_children == 2
              ? a->children[0]->children[st->child] : NULL;
    } else {
      a = a->n_children == 1 ? a->children[0] : NULL;
    }
  }
  return a;
}

static int grow_values(struct pqw_column_data* d, int64_t bytes, struct sluice_error* error) {
  if (sl_buffer_reserve(&d->values, bytes) != 0) return oom(error);
  return 0;
}

/// Appends values [p, p + n) of array `a` (physical positions) in physical form.
static int convert_run(const struct pqw_leaf* leaf, const struct ArrowArray* a, int64_t p,
                       int64_t n, struct pqw_column_data* d, struct sluice_error* error) {
  const void* data = a->n_buffers > 1 ? a->buffers[1] : NULL;
  switch (leaf->conv) {
    case PQW_CV_NULL: return 0;
    case PQW_CV_BOOL: {
      SL_RETURN_NOT_OK(grow_values(d, n, error));
      uint8_t* out = d->values.data + d->values.size;
      for (int64_t k = 0; k < n; ++k) out[k] = (uint8_t)sl_bit_get(data, p + k);
      d->values.size += n;
      break;
    }
    case PQW_CV_I32_FROM_INT: case PQW_CV_I32_DATE64: case PQW_CV_I32_TIME_S: {
      SL_RETURN_NOT_OK(grow_values(d, n * 4, error));
      int32_t* out = (int32_t*)(void*)(d->values.data + d->values.size);
      if (leaf->conv == PQW_CV_I32_FROM_INT) {
        for (int64_t k = 0; k < n; ++k) out[k] = (int32_t)sl_int_value(leaf->value_type.id, data, p + k);
      } else if (leaf->conv == PQW_CV_I32_DATE64) {
        const int64_t* in = (const int64_t*)data + p;
        // Truncating division, as Arrow C++'s date64 -> date32 cast.
        for (int64_t k = 0; k < n; ++k) out[k] = (int32_t)(in[k] / 86400000);
      } else {
        const int32_t* in = (const int32_t*)data + p;
        for (int64_t k = 0; k < n; ++k) out[k] = (int32_t)((int64_t)in[k] * 1000);
      }
      d->values.size += n * 4;
      break;
    }
    case PQW_CV_I32: case PQW_CV_F32:
      if (sl_buffer_append(&d->values, (const uint8_t*)data + p * 4, n * 4) != 0) return oom(error);
      break;
    case PQW_CV_I64: case PQW_CV_F64:
      if (sl_buffer_append(&d->values, (const uint8_t*)data + p * 8, n * 8) != 0) return oom(error);
      break;
    case PQW_CV_I64_MUL1000: {
      SL_RETURN_NOT_OK(grow_values(d, n * 8, error));
      int64_t* out = (int64_t*)(void*)(d->values.data + d->values.size);
      const int64_t* in = (const int64_t*)data + p;
      for (int64_t k = 0; k < n; ++k) {
        if (__builtin_mul_overflow(in[k], (int64_t)1000, &out[k]))
          return sl_error_set(error, ERANGE, "parquet writer: column '%s': timestamp %lld s "
                              "does not fit in milliseconds", leaf->name, (long long)in[k]);
      }
      d->values.size += n * 8;
      break;
    }
    case PQW_CV_FLBA: {
      int64_t w = leaf->type_length;
      if (sl_buffer_append(&d->values, (const uint8_t*)data + p * w, n * w) != 0) return oom(error);
      break;
    }
    case PQW_CV_DECIMAL: {
      int64_t w = leaf->value_type.byte_width > 0 ? leaf->value_type.byte_width
                  : (leaf->value_type.id == SL_TYPE_DECIMAL256 ? 32 : 16);
      int64_t l = leaf->type_length;
      SL_RETURN_NOT_OK(grow_values(d, n * l, error));
      uint8_t* out = d->values.data + d->values.size;
      const uint8_t* in = (const uint8_t*)data + p * w;
      for (int64_t k = 0; k < n; ++k) {
        for (int64_t b = 0; b < l; ++b) out[k * l + b] = in[k * w + l - 1 - b];
      }
      d->values.size += n * l;
      break;
    }
    case PQW_CV_BYTES32: case PQW_CV_BYTES64: {
      SL_RETURN_NOT_OK(grow_values(d, n * (int64_t)sizeof(struct pqw_ba), error));
      struct pqw_ba* out = (struct pqw_ba*)(void*)(d->values.data + d->values.size);
      const uint8_t* bytes = a->buffers[2];
      for (int64_t k = 0; k < n; ++k) {
        int64_t b, e;
        if (leaf->conv == PQW_CV_BYTES32) {
          b = ((const int32_t*)data)[p + k];
          e = ((const int32_t*)data)[p + k + 1];
        } else {
          b = ((const int64_t*)data)[p + k];
          e = ((const int64_t*)data)[p + k + 1];
        }
        if (e < b || e - b > INT32_MAX)
          return sl_error_set(error, EINVAL, "parquet writer: column '%s': value of %lld bytes "
                              "(Parquet byte arrays hold at most 2 GiB)", leaf->name,
                              (long long)(e - b));
        out[k].ptr = bytes + b;
        out[k].len = e - b;
      }
      d->values.size += n * (int64_t)sizeof(struct pqw_ba);
      break;
    }
  }
  return 0;
}

/// d->seed: the non-null values of `dict`, converted as values are.
static int seed_dictionary(const struct pqw_leaf* leaf, const struct ArrowArray* dict,
                           struct pqw_column_data* d, struct sluice_error* error) {
  struct sl_buffer values = d->values;  // convert_run appends to d->values
  d->values = d->seed;
  d->values.size = 0;
  int rc = 0;
  int64_t n = 0;
  for (int64_t k = 0; rc == 0 && k < dict->length; ++k) {
    if (array_null(dict, dict->offset + k)) continue;
    rc = convert_run(leaf, dict, dict->offset + k, 1, d, error);
    ++n;
  }
  d->seed = d->values;
  d->values = values;
  d->n_seed = rc == 0 ? n : 0;
  d->seeded = 1;
  return rc;
}

static int convert_runs(const struct pqw_leaf* leaf, const struct ArrowArray* a,
                        struct pqw_column_data* d, struct sluice_error* error) {
  const int64_t* runs = (const int64_t*)(void*)d->runs.data;
  int64_t n_runs = d->runs.size / 16;
  // Seeded even when the slice holds nulls only, so that a chunk of nulls
  // still writes the Arrow dictionary's values (as Arrow C++ does).
  if (leaf->is_dict && !d->seeded && a->dictionary != NULL)
    SL_RETURN_NOT_OK(seed_dictionary(leaf, a->dictionary, d, error));
  for (int64_t r = 0; r < n_runs; ++r) {
    int64_t p = runs[2 * r], n = runs[2 * r + 1];
    d->n_values += n;
    if (!leaf->is_dict) {
      SL_RETURN_NOT_OK(convert_run(leaf, a, p, n, d, error));
      continue;
    }
    const struct ArrowArray* dict = a->dictionary;
    if (dict == NULL)
      return sl_error_set(error, EINVAL, "parquet writer: column '%s': dictionary array "
                          "without a dictionary", leaf->name);
    if (!d->seeded) SL_RETURN_NOT_OK(seed_dictionary(leaf, dict, d, error));
    for (int64_t k = 0; k < n; ++k) {
      int64_t idx = sl_int_value(leaf->index_type.id, a->buffers[1], p + k);
      if (idx < 0 || idx >= dict->length)
        return sl_error_set(error, EINVAL, "parquet writer: column '%s': dictionary index %lld "
                            "out of range (dictionary of %lld)", leaf->name, (long long)idx,
                            (long long)dict->length);
      SL_RETURN_NOT_OK(convert_run(leaf, dict, dict->offset + idx, 1, d, error));
    }
  }
  d->runs.size = 0;
  return 0;
}

/// A top-level column without nesting: levels from the validity bitmap.
static int fill_flat(struct walk_ctx* c, const struct ArrowArray* a, int64_t start, int64_t n,
                     int allow_view, struct sluice_error* error) {
  const struct pqw_leaf* leaf = c->leaf;
  struct pqw_column_data* d = c->d;
  int64_t p0 = a->offset + start;
  int has_nulls = leaf->conv == PQW_CV_NULL || (a->null_count != 0 && a->buffers[0] != NULL);
  if (has_nulls && !leaf->steps[0].nullable) {
    for (int64_t k = 0; k < n; ++k) {
      if (leaf->conv == PQW_CV_NULL || !sl_bit_get(a->buffers[0], p0 + k)) {
        c->row += k;
        return null_error(c, error);
      }
    }
    has_nulls = 0;
  }
  if (leaf->max_def > 0) {
    if (sl_buffer_reserve(&d->def, n * 2) != 0) return oom(error);
    int16_t* def = (int16_t*)(void*)(d->def.data + d->def.size);
    if (!has_nulls) {
      for (int64_t k = 0; k < n; ++k) def[k] = 1;
    } else if (leaf->conv == PQW_CV_NULL) {
      memset(def, 0, (size_t)n * 2);
    } else {
      const uint8_t* bits = a->buffers[0];
      for (int64_t k = 0; k < n; ++k) def[k] = (int16_t)sl_bit_get(bits, p0 + k);
    }
    d->def.size += n * 2;
  }
  d->n_levels += n;
  if (leaf->conv == PQW_CV_NULL) return 0;
  if (!has_nulls && allow_view) {
    // The Arrow buffer already holds the physical values: no copy.
    int64_t w = 0;
    switch (leaf->conv) {
      case PQW_CV_I32: case PQW_CV_F32: w = 4; break;
      case PQW_CV_I64: case PQW_CV_F64: w = 8; break;
      case PQW_CV_FLBA: w = leaf->type_length; break;
      default: break;
    }
    if (w > 0 && a->n_buffers > 1 && a->buffers[1] != NULL) {
      d->vdata = (const uint8_t*)a->buffers[1] + p0 * w;
      d->n_values += n;
      return 0;
    }
  }
  if (!has_nulls) return add_position(c, p0, n, error);
  const uint8_t* bits = a->buffers[0];
  int64_t k = 0;
  while (k < n) {
    while (k < n && !sl_bit_get(bits, p0 + k)) k++;
    int64_t s = k;
    while (k < n && sl_bit_get(bits, p0 + k)) k++;
    if (k > s) SL_RETURN_NOT_OK(add_position(c, p0 + s, k - s, error));
  }
  return 0;
}

/// After the first of several slices of a flat leaf: grows the buffers to
/// hold all `total_rows` at the first `rows`' rate (at most a level and a
/// value per row, so never far above what they will hold). A partitioned write's row group
/// is hundreds of small slices, and growing by doubling copied the buffers
/// and mapped fresh pages at every step (a third of its page faults).
/// base: the buffers' sizes before the first slice (rows folded before).
static int size_for_all(struct pqw_column_data* d, const int64_t base[3], int64_t rows,
                        int64_t total_rows, struct sluice_error* error) {
  if (rows <= 0 || total_rows <= rows) return 0;
  struct sl_buffer* grown[3] = {&d->def, &d->rep, &d->values};
  for (int k = 0; k < 3; ++k) {
    int64_t per_row = (grown[k]->size - base[k] + rows - 1) / rows;
    if (per_row > 0 && per_row <= (INT64_MAX - base[k]) / total_rows &&
        sl_buffer_grow_to(grown[k], base[k] + per_row * total_rows) != 0)
      return oom(error);
  }
  return 0;
}

/// Appends the levels and values of the slices to what `d` holds.
/// allow_view: `d` is empty and this is its one slice (see fill_flat).
static int fill_append(struct pqw_column_data* d, const struct pqw_leaf* leaf,
                       const struct pqw_slice* slices, int64_t n_slices, int allow_view,
                       struct sluice_error* error) {
  struct walk_ctx c = {leaf, d, 0};
  int64_t total_rows = 0;
  for (int64_t i = 0; i < n_slices; ++i) total_rows += slices[i].n_rows;
  const int64_t base[3] = {d->def.size, d->rep.size, d->values.size};
  for (int64_t i = 0; i < n_slices; ++i) {
    const struct pqw_slice* sl = &slices[i];
    if (i == 1 && leaf->n_steps == 1 && !leaf->is_dict)  // flat: at most a value per row
      SL_RETURN_NOT_OK(size_for_all(d, base, slices[0].n_rows, total_rows, error));
    if (leaf->column >= sl->batch->n_children)
      return sl_error_set(error, EINVAL, "parquet writer: batch has %lld columns, schema more",
                          (long long)sl->batch->n_children);
    const struct ArrowArray* col = sl->batch->children[leaf->column];
    const struct ArrowArray* la = leaf_array(leaf, col);
    if (la == NULL)
      return sl_error_set(error, EINVAL, "parquet writer: column '%s': array does not match "
                          "the schema", leaf->name);
    int64_t start = sl->batch->offset + sl->row;
    c.row = sl->input_row;
    if (leaf->n_steps == 1 && !leaf->is_dict) {
      SL_RETURN_NOT_OK(fill_flat(&c, col, start, sl->n_rows, allow_view, error));
    } else {
      for (int64_t r = 0; r < sl->n_rows; ++r) {
        c.row = sl->input_row + r;
        SL_RETURN_NOT_OK(walk(&c, 0, col, start + r, 0, 0, error));
      }
    }
    SL_RETURN_NOT_OK(convert_runs(leaf, la, d, error));
    d->n_rows += sl->n_rows;
  }
  d->null_count = d->n_levels - d->n_values;
  return 0;
}

static int is_byte_array(const struct pqw_leaf* leaf) {
  return leaf->conv == PQW_CV_BYTES32 || leaf->conv == PQW_CV_BYTES64;
}

static void swap_buffers(struct sl_buffer* a, struct sl_buffer* b) {
  struct sl_buffer t = *a;
  *a = *b;
  *b = t;
}

/// Moves the rows folded into `a` to the empty `d`: buffers swapped (no
/// copy), byte-array offsets made pointers into a->bytes.
static void take_folded(struct pqw_column_data* d, const struct pqw_leaf* leaf,
                        struct pqw_acc* a) {
  struct pqw_column_data* f = &a->data;
  swap_buffers(&d->def, &f->def);
  swap_buffers(&d->rep, &f->rep);
  swap_buffers(&d->values, &f->values);
  swap_buffers(&d->seed, &f->seed);
  d->n_levels = f->n_levels;
  d->n_values = f->n_values;
  d->n_rows = f->n_rows;
  d->n_seed = f->n_seed;
  d->seeded = f->seeded;
  f->def.size = f->rep.size = f->values.size = f->seed.size = 0;
  f->n_levels = f->n_values = f->n_rows = f->n_seed = f->null_count = 0;
  f->seeded = 0;
  if (!is_byte_array(leaf)) return;
  // (No bytes stored when every value is empty: their pointers must not be NULL.)
  static const uint8_t k_none[1] = {0};
  const uint8_t* base = a->bytes.data != NULL ? a->bytes.data : k_none;
  struct sl_buffer* rebased[2] = {&d->values, &d->seed};
  for (int k = 0; k < 2; ++k) {
    struct pqw_ba* v = (struct pqw_ba*)(void*)rebased[k]->data;
    int64_t n = rebased[k]->size / (int64_t)sizeof *v;
    for (int64_t i = 0; i < n; ++i) v[i].ptr = base + (uintptr_t)v[i].ptr;
  }
}

int sl_pqw_column_data_fill(struct pqw_column_data* d, const struct pqw_leaf* leaf,
                         struct pqw_acc* acc, const struct pqw_slice* slices, int64_t n_slices,
                         struct sluice_error* error) {
  d->def.size = d->rep.size = d->values.size = d->runs.size = d->seed.size = 0;
  d->n_seed = 0;
  d->seeded = 0;
  d->n_levels = d->n_values = d->null_count = d->n_rows = 0;
  d->vdata = NULL;
  if (acc != NULL && acc->data.n_rows > 0) take_folded(d, leaf, acc);
  SL_RETURN_NOT_OK(fill_append(d, leaf, slices, n_slices, n_slices == 1 && d->n_rows == 0, error));
  if (d->vdata == NULL) d->vdata = d->values.data;
  return 0;
}

/* ---- Folded rows ------------------------------------------------------------ */

void sl_pqw_acc_init(struct pqw_acc* a, const struct sluice_allocator* alloc) {
  sl_pqw_column_data_init(&a->data, alloc);
  sl_buffer_init(&a->bytes, alloc);
  sl_buffer_init(&a->distinct, alloc);
  sl_buffer_init(&a->table, alloc);
}

void sl_pqw_acc_free(struct pqw_acc* a) {
  sl_pqw_column_data_free(&a->data);
  a->data.n_levels = a->data.n_values = a->data.n_rows = a->data.n_seed = 0;
  a->data.null_count = 0;
  a->data.seeded = 0;
  sl_buffer_reset(&a->bytes);
  sl_buffer_reset(&a->distinct);
  sl_buffer_reset(&a->table);
}

/// Doubles the hash table over the values stored (from 1024 slots).
static int acc_table_grow(struct pqw_acc* a, struct sluice_error* error) {
  int64_t slots = a->table.size > 0 ? a->table.size / 4 * 2 : 1024;
  struct sl_buffer t;
  sl_buffer_init(&t, a->table.alloc);
  if (sl_buffer_append_zeros(&t, slots * 4) != 0) return oom(error);
  uint32_t* table = (uint32_t*)(void*)t.data;
  const struct pqw_ba* e = (const struct pqw_ba*)(const void*)a->distinct.data;
  int64_t n = a->distinct.size / (int64_t)sizeof *e;
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* bytes = e[i].len > 0 ? a->bytes.data + (uintptr_t)e[i].ptr : NULL;
    uint64_t slot = XXH3_64bits(bytes, (size_t)e[i].len) & (uint64_t)(slots - 1);
    while (table[slot] != 0) slot = (slot + 1) & (uint64_t)(slots - 1);
    table[slot] = (uint32_t)(i + 1);
  }
  sl_buffer_reset(&a->table);
  a->table = t;
  return 0;
}

/// Copies the bytes `v` points to into a->bytes and makes v->ptr their
/// offset there; `once`: bytes already stored are not stored again.
static int acc_own(struct pqw_acc* a, struct pqw_ba* v, int once, struct sluice_error* error) {
  uint32_t* slot_at = NULL;
  int64_t n = a->distinct.size / (int64_t)sizeof(struct pqw_ba);
  if (once && n < (int64_t)UINT32_MAX - 1) {
    if ((n + 1) * 2 > a->table.size / 4) SL_RETURN_NOT_OK(acc_table_grow(a, error));
    uint64_t mask = (uint64_t)(a->table.size / 4 - 1);
    uint32_t* table = (uint32_t*)(void*)a->table.data;
    const struct pqw_ba* e = (const struct pqw_ba*)(const void*)a->distinct.data;
    uint64_t slot = XXH3_64bits(v->ptr, (size_t)v->len) & mask;
    for (; table[slot] != 0; slot = (slot + 1) & mask) {
      const struct pqw_ba* x = &e[table[slot] - 1];
      if (x->len == v->len &&
          (v->len == 0 || memcmp(a->bytes.data + (uintptr_t)x->ptr, v->ptr, (size_t)v->len) == 0)) {
        v->ptr = x->ptr;
        return 0;
      }
    }
    slot_at = &table[slot];
  }
  struct pqw_ba stored = {(const uint8_t*)(uintptr_t)a->bytes.size, v->len};
  if (v->len > 0 && sl_buffer_append(&a->bytes, v->ptr, v->len) != 0) return oom(error);
  if (slot_at != NULL) {
    if (sl_buffer_append(&a->distinct, &stored, sizeof stored) != 0) return oom(error);
    *slot_at = (uint32_t)(n + 1);
  }
  *v = stored;
  return 0;
}

int sl_pqw_acc_fold(struct pqw_acc* a, const struct pqw_leaf* leaf,
                    const struct pqw_slice* slices, int64_t n_slices, struct sluice_error* error) {
  struct pqw_column_data* d = &a->data;
  int64_t v0 = d->values.size / (int64_t)sizeof(struct pqw_ba);
  int seeded = d->seeded;
  // No views of the batches' buffers: fixed-width values are copied.
  SL_RETURN_NOT_OK(fill_append(d, leaf, slices, n_slices, 0, error));
  if (!is_byte_array(leaf)) return 0;
  struct pqw_ba* v = (struct pqw_ba*)(void*)d->values.data;
  int64_t n = d->values.size / (int64_t)sizeof *v;
  for (int64_t i = v0; i < n; ++i) SL_RETURN_NOT_OK(acc_own(a, &v[i], leaf->is_dict, error));
  if (!seeded && d->seeded) {  // the seed (a dictionary's values) came in these slices
    v = (struct pqw_ba*)(void*)d->seed.data;
    n = d->seed.size / (int64_t)sizeof *v;
    for (int64_t i = 0; i < n; ++i) SL_RETURN_NOT_OK(acc_own(a, &v[i], 1, error));
  }
  return 0;
}

int64_t sl_pqw_dict_bytes(const struct pqw_leaf* leaf, const struct ArrowArray* batch,
                          const void** last) {
  if (!leaf->is_dict || leaf->column >= batch->n_children) return 0;
  const struct ArrowArray* la = leaf_array(leaf, batch->children[leaf->column]);
  const struct ArrowArray* dict = la != NULL ? la->dictionary : NULL;
  if (dict == NULL || dict->n_buffers < 2 || dict->buffers[1] == NULL ||
      dict->buffers[1] == *last)
    return 0;
  *last = dict->buffers[1];
  int64_t n = dict->length, p = dict->offset;
  if (is_byte_array(leaf) && dict->n_buffers > 2) {
    int64_t b, e;
    if (leaf->conv == PQW_CV_BYTES32) {
      b = ((const int32_t*)dict->buffers[1])[p];
      e = ((const int32_t*)dict->buffers[1])[p + n];
    } else {
      b = ((const int64_t*)dict->buffers[1])[p];
      e = ((const int64_t*)dict->buffers[1])[p + n];
    }
    return n * 8 + (e > b ? e - b : 0);
  }
  int64_t w = leaf->type == PQ_FIXED_LEN_BYTE_ARRAY ? leaf->type_length : 8;
  return n * (w > 0 ? w : 8);
}
