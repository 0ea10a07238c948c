// Dictionary batches: decoding, replacement, deltas (appended in place, or
// concatenated for values holding dictionaries), and sharing one decoded
// dictionary among all batches through view trees.
#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_error.h"
#include "core/sl_read.h"
#include "ipc_fbs.h"
#include "ipc_internal.h"

int sl_ipc_dict_memo_init(struct ipc_dict_memo* memo, const struct ipc_schema* schema,
                       struct sluice_error* error) {
  memo->n = schema->n_dicts;
  memo->values = NULL;
  memo->grow = NULL;
  if (memo->n == 0) return 0;
  memo->values = sl_calloc(schema->alloc, (size_t)memo->n, sizeof *memo->values);
  memo->grow = sl_calloc(schema->alloc, (size_t)memo->n, sizeof *memo->grow);
  if (memo->values == NULL || memo->grow == NULL) {
    sl_ipc_dict_memo_reset(memo, schema->alloc);
    return sl_error_set(error, ENOMEM, "out of memory (dictionary table)");
  }
  return 0;
}

static void grow_reset(struct ipc_dict_grow* g, const struct sluice_allocator* alloc) {
  for (int i = 0; i < 3; ++i) sl_ref_release(g->buf[i].owner);
  for (int64_t i = 0; i < g->n_children; ++i) grow_reset(&g->children[i], alloc);
  sl_free(alloc, g->children, (size_t)g->n_children * sizeof *g->children);
  memset(g, 0, sizeof *g);
}

void sl_ipc_dict_memo_reset(struct ipc_dict_memo* memo, const struct sluice_allocator* alloc) {
  if (memo->values != NULL) {
    for (int64_t i = 0; i < memo->n; ++i)
      if (memo->values[i] != NULL) sl_ref_release(&memo->values[i]->ref);
    sl_free(alloc, memo->values, (size_t)memo->n * sizeof *memo->values);
  }
  if (memo->grow != NULL) {
    for (int64_t i = 0; i < memo->n; ++i) grow_reset(&memo->grow[i], alloc);
    sl_free(alloc, memo->grow, (size_t)memo->n * sizeof *memo->grow);
  }
  memo->values = NULL;
  memo->grow = NULL;
  memo->n = 0;
}

static void dict_value_destroy(struct sl_ref* ref) {
  struct ipc_dict_value* v = (struct ipc_dict_value*)((char*)ref - offsetof(struct ipc_dict_value, ref));
  if (v->array.release != NULL) v->array.release(&v->array);
  sl_free(v->alloc, v, sizeof *v);
}

int sl_ipc_array_view(const struct ArrowArray* src, struct sl_ref* owner,
                   const struct sluice_allocator* alloc, struct ArrowArray* dst,
                   struct sluice_error* error) {
  SL_RETURN_NOT_OK(sl_array_init(dst, alloc, src->n_buffers, src->n_children, error));
  dst->length = src->length;
  dst->null_count = src->null_count;
  dst->offset = src->offset;
  for (int64_t i = 0; i < src->n_buffers; ++i)
    if (src->buffers[i] != NULL) sl_array_set_buffer_view(dst, i, src->buffers[i], owner);
  int rc = 0;
  for (int64_t i = 0; rc == 0 && i < src->n_children; ++i)
    rc = sl_ipc_array_view(src->children[i], owner, alloc, dst->children[i], error);
  if (rc == 0 && src->dictionary != NULL) {
    rc = sl_array_alloc_dictionary(dst, error);
    if (rc == 0) rc = sl_ipc_array_view(src->dictionary, owner, alloc, dst->dictionary, error);
  }
  if (rc != 0) dst->release(dst);
  return rc;
}

/* ---- Delta concatenation ------------------------------------------------- */

struct concat {
  const struct sluice_allocator* alloc;
  const struct ipc_where* where;
  struct sluice_error* error;
};

