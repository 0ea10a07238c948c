// Arrow C Data Interface arrays -> IPC message bodies: FieldNodes and Buffers
// in pre-order, written straight from the array memory whenever the array's
// offset allows it (sliced bitmaps and offset buffers are rebased into
// scratch memory, because offsets in the file are relative to the buffers
// written), optionally compressed buffer by buffer.
#include <lz4frame.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_error.h"
#include "core/sl_read.h"
#include "core/sl_type.h"
#include "format/ipc/ipc_fbs.h"
#include "format/ipc/ipc_writer.h"
#include "io/sl_sink.h"
#include "io/sl_source_file.h"

#define IPCW_MAX_DEPTH 64

/// Zero bytes for padding and for the single offset of empty binary/list
/// arrays whose producer gave no offsets buffer.
static const uint8_t ipc_zeros[IPC_ALIGNMENT];

struct ipc_scratch {
  void* ptr;
  size_t size;
};

static int64_t pad8(int64_t n) { return (n + 7) & ~(int64_t)7; }

/* ---- Body bookkeeping ----------------------------------------------------- */

void sl_ipc_body_init(struct ipc_body* body, const struct sluice_allocator* alloc) {
  memset(body, 0, sizeof *body);
  body->alloc = alloc;
}

void sl_ipc_body_reset(struct ipc_body* body) {
  for (int64_t i = 0; i < body->n_scratch; i++)
    sl_free(body->alloc, body->scratch[i].ptr, body->scratch[i].size);
  body->n_scratch = body->n_nodes = body->n_segs = body->n_pending = 0;
  body->length = 0;
  body->codec = IPC_CODEC_NONE;
}

void sl_ipc_body_free(struct ipc_body* body) {
  sl_ipc_body_reset(body);
  sl_free(body->alloc, body->nodes, (size_t)body->cap_nodes * 2 * sizeof *body->nodes);
  sl_free(body->alloc, body->segs, (size_t)body->cap_segs * sizeof *body->segs);
  sl_free(body->alloc, body->scratch, (size_t)body->cap_scratch * sizeof *body->scratch);
  sl_free(body->alloc, body->pending, (size_t)body->cap_pending * sizeof *body->pending);
  sl_ipc_body_init(body, body->alloc);
}

static int oom(struct sluice_error* error) {
  return sl_error_set(error, ENOMEM, "arrow ipc writer: out of memory");
}

/// Appends a FieldNode; returns its index (or -1 on failure).
static int64_t add_node(struct ipc_body* body, int64_t length, int64_t null_count) {
  void* items = body->nodes;
  if (sl_grow_array(body->alloc, &items,
                    &body->cap_nodes, body->n_nodes + 1, 2 * sizeof(int64_t)) != 0)
    return -1;
  body->nodes = items;
  body->nodes[2 * body->n_nodes] = length;
  body->nodes[2 * body->n_nodes + 1] = null_count;
  return body->n_nodes++;
}

static int add_seg(struct ipc_body* body, const void* data, int64_t length) {
  void* items = body->segs;
  if (sl_grow_array(body->alloc, &items,
                    &body->cap_segs, body->n_segs + 1, sizeof *body->segs) != 0)
    return ENOMEM;
  body->segs = items;
  struct ipc_segment* s = &body->segs[body->n_segs++];
  s->data = length > 0 ? data : NULL;
  s->length = length;
  s->prefix = 0;
  s->has_prefix = 0;
  s->bits = 0;
  s->owner = NULL;
  return 0;
}

/// Appends a bitmap of `bits` bits.
static int add_bitmap_seg(struct ipc_body* body, const void* data, int64_t bits) {
  if (add_seg(body, data, (bits + 7) / 8) != 0) return ENOMEM;
  body->segs[body->n_segs - 1].bits = bits;
  return 0;
}

static void* add_scratch(struct ipc_body* body, size_t size) {
  void* items = body->scratch;
  if (sl_grow_array(body->alloc, &items,
                    &body->cap_scratch, body->n_scratch + 1, sizeof *body->scratch) != 0)
    return NULL;
  body->scratch = items;
  void* p = sl_alloc(body->alloc, size);
  if (p == NULL) return NULL;
  body->scratch[body->n_scratch].ptr = p;
  body->scratch[body->n_scratch].size = size;
  body->n_scratch++;
  return p;
}

