// RecordBatch metadata + body -> ArrowArray tree. Uncompressed buffers become
// views into the body (retaining its owner: zero copy); compressed ones are
// decompressed into buffers the array owns. Every node and buffer reference
// is checked against the metadata and the body before use, and the result is
// validated against the schema with the buffer sizes the message declares.
// The *_advanced context constructors (exported by the shared libraries too)
// let the codecs allocate through the sluice allocator.
#define LZ4F_STATIC_LINKING_ONLY
#define ZSTD_STATIC_LINKING_ONLY
#include <inttypes.h>
#include <lz4frame.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "codec/sl_codec_alloc.h"
#include "codec/sl_codec_bound.h"
#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_error.h"
#include "core/sl_validate.h"
#include "ipc_fbs.h"
#include "ipc_internal.h"

/// Backing for zero-length buffers: consumers may read one offset (0) from an
/// empty array's offsets buffer, and NULL would need special-casing by them.
static const int64_t k_empty[2] = {0, 0};

struct size_entry {
  const struct ArrowArray* node;
  int64_t size[3];
};

struct decoder {
  const struct sluice_allocator* alloc;
  const struct ipc_where* where;
  const struct ipc_schema* schema;
  const struct ipc_dict_memo* memo;
  const struct ipc_body* body;
  struct sluice_error* error;
  int codec;  ///< -1 = uncompressed, else enum ipc_compression_type
  int v4;     ///< metadata before V5: unions carry a validity buffer
  struct fb_vec nodes, buffers;
  struct fb_vec variadic;  ///< variadicBufferCounts (count 0 when absent)
  int64_t node_i, buffer_i;
  int64_t view_i;          ///< the next view field's entry in `variadic`
  struct size_entry* sizes;
  int64_t n_sizes, cap_sizes, cursor;
  LZ4F_dctx* lz4;
  ZSTD_DCtx* zstd;
  char path[160];          ///< the field being decoded, from its column, for messages
  size_t path_len;
  /// The struct fields the scan keeps (NULL = none) and, as decode_field
  /// descends, the column and the path of struct child indexes at.
  const struct sl_split_fields* fields;
  int64_t column;
  int64_t at[IPC_MAX_DEPTH + 2];
};

static int dec_fail(struct decoder* d, int code, const char* fmt, ...) SL_PRINTF(3, 4);
static int dec_fail(struct decoder* d, int code, const char* fmt, ...) {
  char reason[512 + sizeof d->path + 64];  // node_fail's reason and what it puts before it
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  return sl_error_set(d->error, code, "%s: offset %" PRId64 ": %s", d->where->name,
                      d->where->offset, reason);
}