static int concat_oom(struct concat* c) {
  return sl_error_set(c->error, ENOMEM, "%s: offset %" PRId64 ": out of memory concatenating a "
                      "dictionary delta", c->where->name, c->where->offset);
}


/// Bits [a_start, a_start+a_len) of `a` then [b_start, ...) of `b` into a
/// new bitmap; a NULL source bitmap reads as all ones. *zeros (if not NULL)
/// receives the number of 0 bits written.
static int concat_bits(struct concat* c, const uint8_t* a, int64_t a_start, int64_t a_len,
                       const uint8_t* b, int64_t b_start, int64_t b_len, struct ArrowArray* out,
                       int64_t slot, int64_t* zeros) {
  int64_t ones = 0;
  size_t bytes = (size_t)((a_len + b_len + 7) / 8);
  uint8_t* dst = sl_alloc_buffer(c->alloc, bytes ? bytes : 1);
  if (dst == NULL) return concat_oom(c);
  memset(dst, 0, bytes ? bytes : 1);
  for (int64_t i = 0; i < a_len; ++i)
    if (a == NULL || sl_bit_get(a, a_start + i)) dst[i >> 3] |= (uint8_t)(1u << (i & 7)), ones++;
  for (int64_t i = 0; i < b_len; ++i) {
    int64_t j = a_len + i;
    if (b == NULL || sl_bit_get(b, b_start + i)) dst[j >> 3] |= (uint8_t)(1u << (j & 7)), ones++;
  }
  if (zeros != NULL) *zeros = a_len + b_len - ones;
  sl_array_set_buffer_owned(out, slot, dst, (int64_t)(bytes ? bytes : 1));
  return 0;
}

static int concat_bytes(struct concat* c, const uint8_t* a, size_t a_len, const uint8_t* b,
                        size_t b_len, struct ArrowArray* out, int64_t slot) {
  size_t n = a_len + b_len;
  uint8_t* dst = sl_alloc_buffer(c->alloc, n ? n : 1);
  if (dst == NULL) return concat_oom(c);
  if (a_len) memcpy(dst, a, a_len);
  if (b_len) memcpy(dst + a_len, b, b_len);
  sl_array_set_buffer_owned(out, slot, dst, (int64_t)(n ? n : 1));
  return 0;
}

/// Offsets of both ranges rebased to start at 0 and run on from a's end.
static int concat_offsets(struct concat* c, int width, const void* a, int64_t a_start, int64_t a_len,
                          const void* b, int64_t b_start, int64_t b_len, struct ArrowArray* out,
                          int64_t slot) {
  size_t n = (size_t)(a_len + b_len + 1);
  uint8_t* dst = sl_alloc_buffer(c->alloc, n * (size_t)width);
  if (dst == NULL) return concat_oom(c);
  int64_t a0 = sl_offset_at(a, a_start, width == 8), b0 = sl_offset_at(b, b_start, width == 8);
  int64_t a_end = sl_offset_at(a, a_start + a_len, width == 8) - a0;
  for (int64_t i = 0; i <= a_len + b_len; ++i) {
    int64_t v = i <= a_len ? sl_offset_at(a, a_start + i, width == 8) - a0
                           : a_end + sl_offset_at(b, b_start + i - a_len, width == 8) - b0;
    if (width == 4) {
      if (v > INT32_MAX) {
        sl_free_buffer(c->alloc, dst, n * 4);
        return sl_error_set(c->error, EOVERFLOW, "%s: offset %" PRId64 ": dictionary delta makes "
                            "32-bit offsets overflow", c->where->name, c->where->offset);
      }
      int32_t v32 = (int32_t)v;
      memcpy(dst + i * 4, &v32, 4);
    } else {
      memcpy(dst + i * 8, &v, 8);
    }
  }
  sl_array_set_buffer_owned(out, slot, dst, (int64_t)(n * (size_t)width));
  return 0;
}