/// Frees the most recent scratch block (a compression that did not pay).
static void pop_scratch(struct ipc_body* body) {
  body->n_scratch--;
  sl_free(body->alloc, body->scratch[body->n_scratch].ptr, body->scratch[body->n_scratch].size);
}

/* ---- Planning ------------------------------------------------------------- */

struct plan {
  struct ipc_body* body;
  const struct ipc_dicts* dicts;
  const char* column;
  struct sluice_error* error;
};

/// A bitmap of `len` bits starting at bit `off`: written in place when the
/// slice starts on a byte, shifted into scratch otherwise.
static int plan_bitmap(struct plan* p, const uint8_t* bits, int64_t off, int64_t len) {
  int64_t bytes = (len + 7) / 8;
  if (len == 0) return add_seg(p->body, NULL, 0) ? oom(p->error) : 0;
  if ((off & 7) == 0) return add_bitmap_seg(p->body, bits + off / 8, len) ? oom(p->error) : 0;
  uint8_t* out = add_scratch(p->body, (size_t)bytes);
  if (out == NULL) return oom(p->error);
  const uint8_t* src = bits + off / 8;
  int shift = (int)(off & 7);
  int64_t src_bytes = (shift + len + 7) / 8;  // never read past the slice's last byte
  for (int64_t i = 0; i < bytes; i++) {
    unsigned v = src[i] >> shift;
    if (i + 1 < src_bytes) v |= (unsigned)src[i + 1] << (8 - shift);
    out[i] = (uint8_t)v;
  }
  if (len & 7) out[bytes - 1] &= (uint8_t)((1u << (len & 7)) - 1);  // zero the padding bits
  return add_bitmap_seg(p->body, out, len) ? oom(p->error) : 0;
}

/// Appends the node and, unless `no_validity`, the validity buffer.
static int plan_node(struct plan* p, const struct ArrowArray* a, int64_t off, int64_t len,
                     int no_validity) {
  const uint8_t* v = (!no_validity && a->n_buffers > 0) ? a->buffers[0] : NULL;
  int64_t nulls = 0;
  if (v != NULL && a->null_count != 0) {
    if (off == a->offset && len == a->length && a->null_count > 0) nulls = a->null_count;
    else nulls = sl_bitmap_count_unset(v, off, len);
  }
  if (add_node(p->body, len, nulls) < 0) return oom(p->error);
  if (no_validity) return 0;
  if (nulls == 0) return add_seg(p->body, NULL, 0) ? oom(p->error) : 0;
  return plan_bitmap(p, v, off, len);
}

/// The offsets buffer of a binary or list slice, rebased to start at 0;
/// [*start, *end) is the range of the data (or child) it covers.
static int plan_offsets(struct plan* p, const uint8_t* offsets, int64_t off, int64_t len,
                        int width, int64_t* start, int64_t* end) {
  *start = *end = 0;
  if (len == 0) return add_seg(p->body, ipc_zeros, width) ? oom(p->error) : 0;
  if (offsets == NULL)
    return sl_error_set(p->error, EINVAL, "column '%s': offsets buffer is missing", p->column);
  *start = sl_offset_at(offsets, off, width == 8);
  *end = sl_offset_at(offsets, off + len, width == 8);
  if (*start < 0 || *end < *start)
    return sl_error_set(p->error, EINVAL,
                        "column '%s': offsets are decreasing or negative (%lld..%lld)",
                        p->column, (long long)*start, (long long)*end);
  if (*start == 0)
    return add_seg(p->body, offsets + width * off, (len + 1) * width) ? oom(p->error) : 0;
  uint8_t* out = add_scratch(p->body, (size_t)((len + 1) * width));
  if (out == NULL) return oom(p->error);
  for (int64_t i = 0; i <= len; i++) {
    int64_t v = sl_offset_at(offsets, off + i, width == 8) - *start;
    if (width == 4) {
      int32_t v32 = (int32_t)v;
      memcpy(out + 4 * i, &v32, 4);
    } else {
      memcpy(out + 8 * i, &v, 8);
    }
  }
  return add_seg(p->body, out, (len + 1) * width) ? oom(p->error) : 0;
}

static int plan_fixed(struct plan* p, const uint8_t* data, int64_t bit_width, int64_t off,
                      int64_t len) {
  if (len == 0) return add_seg(p->body, NULL, 0) ? oom(p->error) : 0;
  if (data == NULL)
    return sl_error_set(p->error, EINVAL, "column '%s': data buffer is missing", p->column);
  if (bit_width == 1) return plan_bitmap(p, data, off, len);
  int64_t w = bit_width / 8;
  if (off > INT64_MAX / w || len > INT64_MAX / w)
    return sl_error_set(p->error, EINVAL, "column '%s': array too large", p->column);
  return add_seg(p->body, data + off * w, len * w) ? oom(p->error) : 0;
}

