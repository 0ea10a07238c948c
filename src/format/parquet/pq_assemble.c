// Record assembly over levels. Every node knows (pq_schema.h) at which level
// entries it has a slot (rep <= node.rep and def >= node.anc_def) and when
// that slot is non-null (def >= node.def); a list additionally counts an
// element at every entry with rep <= node.rep + 1 and def >= node.elem_def.
// Each node walks the levels of its first leaf once; the counts are checked
// against the children so that inconsistent files give an error.
#include "pq_assemble.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_error.h"
#include "core/sl_hash.h"
#include "core/sl_read.h"

struct asm_ctx {
  struct pq_leaf_data* leaves;
  const uint8_t* need;  ///< per leaf: decoded (NULL = every leaf under the field)
  const struct sluice_allocator* alloc;
  const char* file;
  int64_t rg;
  int64_t first_row;            ///< the batch's first row in the row group
  const struct pq_field* top;   ///< the column assembled
  struct sluice_error* error;
};

static int asm_error(struct asm_ctx* c, const struct pq_field* f, const char* why) {
  return sl_error_set(c->error, EILSEQ, "%s: row group %" PRId64 ", column %s: %s", c->file,
                      c->rg, f->name, why);
}

static int oom(struct asm_ctx* c) {
  return sl_error_set(c->error, ENOMEM, "%s: row group %" PRId64 ": out of memory assembling its columns",
                      c->file, c->rg);
}

/// Moves an sl_buffer into buffer i of the array (a non-NULL buffer even when
/// empty, since some consumers insist on one).
static int give_buffer(struct asm_ctx* c, struct ArrowArray* a, int64_t i, struct sl_buffer* b) {
  if (b->data == NULL && sl_buffer_reserve(b, 1) != 0) return oom(c);
  // Defined padding up to the next 64 bytes, as Arrow pads buffers; not the
  // whole capacity: a binary column's values buffer is reserved from the
  // chunk's uncompressed size, rounded to a power of two, and zeroing its
  // unused part made every page of it resident (a string table held twice
  // its bytes, and the zeroing took a tenth of its load).
  int64_t pad = ((b->size + 63) & ~(int64_t)63) - b->size;
  if (pad > b->capacity - b->size) pad = b->capacity - b->size;
  memset(b->data + b->size, 0, (size_t)pad);
  sl_array_take_buffer(a, i, b);
  return 0;
}

static int build(struct asm_ctx* c, const struct pq_field* f, int64_t expected,
                 struct ArrowArray* out);

int sl_pq_needs_field(const uint8_t* need, const struct pq_field* f) {
  for (int64_t l = f->first_leaf; need != NULL && l < f->first_leaf + f->n_leaves; ++l)
    if (need[l]) return 1;
  return need == NULL;
}

/// Whether some leaf under `f` was decoded.
static int decoded(const struct asm_ctx* c, const struct pq_field* f) {
  return sl_pq_needs_field(c->need, f);
}

/// The leaf whose levels describe `f`: its first decoded one (NULL = none).
static const struct pq_field* levels_leaf(const struct asm_ctx* c, const struct pq_field* f) {
  while (f != NULL && f->kind != PQ_FIELD_LEAF) {
    const struct pq_field* next = NULL;
    for (int64_t i = 0; i < f->n_children && next == NULL; ++i)
      if (decoded(c, &f->children[i])) next = &f->children[i];
    f = next;
  }
  return f;
}

/// A struct field left undecoded (the scan keeps only others): `n` nulls
/// of type null, as sl_format_reader.prunes_fields promises.
static int undecoded_field(struct asm_ctx* c, int64_t n, struct ArrowArray* out) {
  SL_RETURN_NOT_OK(sl_array_init(out, c->alloc, 0, 0, c->error));
  out->length = n;
  out->null_count = n;
  return 0;
}

/// int32 offsets -> int64 (large_string / large_binary).
static int widen_offsets(struct asm_ctx* c, struct pq_leaf_data* d) {
  int64_t n = d->n_slots + 1;
  struct sl_buffer wide;
  sl_buffer_init(&wide, c->alloc);
  if (sl_buffer_reserve(&wide, n * 8) != 0) return oom(c);
  const int32_t* from = (const int32_t*)(const void*)d->offsets.data;
  int64_t* to = (int64_t*)(void*)wide.data;
  for (int64_t i = 0; i < n; ++i) to[i] = from[i];
  wide.size = n * 8;
  sl_buffer_reset(&d->offsets);
  d->offsets = wide;
  return 0;
}