/// A failure of the field being decoded: names its column path and node.
static int node_fail(struct decoder* d, int64_t node, const char* fmt, ...) SL_PRINTF(3, 4);
static int node_fail(struct decoder* d, int64_t node, const char* fmt, ...) {
  char reason[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  return dec_fail(d, EILSEQ, "column '%s' (field node %" PRId64 "): %s", d->path, node, reason);
}

static int64_t size_of(void* ctx, const struct ArrowArray* array, int64_t i) {
  struct decoder* d = ctx;
  // Validation walks in the order we decoded, so scanning on from the last
  // hit finds the node at once.
  for (int64_t k = 0; k < d->n_sizes; ++k) {
    int64_t at = (d->cursor + k) % d->n_sizes;
    if (d->sizes[at].node == array) {
      d->cursor = at;
      return i >= 0 && i < 3 ? d->sizes[at].size[i] : -1;
    }
  }
  return -1;
}

static int dec_init(struct decoder* d, const struct fb_table* rb, int16_t version,
                    int64_t n_nodes_needed) {
  struct fb_table comp;
  int rc;
  if (sl_fb_read_vec(rb, IPC_RECORD_BATCH_NODES, IPC_FIELD_NODE_STRUCT_SIZE, &d->nodes) < 0 ||
      sl_fb_read_vec(rb, IPC_RECORD_BATCH_BUFFERS, IPC_BUFFER_STRUCT_SIZE, &d->buffers) < 0 ||
      sl_fb_read_vec(rb, IPC_RECORD_BATCH_VARIADIC_BUFFER_COUNTS, 8, &d->variadic) < 0 ||
      (rc = sl_fb_read_table(rb, IPC_RECORD_BATCH_COMPRESSION, &comp)) < 0)
    return sl_ipc_fb_error(rb->buf, d->where, "RecordBatch", d->error);
  d->codec = -1;
  if (rc == 1) {
    uint8_t codec, method;
    if (sl_fb_read_u8(&comp, IPC_BODY_COMPRESSION_CODEC, IPC_COMPRESSION_LZ4_FRAME, &codec) < 0 ||
        sl_fb_read_u8(&comp, IPC_BODY_COMPRESSION_METHOD, IPC_BODY_COMPRESSION_BUFFER, &method) < 0)
      return sl_ipc_fb_error(rb->buf, d->where, "BodyCompression", d->error);
    if (codec > IPC_COMPRESSION_ZSTD || method != IPC_BODY_COMPRESSION_BUFFER)
      return dec_fail(d, ENOTSUP, "unsupported body compression (codec %d, method %d)",
                      (int)codec, (int)method);
    d->codec = codec;
  }
  d->v4 = version < IPC_METADATA_V5;
  d->cap_sizes = n_nodes_needed;
  d->sizes = sl_alloc(d->alloc, (size_t)n_nodes_needed * sizeof *d->sizes);
  if (d->sizes == NULL) return sl_error_set(d->error, ENOMEM, "%s: out of memory", d->where->name);
  return 0;
}

static void dec_reset(struct decoder* d) {
  if (d->sizes != NULL) sl_free(d->alloc, d->sizes, (size_t)d->cap_sizes * sizeof *d->sizes);
  d->sizes = NULL;
  if (d->lz4 != NULL) LZ4F_freeDecompressionContext(d->lz4);
  d->lz4 = NULL;
  if (d->zstd != NULL) ZSTD_freeDCtx(d->zstd);
  d->zstd = NULL;
}

static int decompress(struct decoder* d, int64_t index, const uint8_t* src, size_t clen,
                      uint8_t* dst, size_t ulen) {
  if (d->codec == IPC_COMPRESSION_ZSTD) {
    if (d->zstd == NULL) {
      ZSTD_customMem mem = {sl_codec_alloc, sl_codec_free, sl_codec_opaque(d->alloc)};
      d->zstd = ZSTD_createDCtx_advanced(mem);
      if (d->zstd == NULL)
        return sl_error_set(d->error, ENOMEM, "%s: out of memory (zstd context)", d->where->name);
    }
    size_t r = ZSTD_decompressDCtx(d->zstd, dst, ulen, src, clen);
    if (ZSTD_isError(r))
      return sl_error_set(d->error,
                          ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation ? ENOMEM : EILSEQ, "%s: offset %" PRId64 ": buffer %" PRId64 ": zstd: %s",
                          d->where->name, d->where->offset, index, ZSTD_getErrorName(r));
    if (r != ulen)
      return dec_fail(d, EILSEQ, "buffer %" PRId64 " decompresses to %" PRId64
                      " bytes, header says %" PRId64, index, (int64_t)r, (int64_t)ulen);
    return 0;
  }
  if (d->lz4 == NULL) {
    LZ4F_CustomMem mem = {sl_codec_alloc, NULL, sl_codec_free, sl_codec_opaque(d->alloc)};
    d->lz4 = LZ4F_createDecompressionContext_advanced(mem, LZ4F_VERSION);
    if (d->lz4 == NULL)
      return sl_error_set(d->error, ENOMEM, "%s: out of memory (lz4 context)", d->where->name);
  } else {
    LZ4F_resetDecompressionContext(d->lz4);
  }
  size_t dpos = 0, spos = 0;
  for (;;) {
    size_t dsz = ulen - dpos, ssz = clen - spos;
    size_t r = LZ4F_decompress(d->lz4, dst + dpos, &dsz, src + spos, &ssz, NULL);
    if (LZ4F_isError(r))
      return sl_error_set(d->error,
                          LZ4F_getErrorCode(r) == LZ4F_ERROR_allocation_failed ? ENOMEM : EILSEQ, "%s: offset %" PRId64 ": buffer %" PRId64 ": lz4: %s",
                          d->where->name, d->where->offset, index, LZ4F_getErrorName(r));
    dpos += dsz;
    spos += ssz;
    if (r == 0) break;
    if ((dsz == 0 && ssz == 0) || spos == clen)
      return dec_fail(d, EILSEQ, "buffer %" PRId64 ": lz4 frame truncated or larger than the "
                      "declared %" PRId64 " bytes", index, (int64_t)ulen);
  }
  if (dpos != ulen)
    return dec_fail(d, EILSEQ, "buffer %" PRId64 " decompresses to %" PRId64
                    " bytes, header says %" PRId64, index, (int64_t)dpos, (int64_t)ulen);
  return 0;
}

/// A buffer of the message body, decompressed if need be: `owned` (of
/// `capacity` bytes) when it had to be, else `data` points into the body.
struct body_buffer {
  const uint8_t* data;
  int64_t size;
  void* owned;
  size_t capacity;
};

/// Reads the next buffer of the message. `want` = 0 only measures it (a
/// compressed buffer is then not decompressed).
static int next_buffer(struct decoder* d, int want, struct body_buffer* out) {
  int64_t index = d->buffer_i++;
  *out = (struct body_buffer){0};
  if (index >= d->buffers.count)
    return dec_fail(d, EILSEQ, "record batch declares %" PRId64 " buffers, the schema needs more",
                    (int64_t)d->buffers.count);
  const uint8_t* e = sl_fb_vec_elem(&d->buffers, (uint32_t)index);
  int64_t off = fb_load_i64(e), len = fb_load_i64(e + 8);
  if (off < 0 || len < 0 || off > d->body->size || len > d->body->size - off)
    return dec_fail(d, EILSEQ, "record batch buffer %" PRId64 " extends past message body "
                    "(offset %" PRId64 " + length %" PRId64 " > %" PRId64 ")",
                    index, off, len, d->body->size);
  const uint8_t* src = d->body->data + off;
  int64_t size = len;
  if (len == 0) {
    src = (const uint8_t*)k_empty;
  } else if (d->codec >= 0) {
    if (len < 8)
      return dec_fail(d, EILSEQ, "compressed buffer %" PRId64 " is %" PRId64
                      " bytes, shorter than its length prefix", index, len);
    int64_t ulen = fb_load_i64(src);
    if (ulen == -1) {
      src += 8;
      size = len - 8;
    } else if (ulen < 0 || (uint64_t)ulen > SIZE_MAX / 2) {
      return dec_fail(d, EILSEQ, "compressed buffer %" PRId64 " has bad uncompressed length %" PRId64, index, ulen);
    } else if (!sl_codec_claim_fits(len - 8, ulen, d->codec == IPC_COMPRESSION_ZSTD
                                                        ? SL_ZSTD_MAX_RATIO
                                                        : SL_LZ4_MAX_RATIO)) {
      // A claim past what the codec can expand to is forged, and believing
      // it would allocate without bound.
      return dec_fail(d, EILSEQ, "compressed buffer %" PRId64 " claims %" PRId64 " bytes from %"
                      PRId64 " compressed bytes, more than the codec can expand", index, ulen, len - 8);
    } else if (ulen == 0) {
      src = (const uint8_t*)k_empty;
      size = 0;
    } else if (!want) {
      size = ulen;  // not needed: skip the work
    } else {
      out->capacity = (size_t)ulen;
      out->owned = sl_alloc_buffer(d->alloc, out->capacity);
      if (out->owned == NULL)
        return sl_error_set(d->error, ENOMEM, "%s: offset %" PRId64 ": out of memory "
                            "decompressing buffer %" PRId64 " (%" PRId64 " bytes)",
                            d->where->name, d->where->offset, index, ulen);
      int rc = decompress(d, index, src + 8, (size_t)len - 8, out->owned, out->capacity);
      if (rc != 0) {
        sl_free_buffer(d->alloc, out->owned, out->capacity);
        out->owned = NULL;
        return rc;
      }
      src = out->owned;
      size = ulen;
    }
  }
  out->data = src;
  out->size = size;
  return 0;
}

/// Takes the next buffer of the message and makes it buffer `slot` of `out`
/// (slot < 0: consume and drop it). `keep` = 0 drops it too (validity of a
/// node without nulls). Records its size for validation.
static int take_buffer(struct decoder* d, struct ArrowArray* out, int64_t slot, int keep,
                       int64_t* size_out) {
  struct body_buffer b;
  SL_RETURN_NOT_OK(next_buffer(d, keep && slot >= 0, &b));
  *size_out = b.size;
  if (slot < 0 || !keep) return 0;
  if (b.owned != NULL) {
    sl_array_set_buffer_owned(out, slot, b.owned, (int64_t)b.capacity);
  } else if (b.size > 0 && ((uintptr_t)b.data & 7u) != 0) {
    // A hostile or odd writer can misalign a buffer; consumers load values
    // with aligned accesses, so such buffers are copied.
    void* owned = sl_alloc_buffer(d->alloc, (size_t)b.size);
    if (owned == NULL)
      return sl_error_set(d->error, ENOMEM, "%s: out of memory", d->where->name);
    memcpy(owned, b.data, (size_t)b.size);
    sl_array_set_buffer_owned(out, slot, owned, b.size);
  } else {
    sl_array_set_buffer_view(out, slot, b.data,
                             b.data == (const uint8_t*)k_empty ? NULL : d->body->owner);
  }
  return 0;
}

static void release_buffers(struct decoder* d, struct body_buffer* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (b[i].owned != NULL) sl_free_buffer(d->alloc, b[i].owned, b[i].capacity);
  }
}

