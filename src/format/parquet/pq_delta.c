// DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY and DELTA_BYTE_ARRAY
// (Encodings.md). Hand-written: no C library implements them.
//
// DELTA_BINARY_PACKED layout:
//   header: <block size> <miniblocks per block> <total count> <first value (zigzag)>
//   blocks: <min delta (zigzag)> <one bit-width byte per miniblock> <miniblocks>
// Every miniblock that holds a value is stored whole (padded); the bit widths
// of miniblocks after the last value may be anything and have no bytes.
// Values are rebuilt with uint64 arithmetic, which wraps as the spec requires
// (and for INT32, truncating the wrapped 64-bit sum gives the 32-bit one).
#include <inttypes.h>
#include <string.h>

#include "pq_bits.h"
#include "pq_encoding.h"
#include "../../core/sl_alloc.h"
#include "../../core/sl_error.h"

// Generous bounds that keep every product below in int64 (Arrow enforces the
// same multiple-of-128 / multiple-of-32 rules).
#define PQ_DELTA_MAX_BLOCK ((uint64_t)1 << 24)
#define PQ_DELTA_MAX_COUNT ((uint64_t)INT32_MAX)

struct delta_header {
  int64_t block_size, miniblocks, per_miniblock, total;
  uint64_t first;
  int64_t pos;  ///< first byte after the header
};

static int delta_fail(struct sluice_error* error, const char* what, int64_t pos) {
  return sl_error_set(error, EILSEQ, "DELTA_BINARY_PACKED: %s at byte %lld", what, (long long)pos);
}

static int read_header(const uint8_t* data, int64_t size, struct delta_header* h,
                       struct sluice_error* error) {
  if (size < 0 || (data == NULL && size > 0)) return delta_fail(error, "invalid buffer", 0);
  int64_t pos = 0;
  uint64_t v[4];
  static const char* const k_names[4] = {"block size", "miniblock count", "value count",
                                         "first value"};
  for (int i = 0; i < 4; ++i) {
    int64_t at = pos;
    int vr = pq_read_uvarint(data, size, &pos, 10, &v[i]);
    if (vr != 0) {
      return sl_error_set(error, EILSEQ, "DELTA_BINARY_PACKED: %s %s at byte %lld",
                          vr == 1 ? "truncated" : "overlong", k_names[i], (long long)at);
    }
  }
  if (v[0] == 0 || v[0] % 128 != 0 || v[0] > PQ_DELTA_MAX_BLOCK)
    return sl_error_set(error, EILSEQ,
                        "DELTA_BINARY_PACKED: block size %" PRIu64 " is not a positive multiple of 128",
                        v[0]);
  if (v[1] == 0 || v[1] > v[0] || v[0] % v[1] != 0 || (v[0] / v[1]) % 32 != 0)
    return sl_error_set(error, EILSEQ,
                        "DELTA_BINARY_PACKED: %" PRIu64 " miniblocks do not split a block of %" PRIu64
                        " into multiples of 32 values",
                        v[1], v[0]);
  if (v[2] > PQ_DELTA_MAX_COUNT)
    return sl_error_set(error, EILSEQ, "DELTA_BINARY_PACKED: value count %" PRIu64 " is too large",
                        v[2]);
  h->block_size = (int64_t)v[0];
  h->miniblocks = (int64_t)v[1];
  h->per_miniblock = h->block_size / h->miniblocks;
  h->total = (int64_t)v[2];
  h->first = (uint64_t)pq_zigzag_decode(v[3]);
  h->pos = pos;
  return 0;
}

int sl_pq_delta_binary_count(const uint8_t* data, int64_t size, int64_t* count,
                          struct sluice_error* error) {
  struct delta_header h;
  SL_RETURN_NOT_OK(read_header(data, size, &h, error));
  *count = h.total;
  return 0;
}

/// Unpacks `count` values of width w (0..64) from a miniblock at `in`, of
/// which `avail` bytes may be read, from its value `skip` on, and adds each (plus min_delta) to the
/// running value, storing into out64 or out32.
static void unpack_deltas(const uint8_t* in, int64_t avail, int w, int64_t skip, int64_t count,
                          uint64_t min_delta, uint64_t* last, int64_t* out64, int32_t* out32) {
  uint64_t acc = *last;
  if (w == 0) {
    for (int64_t i = 0; i < count; ++i) {
      acc += min_delta;
      if (out64) out64[i] = (int64_t)acc; else out32[i] = (int32_t)(uint32_t)acc;
    }
    *last = acc;
    return;
  }
  const uint64_t mask = w == 64 ? UINT64_MAX : (((uint64_t)1 << w) - 1);
  int64_t bit = skip * w;
  for (int64_t i = 0; i < count; ++i, bit += w) {
    int64_t byte = bit >> 3;
    int sh = (int)(bit & 7);
    uint64_t v = (byte + 8 <= avail ? sl_load_le64(in + byte)
                                    : pq_load_le64_bounded(in + byte, avail - byte)) >> sh;
    if (sh + w > 64) v |= (uint64_t)in[byte + 8] << (64 - sh);
    acc += min_delta + (v & mask);
    if (out64) out64[i] = (int64_t)acc; else out32[i] = (int32_t)(uint32_t)acc;
  }
  *last = acc;
}