static int index_width(const struct pq_field* f) {
  char t = f->dict_index_format[0];
  return (t == 'c' || t == 'C') ? 1 : (t == 's' || t == 'S') ? 2 : (t == 'i' || t == 'I') ? 4 : 8;
}

static int64_t index_max(int width) {
  return width == 1 ? 127 : width == 2 ? 32767 : width == 4 ? INT32_MAX : INT64_MAX;
}

/// The dictionary array of a leaf: d's validity, `idx` (n_values indices)
/// and the dictionary's `nd` values (`offsets`, `data`) moved into `out`.
/// The caller resets the buffers (moved ones are left empty).
static int dictionary_array(struct asm_ctx* c, struct pq_leaf_data* d, struct sl_buffer* idx,
                            int64_t n_values, struct sl_buffer* offsets, struct sl_buffer* data,
                            int64_t nd, struct ArrowArray* out) {
  if (nd == 0 && n_values > d->null_count) {
    // A required leaf whose parents are all null has non-null slots but
    // no value, and so no dictionary: its indices (0) point past an empty
    // one, which Arrow's validation and sluice's IPC writer refuse
    // (pyarrow's reader builds that array too). One empty value puts them
    // in range.
    const int32_t empty[2] = {0, 0};
    offsets->size = 0;
    if (sl_buffer_append(offsets, empty, sizeof empty) != 0) return oom(c);
    memset(idx->data, 0, (size_t)idx->size);
    nd = 1;
  }
  int rc = sl_array_init(out, c->alloc, 2, 0, c->error);
  if (rc != 0) return rc;
  out->length = n_values;
  out->null_count = d->null_count;
  if (d->null_count > 0 && d->validity.data) rc = give_buffer(c, out, 0, &d->validity);
  if (rc == 0) rc = give_buffer(c, out, 1, idx);
  if (rc == 0) rc = sl_array_alloc_dictionary(out, c->error);
  if (rc == 0) rc = sl_array_init(out->dictionary, c->alloc, 3, 0, c->error);
  if (rc == 0) {
    out->dictionary->length = nd;
    rc = give_buffer(c, out->dictionary, 1, offsets);
    if (rc == 0) rc = give_buffer(c, out->dictionary, 2, data);
  }
  if (rc != 0) out->release(out);
  return rc;
}

/// dictionary<index, string|binary> of a keyed leaf: the chunk's dictionary
/// as it is, the keys narrowed or widened to the index type.
static int pass_dictionary(struct asm_ctx* c, const struct pq_field* f, struct pq_leaf_data* d,
                           struct ArrowArray* out) {
  int64_t n = d->n_slots;
  int iw = index_width(f);
  struct sl_buffer idx;
  sl_buffer_init(&idx, c->alloc);
  if (iw == 4) {
    idx = d->keys;  // keys < n_dict <= INT32_MAX + 1: as int32 already
    sl_buffer_init(&d->keys, c->alloc);
  } else {
    if (sl_buffer_reserve(&idx, n * iw + 8) != 0) return oom(c);
    const uint32_t* keys = (const uint32_t*)(const void*)d->keys.data;
    // One loop per width, so that each vectorises.
    if (iw == 1) {
      int8_t* to = (int8_t*)(void*)idx.data;
      for (int64_t i = 0; i < n; ++i) to[i] = (int8_t)keys[i];
    } else if (iw == 2) {
      int16_t* to = (int16_t*)(void*)idx.data;
      for (int64_t i = 0; i < n; ++i) to[i] = (int16_t)keys[i];
    } else {
      int64_t* to = (int64_t*)(void*)idx.data;
      for (int64_t i = 0; i < n; ++i) to[i] = keys[i];
    }
    idx.size = n * iw;
  }
  int rc = dictionary_array(c, d, &idx, n, &d->offsets, &d->values, d->n_dict, out);
  sl_buffer_reset(&idx);
  return rc;
}