/// Concatenates rows [a_start, +a_len) of a and [b_start, +b_len) of b
/// (validated arrays of the type `f` describes) into `out`.
static int concat_rec(struct concat* c, const struct ipc_field* f, const struct ArrowArray* a,
                      int64_t a_start, int64_t a_len, const struct ArrowArray* b, int64_t b_start,
                      int64_t b_len, struct ArrowArray* out) {
  a_start += a->offset;
  b_start += b->offset;
  int n_buffers = (int)a->n_buffers;
  SL_RETURN_NOT_OK(sl_array_init(out, c->alloc, n_buffers, f->n_children, c->error));
  out->length = a_len + b_len;
  if (f->kind == IPC_KIND_NULL) {
    out->null_count = out->length;
    return 0;
  }
  if (f->kind == IPC_KIND_SPARSE_UNION || f->kind == IPC_KIND_DENSE_UNION)
    return sl_error_set(c->error, ENOTSUP, "%s: offset %" PRId64 ": dictionary deltas of union "
                        "values are not supported", c->where->name, c->where->offset);
  // Validity is buffer 0 for every remaining kind.
  const uint8_t* av = a->buffers[0];
  const uint8_t* bv = b->buffers[0];
  if (av != NULL || bv != NULL)
    SL_RETURN_NOT_OK(concat_bits(c, av, a_start, a_len, bv, b_start, b_len, out, 0, &out->null_count));
  switch (f->kind) {
    case IPC_KIND_FIXED:
      if (f->bit_width == 1)
        return concat_bits(c, a->buffers[1], a_start, a_len, b->buffers[1], b_start, b_len, out, 1,
                           NULL);
      {
        size_t w = (size_t)f->bit_width / 8;
        return concat_bytes(c, (const uint8_t*)a->buffers[1] + (size_t)a_start * w, (size_t)a_len * w,
                            (const uint8_t*)b->buffers[1] + (size_t)b_start * w, (size_t)b_len * w,
                            out, 1);
      }
    case IPC_KIND_VARBIN:
    case IPC_KIND_LIST: {
      int w = f->offset_width;
      SL_RETURN_NOT_OK(concat_offsets(c, w, a->buffers[1], a_start, a_len, b->buffers[1], b_start,
                                      b_len, out, 1));
      int64_t a0 = sl_offset_at(a->buffers[1], a_start, w == 8);
      int64_t a1 = sl_offset_at(a->buffers[1], a_start + a_len, w == 8);
      int64_t b0 = sl_offset_at(b->buffers[1], b_start, w == 8);
      int64_t b1 = sl_offset_at(b->buffers[1], b_start + b_len, w == 8);
      if (f->kind == IPC_KIND_VARBIN)
        return concat_bytes(c, (const uint8_t*)a->buffers[2] + a0, (size_t)(a1 - a0),
                            (const uint8_t*)b->buffers[2] + b0, (size_t)(b1 - b0), out, 2);
      return concat_rec(c, &f->children[0], a->children[0], a0, a1 - a0, b->children[0], b0,
                        b1 - b0, out->children[0]);
    }
    case IPC_KIND_FIXED_LIST: {
      int64_t k = f->bit_width;
      return concat_rec(c, &f->children[0], a->children[0], a_start * k, a_len * k, b->children[0],
                        b_start * k, b_len * k, out->children[0]);
    }
    case IPC_KIND_STRUCT:
      for (int64_t i = 0; i < f->n_children; ++i)
        SL_RETURN_NOT_OK(concat_rec(c, &f->children[i], a->children[i], a_start, a_len,
                                    b->children[i], b_start, b_len, out->children[i]));
      return 0;
    default:
      return 0;
  }
}

/* ---- Deltas appended in place ------------------------------------------- */