/// Copies the strings of `length` views into offsets + data (slots 1 and 2
/// of `out`, whose validity is set). Views of null slots are not read: the
/// format leaves them undefined.
static int views_to_offsets(struct decoder* d, int64_t node, const struct body_buffer* views,
                            const struct body_buffer* data, int64_t n_data, int64_t length,
                            struct ArrowArray* out, struct size_entry* se) {
  const uint8_t* valid = out->buffers[0];
  int64_t total = 0;
  for (int64_t i = 0; i < length; ++i) {
    if (valid != NULL && !((valid[i >> 3] >> (i & 7)) & 1)) continue;
    const uint8_t* v = views->data + i * 16;
    int32_t len = fb_load_i32(v);
    if (len < 0)
      return node_fail(d, node, "view %" PRId64 " has negative length %" PRId64, i,
                       (int64_t)len);
    if (len > 12) {
      int32_t which = fb_load_i32(v + 8), at = fb_load_i32(v + 12);
      if (which < 0 || which >= n_data || at < 0 || len > data[which].size - at)
        return node_fail(d, node, "view %" PRId64 " (%" PRId64
                        " bytes at %" PRId64 " of data buffer %" PRId64 ") is outside the %"
                        PRId64 " data buffers", i, (int64_t)len, (int64_t)at,
                        (int64_t)which, n_data);
    }
    if (len > INT64_MAX - total)  // views may share bytes: bound the sum
      return node_fail(d, node, "views add up to more than 2^63 bytes");
    total += len;
  }
  size_t offsets_size = (size_t)(length + 1) * sizeof(int64_t);
  int64_t* offsets = sl_alloc_buffer(d->alloc, offsets_size);
  uint8_t* bytes = sl_alloc_buffer(d->alloc, total > 0 ? (size_t)total : 1);
  if (offsets == NULL || bytes == NULL) {
    sl_free_buffer(d->alloc, offsets, offsets_size);
    sl_free_buffer(d->alloc, bytes, total > 0 ? (size_t)total : 1);
    return sl_error_set(d->error, ENOMEM, "%s: out of memory", d->where->name);
  }
  int64_t end = 0;
  offsets[0] = 0;
  for (int64_t i = 0; i < length; ++i) {
    if (valid == NULL || ((valid[i >> 3] >> (i & 7)) & 1)) {
      const uint8_t* v = views->data + i * 16;
      int32_t len = fb_load_i32(v);
      const uint8_t* src = len <= 12 ? v + 4 : data[fb_load_i32(v + 8)].data + fb_load_i32(v + 12);
      memcpy(bytes + end, src, (size_t)len);
      end += len;
    }
    offsets[i + 1] = end;
  }
  sl_array_set_buffer_owned(out, 1, offsets, (int64_t)offsets_size);
  sl_array_set_buffer_owned(out, 2, bytes, total > 0 ? total : 1);
  se->size[1] = (int64_t)offsets_size;
  se->size[2] = total;
  return 0;
}