/// Decodes n values into out64 or out32 (or none, n = 0: only *consumed),
/// miniblock widths up to max_width.
static int delta_decode(const uint8_t* data, int64_t size, int64_t n, int64_t* out64,
                        int32_t* out32, int max_width, int64_t* consumed,
                        struct sluice_error* error) {
  if (n < 0) return delta_fail(error, "negative value count", 0);
  if (n == 0 && size == 0) {
    *consumed = 0;
    return 0;
  }
  struct delta_header h;
  SL_RETURN_NOT_OK(read_header(data, size, &h, error));
  if (h.total < n)
    return sl_error_set(error, EILSEQ, "DELTA_BINARY_PACKED: header holds %lld values, %lld wanted",
                        (long long)h.total, (long long)n);
  int64_t pos = h.pos;
  uint64_t last = h.first;
  if (n > 0) {
    if (out64) out64[0] = (int64_t)last; else out32[0] = (int32_t)(uint32_t)last;
  }
  int64_t produced = n > 0 ? 1 : 0;
  int64_t deltas_left = h.total > 0 ? h.total - 1 : 0;
  while (deltas_left > 0) {
    int64_t block_at = pos;
    uint64_t zz;
    int vr = pq_read_uvarint(data, size, &pos, 10, &zz);
    if (vr != 0) return delta_fail(error, vr == 1 ? "truncated min delta" : "overlong min delta", block_at);
    uint64_t min_delta = (uint64_t)pq_zigzag_decode(zz);
    if (size - pos < h.miniblocks) return delta_fail(error, "truncated miniblock bit widths", pos);
    const uint8_t* widths = data + pos;
    pos += h.miniblocks;
    for (int64_t m = 0; m < h.miniblocks && deltas_left > 0; ++m) {
      int w = widths[m];
      if (w > max_width) {
        return sl_error_set(error, EILSEQ,
                            "DELTA_BINARY_PACKED: miniblock bit width %d at byte %lld exceeds %d",
                            w, (long long)(widths + m - data), max_width);
      }
      int64_t bytes = h.per_miniblock / 8 * w;
      if (size - pos < bytes) return delta_fail(error, "truncated miniblock", pos);
      int64_t in_mini = deltas_left < h.per_miniblock ? deltas_left : h.per_miniblock;
      int64_t take = n - produced < in_mini ? n - produced : in_mini;
      if (take > 0) {
        unpack_deltas(data + pos, bytes, w, 0, take, min_delta, &last,
                      out64 ? out64 + produced : NULL, out32 ? out32 + produced : NULL);
        produced += take;
      }
      pos += bytes;
      deltas_left -= in_mini;
    }
  }
  *consumed = pos;
  return 0;
}

int sl_pq_delta_binary_decode_i32(const uint8_t* data, int64_t size, int64_t n, int32_t* out,
                               int64_t* consumed, struct sluice_error* error) {
  return delta_decode(data, size, n, NULL, out, 32, consumed, error);
}

int sl_pq_delta_binary_decode_i64(const uint8_t* data, int64_t size, int64_t n, int64_t* out,
                               int64_t* consumed, struct sluice_error* error) {
  return delta_decode(data, size, n, out, NULL, 64, consumed, error);
}

int sl_pq_delta_length_byte_array_decode(const uint8_t* data, int64_t size, int64_t n,
                                      const uint8_t** ptrs, int32_t* lens, int64_t* consumed,
                                      struct sluice_error* error) {
  int64_t pos;
  int rc = sl_pq_delta_binary_decode_i32(data, size, n, lens, &pos, error);
  if (rc != 0) return sl_error_prefix(error, "DELTA_LENGTH_BYTE_ARRAY lengths");
  for (int64_t i = 0; i < n; ++i) {
    if (lens[i] < 0 || lens[i] > size - pos)
      return sl_error_set(error, EILSEQ,
                          "DELTA_LENGTH_BYTE_ARRAY: value %lld has length %d but %lld bytes remain at byte %lld",
                          (long long)i, lens[i], (long long)(size - pos), (long long)pos);
    ptrs[i] = data + pos;
    pos += lens[i];
  }
  *consumed = pos;
  return 0;
}