// A stream may grow a dictionary by thousands of small deltas: joining each
// to a copy of every value before it made reading quadratic. The values
// (fixed-width, bool, binary / utf8, and lists, fixed-size lists and
// structs of them) are appended to buffers with spare room instead, one
// ipc_dict_grow per node of the value type, and each dictionary handed to
// batches views the first `length` of them, which later appends never
// change. Values holding a dictionary, a union or a null-type field are
// rare and keep concat_rec above.

static int growable(const struct ipc_field* f) {
  if (f->dict_id >= 0 || f->unsupported) return 0;
  switch (f->kind) {
    case IPC_KIND_FIXED:
    case IPC_KIND_VARBIN:
      return f->n_children == 0;
    case IPC_KIND_LIST:
    case IPC_KIND_FIXED_LIST:
    case IPC_KIND_STRUCT:
      for (int64_t i = 0; i < f->n_children; ++i)
        if (!growable(&f->children[i])) return 0;
      return f->kind == IPC_KIND_STRUCT || f->n_children == 1;
    default:
      return 0;
  }
}

/// Room for `need` bytes in `b` (always a block, even for 0), doubling: the
/// bytes used so far move to a new block, and the arrays viewing the old one
/// keep it alive. `fresh`: a new block even if this one has room.
static int grow_reserve(struct concat* c, struct ipc_grow_buf* b, size_t need, int fresh) {
  if (need <= b->cap && b->data != NULL && !fresh) return 0;
  size_t cap = b->cap < 64 ? 64 : b->cap;
  while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
  uint8_t* data = sl_alloc_buffer(c->alloc, cap);
  if (data == NULL) return concat_oom(c);
  struct sl_ref* owner = sl_ref_wrap_buffer(c->alloc, data, cap);
  if (owner == NULL) {
    sl_free_buffer(c->alloc, data, cap);
    return concat_oom(c);
  }
  if (b->size) memcpy(data, b->data, b->size);
  memset(data + b->size, 0, cap - b->size);
  sl_ref_release(b->owner);
  b->data = data;
  b->cap = cap;
  b->owner = owner;
  return 0;
}

/// Sets or clears bit `i` of a block no array handed out views at `i`'s
/// byte (see grow_append).
static void put_bit(uint8_t* bits, int64_t i, int on) {
  uint8_t m = (uint8_t)(1u << (i & 7));
  bits[i >> 3] = on ? (uint8_t)(bits[i >> 3] | m) : (uint8_t)(bits[i >> 3] & ~m);
}