/// A BinaryView / Utf8View node (polars writes strings so by default) is
/// read as large_binary / large_utf8: every consumer in sluice reads offsets
/// + data, and a view's data can sit anywhere in any of its buffers. The
/// cost is one copy of the strings.
static int decode_views(struct decoder* d, int64_t node, int64_t length, struct ArrowArray* out,
                        struct size_entry* se) {
  // The validity (buffer 0, taken) is read by the copy before validation
  // would check it: check its length here.
  if (out->buffers[0] != NULL && se->size[0] < length / 8 + (length % 8 != 0))
    return node_fail(d, node, "validity buffer of %" PRId64 " bytes is "
                    "too short for %" PRId64 " rows", se->size[0], length);
  int64_t which = d->view_i++;
  int64_t n_data = which < d->variadic.count ? fb_load_i64(sl_fb_vec_elem(&d->variadic, (uint32_t)which)) : 0;
  if (n_data < 0 || n_data > d->buffers.count - d->buffer_i - 1)
    return node_fail(d, node, "%" PRId64 " variadic data buffers, the "
                    "record batch has %" PRId64 " buffers", n_data, (int64_t)d->buffers.count);
  struct body_buffer* b = sl_calloc(d->alloc, (size_t)n_data + 1, sizeof *b);
  if (b == NULL) return sl_error_set(d->error, ENOMEM, "%s: out of memory", d->where->name);
  int rc = 0;
  int64_t got = 0;
  for (; rc == 0 && got < n_data + 1; ++got) rc = next_buffer(d, 1, &b[got]);
  if (rc == 0 && b[0].size / 16 < length)
    rc = node_fail(d, node, "views buffer of %" PRId64 " bytes is too "
                  "short for %" PRId64 " views", b[0].size, length);
  if (rc == 0) rc = views_to_offsets(d, node, &b[0], b + 1, n_data, length, out, se);
  release_buffers(d, b, got);
  sl_free(d->alloc, b, ((size_t)n_data + 1) * sizeof *b);
  return rc;
}

/// decimal32 / decimal64 values (4 or 8 bytes each) become decimal128 ones,
/// sign-extended: sluice's decimals are 128 or 256 bits wide, as pyarrow's
/// were until these narrower types arrived.
static int widen_decimals(struct decoder* d, int32_t bits, int64_t node, int64_t length,
                          struct ArrowArray* out, struct size_entry* se) {
  struct body_buffer b;
  SL_RETURN_NOT_OK(next_buffer(d, 1, &b));
  int64_t width = bits / 8;
  int rc = 0;
  if (b.size / width < length) {
    rc = node_fail(d, node, "values buffer of %" PRId64 " bytes is too "
                  "short for %" PRId64 " values of %d bits", b.size, length, (int)bits);
  } else {
    size_t size = length > 0 ? (size_t)length * 16 : 1;
    uint8_t* wide = sl_alloc_buffer(d->alloc, size);
    if (wide == NULL) {
      rc = sl_error_set(d->error, ENOMEM, "%s: out of memory", d->where->name);
    } else {
      for (int64_t i = 0; i < length; ++i) {
        int64_t v = width == 4 ? (int64_t)fb_load_i32(b.data + i * 4) : fb_load_i64(b.data + i * 8);
        int64_t high = v < 0 ? -1 : 0;
        memcpy(wide + i * 16, &v, 8);  // little-endian: low half first
        memcpy(wide + i * 16 + 8, &high, 8);
      }
      sl_array_set_buffer_owned(out, 1, wide, (int64_t)size);
      se->size[1] = length * 16;
    }
  }
  if (b.owned != NULL) sl_free_buffer(d->alloc, b.owned, b.capacity);
  return rc;
}