/// Notes that the last segment is buffer `i` of `a` itself (not scratch).
static void seg_from_buffer(struct plan* p, const struct ArrowArray* a, int64_t i) {
  struct ipc_body* body = p->body;
  if (body->n_segs > 0 && body->segs[body->n_segs - 1].data != NULL)
    body->segs[body->n_segs - 1].owner = sl_array_buffer_owner(a, i);
}

static int add_pending(struct plan* p, int64_t id, const struct ArrowArray* dict) {
  struct ipc_body* body = p->body;
  void* items = body->pending;
  if (sl_grow_array(body->alloc, &items,
                    &body->cap_pending, body->n_pending + 1, sizeof *body->pending))
    return oom(p->error);
  body->pending = items;
  body->pending[body->n_pending].id = id;
  body->pending[body->n_pending].array = dict;
  body->n_pending++;
  return 0;
}

static int plan_array(struct plan* p, const struct ArrowSchema* s, const struct ArrowArray* a,
                      int64_t off, int64_t len, int depth);

static int plan_child(struct plan* p, const struct ArrowSchema* s, const struct ArrowArray* a,
                      int64_t i, int64_t off, int64_t len, int depth) {
  const struct ArrowArray* c = a->children[i];
  if (c == NULL) return sl_error_set(p->error, EINVAL, "column '%s': child %lld is missing",
                                     p->column, (long long)i);
  return plan_array(p, s->children[i], c, c->offset + off, len, depth + 1);
}