/// Appends values [at, at + n) of `b` (slots, b->offset included; a
/// validated array of the growable type `f`) to `g`, children first
/// rebased the same way. Called twice: `write` 0 checks every size and
/// reserves every block of the tree, 1 writes, so a failure leaves `g`
/// holding the values it held.
static int grow_append(struct concat* c, const struct ipc_field* f, struct ipc_dict_grow* g,
                       const struct ArrowArray* b, int64_t at, int64_t n, int write) {
  int64_t len = g->length;
  const uint8_t* valid = b->buffers[0];
  int validity = g->has_validity || (valid != NULL && b->null_count != 0);
  size_t bit_bytes = (size_t)((len + n + 7) / 8);
  size_t values_size = 0, data_size = 0;
  int64_t d0 = 0, d1 = 0, end = 0;
  int w = f->offset_width;
  int offsets = f->kind == IPC_KIND_VARBIN || f->kind == IPC_KIND_LIST;
  if (offsets) {
    values_size = (size_t)(len + n + 1) * (size_t)w;
    d0 = sl_offset_at(b->buffers[1], at, w == 8);
    d1 = sl_offset_at(b->buffers[1], at + n, w == 8);
    end = len > 0 ? sl_offset_at(g->buf[1].data, len, w == 8) : 0;
    if (d1 - d0 > (w == 4 ? INT32_MAX : INT64_MAX) - end)
      return sl_error_set(c->error, EOVERFLOW, "%s: offset %" PRId64 ": dictionary delta makes "
                          "%d-bit offsets overflow", c->where->name, c->where->offset, w * 8);
    if (f->kind == IPC_KIND_VARBIN) data_size = (size_t)(end + (d1 - d0));
  } else if (f->kind == IPC_KIND_FIXED && f->bit_width == 1) {
    values_size = bit_bytes;
  } else if (f->kind == IPC_KIND_FIXED) {
    values_size = (size_t)(len + n) * (size_t)(f->bit_width / 8);
  }
  if (!write) {
    // Bits past a length that is not a multiple of 8 share a byte with the
    // last values of the dictionary batches already hold, which another
    // thread may be reading: such bits go into a copy (a bitmap is an
    // eighth of a byte per value, so copying it per delta stays cheap),
    // never into the byte being read.
    int shared_byte = len % 8 != 0;
    if (validity) SL_RETURN_NOT_OK(grow_reserve(c, &g->buf[0], bit_bytes, shared_byte));
    if (f->kind == IPC_KIND_FIXED || offsets)
      SL_RETURN_NOT_OK(grow_reserve(c, &g->buf[1], values_size, shared_byte && f->bit_width == 1 &&
                                                                 f->kind == IPC_KIND_FIXED));
    if (f->kind == IPC_KIND_VARBIN) SL_RETURN_NOT_OK(grow_reserve(c, &g->buf[2], data_size, 0));
    if (f->n_children > 0 && g->children == NULL) {
      g->children = sl_calloc(c->alloc, (size_t)f->n_children, sizeof *g->children);
      if (g->children == NULL) return concat_oom(c);
      g->n_children = f->n_children;
    }
  }
  // The children's rows for these values.
  for (int64_t i = 0; i < f->n_children; ++i) {
    const struct ArrowArray* child = b->children[i];
    int64_t from = at, count = n;
    if (f->kind == IPC_KIND_LIST) from = d0, count = d1 - d0;
    if (f->kind == IPC_KIND_FIXED_LIST) from = at * f->bit_width, count = n * f->bit_width;
    SL_RETURN_NOT_OK(grow_append(c, &f->children[i], &g->children[i], child,
                                 child->offset + from, count, write));
  }
  if (!write) return 0;
  if (validity) {
    uint8_t* bits = g->buf[0].data;
    if (!g->has_validity) {
      // The values so far had no nulls: the block is new, not viewed yet.
      for (int64_t i = 0; i < len; ++i) put_bit(bits, i, 1);
      g->has_validity = 1;
    }
    int64_t zeros = 0;
    for (int64_t i = 0; i < n; ++i) {
      int on = valid == NULL || sl_bit_get(valid, at + i);
      put_bit(bits, len + i, on);
      zeros += !on;
    }
    g->null_count += zeros;
    g->buf[0].size = bit_bytes;
  }
  uint8_t* dst = g->buf[1].data;
  const uint8_t* src = b->n_buffers > 1 ? b->buffers[1] : NULL;  // (a struct has one)
  if (offsets) {
    if (len == 0) memset(dst, 0, (size_t)w);  // offsets start at 0
    for (int64_t i = 1; i <= n; ++i) {
      int64_t o = end + sl_offset_at(src, at + i, w == 8) - d0;
      if (w == 4) {
        int32_t o32 = (int32_t)o;
        memcpy(dst + (len + i) * 4, &o32, 4);
      } else {
        memcpy(dst + (len + i) * 8, &o, 8);
      }
    }
  }
  if (f->kind == IPC_KIND_VARBIN) {
    if (d1 > d0) memcpy(g->buf[2].data + end, (const uint8_t*)b->buffers[2] + d0, (size_t)(d1 - d0));
    g->buf[2].size = data_size;
  } else if (f->kind == IPC_KIND_FIXED && f->bit_width == 1) {
    for (int64_t i = 0; i < n; ++i) put_bit(dst, len + i, sl_bit_get(src, at + i));
  } else if (f->kind == IPC_KIND_FIXED && n > 0) {
    size_t bw = (size_t)f->bit_width / 8;
    memcpy(dst + (size_t)len * bw, src + (size_t)at * bw, (size_t)n * bw);
  }
  g->buf[1].size = values_size;
  g->length = len + n;
  return 0;
}