int sl_pq_delta_byte_array_decode(const uint8_t* data, int64_t size, int64_t n,
                               struct sl_buffer* scratch, const uint8_t** ptrs, int32_t* lens,
                               struct sluice_error* error) {
  if (n < 0) return sl_error_set(error, EILSEQ, "DELTA_BYTE_ARRAY: negative value count");
  if (n == 0) return 0;
  if ((uint64_t)n > SIZE_MAX / sizeof(int32_t))
    return sl_error_set(error, EILSEQ, "DELTA_BYTE_ARRAY: value count %lld too large", (long long)n);
  size_t prefix_bytes = (size_t)n * sizeof(int32_t);
  int32_t* prefix = sl_alloc(scratch->alloc, prefix_bytes);
  if (prefix == NULL)
    return sl_error_set(error, ENOMEM, "DELTA_BYTE_ARRAY: out of memory for %lld prefix lengths",
                        (long long)n);
  // The whole page is the stream read once (one decoder for both).
  struct pq_byte_array_stream stream;
  int rc = sl_pq_byte_array_stream_init(&stream, 1, data, size, scratch->alloc, error);
  if (rc == 0) rc = sl_pq_byte_array_stream_get(&stream, n, ptrs, lens, prefix, scratch, error);
  sl_pq_byte_array_stream_reset(&stream);
  sl_free(scratch->alloc, prefix, prefix_bytes);
  return rc;
}

/* ---- read a few values at a time ---------------------------------------------- */

int sl_pq_delta_stream_init(struct pq_delta_stream* s, const uint8_t* data, int64_t size,
                            int max_width, struct sluice_error* error) {
  memset(s, 0, sizeof *s);
  struct delta_header h;
  SL_RETURN_NOT_OK(read_header(data, size, &h, error));
  // One pass over the block headers (no values): the run's end, and every
  // width and length checked before a value is handed out.
  SL_RETURN_NOT_OK(delta_decode(data, size, 0, NULL, NULL, max_width, &s->end, error));
  s->data = data;
  s->size = size;
  s->miniblocks = h.miniblocks;
  s->per_miniblock = h.per_miniblock;
  s->left = h.total;
  s->deltas_left = h.total > 0 ? h.total - 1 : 0;
  s->first = h.total > 0;
  s->last = h.first;
  s->pos = h.pos;
  s->mb = h.miniblocks;  // no block read yet
  return 0;
}

static int delta_stream_get(struct pq_delta_stream* s, int64_t* out64, int32_t* out32, int64_t n,
                            struct sluice_error* error) {
  if (n < 0 || n > s->left)
    return sl_error_set(error, EILSEQ, "DELTA_BINARY_PACKED: %lld values wanted, %lld left",
                        (long long)n, (long long)s->left);
  int64_t produced = 0;
  if (n > 0 && s->first) {
    if (out64) out64[0] = (int64_t)s->last; else out32[0] = (int32_t)(uint32_t)s->last;
    s->first = 0;
    produced = 1;
  }
  while (produced < n) {
    if (s->mb_used == s->mb_n) {  // the next miniblock (init walked them all: no checks here)
      if (++s->mb >= s->miniblocks) {
        uint64_t zz = 0;
        pq_read_uvarint(s->data, s->size, &s->pos, 10, &zz);
        s->min_delta = (uint64_t)pq_zigzag_decode(zz);
        s->widths = s->data + s->pos;
        s->pos += s->miniblocks;
        s->mb = 0;
      }
      s->width = s->widths[s->mb];
      s->mb_at = s->pos;
      s->pos += s->per_miniblock / 8 * s->width;
      s->mb_n = s->deltas_left < s->per_miniblock ? s->deltas_left : s->per_miniblock;
      s->deltas_left -= s->mb_n;
      s->mb_used = 0;
    }
    int64_t take = s->mb_n - s->mb_used < n - produced ? s->mb_n - s->mb_used : n - produced;
    unpack_deltas(s->data + s->mb_at, s->per_miniblock / 8 * s->width, s->width, s->mb_used, take,
                  s->min_delta, &s->last, out64 ? out64 + produced : NULL,
                  out32 ? out32 + produced : NULL);
    s->mb_used += take;
    produced += take;
  }
  s->left -= n;
  return 0;
}

int sl_pq_delta_stream_get_i64(struct pq_delta_stream* s, int64_t* out, int64_t n,
                               struct sluice_error* error) {
  return delta_stream_get(s, out, NULL, n, error);
}