static int plan_array(struct plan* p, const struct ArrowSchema* s, const struct ArrowArray* a,
                      int64_t off, int64_t len, int depth) {
  struct sluice_error* error = p->error;
  if (depth > IPCW_MAX_DEPTH)
    return sl_error_set(error, EINVAL, "column '%s': nested deeper than %d levels", p->column,
                        IPCW_MAX_DEPTH);
  if (a->release == NULL || a->offset < 0 || a->length < 0 || len < 0 || off < a->offset ||
      off - a->offset > a->length - len)
    return sl_error_set(error, EINVAL,
                        "column '%s': array (length %lld, offset %lld) is released or too short "
                        "for rows %lld..%lld", p->column, (long long)a->length,
                        (long long)a->offset, (long long)(off - a->offset),
                        (long long)(off - a->offset + len));
  if (a->n_buffers > 0 && a->buffers == NULL)
    return sl_error_set(error, EINVAL, "column '%s': buffers array is missing", p->column);
  int dict = s->dictionary != NULL;
  struct sl_type t;
  if (sl_type_parse(s->format, &t, error) != 0)
    return sl_error_prefix(error, "column '%s'", p->column);
  char tn[64];  // the type's name, made only for a message
  int expect_children = dict ? 0 : (int)s->n_children;
  if (a->n_children != expect_children || (a->n_children > 0 && a->children == NULL))
    return sl_error_set(error, EINVAL, "column '%s': array has %lld children, type %s has %d",
                        p->column, (long long)a->n_children, sl_type_name(&t, tn, sizeof tn),
                        expect_children);
  int union_type = !dict && (t.id == SL_TYPE_DENSE_UNION || t.id == SL_TYPE_SPARSE_UNION);
  int64_t want_buffers = sl_type_n_buffers(t.id);
  // Unions had a validity buffer before Arrow 1.0; tolerate it, use the tail.
  if (union_type ? (a->n_buffers < want_buffers || a->n_buffers > want_buffers + 1)
                 : !sl_type_buffers_ok(t.id, a->n_buffers))
    return sl_error_set(error, EINVAL, "column '%s': array has %lld buffers, type %s needs %lld",
                        p->column, (long long)a->n_buffers, sl_type_name(&t, tn, sizeof tn),
                        (long long)want_buffers);
  const uint8_t* const* buf = (const uint8_t* const*)a->buffers;

  if (dict) {
    if (t.id < SL_TYPE_INT8 || t.id > SL_TYPE_UINT64)
      return sl_error_set(error, EINVAL, "column '%s': dictionary index type %s is not an "
                          "integer type", p->column, sl_type_name(&t, tn, sizeof tn));
    if (a->dictionary == NULL)
      return sl_error_set(error, EINVAL, "column '%s': dictionary-encoded array has no "
                          "dictionary", p->column);
    int64_t id = sl_ipc_dicts_find(p->dicts, s);
    if (id < 0)
      return sl_error_set(error, EINVAL, "column '%s': dictionary field not in the schema",
                          p->column);
    SL_RETURN_NOT_OK(add_pending(p, id, a->dictionary));
    SL_RETURN_NOT_OK(plan_node(p, a, off, len, 0));
    SL_RETURN_NOT_OK(plan_fixed(p, buf[1], sl_type_bit_width(&t), off, len));
    seg_from_buffer(p, a, 1);  // integer indices: never shifted into scratch
    return 0;
  }

  switch (t.id) {
    case SL_TYPE_NA:
      return add_node(p->body, len, len) < 0 ? oom(error) : 0;
    case SL_TYPE_BINARY: case SL_TYPE_STRING:
    case SL_TYPE_LARGE_BINARY: case SL_TYPE_LARGE_STRING: {
      int width = (t.id == SL_TYPE_BINARY || t.id == SL_TYPE_STRING) ? 4 : 8;
      int64_t start = 0, end = 0;
      SL_RETURN_NOT_OK(plan_node(p, a, off, len, 0));
      SL_RETURN_NOT_OK(plan_offsets(p, buf[1], off, len, width, &start, &end));
      if (end > start && buf[2] == NULL)
        return sl_error_set(error, EINVAL, "column '%s': data buffer is missing", p->column);
      if (add_seg(p->body, end > start ? buf[2] + start : NULL, end - start)) return oom(error);
      seg_from_buffer(p, a, 2);
      return 0;
    }
    case SL_TYPE_LIST: case SL_TYPE_LARGE_LIST: case SL_TYPE_MAP: {
      int width = t.id == SL_TYPE_LARGE_LIST ? 8 : 4;
      int64_t start = 0, end = 0;
      if (a->n_children != 1)
        return sl_error_set(error, EINVAL, "column '%s': list array needs one child", p->column);
      SL_RETURN_NOT_OK(plan_node(p, a, off, len, 0));
      SL_RETURN_NOT_OK(plan_offsets(p, buf[1], off, len, width, &start, &end));
      return plan_child(p, s, a, 0, start, end - start, depth);
    }
    case SL_TYPE_FIXED_SIZE_LIST: {
      int64_t n = t.list_size;
      if (a->n_children != 1)
        return sl_error_set(error, EINVAL, "column '%s': list array needs one child", p->column);
      if (n > 0 && (off > INT64_MAX / n || len > INT64_MAX / n))
        return sl_error_set(error, EINVAL, "column '%s': array too large", p->column);
      SL_RETURN_NOT_OK(plan_node(p, a, off, len, 0));
      return plan_child(p, s, a, 0, off * n, len * n, depth);
    }
    case SL_TYPE_STRUCT:
      SL_RETURN_NOT_OK(plan_node(p, a, off, len, 0));
      for (int64_t i = 0; i < a->n_children; i++)
        SL_RETURN_NOT_OK(plan_child(p, s, a, i, off, len, depth));
      return 0;
    case SL_TYPE_SPARSE_UNION: case SL_TYPE_DENSE_UNION: {
      int dense = t.id == SL_TYPE_DENSE_UNION;
      const uint8_t* type_ids = buf[a->n_buffers - (dense ? 2 : 1)];
      SL_RETURN_NOT_OK(plan_node(p, a, off, len, 1));
      SL_RETURN_NOT_OK(plan_fixed(p, type_ids, 8, off, len));
      if (!dense) {
        for (int64_t i = 0; i < a->n_children; i++)
          SL_RETURN_NOT_OK(plan_child(p, s, a, i, off, len, depth));
        return 0;
      }
      // Dense offsets index the children's own logical rows, which stay
      // valid when every child is written whole.
      SL_RETURN_NOT_OK(plan_fixed(p, buf[a->n_buffers - 1], 32, off, len));
      for (int64_t i = 0; i < a->n_children; i++) {
        const struct ArrowArray* c = a->children[i];
        if (c == NULL) return sl_error_set(error, EINVAL, "column '%s': child missing", p->column);
        SL_RETURN_NOT_OK(plan_array(p, s->children[i], c, c->offset, c->length, depth + 1));
      }
      return 0;
    }
    default: {
      int64_t bits = sl_type_bit_width(&t);
      if (t.id == SL_TYPE_FIXED_SIZE_BINARY && bits == 0) {  // fixed_size_binary(0): no bytes
        SL_RETURN_NOT_OK(plan_node(p, a, off, len, 0));
        return add_seg(p->body, NULL, 0) ? oom(p->error) : 0;
      }
      if (bits == 0)
        return sl_error_set(error, ENOTSUP, "column '%s': type %s cannot be written to Arrow "
                            "IPC", p->column, sl_type_name(&t, tn, sizeof tn));
      SL_RETURN_NOT_OK(plan_node(p, a, off, len, 0));
      SL_RETURN_NOT_OK(plan_fixed(p, buf[1], bits, off, len));
      if (bits >= 8) seg_from_buffer(p, a, 1);  // bitmaps may be shifted copies
      return 0;
    }
  }
}