/// The values of `b` appended to `g` (see grow_append).
static int grow_append_all(struct concat* c, const struct ipc_field* f, struct ipc_dict_grow* g,
                           const struct ArrowArray* b) {
  SL_RETURN_NOT_OK(grow_append(c, f, g, b, b->offset, b->length, 0));
  return grow_append(c, f, g, b, b->offset, b->length, 1);
}

/// A view of the first g->length values of `g` into `out`.
static int grow_view(struct concat* c, const struct ipc_field* f, const struct ipc_dict_grow* g,
                     struct ArrowArray* out) {
  int n_buffers = f->kind == IPC_KIND_VARBIN ? 3 : f->kind == IPC_KIND_FIXED ||
                  f->kind == IPC_KIND_LIST ? 2 : 1;
  SL_RETURN_NOT_OK(sl_array_init(out, c->alloc, n_buffers, f->n_children, c->error));
  out->length = g->length;
  out->null_count = g->has_validity ? g->null_count : 0;
  for (int i = g->has_validity ? 0 : 1; i < n_buffers; ++i)
    sl_array_set_buffer_view(out, i, g->buf[i].data, g->buf[i].owner);
  for (int64_t i = 0; i < f->n_children; ++i)
    SL_RETURN_NOT_OK(grow_view(c, &f->children[i], &g->children[i], out->children[i]));
  return 0;
}

/// A dictionary value holding `array` (moved in) in *out.
static int dict_value_new(const struct sluice_allocator* alloc, struct ArrowArray* array,
                          const struct ipc_where* where, struct ipc_dict_value** out,
                          struct sluice_error* error) {
  struct ipc_dict_value* v = sl_calloc(alloc, 1, sizeof *v);
  if (v == NULL) {
    array->release(array);
    return sl_error_set(error, ENOMEM, "%s: out of memory", where->name);
  }
  v->alloc = alloc;
  sl_ref_init(&v->ref, dict_value_destroy);
  sl_array_move(array, &v->array);
  *out = v;
  return 0;
}

/// Dictionary-encoded nodes inside the values keep the newer dictionary,
/// which (being a superset through deltas, or a replacement the writer
/// vouches for) covers both halves' indexes.
static int attach_nested(struct concat* c, const struct ipc_field* f, const struct ArrowArray* b,
                         struct ArrowArray* out, struct sl_ref* owner) {
  if (f->dict_id >= 0 && b->dictionary != NULL) {
    SL_RETURN_NOT_OK(sl_array_alloc_dictionary(out, c->error));
    SL_RETURN_NOT_OK(sl_ipc_array_view(b->dictionary, owner, c->alloc, out->dictionary, c->error));
  }
  for (int64_t i = 0; i < f->n_children && i < out->n_children; ++i)
    SL_RETURN_NOT_OK(attach_nested(c, &f->children[i], b->children[i], out->children[i], owner));
  return 0;
}