/// How much of child i of `f` (at `depth`, kept as `use` says) is decoded:
/// only a plain struct is kept in part (as find_unsupported walks it).
static enum ipc_use child_use(struct decoder* d, const struct ipc_field* f, int64_t depth,
                              enum ipc_use use, int64_t i) {
  if (use != IPC_USE_SOME || f->kind != IPC_KIND_STRUCT || f->dict_id >= 0 ||
      depth >= IPC_MAX_DEPTH)
    return IPC_USE_ALL;
  d->at[depth + 1] = i;
  return sl_ipc_field_use(d->fields, d->column, d->at, depth + 1);
}

/// A struct field the scan does not keep (beside the fields asked): its
/// nodes and buffers are stepped over, whatever its type (one sluice cannot
/// read too), and it reads as `length` nulls of type null, which the scan
/// drops (validated as such: decoded_schema).
static int skip_field(struct decoder* d, const struct ipc_field* f, int64_t length,
                      struct ArrowArray* out) {
  d->node_i += f->n_nodes;
  d->buffer_i += f->n_buffers + (d->v4 ? f->n_unions : 0);
  for (int64_t k = 0; k < f->n_views; ++k) {  // the views' data buffers
    int64_t at = d->view_i + k;
    int64_t extra =
        at < d->variadic.count ? fb_load_i64(sl_fb_vec_elem(&d->variadic, (uint32_t)at)) : 0;
    d->buffer_i = extra < 0 || extra > d->buffers.count ? d->buffers.count : d->buffer_i + extra;
  }
  d->view_i += f->n_views;
  SL_RETURN_NOT_OK(sl_array_init(out, d->alloc, 0, 0, d->error));
  out->length = length;
  out->null_count = length;
  return 0;
}

