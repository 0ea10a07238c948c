#include "sl_array_scatter.h"

#include <errno.h>
#include <string.h>

#include "sl_alloc.h"
#include "sl_array.h"
#include "sl_error.h"
#include "sl_read.h"
#include "sl_type.h"

/// Bytes per value of a fixed-width column (0 for bool, -1 for
/// variable-width, -2 unsupported).
static int64_t value_width(const struct ArrowSchema* child) {
  if (child->dictionary != NULL || child->n_children != 0) return -2;
  struct sl_type type;
  struct sluice_error ignored;
  if (sl_type_parse(child->format, &type, &ignored) != 0) return -2;
  switch (type.id) {
    case SL_TYPE_BOOL: return 0;
    case SL_TYPE_STRING: case SL_TYPE_BINARY: case SL_TYPE_LARGE_STRING:
    case SL_TYPE_LARGE_BINARY:
      return -1;
    case SL_TYPE_NA: case SL_TYPE_LIST: case SL_TYPE_LARGE_LIST: case SL_TYPE_FIXED_SIZE_LIST:
    case SL_TYPE_STRUCT: case SL_TYPE_MAP: case SL_TYPE_DENSE_UNION: case SL_TYPE_SPARSE_UNION:
    case SL_TYPE_COUNT:
      return -2;
    default: {
      int64_t bits = sl_type_bit_width(&type);
      return bits > 0 && bits % 8 == 0 ? bits / 8 : -2;
    }
  }
}

int sl_array_scatter_supported(const struct ArrowSchema* schema) {
  if (schema->n_children <= 0) return 0;
  for (int64_t c = 0; c < schema->n_children; c++) {
    if (value_width(schema->children[c]) == -2) return 0;
  }
  return 1;
}

/// Deals bits src[first + r] out to the bitmaps dst[dest[r]] (zeroed);
/// zeros[l] += unset bits dealt to l when `zeros` is not NULL.
static void scatter_bits(const uint8_t* src, int64_t first, int64_t n, const int64_t* dest,
                         uint8_t** dst, int64_t* pos, int64_t* zeros) {
  for (int64_t r = 0; r < n; r++) {
    int64_t l = dest[r], at = pos[l]++;
    if (sl_bit_get(src, first + r)) {
      dst[l][at >> 3] |= (uint8_t)(1u << (at & 7));
    } else if (zeros != NULL) {
      zeros[l]++;
    }
  }
}

/// Scratch of one scatter, n_out entries each.
struct scatter_scratch {
  uint8_t** dst;
  int64_t* pos;
  int64_t* zeros;
  int64_t* bytes;
};

/// New zeroed bitmaps of counts[l] bits, owned by buffer `i` of each
/// out[l]'s child `c`; their pointers in dst.
static int new_bitmaps(struct ArrowArray* out, int64_t c, int64_t i, const int64_t* counts,
                       int64_t n_out, const struct sluice_allocator* alloc, uint8_t** dst) {
  for (int64_t l = 0; l < n_out; l++) {
    size_t size = (size_t)(counts[l] + 7) / 8;
    dst[l] = sl_alloc_buffer(alloc, size > 0 ? size : 1);
    if (dst[l] == NULL) return ENOMEM;
    memset(dst[l], 0, size > 0 ? size : 1);
    sl_array_set_buffer_owned(out[l].children[c], i, dst[l], (int64_t)(size > 0 ? size : 1));
  }
  return 0;
}