int sl_ipc_dict_apply(const struct ipc_schema* schema, struct ipc_dict_memo* memo,
                   const struct ipc_message* msg, const struct ipc_body* body,
                   int64_t file_block, const struct ipc_where* where,
                   struct sluice_error* error) {
  int64_t id;
  int is_delta;
  struct fb_table rb;
  int has_rb;
  if (sl_fb_read_i64(&msg->header, IPC_DICTIONARY_BATCH_ID, 0, &id) < 0 ||
      (has_rb = sl_fb_read_table(&msg->header, IPC_DICTIONARY_BATCH_DATA, &rb)) < 0 ||
      sl_fb_read_bool(&msg->header, IPC_DICTIONARY_BATCH_IS_DELTA, 0, &is_delta) < 0)
    return sl_ipc_fb_error(msg->header.buf, where, "DictionaryBatch", error);
  if (has_rb == 0)
    return sl_error_set(error, EILSEQ, "%s: offset %" PRId64 ": DictionaryBatch without data",
                        where->name, where->offset);
  int64_t k = sl_ipc_schema_find_dict(schema, id);
  if (k < 0 || k >= memo->n)
    return sl_error_set(error, EILSEQ, "%s: offset %" PRId64 ": DictionaryBatch for id %" PRId64
                        ", which no field uses", where->name, where->offset, id);
  // Values the decoder cannot read (run-end encoded, list views): only a
  // projection without their columns reads on, and it never looks them up.
  if (schema->dicts[k].value->unsupported) return 0;
  // A delta extends a dictionary already read: without one it is not the
  // whole dictionary (the base was lost). A file holds one dictionary per id
  // for all its batches, which are read after every dictionary block: a
  // second non-delta one would apply to the batches before it too.
  if (is_delta && memo->values[k] == NULL)
    return sl_error_set(error, EILSEQ, "%s: offset %" PRId64 ": delta DictionaryBatch for "
                        "dictionary id %" PRId64 " (column '%s'), which has no dictionary yet "
                        "(its base dictionary is missing)", where->name, where->offset, id,
                        schema->dicts[k].column);
  if (!is_delta && file_block >= 0 && memo->values[k] != NULL)
    return sl_error_set(error, EILSEQ, "%s: offset %" PRId64 ": dictionary block %" PRId64
                        " replaces dictionary id %" PRId64 " (column '%s'), which an earlier "
                        "block set: the Arrow IPC file format allows only deltas, not "
                        "dictionary replacement", where->name, where->offset, file_block, id,
                        schema->dicts[k].column);
  const struct ipc_dict_decl* decl = &schema->dicts[k];
  const struct sluice_allocator* alloc = schema->alloc;
  struct ipc_dict_value* v = sl_calloc(alloc, 1, sizeof *v);
  if (v == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", where->name);
  v->alloc = alloc;
  sl_ref_init(&v->ref, dict_value_destroy);
  int rc = sl_ipc_decode_dictionary_values(schema, memo, &rb, msg->version, body, decl->value,
                                        decl->value_schema, decl->column, where, &v->array, error);
  struct ipc_dict_value* old = memo->values[k];
  struct ipc_dict_grow* g = &memo->grow[k];
  struct concat c = {alloc, where, error};
  struct ArrowArray joined = {0};
  if (rc == 0 && is_delta && growable(decl->value)) {
    // The first delta copies the dictionary it extends into growable
    // buffers; later ones only append.
    if (!g->active) {
      rc = grow_append_all(&c, decl->value, g, &old->array);
      g->active = rc == 0;
    }
    if (rc == 0) rc = grow_append_all(&c, decl->value, g, &v->array);
    if (rc == 0) rc = grow_view(&c, decl->value, g, &joined);
  } else if (rc == 0 && is_delta) {
    rc = concat_rec(&c, decl->value, &old->array, 0, old->array.length, &v->array, 0,
                    v->array.length, &joined);
    // The new part's nested dictionaries are shared by reference.
    if (rc == 0) rc = attach_nested(&c, decl->value, &v->array, &joined, &v->ref);
  }
  if (rc == 0 && is_delta) {
    struct ipc_dict_value* nv = NULL;
    rc = dict_value_new(alloc, &joined, where, &nv, error);
    if (rc == 0) {
      sl_ref_release(&v->ref);
      v = nv;
    }
  }
  if (rc != 0) {
    if (joined.release != NULL) joined.release(&joined);
    sl_ref_release(&v->ref);
    return rc;
  }
  if (!is_delta) grow_reset(g, alloc);  // a replacement: the next delta extends it
  memo->values[k] = v;
  if (old != NULL) sl_ref_release(&old->ref);
  return 0;
}