int sl_ipc_body_plan_batch(struct ipc_body* body, const struct ArrowSchema* root,
                        const struct ArrowArray* array, const struct ipc_dicts* dicts,
                        struct sluice_error* error) {
  sl_ipc_body_reset(body);
  if (array->n_children != root->n_children || (array->n_children > 0 && array->children == NULL))
    return sl_error_set(error, EINVAL, "arrow ipc writer: batch has %lld columns, schema has %lld",
                        (long long)array->n_children, (long long)root->n_children);
  if (array->length < 0 || array->offset < 0)
    return sl_error_set(error, EINVAL, "arrow ipc writer: batch has a negative length/offset");
  body->length = array->length;
  struct plan p = {body, dicts, "", error};
  for (int64_t i = 0; i < root->n_children; i++) {
    p.column = root->children[i]->name != NULL ? root->children[i]->name : "";
    SL_RETURN_NOT_OK(plan_child(&p, root, array, i, array->offset, array->length, 0));
  }
  return 0;
}

int sl_ipc_body_plan_dictionary(struct ipc_body* body, const struct ipc_dicts* dicts, int64_t id,
                             const struct ArrowArray* array, int64_t start, int64_t length,
                             struct sluice_error* error) {
  sl_ipc_body_reset(body);
  const struct ipc_dict_entry* e = &dicts->items[id];
  struct plan p = {body, dicts, e->column, error};
  if (array->offset < 0 || start < 0 || length < 0 || start > INT64_MAX - array->offset)
    return sl_error_set(error, EINVAL, "column '%s': bad dictionary slice", e->column);
  body->length = length;
  return plan_array(&p, e->field->dictionary, array, array->offset + start, length, 1);
}

/* ---- Compression ---------------------------------------------------------- */

int sl_ipc_body_compress(struct ipc_body* body, enum ipc_codec codec, void* zstd_ctx,
                      struct sluice_error* error) {
  body->codec = codec;
  if (codec == IPC_CODEC_NONE) return 0;
  // Independent blocks: linked ones make liblz4 malloc a 64 KiB history
  // buffer behind our allocator's back; readers accept either.
  LZ4F_preferences_t lz4_prefs;
  memset(&lz4_prefs, 0, sizeof lz4_prefs);
  lz4_prefs.frameInfo.blockMode = LZ4F_blockIndependent;
  for (int64_t i = 0; i < body->n_segs; i++) {
    struct ipc_segment* s = &body->segs[i];
    if (s->length == 0) continue;  // empty buffers stay empty, without a prefix
    size_t n = (size_t)s->length;
    size_t bound = codec == IPC_CODEC_LZ4 ? LZ4F_compressFrameBound(n, &lz4_prefs)
                                          : ZSTD_compressBound(n);
    uint8_t* dst = add_scratch(body, bound);
    if (dst == NULL) return oom(error);
    size_t got;
    if (codec == IPC_CODEC_LZ4) {
      got = LZ4F_compressFrame(dst, bound, s->data, n, &lz4_prefs);
      if (LZ4F_isError(got))
        return sl_error_set(error, EIO, "arrow ipc writer: lz4 compression failed: %s",
                            LZ4F_getErrorName(got));
    } else {
      got = ZSTD_compressCCtx(zstd_ctx, dst, bound, s->data, n, 1);
      if (ZSTD_isError(got))
        return sl_error_set(error,
                            ZSTD_getErrorCode(got) == ZSTD_error_memory_allocation ? ENOMEM : EIO,
                            "arrow ipc writer: zstd compression failed: %s",
                            ZSTD_getErrorName(got));
    }
    s->has_prefix = 1;
    if (got < n) {
      s->prefix = s->length;
      s->data = dst;
      s->owner = NULL;
      s->length = (int64_t)got;
    } else {
      s->prefix = -1;  // stored raw: compression did not pay
      pop_scratch(body);
    }
  }
  return 0;
}

