// Dictionary batches: decoding, replacement, deltas (concatenation), and
// sharing one decoded dictionary among all batches through view trees.
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
  if (memo->n == 0) return 0;
  memo->values = sl_calloc(schema->alloc, (size_t)memo->n, sizeof *memo->values);
  if (memo->values == NULL) {
    memo->n = 0;
    return sl_error_set(error, ENOMEM, "out of memory (dictionary table)");
  }
  return 0;
}

void sl_ipc_dict_memo_reset(struct ipc_dict_memo* memo, const struct sluice_allocator* alloc) {
  if (memo->values != NULL) {
    for (int64_t i = 0; i < memo->n; ++i)
      if (memo->values[i] != NULL) sl_ref_release(&memo->values[i]->ref);
    sl_free(alloc, memo->values, (size_t)memo->n * sizeof *memo->values);
  }
  memo->values = NULL;
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

static int64_t load_offset(const void* buf, int width, int64_t i) {
  if (width == 4) {
    int32_t v;
    memcpy(&v, (const uint8_t*)buf + i * 4, 4);
    return v;
  }
  int64_t v;
  memcpy(&v, (const uint8_t*)buf + i * 8, 8);
  return v;
}

/// Offsets of both ranges rebased to start at 0 and run on from a's end.
static int concat_offsets(struct concat* c, int width, const void* a, int64_t a_start, int64_t a_len,
                          const void* b, int64_t b_start, int64_t b_len, struct ArrowArray* out,
                          int64_t slot) {
  size_t n = (size_t)(a_len + b_len + 1);
  uint8_t* dst = sl_alloc_buffer(c->alloc, n * (size_t)width);
  if (dst == NULL) return concat_oom(c);
  int64_t a0 = load_offset(a, width, a_start), b0 = load_offset(b, width, b_start);
  int64_t a_end = load_offset(a, width, a_start + a_len) - a0;
  for (int64_t i = 0; i <= a_len + b_len; ++i) {
    int64_t v = i <= a_len ? load_offset(a, width, a_start + i) - a0
                           : a_end + load_offset(b, width, b_start + i - a_len) - b0;
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
      int64_t a0 = load_offset(a->buffers[1], w, a_start);
      int64_t a1 = load_offset(a->buffers[1], w, a_start + a_len);
      int64_t b0 = load_offset(b->buffers[1], w, b_start);
      int64_t b1 = load_offset(b->buffers[1], w, b_start + b_len);
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
  if (rc == 0 && is_delta && old != NULL) {
    struct concat c = {alloc, where, error};
    struct ArrowArray joined;
    rc = concat_rec(&c, decl->value, &old->array, 0, old->array.length, &v->array, 0,
                    v->array.length, &joined);
    // The new part's nested dictionaries are shared by reference.
    if (rc == 0) rc = attach_nested(&c, decl->value, &v->array, &joined, &v->ref);
    if (rc != 0 && joined.release != NULL) joined.release(&joined);
    if (rc == 0) {
      struct ipc_dict_value* nv = sl_calloc(alloc, 1, sizeof *nv);
      if (nv == NULL) {
        joined.release(&joined);
        rc = sl_error_set(error, ENOMEM, "%s: out of memory", where->name);
      } else {
        nv->alloc = alloc;
        sl_ref_init(&nv->ref, dict_value_destroy);
        sl_array_move(&joined, &nv->array);
        sl_ref_release(&v->ref);
        v = nv;
      }
    }
  }
  if (rc != 0) {
    sl_ref_release(&v->ref);
    return rc;
  }
  memo->values[k] = v;
  if (old != NULL) sl_ref_release(&old->ref);
  return 0;
}