/// dictionary<index, string|binary>: the chunk's own dictionary when every
/// page used it (pass_dictionary), else the decoded values dictionary-encoded
/// in order of first appearance (what Arrow C++ gives for such a chunk).
static int build_dictionary(struct asm_ctx* c, const struct pq_field* f, struct pq_leaf_data* d,
                            struct ArrowArray* out) {
  int iw = index_width(f);
  int64_t max_index = index_max(iw);
  if (d->keyed && d->n_dict - 1 <= max_index) return pass_dictionary(c, f, d, out);
  int rc = sl_pq_leaf_unkey(d);
  if (rc == EOVERFLOW)
    return asm_error(c, f, "more than 2 GiB of binary data in one column chunk of a dictionary "
                     "column (not supported)");
  if (rc != 0) return oom(c);
  int64_t n = d->n_slots;
  const int32_t* offs = (const int32_t*)(const void*)d->offsets.data;
  const uint8_t* data = d->values.data;
  const uint8_t* bits = d->null_count > 0 ? d->validity.data : NULL;
  int64_t slots = 64;
  while (slots < 2 * n) slots *= 2;
  struct sl_buffer table, idx, doffs, ddata;
  sl_buffer_init(&table, c->alloc);
  sl_buffer_init(&idx, c->alloc);
  sl_buffer_init(&doffs, c->alloc);
  sl_buffer_init(&ddata, c->alloc);
  rc = 0;
  if (sl_buffer_reserve(&table, slots * 8) != 0 || sl_buffer_reserve(&idx, n * iw + 8) != 0 ||
      sl_buffer_reserve(&doffs, (n + 1) * 4) != 0 || sl_buffer_reserve(&ddata, d->values.size + 1) != 0)
    rc = oom(c);
  int64_t* tab = (int64_t*)(void*)table.data;  // slot -> value index + 1 (0 = empty)
  int32_t* dofs = (int32_t*)(void*)doffs.data;
  int64_t nd = 0;
  if (rc == 0) {
    memset(tab, 0, (size_t)(slots * 8));
    dofs[0] = 0;
  }
  for (int64_t i = 0; rc == 0 && i < n; ++i) {
    int64_t k = 0;
    if (!bits || (bits[i >> 3] >> (i & 7)) & 1) {
      const uint8_t* p = data + offs[i];
      int32_t len = offs[i + 1] - offs[i];
      uint64_t h = sl_hash_bytes(p, (size_t)len) & (uint64_t)(slots - 1);
      for (;;) {
        int64_t e = tab[h];
        if (e == 0) {
          if (nd > max_index) {
            rc = sl_error_set(c->error, EOVERFLOW, "%s: column %s: too many distinct values for "
                              "the dictionary index type", c->file, f->path);
            break;
          }
          memcpy(ddata.data + ddata.size, p, (size_t)len);
          ddata.size += len;
          dofs[nd + 1] = (int32_t)ddata.size;
          tab[h] = ++nd;
          k = nd - 1;
          break;
        }
        int32_t el = dofs[e] - dofs[e - 1];
        if (el == len && memcmp(ddata.data + dofs[e - 1], p, (size_t)len) == 0) {
          k = e - 1;
          break;
        }
        h = (h + 1) & (uint64_t)(slots - 1);
      }
    }
    if (iw == 1) { int8_t v = (int8_t)k; memcpy(idx.data + i, &v, 1); }
    else if (iw == 2) { int16_t v = (int16_t)k; memcpy(idx.data + 2 * i, &v, 2); }
    else if (iw == 4) { int32_t v = (int32_t)k; memcpy(idx.data + 4 * i, &v, 4); }
    else memcpy(idx.data + 8 * i, &k, 8);
  }
  idx.size = n * iw;
  doffs.size = (nd + 1) * 4;
  if (rc == 0) rc = dictionary_array(c, d, &idx, n, &doffs, &ddata, nd, out);
  sl_buffer_reset(&table);
  sl_buffer_reset(&idx);
  sl_buffer_reset(&doffs);
  sl_buffer_reset(&ddata);
  return rc;
}