/* ---- Snapshots (dictionary change detection) ------------------------------ */

/// Which bits of a buffer's last byte are data (all but a bitmap's padding).
static uint8_t last_byte_mask(const struct ipc_segment* s) {
  return (s->bits & 7) ? (uint8_t)((1u << (s->bits & 7)) - 1) : 0xFF;
}

/// Sizes the snapshot for `body`'s nodes and buffers (their bytes not yet).
static int snapshot_shape(struct ipc_snapshot* snap, const struct sluice_allocator* alloc,
                          const struct ipc_body* body, struct sluice_error* error) {
  void* nodes = snap->nodes;
  void* segs = snap->segs;
  int64_t old_segs = snap->cap_segs;
  if (sl_grow_array(alloc, &nodes, &snap->cap_nodes, body->n_nodes, 2 * sizeof(int64_t)) != 0)
    return oom(error);
  snap->nodes = nodes;
  if (sl_grow_array(alloc, &segs, &snap->cap_segs, body->n_segs, sizeof *snap->segs) != 0)
    return oom(error);
  snap->segs = segs;
  if (snap->cap_segs > old_segs)  // new slots hold no memory yet
    memset(snap->segs + old_segs, 0, (size_t)(snap->cap_segs - old_segs) * sizeof *snap->segs);
  if (body->n_nodes) memcpy(snap->nodes, body->nodes, (size_t)body->n_nodes * 16);
  snap->n_nodes = body->n_nodes;
  snap->n_segs = body->n_segs;
  return 0;
}

/// Copies s->data[from, s->length) to seg at `from`, growing it (doubling,
/// so that a dictionary grown by deltas is copied O(1) times per byte).
static int snapshot_copy(struct ipc_snapshot_seg* seg, const struct sluice_allocator* alloc,
                         const struct ipc_segment* s, int64_t from, struct sluice_error* error) {
  if (from == 0 && seg->cap > 4096 && seg->cap / 4 > s->length) {
    // Copied whole and far smaller: let a replaced large dictionary go.
    sl_free(alloc, seg->data, (size_t)seg->cap);
    seg->data = NULL;
    seg->cap = 0;
  }
  if (s->length > seg->cap) {
    void* data = seg->data;
    int64_t cap = seg->cap;
    if (sl_grow_array(alloc, &data, &cap, s->length, 1) != 0) return oom(error);
    seg->data = data;
    seg->cap = cap;
  }
  if (s->length > from) memcpy(seg->data + from, s->data + from, (size_t)(s->length - from));
  seg->length = s->length;
  if (s->length) seg->data[s->length - 1] &= last_byte_mask(s);
  return 0;
}

int sl_ipc_snapshot_set(struct ipc_snapshot* snap, const struct sluice_allocator* alloc,
                        const struct ipc_body* body, struct sluice_error* error) {
  snap->valid = 0;
  SL_RETURN_NOT_OK(snapshot_shape(snap, alloc, body, error));
  for (int64_t i = 0; i < body->n_segs; i++)
    SL_RETURN_NOT_OK(snapshot_copy(&snap->segs[i], alloc, &body->segs[i], 0, error));
  snap->valid = 1;
  return 0;
}

/// Whether buffer `p` (of a prefix's body) is a prefix of buffer `s` (of the
/// whole array's): the same memory (an array's own buffer), or the same
/// bytes (scratch: rebased offsets, shifted bitmaps), a bitmap's last byte
/// up to its bits.
static int seg_is_prefix(const struct ipc_segment* p, const struct ipc_segment* s) {
  if (p->length > s->length || (p->bits != 0) != (s->bits != 0)) return 0;
  if (p->length == 0 || p->data == s->data) return 1;
  if (p->length > 1 && memcmp(p->data, s->data, (size_t)p->length - 1) != 0) return 0;
  uint8_t mask = last_byte_mask(p);
  return (p->data[p->length - 1] & mask) == (s->data[p->length - 1] & mask);
}