int sl_pq_delta_stream_get_i32(struct pq_delta_stream* s, int32_t* out, int64_t n,
                               struct sluice_error* error) {
  return delta_stream_get(s, NULL, out, n, error);
}

int sl_pq_byte_array_stream_init(struct pq_byte_array_stream* s, int prefixed, const uint8_t* data,
                                 int64_t size, const struct sluice_allocator* alloc,
                                 struct sluice_error* error) {
  memset(s, 0, sizeof *s);
  sl_buffer_init(&s->prev, alloc);
  s->prefixed = prefixed;
  int64_t at = 0;
  if (prefixed) {
    if (sl_pq_delta_stream_init(&s->prefix, data, size, 32, error) != 0)
      return sl_error_prefix(error, "DELTA_BYTE_ARRAY prefix lengths");
    at = s->prefix.end;
  }
  if (sl_pq_delta_stream_init(&s->lengths, data + at, size - at, 32, error) != 0)
    return sl_error_prefix(error, "%s lengths", prefixed ? "DELTA_BYTE_ARRAY suffix" : "DELTA_LENGTH_BYTE_ARRAY");
  s->data = data;
  s->size = size;
  s->pos = at + s->lengths.end;
  return 0;
}

void sl_pq_byte_array_stream_reset(struct pq_byte_array_stream* s) { sl_buffer_reset(&s->prev); }

int sl_pq_byte_array_stream_get(struct pq_byte_array_stream* s, int64_t n, const uint8_t** ptrs,
                                int32_t* lens, int32_t* prefix, struct sl_buffer* scratch,
                                struct sluice_error* error) {
  const char* name = s->prefixed ? "DELTA_BYTE_ARRAY" : "DELTA_LENGTH_BYTE_ARRAY";
  if (s->prefixed && sl_pq_delta_stream_get_i32(&s->prefix, prefix, n, error) != 0)
    return sl_error_prefix(error, "DELTA_BYTE_ARRAY prefix lengths");
  if (sl_pq_delta_stream_get_i32(&s->lengths, lens, n, error) != 0)
    return sl_error_prefix(error, "%s lengths", name);
  int64_t pos = s->pos, total = 0, prev_len = s->prev.size;
  for (int64_t i = 0; i < n; ++i) {
    if (lens[i] < 0 || lens[i] > s->size - pos)
      return sl_error_set(error, EILSEQ, "%s: value %lld has length %d but %lld bytes remain at byte %lld",
                          name, (long long)(s->index + i), lens[i], (long long)(s->size - pos),
                          (long long)pos);
    ptrs[i] = s->data + pos;
    pos += lens[i];
    if (!s->prefixed) continue;
    if (prefix[i] < 0 || prefix[i] > prev_len)
      return sl_error_set(error, EILSEQ, "DELTA_BYTE_ARRAY: value %lld has prefix length %d but the "
                          "previous value has %lld bytes", (long long)(s->index + i), prefix[i],
                          (long long)prev_len);
    int64_t len = (int64_t)prefix[i] + lens[i];
    if (len > INT32_MAX)
      return sl_error_set(error, EILSEQ, "DELTA_BYTE_ARRAY: value %lld is longer than 2 GiB",
                          (long long)(s->index + i));
    total += len;
    if (total > ((int64_t)1 << 40))
      return sl_error_set(error, EILSEQ, "DELTA_BYTE_ARRAY: values expand to more than 1 TiB");
    prev_len = len;
  }
  s->pos = pos;
  s->index += n;
  if (!s->prefixed || n == 0) return 0;
  // Rebuilt into the scratch, sized once so that it does not move while
  // ptrs point into it; the last value is kept for the next call's prefixes.
  if (sl_buffer_reserve(scratch, total > 0 ? total : 1) != 0)
    return sl_error_set(error, ENOMEM, "DELTA_BYTE_ARRAY: out of memory for %lld bytes of values",
                        (long long)total);
  const uint8_t* prev = s->prev.data;
  for (int64_t i = 0; i < n; ++i) {
    uint8_t* dst = scratch->data + scratch->size;
    if (prefix[i] > 0) memcpy(dst, prev, (size_t)prefix[i]);
    if (lens[i] > 0) memcpy(dst + prefix[i], ptrs[i], (size_t)lens[i]);
    lens[i] += prefix[i];
    ptrs[i] = dst;
    scratch->size += lens[i];
    prev = dst;
  }
  s->prev.size = 0;
  if (sl_buffer_append(&s->prev, ptrs[n - 1], lens[n - 1]) != 0)
    return sl_error_set(error, ENOMEM, "DELTA_BYTE_ARRAY: out of memory for a value of %d bytes",
                        lens[n - 1]);
  return 0;
}