static int build_leaf(struct asm_ctx* c, const struct pq_field* f, int64_t expected,
                      struct ArrowArray* out) {
  struct pq_leaf_data* d = &c->leaves[f->leaf];
  if (d->n_slots != expected) return asm_error(c, f, "leaf value count does not match its parent");
  if (f->conv == PQ_CONV_BINARY && f->dict) return build_dictionary(c, f, d, out);
  int nb = f->conv == PQ_CONV_NULL ? 0 : f->conv == PQ_CONV_BINARY ? 3 : 2;
  SL_RETURN_NOT_OK(sl_array_init(out, c->alloc, nb, 0, c->error));
  out->length = d->n_slots;
  if (f->conv == PQ_CONV_NULL) {
    out->null_count = d->n_slots;
    return 0;
  }
  out->null_count = d->null_count;
  int rc = 0;
  if (d->null_count > 0 && d->validity.data) rc = give_buffer(c, out, 0, &d->validity);
  if (rc == 0 && f->conv == PQ_CONV_BINARY) {
    // Wide leaves already have int64 offsets: large types as they are, and
    // the reader cuts the others into int32 batches.
    if (f->large && !d->wide) rc = widen_offsets(c, d);
    if (rc == 0) rc = give_buffer(c, out, 1, &d->offsets);
    if (rc == 0) rc = give_buffer(c, out, 2, &d->values);
  } else if (rc == 0) {
    rc = give_buffer(c, out, 1, &d->values);
  }
  if (rc != 0) out->release(out);
  return rc;
}

/// The row of the batch (counted from the row group's first) in which group
/// node f's slot k sits, for messages.
static int64_t slot_row(const struct asm_ctx* c, const struct pq_field* f, int64_t k) {
  const struct pq_field* lf = levels_leaf(c, f);
  if (lf == NULL) return -1;
  const struct pq_leaf_data* d = &c->leaves[lf->leaf];
  const int16_t* def = lf->def > 0 ? (const int16_t*)(const void*)d->def.data : NULL;
  const int16_t* rep = lf->rep > 0 ? (const int16_t*)(const void*)d->rep.data : NULL;
  int64_t row = -1, slots = 0;
  for (int64_t i = 0; i < d->n_levels; ++i) {
    int16_t dl = def ? def[i] : 0, rl = rep ? rep[i] : 0;
    if (rl == 0) ++row;
    if (rl <= f->rep && dl >= f->anc_def && slots++ == k) break;
  }
  return c->first_row + row;
}

/// fixed_size_list<N>: every non-null list must hold N values; a null one,
/// or one under a null parent, holds none in Parquet (`bits` marks the
/// present ones, NULL = all).
static int fsl_check(struct asm_ctx* c, const struct pq_field* f, const int32_t* offs,
                     const uint8_t* bits, int64_t slots) {
  int64_t n = f->fixed_size;
  for (int64_t k = 0; k < slots; ++k) {
    int64_t len = offs[k + 1] - offs[k];
    int valid = bits == NULL || sl_bit_get(bits, k);
    if (len == n || (len == 0 && !valid)) continue;
    int nested = f != c->top;
    return sl_error_set(c->error, EILSEQ, "%s: row group %" PRId64 ", column %s: row %" PRId64
                        ": a list of %" PRId64 " value%s where the ARROW:schema says "
                        "fixed_size_list of %" PRId64 "%s%s%s", c->file, c->rg, c->top->name,
                        slot_row(c, f, k), len, len == 1 ? "" : "s", n,
                        nested ? " (field '" : "", nested ? f->name : "", nested ? "')" : "");
  }
  return 0;
}

/// Entry k * width + j of a spread column: block k comes from the source
/// (its next `width` entries) when `present` has bit k, else it is a filler.
static int block_present(const uint8_t* present, int64_t k) {
  return present == NULL || sl_bit_get(present, k);
}

/// Bitmap spread (dst zeroed): fillers get `fill`; *zeros counts the 0 bits.
static void spread_bits(const uint8_t* src, uint8_t* dst, const uint8_t* present, int64_t blocks,
                        int64_t width, int fill, int64_t* zeros) {
  int64_t s = 0, z = 0;
  for (int64_t k = 0; k < blocks; ++k) {
    int here = block_present(present, k);
    for (int64_t j = 0; j < width; ++j) {
      int64_t t = k * width + j;
      int v = here ? (src == NULL || sl_bit_get(src, s + j)) : fill;
      if (v) dst[t >> 3] |= (uint8_t)(1u << (t & 7));
      else ++z;
    }
    if (here) s += width;
  }
  *zeros = z;
}