static int decode_field(struct decoder* d, const struct ipc_field* f,
                        const struct ArrowSchema* s, struct ArrowArray* out, int64_t depth,
                        enum ipc_use use) {
  static const int8_t k_c_buffers[] = {
    [IPC_KIND_NULL] = 0, [IPC_KIND_FIXED] = 2, [IPC_KIND_VARBIN] = 3, [IPC_KIND_LIST] = 2,
    [IPC_KIND_FIXED_LIST] = 1, [IPC_KIND_STRUCT] = 1, [IPC_KIND_SPARSE_UNION] = 1,
    [IPC_KIND_DENSE_UNION] = 2, [IPC_KIND_RUN_END] = 0, [IPC_KIND_LIST_VIEW] = 0,
  };
  // Callers refuse such columns first (sl_ipc_unsupported_error); a struct
  // kept in part holds them only among the fields it leaves out.
  if (f->unsupported && use == IPC_USE_ALL)
    return dec_fail(d, ENOTSUP, "field '%s' cannot be decoded", d->path);
  int64_t node = d->node_i++;
  // Name the field in messages: its path from the column (restored on
  // success; an error ends the decode).
  size_t parent_len = d->path_len;
  if (s->name != NULL && s->name[0] != '\0' && d->path_len < sizeof d->path - 1) {
    int n = snprintf(d->path + d->path_len, sizeof d->path - d->path_len, "%s%s",
                     d->path_len > 0 ? "." : "", s->name);
    if (n > 0) d->path_len += (size_t)n;
    if (d->path_len > sizeof d->path - 1) d->path_len = sizeof d->path - 1;
  }
  if (node >= d->nodes.count)
    return dec_fail(d, EILSEQ, "record batch declares %" PRId64 " field nodes, the schema needs "
                    "more", (int64_t)d->nodes.count);
  const uint8_t* e = sl_fb_vec_elem(&d->nodes, (uint32_t)node);
  int64_t length = fb_load_i64(e), nulls = fb_load_i64(e + 8);
  if (length < 0 || nulls < 0 || nulls > length)
    return node_fail(d, node, "length %" PRId64 " and null count %" PRId64, length, nulls);
  SL_RETURN_NOT_OK(sl_array_init(out, d->alloc, k_c_buffers[f->kind], f->n_children, d->error));
  out->length = length;
  out->null_count = nulls;
  if (d->n_sizes >= d->cap_sizes)  // cannot happen: capacity is the node count
    return dec_fail(d, EILSEQ, "internal: too many nodes");
  struct size_entry* se = &d->sizes[d->n_sizes++];
  se->node = out;
  se->size[0] = se->size[1] = se->size[2] = -1;
  int has_nulls = nulls > 0;
  switch (f->kind) {
    case IPC_KIND_NULL:
      out->null_count = length;
      break;
    case IPC_KIND_FIXED: {
      SL_RETURN_NOT_OK(take_buffer(d, out, 0, has_nulls, &se->size[0]));
      if (f->stored_width != 0) {
        SL_RETURN_NOT_OK(widen_decimals(d, f->stored_width, node, length, out, se));
        break;
      }
      SL_RETURN_NOT_OK(take_buffer(d, out, 1, 1, &se->size[1]));
      // Checked here by division too: length * width may not fit in 64 bits.
      int64_t width = f->bit_width / 8;
      int64_t fits = length;  // zero-width fixed_size_binary holds anything
      if (f->bit_width == 1) fits = se->size[1] > INT64_MAX / 8 ? INT64_MAX : se->size[1] * 8;
      else if (width > 0) fits = se->size[1] / width;
      if (fits < length)
        return node_fail(d, node, "values buffer of %" PRId64 " bytes is too short for %"
                         PRId64 " values of %d bits", se->size[1], length, (int)f->bit_width);
      break;
    }
    case IPC_KIND_VARBIN:
    case IPC_KIND_LIST:
      SL_RETURN_NOT_OK(take_buffer(d, out, 0, has_nulls, &se->size[0]));
      if (f->is_view) {
        SL_RETURN_NOT_OK(decode_views(d, node, length, out, se));
        break;
      }
      SL_RETURN_NOT_OK(take_buffer(d, out, 1, 1, &se->size[1]));
      if (se->size[1] == 0 && length == 0) se->size[1] = (int64_t)sizeof k_empty;
      if (f->kind == IPC_KIND_VARBIN) SL_RETURN_NOT_OK(take_buffer(d, out, 2, 1, &se->size[2]));
      break;
    case IPC_KIND_FIXED_LIST:
    case IPC_KIND_STRUCT:
      SL_RETURN_NOT_OK(take_buffer(d, out, 0, has_nulls, &se->size[0]));
      break;
    case IPC_KIND_SPARSE_UNION:
    case IPC_KIND_DENSE_UNION: {
      int64_t ignored;
      // Unions have no validity in the C Data Interface (nor in V5 IPC).
      out->null_count = 0;
      if (d->v4) SL_RETURN_NOT_OK(take_buffer(d, out, -1, 0, &ignored));
      SL_RETURN_NOT_OK(take_buffer(d, out, 0, 1, &se->size[0]));
      if (f->kind == IPC_KIND_DENSE_UNION) SL_RETURN_NOT_OK(take_buffer(d, out, 1, 1, &se->size[1]));
      break;
    }
    case IPC_KIND_RUN_END:
    case IPC_KIND_LIST_VIEW:
      break;  // refused above
  }
  for (int64_t i = 0; i < f->n_children; ++i) {
    enum ipc_use kept = child_use(d, f, depth, use, i);
    if (kept == IPC_USE_NONE)
      SL_RETURN_NOT_OK(skip_field(d, &f->children[i], length, out->children[i]));
    else
      SL_RETURN_NOT_OK(decode_field(d, &f->children[i], s->children[i], out->children[i],
                                    depth + 1, kept));
  }
  if (f->dict_id >= 0) {
    int64_t k = sl_ipc_schema_find_dict(d->schema, f->dict_id);
    const struct ipc_dict_value* v = k >= 0 && k < d->memo->n ? d->memo->values[k] : NULL;
    if (v == NULL)
      return dec_fail(d, EILSEQ, "field '%s' uses dictionary id %" PRId64
                      " before any DictionaryBatch defined it", d->path, f->dict_id);
    SL_RETURN_NOT_OK(sl_array_alloc_dictionary(out, d->error));
    SL_RETURN_NOT_OK(sl_ipc_array_view(&v->array, (struct sl_ref*)&v->ref, d->alloc,
                                    out->dictionary, d->error));
  }
  d->path_len = parent_len;
  d->path[parent_len] = '\0';
  return 0;
}

/// Shallow schema nodes for decoded_schema, `cap` of each.
struct schema_nodes {
  struct ArrowSchema* nodes;
  struct ArrowSchema** children;
  int64_t n_nodes, n_children, cap;
};

/// Column schema `s` as the decoder read it (`f`, kept as `use` says): the
/// fields left out become type null. Shallow copies (the validator only
/// reads them) from `pool`, which holds the column's node count.
static const struct ArrowSchema* decoded_schema(struct decoder* d, struct schema_nodes* pool,
                                                const struct ipc_field* f,
                                                const struct ArrowSchema* s, int64_t depth,
                                                enum ipc_use use) {
  if (use == IPC_USE_ALL) return s;
  if (pool->n_nodes >= pool->cap || pool->n_children + s->n_children > pool->cap) return NULL;
  struct ArrowSchema* node = &pool->nodes[pool->n_nodes++];
  *node = *s;
  if (use == IPC_USE_NONE) {
    node->format = "n";
    node->n_children = 0;
    node->children = NULL;
    node->dictionary = NULL;
    return node;
  }
  node->children = &pool->children[pool->n_children];
  pool->n_children += s->n_children;
  for (int64_t i = 0; i < s->n_children; ++i) {
    const struct ArrowSchema* c =
        decoded_schema(d, pool, &f->children[i], s->children[i], depth + 1,
                       child_use(d, f, depth, use, i));
    if (c == NULL) return NULL;
    node->children[i] = (struct ArrowSchema*)(uintptr_t)c;  // read only
  }
  return node;
}

