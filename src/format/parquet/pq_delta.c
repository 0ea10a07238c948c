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
/// which `avail` bytes may be read, and adds each (plus min_delta) to the
/// running value, storing into out64 or out32.
static void unpack_deltas(const uint8_t* in, int64_t avail, int w, int64_t count,
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
  int64_t bit = 0;
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

static int delta_decode(const uint8_t* data, int64_t size, int64_t n, int64_t* out64,
                        int32_t* out32, int64_t* consumed, struct sluice_error* error) {
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
  const int max_width = out64 ? 64 : 32;
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
        unpack_deltas(data + pos, bytes, w, take, min_delta, &last,
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
  return delta_decode(data, size, n, NULL, out, consumed, error);
}

int sl_pq_delta_binary_decode_i64(const uint8_t* data, int64_t size, int64_t n, int64_t* out,
                               int64_t* consumed, struct sluice_error* error) {
  return delta_decode(data, size, n, out, NULL, consumed, error);
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
  int64_t pos = 0, used = 0;
  int rc = sl_pq_delta_binary_decode_i32(data, size, n, prefix, &pos, error);
  if (rc != 0) {
    sl_error_prefix(error, "DELTA_BYTE_ARRAY prefix lengths");
    goto done;
  }
  rc = sl_pq_delta_length_byte_array_decode(data + pos, size - pos, n, ptrs, lens, &used, error);
  if (rc != 0) {
    sl_error_prefix(error, "DELTA_BYTE_ARRAY suffixes (from byte %lld)", (long long)pos);
    goto done;
  }
  // Validate every prefix against the previous value and size the output
  // once, so the scratch buffer does not move while ptrs point into it.
  int64_t total = 0, prev_len = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (prefix[i] < 0 || prefix[i] > prev_len) {
      rc = sl_error_set(error, EILSEQ,
                        "DELTA_BYTE_ARRAY: value %lld has prefix length %d but the previous value has %lld bytes",
                        (long long)i, prefix[i], (long long)prev_len);
      goto done;
    }
    int64_t len = (int64_t)prefix[i] + lens[i];
    if (len > INT32_MAX) {
      rc = sl_error_set(error, EILSEQ, "DELTA_BYTE_ARRAY: value %lld is longer than 2 GiB", (long long)i);
      goto done;
    }
    total += len;
    if (total > ((int64_t)1 << 40)) {
      rc = sl_error_set(error, EILSEQ, "DELTA_BYTE_ARRAY: values expand to more than 1 TiB");
      goto done;
    }
    prev_len = len;
  }
  rc = sl_buffer_reserve(scratch, total > 0 ? total : 1);
  if (rc != 0) {
    rc = sl_error_set(error, rc, "DELTA_BYTE_ARRAY: out of memory for %lld bytes of values",
                      (long long)total);
    goto done;
  }
  const uint8_t* prev = NULL;
  for (int64_t i = 0; i < n; ++i) {
    uint8_t* dst = scratch->data + scratch->size;
    if (prefix[i] > 0) memcpy(dst, prev, (size_t)prefix[i]);
    if (lens[i] > 0) memcpy(dst + prefix[i], ptrs[i], (size_t)lens[i]);
    lens[i] += prefix[i];
    ptrs[i] = dst;
    scratch->size += lens[i];
    prev = dst;
  }
done:
  sl_free(scratch->alloc, prefix, prefix_bytes);
  return rc;
}