/// Offsets spread: a filler is empty (repeats the offset before it).
static void put_offset(uint8_t* dst, int64_t i, int64_t v, int large) {
  if (large) {
    memcpy(dst + i * 8, &v, 8);
  } else {
    int32_t v32 = (int32_t)v;  // one of the source's int32 offsets
    memcpy(dst + i * 4, &v32, 4);
  }
}

static void spread_offsets(const void* src, uint8_t* dst, int large, const uint8_t* present,
                           int64_t blocks, int64_t width) {
  int64_t s = 0, at = sl_offset_at(src, 0, large);
  put_offset(dst, 0, at, large);
  for (int64_t k = 0; k < blocks; ++k) {
    int here = block_present(present, k);
    for (int64_t j = 0; j < width; ++j) {
      if (here) at = sl_offset_at(src, s + j + 1, large);
      put_offset(dst, k * width + j + 1, at, large);
    }
    if (here) s += width;
  }
}

/// A zeroed buffer of `bytes` for the caller to fill and hand to an array
/// (give_buffer).
static int new_buffer(struct asm_ctx* c, struct sl_buffer* buf, int64_t bytes) {
  sl_buffer_init(buf, c->alloc);
  if (sl_buffer_reserve(buf, bytes + 1) != 0) return oom(c);
  memset(buf->data, 0, (size_t)buf->capacity);
  buf->size = bytes;
  return 0;
}

/// Values of `w` bytes (a fixed-width leaf's, a dictionary leaf's indices)
/// of the present blocks moved to k * width; fillers are zeros.
static int spread_fixed(struct asm_ctx* c, struct ArrowArray* a, const uint8_t* present,
                        int64_t blocks, int64_t width, int64_t w) {
  struct sl_buffer buf;
  int rc = new_buffer(c, &buf, blocks * width * w);
  if (rc != 0) return rc;
  const uint8_t* src = a->buffers[1];
  for (int64_t k = 0, s = 0; k < blocks; ++k) {
    if (!block_present(present, k)) continue;
    memcpy(buf.data + k * width * w, src + s * w, (size_t)(width * w));
    s += width;
  }
  rc = give_buffer(c, a, 1, &buf);
  sl_buffer_reset(&buf);
  return rc;
}

/// A dictionary whose indices gained valid fillers (index 0) but which has
/// no value: one empty value puts them in range (as dictionary_array does).
static int dictionary_with_one_value(struct asm_ctx* c, struct ArrowArray* dict) {
  if (dict == NULL || dict->length > 0) return 0;
  struct sl_buffer buf;
  int rc = new_buffer(c, &buf, 2 * sizeof(int32_t));  // offsets 0, 0 (values are never large)
  if (rc == 0) rc = give_buffer(c, dict, 1, &buf);
  sl_buffer_reset(&buf);
  if (rc == 0) dict->length = 1;
  return rc;
}