static int validate(struct decoder* d, const struct ArrowSchema* s, const struct ArrowArray* a) {
  struct sl_buffer_sizes sizes = {.size_of = size_of, .ctx = d};
  // UTF-8 too, as the CSV and Parquet readers check it: a utf8 column of
  // other bytes would be written on as text no reader takes back. The
  // dictionaries come from the memo, each validated in full as it was read
  // (a delta's new values too): checking them again per batch cost a stream
  // of many small deltas its whole dictionary per batch.
  int rc = sl_array_validate_shared_dicts(s, a, SL_VALIDATE_FULL_UTF8, &sizes, d->error);
  if (rc != 0) sl_error_prefix(d->error, "%s: offset %" PRId64, d->where->name, d->where->offset);
  return rc;
}

int sl_ipc_decode_record_batch(const struct ipc_schema* schema, const struct ipc_dict_memo* memo,
                            const struct ipc_message* msg, const struct ipc_body* body,
                            const int64_t* columns, int64_t n_columns,
                            const struct sl_split_fields* fields,
                            const struct ipc_where* where, struct ArrowArray* out,
                            struct sluice_error* error) {
  struct decoder d = {.alloc = schema->alloc, .where = where, .schema = schema, .memo = memo,
                      .body = body, .error = error, .fields = fields};
  const struct ipc_field* root = &schema->root;
  int64_t n = columns ? n_columns : root->n_children;
  int64_t need = 0, length;
  out->release = NULL;
  for (int64_t i = 0; i < n; ++i) {
    int64_t col = columns ? columns[i] : i;
    if (col < 0 || col >= root->n_children)
      return sl_error_set(error, EINVAL, "%s: column index %" PRId64 " out of range (%" PRId64 " columns)",
                          where->name, col, root->n_children);
    // Only columns asked for are decoded: the others' nodes and buffers are
    // stepped over by their counts (node_start, buffer_start, view_start).
    if (root->children[col].unsupported &&
        sl_ipc_unsupported_error(schema, col, fields, where->name, error) != 0)
      return ENOTSUP;
    need += root->children[col].n_nodes;
  }
  if (sl_fb_read_i64(&msg->header, IPC_RECORD_BATCH_LENGTH, 0, &length) < 0)
    return sl_ipc_fb_error(msg->header.buf, where, "RecordBatch", error);
  if (length < 0)
    return sl_error_set(error, EILSEQ, "%s: offset %" PRId64 ": negative record batch length %" PRId64,
                        where->name, where->offset, length);
  int rc = dec_init(&d, &msg->header, msg->version, need > 0 ? need : 1);
  if (rc == 0) rc = sl_array_init(out, d.alloc, 1, n, error);
  if (rc == 0) out->length = length;
  for (int64_t i = 0; rc == 0 && i < n; ++i) {
    int64_t col = columns ? columns[i] : i;
    const struct ipc_field* f = &root->children[col];
    d.node_i = f->node_start;
    d.buffer_i = f->buffer_start + (d.v4 ? f->union_start : 0);
    // The data buffers of the view fields before this column come first.
    d.view_i = f->view_start;
    for (int64_t k = 0; k < f->view_start && k < d.variadic.count; ++k) {
      int64_t extra = fb_load_i64(sl_fb_vec_elem(&d.variadic, (uint32_t)k));
      d.buffer_i = extra < 0 || extra > d.buffers.count ? d.buffers.count : d.buffer_i + extra;
    }
    d.column = col;
    rc = decode_field(&d, f, schema->schema.children[col], out->children[i], 0,
                      sl_ipc_field_use(fields, col, d.at, 0));
    // Longer is as wrong as shorter (pyarrow refuses both): the rows past
    // the batch's length were dropped without a word.
    if (rc == 0 && out->children[i]->length != length)
      rc = sl_error_set(error, EILSEQ, "%s: offset %" PRId64 ": column '%s' has %" PRId64
                        " rows, the record batch %" PRId64, where->name, where->offset,
                        schema->schema.children[col]->name, out->children[i]->length, length);
  }
  for (int64_t i = 0; rc == 0 && i < n; ++i) {
    int64_t col = columns ? columns[i] : i;
    const struct ArrowSchema* s = schema->schema.children[col];
    enum ipc_use use = sl_ipc_field_use(fields, col, d.at, 0);
    if (use == IPC_USE_ALL) {
      rc = validate(&d, s, out->children[i]);
      continue;
    }
    d.column = col;
    int64_t cap = root->children[col].n_nodes;
    struct schema_nodes pool = {sl_alloc(d.alloc, (size_t)cap * sizeof *pool.nodes),
                                sl_alloc(d.alloc, (size_t)cap * sizeof *pool.children), 0, 0, cap};
    const struct ArrowSchema* as_read = NULL;
    if (pool.nodes == NULL || pool.children == NULL)
      rc = sl_error_set(error, ENOMEM, "%s: out of memory", where->name);
    else if ((as_read = decoded_schema(&d, &pool, &root->children[col], s, 0, use)) == NULL)
      rc = dec_fail(&d, EILSEQ, "internal: column '%s' has more fields than nodes", s->name);
    if (rc == 0) rc = validate(&d, as_read, out->children[i]);
    sl_free(d.alloc, pool.nodes, (size_t)cap * sizeof *pool.nodes);
    sl_free(d.alloc, pool.children, (size_t)cap * sizeof *pool.children);
  }
  dec_reset(&d);
  if (rc != 0 && out->release != NULL) out->release(out);
  return rc;
}