int sl_ipc_snapshot_extend(struct ipc_snapshot* snap, const struct sluice_allocator* alloc,
                           const struct ipc_body* prefix, const struct ipc_body* body,
                           struct sluice_error* error) {
  if (!snap->valid || prefix->n_segs != body->n_segs || snap->n_segs != body->n_segs)
    return sl_ipc_snapshot_set(snap, alloc, body, error);
  snap->valid = 0;
  SL_RETURN_NOT_OK(snapshot_shape(snap, alloc, body, error));
  for (int64_t i = 0; i < body->n_segs; i++) {
    const struct ipc_segment* s = &body->segs[i];
    // The snapshot holds prefix's bytes: where those begin s, only s's
    // tail is new (and a bitmap's last byte, whose padding was zeroed).
    int64_t from = 0;
    if (seg_is_prefix(&prefix->segs[i], s)) {
      from = prefix->segs[i].length;
      if (from > 0 && s->bits != 0) from--;
    }
    SL_RETURN_NOT_OK(snapshot_copy(&snap->segs[i], alloc, s, from, error));
  }
  snap->valid = 1;
  return 0;
}

void sl_ipc_snapshot_free(struct ipc_snapshot* snap, const struct sluice_allocator* alloc) {
  for (int64_t i = 0; i < snap->cap_segs; i++)
    sl_free(alloc, snap->segs[i].data, (size_t)snap->segs[i].cap);
  sl_free(alloc, snap->segs, (size_t)snap->cap_segs * sizeof *snap->segs);
  sl_free(alloc, snap->nodes, (size_t)snap->cap_nodes * 2 * sizeof *snap->nodes);
  memset(snap, 0, sizeof *snap);
}

int sl_ipc_body_equals(const struct ipc_body* body, const struct ipc_snapshot* snap) {
  if (!snap->valid || snap->n_nodes != body->n_nodes || snap->n_segs != body->n_segs) return 0;
  if (body->n_nodes && memcmp(snap->nodes, body->nodes, (size_t)body->n_nodes * 16) != 0)
    return 0;
  for (int64_t i = 0; i < body->n_segs; i++) {
    const struct ipc_segment* s = &body->segs[i];
    const struct ipc_snapshot_seg* t = &snap->segs[i];
    int64_t len = s->length;
    if (t->length != len) return 0;
    if (len > 1 && memcmp(t->data, s->data, (size_t)len - 1) != 0) return 0;
    if (len && t->data[len - 1] != (s->data[len - 1] & last_byte_mask(s))) return 0;
  }
  return 1;
}

/* ---- Messages ------------------------------------------------------------- */

int sl_ipc_write_message_header(struct sl_sink* sink, const uint8_t* meta, size_t meta_size,
                             struct ipc_block* block, struct sluice_error* error) {
  // The body must start 8-aligned: pad the metadata, and count the padding
  // in the length so that readers skip it.
  int64_t padded = pad8(8 + (int64_t)meta_size) - 8;
  if (padded > INT32_MAX)
    return sl_error_set(error, EOVERFLOW, "arrow ipc writer: metadata over 2 GiB");
  uint8_t prefix[8];
  sl_fb_store_le32(prefix, (int32_t)IPC_CONTINUATION_MARKER);
  sl_fb_store_le32(prefix + 4, (int32_t)padded);
  block->offset = sl_sink_position(sink);
  block->metadata_length = (int32_t)(8 + padded);
  block->body_length = 0;
  SL_RETURN_NOT_OK(sl_sink_write(sink, prefix, 8, error));
  SL_RETURN_NOT_OK(sl_sink_write(sink, meta, (int64_t)meta_size, error));
  if (padded > (int64_t)meta_size)
    SL_RETURN_NOT_OK(sl_sink_write(sink, ipc_zeros, padded - (int64_t)meta_size, error));
  return 0;
}