/// The child of a fixed_size_list whose lists are not all present: array
/// `a` (of field f) holds `width` entries for each block k < `blocks` whose
/// bit is set in `present` (a non-null list), none for the others (null
/// lists and those under a null parent, which Parquet stores without
/// values). Rewrites it so that block k's entries sit at k * width, the
/// others filled in: null, or valid zeros / empty values when f is required.
/// Nested children follow (a struct's with the same blocks, a fixed-size
/// list's with `width` times its size); a list's are left as they are, its
/// fillers being empty.
static int spread(struct asm_ctx* c, const struct pq_field* f, struct ArrowArray* a,
                  const uint8_t* present, int64_t blocks, int64_t width, int depth) {
  static const char too_many_entries[] =
      "more than 2^31 fixed_size_list entries (null lists filled in) in one row group";
  if (depth > PQ_MAX_DEPTH) return asm_error(c, f, "nested too deep");
  if (width > 0 && blocks > INT32_MAX / width) return asm_error(c, f, too_many_entries);
  int64_t total = blocks * width;
  if (f->kind == PQ_FIELD_LEAF && f->conv == PQ_CONV_NULL) {
    a->length = a->null_count = total;
    return 0;
  }
  struct sl_buffer buf;
  int rc = 0;
  if (f->nullable || a->null_count > 0) {
    const uint8_t* old = a->null_count > 0 ? a->buffers[0] : NULL;
    int64_t nulls = 0;
    SL_RETURN_NOT_OK(new_buffer(c, &buf, (total + 7) / 8));
    spread_bits(old, buf.data, present, blocks, width, !f->nullable, &nulls);
    if (nulls > 0) rc = give_buffer(c, a, 0, &buf);
    else sl_array_set_buffer_owned(a, 0, NULL, 0);
    sl_buffer_reset(&buf);
    a->null_count = nulls;
    if (rc != 0) return rc;
  }
  int large = f->large;
  if (f->kind == PQ_FIELD_STRUCT) {
    for (int64_t i = 0; rc == 0 && i < f->n_children; ++i)
      rc = spread(c, &f->children[i], a->children[i], present, blocks, width, depth + 1);
  } else if (f->kind != PQ_FIELD_LEAF && f->fixed_size > 0) {
    int64_t n = f->fixed_size;
    if (width > INT32_MAX / n) return asm_error(c, f, too_many_entries);
    rc = spread(c, &f->children[0], a->children[0], present, blocks, width * n, depth + 1);
  } else if (f->kind == PQ_FIELD_LEAF && f->dict) {
    // Indices move as fixed-width values. A filler is null unless the field
    // is required; then it is index 0, which must name a value.
    rc = spread_fixed(c, a, present, blocks, width, index_width(f));
    if (rc == 0 && !f->nullable && total > 0) rc = dictionary_with_one_value(c, a->dictionary);
  } else if (f->kind != PQ_FIELD_LEAF || f->conv == PQ_CONV_BINARY) {
    rc = new_buffer(c, &buf, (total + 1) * (large ? 8 : 4));
    if (rc != 0) return rc;
    spread_offsets(a->buffers[1], buf.data, large, present, blocks, width);
    rc = give_buffer(c, a, 1, &buf);
    sl_buffer_reset(&buf);
  } else if (f->conv == PQ_CONV_BOOL) {
    int64_t zeros;
    rc = new_buffer(c, &buf, (total + 7) / 8);
    if (rc != 0) return rc;
    spread_bits(a->buffers[1], buf.data, present, blocks, width, 0, &zeros);
    rc = give_buffer(c, a, 1, &buf);
    sl_buffer_reset(&buf);
  } else {
    rc = spread_fixed(c, a, present, blocks, width, f->out_width);
  }
  if (rc == 0) a->length = total;
  return rc;
}