static int scatter_column(const struct ArrowSchema* schema, const struct ArrowArray* col,
                          int64_t c, const int64_t* dest, const int64_t* counts, int64_t n_out,
                          struct ArrowArray* out, struct scatter_scratch* s,
                          const struct sluice_allocator* alloc) {
  int64_t width = value_width(schema);
  int64_t n = col->length, first = col->offset;
  int64_t n_buffers = width == -1 ? 3 : 2;
  for (int64_t l = 0; l < n_out; l++) {
    struct sluice_error e;
    if (sl_array_init(out[l].children[c], alloc, n_buffers, 0, &e) != 0) return ENOMEM;
    out[l].children[c]->length = counts[l];
  }
  // Validity, when some value is null.
  if (col->null_count != 0 && col->buffers[0] != NULL) {
    SL_RETURN_NOT_OK(new_bitmaps(out, c, 0, counts, n_out, alloc, s->dst));
    memset(s->pos, 0, (size_t)n_out * sizeof *s->pos);
    memset(s->zeros, 0, (size_t)n_out * sizeof *s->zeros);
    scatter_bits(col->buffers[0], first, n, dest, s->dst, s->pos, s->zeros);
    for (int64_t l = 0; l < n_out; l++) out[l].children[c]->null_count = s->zeros[l];
  }
  memset(s->pos, 0, (size_t)n_out * sizeof *s->pos);
  if (width == 0) {  // bool values
    SL_RETURN_NOT_OK(new_bitmaps(out, c, 1, counts, n_out, alloc, s->dst));
    scatter_bits(col->buffers[1], first, n, dest, s->dst, s->pos, NULL);
    return 0;
  }
  if (width > 0) {
    for (int64_t l = 0; l < n_out; l++) {
      size_t size = (size_t)(counts[l] * width);
      s->dst[l] = sl_alloc_buffer(alloc, size > 0 ? size : 1);
      if (s->dst[l] == NULL) return ENOMEM;
      sl_array_set_buffer_owned(out[l].children[c], 1, s->dst[l], (int64_t)(size > 0 ? size : 1));
    }
    const uint8_t* src = (const uint8_t*)col->buffers[1] + first * width;
    if (width == 8) {
      for (int64_t r = 0; r < n; r++) {
        int64_t l = dest[r];
        memcpy(s->dst[l] + 8 * s->pos[l]++, src + 8 * r, 8);
      }
    } else if (width == 4) {
      for (int64_t r = 0; r < n; r++) {
        int64_t l = dest[r];
        memcpy(s->dst[l] + 4 * s->pos[l]++, src + 4 * r, 4);
      }
    } else {
      for (int64_t r = 0; r < n; r++) {
        int64_t l = dest[r];
        memcpy(s->dst[l] + width * s->pos[l]++, src + width * r, (size_t)width);
      }
    }
    return 0;
  }
  // Strings and binary: the bytes each output gets, then offsets and bytes.
  int large = schema->format[0] == 'U' || schema->format[0] == 'Z';
  const int32_t* o32 = col->buffers[1];
  const int64_t* o64 = col->buffers[1];
  const uint8_t* data = col->buffers[2];
  memset(s->bytes, 0, (size_t)n_out * sizeof *s->bytes);
  for (int64_t r = 0; r < n; r++) {
    int64_t i = first + r;
    s->bytes[dest[r]] += large ? o64[i + 1] - o64[i] : (int64_t)o32[i + 1] - o32[i];
  }
  uint8_t** offsets = s->dst;  // the offsets buffers here; the data's below
  for (int64_t l = 0; l < n_out; l++) {
    if (!large && s->bytes[l] > INT32_MAX) return EOVERFLOW;
    size_t osize = (size_t)(counts[l] + 1) * (large ? 8 : 4);
    offsets[l] = sl_alloc_buffer(alloc, osize);
    uint8_t* bytes = sl_alloc_buffer(alloc, s->bytes[l] > 0 ? (size_t)s->bytes[l] : 1);
    if (offsets[l] != NULL) sl_array_set_buffer_owned(out[l].children[c], 1, offsets[l], (int64_t)osize);
    if (bytes != NULL) {
      sl_array_set_buffer_owned(out[l].children[c], 2, bytes,
                                s->bytes[l] > 0 ? s->bytes[l] : 1);
    }
    if (offsets[l] == NULL || bytes == NULL) return ENOMEM;
    memset(offsets[l], 0, large ? 8 : 4);  // the first offset
    s->bytes[l] = 0;  // now: bytes written so far
  }
  for (int64_t r = 0; r < n; r++) {
    int64_t l = dest[r], i = first + r;
    int64_t start = large ? o64[i] : o32[i];
    int64_t len = large ? o64[i + 1] - start : o32[i + 1] - start;
    uint8_t* bytes = (uint8_t*)out[l].children[c]->buffers[2];
    memcpy(bytes + s->bytes[l], data + start, (size_t)len);
    s->bytes[l] += len;
    int64_t at = ++s->pos[l];
    if (large) {
      memcpy(offsets[l] + 8 * at, &s->bytes[l], 8);
    } else {
      int32_t end = (int32_t)s->bytes[l];
      memcpy(offsets[l] + 4 * at, &end, 4);
    }
  }
  return 0;
}

int sl_array_scatter(const struct ArrowSchema* schema, const struct ArrowArray* in,
                     const int64_t* dest, const int64_t* counts, int64_t n_out,
                     const struct sluice_allocator* alloc, struct ArrowArray* out,
                     struct sluice_error* error) {
  for (int64_t l = 0; l < n_out; l++) out[l].release = NULL;
  if (in->null_count != 0 || !sl_array_scatter_supported(schema) ||
      in->n_children != schema->n_children) {
    return sl_error_set(error, ENOTSUP, "sl_array_scatter: unsupported batch");
  }
  struct scatter_scratch s = {
      .dst = sl_alloc(alloc, (size_t)n_out * sizeof *s.dst),
      .pos = sl_alloc(alloc, (size_t)n_out * sizeof *s.pos),
      .zeros = sl_alloc(alloc, (size_t)n_out * sizeof *s.zeros),
      .bytes = sl_alloc(alloc, (size_t)n_out * sizeof *s.bytes),
  };
  int rc = s.dst == NULL || s.pos == NULL || s.zeros == NULL || s.bytes == NULL ? ENOMEM : 0;
  for (int64_t l = 0; l < n_out && rc == 0; l++) {
    rc = sl_array_init(&out[l], alloc, 1, schema->n_children, error);
    if (rc == 0) out[l].length = counts[l];
  }
  for (int64_t c = 0; c < schema->n_children && rc == 0; c++) {
    // A struct's children are read at the struct's offset plus their own.
    struct ArrowArray col = *in->children[c];
    col.offset += in->offset;
    col.length = in->length;
    rc = scatter_column(schema->children[c], &col, c, dest, counts, n_out, out, &s, alloc);
  }
  sl_free(alloc, s.dst, (size_t)n_out * sizeof *s.dst);
  sl_free(alloc, s.pos, (size_t)n_out * sizeof *s.pos);
  sl_free(alloc, s.zeros, (size_t)n_out * sizeof *s.zeros);
  sl_free(alloc, s.bytes, (size_t)n_out * sizeof *s.bytes);
  if (rc != 0) {
    for (int64_t l = 0; l < n_out; l++) {
      if (out[l].release != NULL) out[l].release(&out[l]);
    }
    if (rc == EOVERFLOW) {
      return sl_error_set(error, rc, "splitting a batch: a string column's piece is over 2 GiB");
    }
    return sl_error_set(error, rc, "out of memory splitting a batch");
  }
  return 0;
}