int sl_ipc_write_body_message(struct sl_sink* sink, struct fb_builder* b,
                           const struct ipc_body* body, int64_t dict_id, int is_delta,
                           const char* metadata, struct ipc_block* block,
                           struct sluice_error* error) {
  sl_fb_reset(b);
  fb_ref custom_metadata = 0;
  SL_RETURN_NOT_OK(sl_ipc_build_kv_metadata(b, metadata, "record batch", &custom_metadata, error));
  fb_ref nodes, buffers;
  uint8_t* p = sl_fb_vector_reserve(b, (size_t)body->n_nodes, IPC_FIELD_NODE_STRUCT_SIZE, 8, &nodes);
  for (int64_t i = 0; p != NULL && i < body->n_nodes; i++) {
    sl_fb_store_le64(p + 16 * i, body->nodes[2 * i]);
    sl_fb_store_le64(p + 16 * i + 8, body->nodes[2 * i + 1]);
  }
  int64_t body_length = 0;
  p = sl_fb_vector_reserve(b, (size_t)body->n_segs, IPC_BUFFER_STRUCT_SIZE, 8, &buffers);
  for (int64_t i = 0; i < body->n_segs; i++) {
    const struct ipc_segment* s = &body->segs[i];
    int64_t n = s->length + (s->has_prefix ? 8 : 0);
    if (p != NULL) {
      sl_fb_store_le64(p + 16 * i, body_length);
      sl_fb_store_le64(p + 16 * i + 8, n);
    }
    body_length += pad8(n);
  }
  fb_ref compression = 0;
  if (body->codec != IPC_CODEC_NONE) {
    sl_fb_table_start(b);
    sl_fb_add_u8(b, IPC_BODY_COMPRESSION_CODEC, body->codec == IPC_CODEC_LZ4
                                                 ? IPC_COMPRESSION_LZ4_FRAME
                                                 : IPC_COMPRESSION_ZSTD);
    sl_fb_add_u8(b, IPC_BODY_COMPRESSION_METHOD, IPC_BODY_COMPRESSION_BUFFER);
    compression = sl_fb_table_end(b);
  }
  sl_fb_table_start(b);
  sl_fb_add_i64(b, IPC_RECORD_BATCH_LENGTH, body->length);
  sl_fb_add_ref(b, IPC_RECORD_BATCH_NODES, nodes);
  sl_fb_add_ref(b, IPC_RECORD_BATCH_BUFFERS, buffers);
  sl_fb_add_ref(b, IPC_RECORD_BATCH_COMPRESSION, compression);
  fb_ref header = sl_fb_table_end(b);
  uint8_t header_type = IPC_MESSAGE_RECORD_BATCH;
  if (dict_id >= 0) {
    sl_fb_table_start(b);
    sl_fb_add_i64(b, IPC_DICTIONARY_BATCH_ID, dict_id);
    sl_fb_add_ref(b, IPC_DICTIONARY_BATCH_DATA, header);
    sl_fb_add_u8(b, IPC_DICTIONARY_BATCH_IS_DELTA, (uint8_t)(is_delta != 0));
    header = sl_fb_table_end(b);
    header_type = IPC_MESSAGE_DICTIONARY_BATCH;
  }
  sl_fb_table_start(b);
  sl_fb_add_i16(b, IPC_MESSAGE_VERSION, IPC_METADATA_V5);
  sl_fb_add_u8(b, IPC_MESSAGE_HEADER_TYPE, header_type);
  sl_fb_add_ref(b, IPC_MESSAGE_HEADER, header);
  sl_fb_add_i64(b, IPC_MESSAGE_BODY_LENGTH, body_length);
  sl_fb_add_ref(b, IPC_MESSAGE_CUSTOM_METADATA, custom_metadata);
  fb_ref message = sl_fb_table_end(b);
  const uint8_t* meta = NULL;
  size_t meta_size = 0;
  SL_RETURN_NOT_OK(sl_fb_finish(b, message, &meta, &meta_size, error));
  SL_RETURN_NOT_OK(sl_ipc_write_message_header(sink, meta, meta_size, block, error));
  block->body_length = body_length;

  // Straight from the arrays (or scratch) to the sink: no staging copy.
  for (int64_t i = 0; i < body->n_segs; i++) {
    const struct ipc_segment* s = &body->segs[i];
    int64_t n = s->length;
    if (s->has_prefix) {
      uint8_t prefix[8];
      sl_fb_store_le64(prefix, s->prefix);
      SL_RETURN_NOT_OK(sl_sink_write(sink, prefix, 8, error));
      n += 8;
    }
    int fd = -1;
    int64_t at = 0;
    if (s->length >= SL_SINK_COPY_MIN && !s->has_prefix &&
        sl_ref_file_extent(s->owner, s->data, s->length, &fd, &at)) {
      // A view of a mapped file: copied file to file in the kernel.
      int rc = sl_sink_write_from_file(sink, fd, at, s->data, s->length, error);
      close(fd);
      SL_RETURN_NOT_OK(rc);
    } else if (s->length) {
      SL_RETURN_NOT_OK(sl_sink_write(sink, s->data, s->length, error));
    }
    if (pad8(n) > n) SL_RETURN_NOT_OK(sl_sink_write(sink, ipc_zeros, pad8(n) - n, error));
  }
  return 0;
}