/// Slots, validity and (lists) offsets of a group node.
static int build_group(struct asm_ctx* c, const struct pq_field* f, int64_t expected,
                       struct ArrowArray* out) {
  const struct pq_field* leaf_first = levels_leaf(c, f);
  if (leaf_first == NULL) return asm_error(c, f, "no column under it was read");
  struct pq_leaf_data* d = &c->leaves[leaf_first->leaf];
  int64_t n = d->n_levels;
  const int16_t* def = leaf_first->def > 0 ? (const int16_t*)(const void*)d->def.data : NULL;
  const int16_t* rep = leaf_first->rep > 0 ? (const int16_t*)(const void*)d->rep.data : NULL;
  int is_list = f->kind != PQ_FIELD_STRUCT;
  int16_t frep = f->rep, anc = f->anc_def, fdef = f->def, edef = f->elem_def;
  struct sl_buffer validity, offsets;
  sl_buffer_init(&validity, c->alloc);
  sl_buffer_init(&offsets, c->alloc);
  int rc = 0;
  int64_t cap = expected;
  // A fixed-size list needs to know its absent slots even when it is
  // required: under a null struct it has no values, and gets fillers.
  int track = f->nullable || (is_list && f->fixed_size > 0);
  if (track && fdef > 0 && sl_buffer_reserve(&validity, (cap + 7) / 8) != 0) rc = ENOMEM;
  int large = is_list && f->large;
  if (rc == 0 && is_list && sl_buffer_reserve(&offsets, (cap + 1) * (large ? 8 : 4)) != 0) rc = ENOMEM;
  if (rc != 0) {
    sl_buffer_reset(&validity);
    return oom(c);
  }
  if (validity.data) memset(validity.data, 0, (size_t)validity.capacity);
  uint8_t* bits = validity.data;
  int32_t* offs = large ? NULL : (int32_t*)(void*)offsets.data;
  int64_t* offs64 = large ? (int64_t*)(void*)offsets.data : NULL;
  int64_t slots = 0, nulls = 0, elems = 0;
  for (int64_t i = 0; i < n; ++i) {
    int16_t dl = def ? def[i] : 0, rl = rep ? rep[i] : 0;
    if (rl <= frep && dl >= anc) {
      if (slots >= expected) {
        rc = asm_error(c, f, "more slots than the parent has values");
        break;
      }
      if (dl >= fdef) {
        if (bits) bits[slots >> 3] |= (uint8_t)(1u << (slots & 7));
      } else {
        ++nulls;
      }
      if (offs) {
        if (elems > INT32_MAX) {
          rc = asm_error(c, f, "more than 2^31 list elements in one row group");
          break;
        }
        offs[slots] = (int32_t)elems;
      } else if (offs64) {
        offs64[slots] = elems;
      }
      ++slots;
    }
    if (is_list && rl <= frep + 1 && dl >= edef) ++elems;
  }
  if (rc == 0 && slots != expected) rc = asm_error(c, f, "fewer slots than the parent has values");
  if (rc == 0 && offs) {
    if (elems > INT32_MAX) rc = asm_error(c, f, "more than 2^31 list elements in one row group");
    else offs[slots] = (int32_t)elems;
    offsets.size = (slots + 1) * 4;
  } else if (rc == 0 && offs64) {
    offs64[slots] = elems;
    offsets.size = (slots + 1) * 8;
  }
  validity.size = (slots + 7) / 8;
  if (!f->nullable) nulls = 0;
  int fixed = is_list && f->fixed_size > 0;
  if (rc == 0 && fixed) rc = fsl_check(c, f, offs, bits, slots);
  int64_t nchild = f->kind == PQ_FIELD_STRUCT ? f->n_children : 1;
  if (rc == 0) rc = sl_array_init(out, c->alloc, is_list && !fixed ? 2 : 1, nchild, c->error);
  if (rc == 0) {
    out->length = slots;
    out->null_count = nulls;
    if (nulls > 0 && bits) rc = give_buffer(c, out, 0, &validity);
    if (rc == 0 && is_list && !fixed) rc = give_buffer(c, out, 1, &offsets);
    for (int64_t i = 0; rc == 0 && i < nchild; ++i) {
      const struct pq_field* child = &f->children[i];
      int64_t n = is_list ? elems : slots;
      rc = decoded(c, child) ? build(c, child, n, out->children[i])
                             : undecoded_field(c, n, out->children[i]);
    }
    // (bits: now out's validity buffer, or still `validity`)
    if (rc == 0 && fixed && elems != slots * f->fixed_size)
      rc = spread(c, &f->children[0], out->children[0], bits, slots, f->fixed_size, 0);
    if (rc != 0) out->release(out);
  }
  sl_buffer_reset(&validity);
  sl_buffer_reset(&offsets);
  return rc;
}

static int build(struct asm_ctx* c, const struct pq_field* f, int64_t expected,
                 struct ArrowArray* out) {
  if (f->kind == PQ_FIELD_LEAF) return build_leaf(c, f, expected, out);
  return build_group(c, f, expected, out);
}

int sl_pq_assemble_field(const struct pq_field* f, struct pq_leaf_data* leaves,
                         const uint8_t* need, int64_t rows, const struct sluice_allocator* alloc,
                         const char* file, int64_t rg, int64_t first_row, struct ArrowArray* out,
                         struct sluice_error* error) {
  struct asm_ctx c = {.leaves = leaves, .need = need, .alloc = alloc, .file = file, .rg = rg,
                      .first_row = first_row, .top = f, .error = error};
  return build(&c, f, rows, out);
}