/// Index of the first buffer of top-level field `f` in a record batch: its
/// V5 position, plus the union validity buffers of older metadata and the
/// variadic data buffers of the view fields before it.
static int64_t first_buffer(const struct decoder* d, const struct ipc_field* f) {
  int64_t at = f->buffer_start + (d->v4 ? f->union_start : 0);
  for (int64_t k = 0; k < f->view_start && k < d->variadic.count; ++k) {
    int64_t extra = fb_load_i64(sl_fb_vec_elem(&d->variadic, (uint32_t)k));
    at = extra < 0 || extra > d->buffers.count ? d->buffers.count : at + extra;
  }
  return at;
}

int sl_ipc_record_batch_spans(const struct ipc_schema* schema, const struct ipc_message* msg,
                           const int64_t* columns, int64_t n_columns,
                           const struct ipc_where* where, struct ipc_span* spans,
                           int64_t* n_spans, struct sluice_error* error) {
  struct decoder d = {.alloc = schema->alloc, .where = where, .schema = schema, .error = error};
  const struct ipc_field* root = &schema->root;
  *n_spans = 0;
  int rc = dec_init(&d, &msg->header, msg->version, 1);
  for (int64_t i = 0; rc == 0 && i < n_columns; ++i) {
    int64_t col = columns[i];
    if (col < 0 || col >= root->n_children) {
      rc = sl_error_set(error, EINVAL, "%s: column index %" PRId64 " out of range", where->name,
                        col);
      break;
    }
    // Buffers are laid out field by field, depth first: a column's run ends
    // where the next column's starts.
    int64_t b0 = first_buffer(&d, &root->children[col]);
    int64_t b1 = col + 1 < root->n_children ? first_buffer(&d, &root->children[col + 1])
                                            : (int64_t)d.buffers.count;
    struct ipc_span span = {INT64_MAX, 0};
    for (int64_t b = b0; b < b1 && b < (int64_t)d.buffers.count; ++b) {
      const uint8_t* e = sl_fb_vec_elem(&d.buffers, (uint32_t)b);
      int64_t off = fb_load_i64(e), len = fb_load_i64(e + 8);
      if (off < 0 || len < 0 || off > msg->body_length || len > msg->body_length - off) {
        rc = dec_fail(&d, EILSEQ, "record batch buffer %" PRId64 " extends past message body "
                      "(offset %" PRId64 " + length %" PRId64 " > %" PRId64 ")",
                      b, off, len, msg->body_length);
        break;
      }
      if (len == 0) continue;
      if (off < span.start) span.start = off;
      if (off + len > span.end) span.end = off + len;
    }
    if (rc == 0 && span.end > span.start) spans[(*n_spans)++] = span;
  }
  dec_reset(&d);
  return rc;
}

int sl_ipc_decode_dictionary_values(const struct ipc_schema* schema,
                                 const struct ipc_dict_memo* memo, const struct fb_table* rb,
                                 int16_t version, const struct ipc_body* body,
                                 const struct ipc_field* field,
                                 const struct ArrowSchema* field_schema, const char* column,
                                 const struct ipc_where* where, struct ArrowArray* out,
                                 struct sluice_error* error) {
  struct decoder d = {.alloc = schema->alloc, .where = where, .schema = schema, .memo = memo,
                      .body = body, .error = error};
  out->release = NULL;
  // Messages name the dictionary by the column it belongs to.
  char name[sizeof d.path];
  snprintf(name, sizeof name, "%.140s.<dictionary>", column);
  memcpy(d.path, name, sizeof name);
  d.path_len = strlen(d.path);
  struct ArrowSchema named = *field_schema;  // shallow: validation only reads it
  named.name = name;
  int rc = dec_init(&d, rb, version, field->n_nodes);
  if (rc == 0) rc = decode_field(&d, field, field_schema, out, 0, IPC_USE_ALL);
  if (rc == 0) rc = validate(&d, &named, out);
  dec_reset(&d);
  if (rc != 0 && out->release != NULL) out->release(out);
  return rc;
}
