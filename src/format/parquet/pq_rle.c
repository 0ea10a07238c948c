// RLE / bit-packed hybrid (Encodings.md "RLE"), the deprecated BIT_PACKED
// level encoding, and dictionary indices. Hand-written: no C library
// implements Parquet's hybrid encoding.
//
// Speed: bit-packed groups of 8 values (exactly `bit_width` bytes) are
// unpacked by one function per bit width, generated from a single inline
// template so that the shifts and masks are constants; each value is one
// unaligned 64-bit load, a shift and a mask. Groups near the end of the
// buffer (where an 8-byte load would overrun) go through a zero-padded copy.
// RLE runs are fills.
#include <inttypes.h>
#include <string.h>

#include "pq_bits.h"
#include "pq_encoding.h"
#include "../../core/sl_error.h"

/* ---- width-specialised unpacking -------------------------------------------- */

/// Unpacks one group of 8 values of width w (1..32) starting at `in`; reads
/// up to w + 8 bytes from `in` (the caller guarantees they are readable).
#define PQ_UNPACK8_BODY(T)                                                       \
  const uint64_t mask = w == 32 ? 0xffffffffu : (((uint64_t)1 << w) - 1);        \
  for (int i = 0; i < 8; ++i) {                                                  \
    const int bit = i * w;                                                       \
    out[i] = (T)((sl_load_le64(in + (bit >> 3)) >> (bit & 7)) & mask);           \
  }

static SL_ALWAYS_INLINE void unpack8_u32(const uint8_t* in, uint32_t* out, const int w) {
  PQ_UNPACK8_BODY(uint32_t)
}
static SL_ALWAYS_INLINE void unpack8_i16(const uint8_t* in, int16_t* out, const int w) {
  PQ_UNPACK8_BODY(int16_t)
}

typedef void (*unpack_u32_fn)(const uint8_t*, uint32_t*, int64_t);
typedef void (*unpack_i16_fn)(const uint8_t*, int16_t*, int64_t);

#define PQ_UNPACK_FNS(W)                                                           \
  static void unpack_u32_w##W(const uint8_t* in, uint32_t* out, int64_t groups) {  \
    for (int64_t g = 0; g < groups; ++g, in += W, out += 8) unpack8_u32(in, out, W); \
  }                                                                                \
  static void unpack_i16_w##W(const uint8_t* in, int16_t* out, int64_t groups) {   \
    for (int64_t g = 0; g < groups; ++g, in += W, out += 8) unpack8_i16(in, out, W); \
  }
#define PQ_UNPACK_FNS_U32(W)                                                       \
  static void unpack_u32_w##W(const uint8_t* in, uint32_t* out, int64_t groups) {  \
    for (int64_t g = 0; g < groups; ++g, in += W, out += 8) unpack8_u32(in, out, W); \
  }

PQ_UNPACK_FNS(1) PQ_UNPACK_FNS(2) PQ_UNPACK_FNS(3) PQ_UNPACK_FNS(4) PQ_UNPACK_FNS(5)
PQ_UNPACK_FNS(6) PQ_UNPACK_FNS(7) PQ_UNPACK_FNS(8) PQ_UNPACK_FNS(9) PQ_UNPACK_FNS(10)
PQ_UNPACK_FNS(11) PQ_UNPACK_FNS(12) PQ_UNPACK_FNS(13) PQ_UNPACK_FNS(14) PQ_UNPACK_FNS(15)
PQ_UNPACK_FNS(16)
PQ_UNPACK_FNS_U32(17) PQ_UNPACK_FNS_U32(18) PQ_UNPACK_FNS_U32(19) PQ_UNPACK_FNS_U32(20)
PQ_UNPACK_FNS_U32(21) PQ_UNPACK_FNS_U32(22) PQ_UNPACK_FNS_U32(23) PQ_UNPACK_FNS_U32(24)
PQ_UNPACK_FNS_U32(25) PQ_UNPACK_FNS_U32(26) PQ_UNPACK_FNS_U32(27) PQ_UNPACK_FNS_U32(28)
PQ_UNPACK_FNS_U32(29) PQ_UNPACK_FNS_U32(30) PQ_UNPACK_FNS_U32(31) PQ_UNPACK_FNS_U32(32)

static const unpack_u32_fn k_unpack_u32[33] = {
    NULL, unpack_u32_w1, unpack_u32_w2, unpack_u32_w3, unpack_u32_w4, unpack_u32_w5,
    unpack_u32_w6, unpack_u32_w7, unpack_u32_w8, unpack_u32_w9, unpack_u32_w10, unpack_u32_w11,
    unpack_u32_w12, unpack_u32_w13, unpack_u32_w14, unpack_u32_w15, unpack_u32_w16,
    unpack_u32_w17, unpack_u32_w18, unpack_u32_w19, unpack_u32_w20, unpack_u32_w21,
    unpack_u32_w22, unpack_u32_w23, unpack_u32_w24, unpack_u32_w25, unpack_u32_w26,
    unpack_u32_w27, unpack_u32_w28, unpack_u32_w29, unpack_u32_w30, unpack_u32_w31,
    unpack_u32_w32};
static const unpack_i16_fn k_unpack_i16[17] = {
    NULL, unpack_i16_w1, unpack_i16_w2, unpack_i16_w3, unpack_i16_w4, unpack_i16_w5,
    unpack_i16_w6, unpack_i16_w7, unpack_i16_w8, unpack_i16_w9, unpack_i16_w10, unpack_i16_w11,
    unpack_i16_w12, unpack_i16_w13, unpack_i16_w14, unpack_i16_w15, unpack_i16_w16};

/// Unpacks `groups` whole groups at data[pos] (all w * groups bytes present)
/// into out32 or out16 (exactly one is non-NULL). w >= 1.
static void unpack_groups(const uint8_t* data, int64_t size, int64_t pos, int w, int64_t groups,
                          uint32_t* out32, int16_t* out16) {
  // Groups whose 8-byte loads stay inside the buffer: the last load of a
  // group starts at most w - 1 bytes in, so w + 8 bytes from its start.
  int64_t room = size - pos - 8;
  int64_t fast = room < 0 ? 0 : room / w;
  if (fast > groups) fast = groups;
  if (fast > 0) {
    if (out32) {
      k_unpack_u32[w](data + pos, out32, fast);
    } else {
      k_unpack_i16[w](data + pos, out16, fast);
    }
  }
  for (int64_t g = fast; g < groups; ++g) {
    uint8_t padded[32 + 8] = {0};
    memcpy(padded, data + pos + g * w, (size_t)w);
    if (out32) {
      k_unpack_u32[w](padded, out32 + g * 8, 1);
    } else {
      k_unpack_i16[w](padded, out16 + g * 8, 1);
    }
  }
}

/* ---- decoder ------------------------------------------------------------------ */

int sl_pq_rle_init(struct pq_rle_decoder* d, const uint8_t* data, int64_t size, int bit_width,
                struct sluice_error* error) {
  memset(d, 0, sizeof *d);
  if (bit_width < 0 || bit_width > 32)
    return sl_error_set(error, EILSEQ, "RLE: bit width %d is not in 0..32", bit_width);
  if (size < 0 || (data == NULL && size > 0))
    return sl_error_set(error, EILSEQ, "RLE: invalid buffer (size %lld)", (long long)size);
  d->data = data;
  d->size = size;
  d->bit_width = bit_width;
  return 0;
}

/// Reads the next run header (all of the current run is used up).
static int rle_next_run(struct pq_rle_decoder* d, struct sluice_error* error) {
  int64_t start = d->pos;
  uint64_t header;
  int vr = pq_read_uvarint(d->data, d->size, &d->pos, 5, &header);
  if (vr != 0 || header > UINT32_MAX)
    return sl_error_set(error, EILSEQ, "RLE: %s run header at byte %lld",
                        vr == 1 ? "truncated" : "overlong", (long long)start);
  const int w = d->bit_width;
  int64_t left = d->size - d->pos;
  if (header & 1) {
    int64_t groups = (int64_t)(header >> 1);
    if (w > 0 && groups > left / w) {
      // Keep the whole groups that are present (a stream may be cut after
      // the values it holds) and stop there: asking for more fails.
      groups = left / w;
      d->literal_left = groups * 8;
      d->size = d->pos + groups * w;
      return 0;
    }
    d->literal_left = groups * 8;
  } else {
    int nbytes = (w + 7) / 8;
    if (nbytes > left)
      return sl_error_set(error, EILSEQ, "RLE: run value truncated at byte %lld",
                          (long long)d->pos);
    uint32_t v = 0;
    for (int i = 0; i < nbytes; ++i) v |= (uint32_t)d->data[d->pos + i] << (8 * i);
    if (w < 32 && (v >> w) != 0)
      return sl_error_set(error, EILSEQ, "RLE: run value %" PRIu32 " at byte %lld needs more than %d bits",
                          v, (long long)d->pos, w);
    d->pos += nbytes;
    d->repeat_left = (int64_t)(header >> 1);
    d->repeat_value = v;
  }
  return 0;
}

/// Decodes n values into out32 or out16 (exactly one non-NULL).
static int rle_get(struct pq_rle_decoder* d, uint32_t* out32, int16_t* out16, int64_t n,
                   struct sluice_error* error) {
  if (n < 0) return sl_error_set(error, EILSEQ, "RLE: negative value count %lld", (long long)n);
  const int w = d->bit_width;
  int64_t done = 0;
  while (done < n) {
    int64_t want = n - done;
    if (d->literal_buf_pos < d->literal_buf_n) {
      int64_t k = d->literal_buf_n - d->literal_buf_pos;
      if (k > want) k = want;
      for (int64_t i = 0; i < k; ++i) {
        uint32_t v = d->literal_buf[d->literal_buf_pos + i];
        if (out32) out32[done + i] = v; else out16[done + i] = (int16_t)v;
      }
      d->literal_buf_pos += (int)k;
      done += k;
      continue;
    }
    if (d->repeat_left > 0) {
      int64_t k = d->repeat_left < want ? d->repeat_left : want;
      if (out32) {
        uint32_t v = d->repeat_value;
        uint32_t* o = out32 + done;
        for (int64_t i = 0; i < k; ++i) o[i] = v;
      } else {
        int16_t v = (int16_t)d->repeat_value;
        int16_t* o = out16 + done;
        for (int64_t i = 0; i < k; ++i) o[i] = v;
      }
      d->repeat_left -= k;
      done += k;
      continue;
    }
    if (d->literal_left > 0) {
      int64_t avail = d->literal_left < want ? d->literal_left : want;
      int64_t groups = avail / 8;
      if (w == 0) {
        // Width 0: every value is 0 and takes no bytes.
        if (out32) memset(out32 + done, 0, (size_t)avail * sizeof *out32);
        else memset(out16 + done, 0, (size_t)avail * sizeof *out16);
        d->literal_left -= avail;
        done += avail;
        continue;
      }
      if (groups > 0) {
        unpack_groups(d->data, d->size, d->pos, w, groups, out32 ? out32 + done : NULL,
                      out16 ? out16 + done : NULL);
        d->pos += groups * w;
        d->literal_left -= groups * 8;
        done += groups * 8;
        continue;
      }
      // Fewer than 8 values wanted: unpack one group and keep the rest.
      unpack_groups(d->data, d->size, d->pos, w, 1, d->literal_buf, NULL);
      d->pos += w;
      d->literal_left -= 8;
      d->literal_buf_pos = 0;
      d->literal_buf_n = 8;
      continue;
    }
    if (d->pos >= d->size) {
      if (w == 0 && d->size == 0) {
        // Some writers emit only the bit-width byte when every index is 0.
        if (out32) memset(out32 + done, 0, (size_t)want * sizeof *out32);
        else memset(out16 + done, 0, (size_t)want * sizeof *out16);
        return 0;
      }
      return sl_error_set(error, EILSEQ, "RLE: runs end at byte %lld after %lld of %lld values",
                          (long long)d->pos, (long long)done, (long long)n);
    }
    SL_RETURN_NOT_OK(rle_next_run(d, error));
  }
  return 0;
}

int sl_pq_rle_get_u32(struct pq_rle_decoder* d, uint32_t* out, int64_t n, struct sluice_error* error) {
  return rle_get(d, out, NULL, n, error);
}

int sl_pq_rle_get_i16(struct pq_rle_decoder* d, int16_t* out, int64_t n, struct sluice_error* error) {
  if (d->bit_width > 16)
    return sl_error_set(error, EILSEQ, "RLE: level bit width %d is more than 16", d->bit_width);
  return rle_get(d, NULL, out, n, error);
}

int sl_pq_dict_indices_decode(const uint8_t* data, int64_t size, int64_t n, uint32_t dict_size,
                           uint32_t* out, struct sluice_error* error) {
  if (n <= 0) {
    if (n < 0) return sl_error_set(error, EILSEQ, "dictionary indices: negative count %lld", (long long)n);
    return 0;
  }
  if (size < 1 || data == NULL)
    return sl_error_set(error, EILSEQ, "dictionary indices: missing bit-width byte");
  struct pq_rle_decoder d;
  if (data[0] > 32)
    return sl_error_set(error, EILSEQ, "dictionary indices: bit width %d at byte 0 is not in 0..32",
                        data[0]);
  SL_RETURN_NOT_OK(sl_pq_rle_init(&d, data + 1, size - 1, data[0], error));
  // Decode and check in L1-sized chunks: one branch-free pass per chunk
  // (vectorises) while the values are still in cache; find the culprit
  // only on failure.
  for (int64_t start = 0; start < n; start += 4096) {
    int64_t k = n - start < 4096 ? n - start : 4096;
    uint32_t* chunk = out + start;
    if (sl_pq_rle_get_u32(&d, chunk, k, error) != 0) return sl_error_prefix(error, "dictionary indices");
    uint32_t bad = 0;
    for (int64_t i = 0; i < k; ++i) bad |= (uint32_t)(chunk[i] >= dict_size);
    if (bad) {
      for (int64_t i = 0; i < k; ++i)
        if (chunk[i] >= dict_size)
          return sl_error_set(error, EILSEQ,
                              "dictionary index %" PRIu32 " of value %lld is out of range (dictionary has %" PRIu32 " entries)",
                              chunk[i], (long long)(start + i), dict_size);
    }
  }
  return 0;
}

int sl_pq_bit_packed_levels_decode_at(const uint8_t* data, int64_t size, int bit_width,
                                      int64_t first, int64_t n, int16_t* out,
                                      struct sluice_error* error) {
  if (bit_width < 0 || bit_width > 16)
    return sl_error_set(error, EILSEQ, "BIT_PACKED: bit width %d is not in 0..16", bit_width);
  if (n < 0 || first < 0 || n > (INT64_MAX - 7) / 16 - first)
    return sl_error_set(error, EILSEQ, "BIT_PACKED: invalid level count %lld", (long long)n);
  int64_t need = ((first + n) * bit_width + 7) / 8;
  if (size < need || (data == NULL && need > 0))
    return sl_error_set(error, EILSEQ, "BIT_PACKED: %lld levels of %d bits need %lld bytes, have %lld",
                        (long long)(first + n), bit_width, (long long)need, (long long)size);
  // MSB-first: value i occupies bits [i*w, i*w+w) counting from the top bit
  // of byte 0. Deprecated and rare, so a simple bit loop.
  int64_t bit = first * bit_width;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t v = 0;
    for (int b = 0; b < bit_width; ++b, ++bit)
      v = v << 1 | ((data[bit >> 3] >> (7 - (bit & 7))) & 1u);
    out[i] = (int16_t)v;
  }
  return 0;
}

int sl_pq_bit_packed_levels_decode(const uint8_t* data, int64_t size, int bit_width, int64_t n,
                                int16_t* out, int64_t* consumed, struct sluice_error* error) {
  SL_RETURN_NOT_OK(sl_pq_bit_packed_levels_decode_at(data, size, bit_width, 0, n, out, error));
  *consumed = (n * bit_width + 7) / 8;
  return 0;
}

/* ---- encoder ------------------------------------------------------------------ */

static int put_uvarint(struct sl_buffer* out, uint64_t v) {
  uint8_t tmp[10];
  int n = 0;
  while (v >= 0x80) {
    tmp[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  tmp[n++] = (uint8_t)v;
  return sl_buffer_append(out, tmp, n);
}

/// One RLE run: `count` copies of `v`, its value in ceil(bit_width / 8) bytes.
static int put_run(struct sl_buffer* out, uint32_t v, int64_t count, int bit_width) {
  SL_RETURN_NOT_OK(put_uvarint(out, (uint64_t)count << 1));
  uint8_t vb[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
  return sl_buffer_append(out, vb, (bit_width + 7) / 8);
}

/// Writes one group of 8 values of width w as exactly w bytes.
static void pack8(const uint32_t* v, int w, uint8_t* dst) {
  uint64_t acc = 0;
  int nbits = 0;
  for (int i = 0; i < 8; ++i) {
    acc |= (uint64_t)v[i] << nbits;
    nbits += w;
    while (nbits >= 8) {
      *dst++ = (uint8_t)acc;
      acc >>= 8;
      nbits -= 8;
    }
  }
}

static inline uint32_t enc_value(const uint32_t* v32, const int16_t* v16, int64_t i) {
  return v32 ? v32[i] : (uint32_t)(uint16_t)v16[i];
}

/// Length of the run of equal values starting at i, counting at most `cap`.
static int64_t run_length(const uint32_t* v32, const int16_t* v16, int64_t i, int64_t n,
                          int64_t cap) {
  uint32_t v = enc_value(v32, v16, i);
  int64_t j = i + 1;
  int64_t end = n - i > cap ? i + cap : n;
  while (j < end && enc_value(v32, v16, j) == v) ++j;
  return j - i;
}

static int rle_encode(const uint32_t* v32, const int16_t* v16, int64_t n, int bit_width,
                      struct sl_buffer* out) {
  if (bit_width < 0 || bit_width > 32 || n < 0) return EINVAL;
  const uint64_t limit = bit_width == 32 ? UINT32_MAX : (((uint64_t)1 << bit_width) - 1);
  for (int64_t i = 0; i < n; ++i) {
    if (v16 && v16[i] < 0) return EINVAL;
    if (enc_value(v32, v16, i) > limit) return EINVAL;
  }
  int64_t i = 0;
  while (i < n) {
    int64_t r = run_length(v32, v16, i, n, INT64_MAX);
    if (r >= 8) {
      SL_RETURN_NOT_OK(put_run(out, enc_value(v32, v16, i), r, bit_width));
      i += r;
      continue;
    }
    // A literal stretch: whole groups of 8 until a run of >= 8 starts at a
    // group boundary (or the values end; the last group is zero-padded).
    int64_t start = i;
    do {
      i = n - i > 8 ? i + 8 : n;
    } while (i < n && run_length(v32, v16, i, n, 8) < 8);
    int64_t groups = (i - start + 7) / 8;
    SL_RETURN_NOT_OK(put_uvarint(out, (uint64_t)groups << 1 | 1));
    SL_RETURN_NOT_OK(sl_buffer_reserve(out, groups * bit_width));
    for (int64_t g = 0; g < groups; ++g) {
      uint32_t group[8] = {0};
      for (int k = 0; k < 8 && start + g * 8 + k < i; ++k)
        group[k] = enc_value(v32, v16, start + g * 8 + k);
      pack8(group, bit_width, out->data + out->size);
      out->size += bit_width;
    }
  }
  return 0;
}

int sl_pq_rle_encode_u32(const uint32_t* values, int64_t n, int bit_width, struct sl_buffer* out) {
  return rle_encode(values, NULL, n, bit_width, out);
}

int sl_pq_rle_encode_run(uint32_t value, int64_t n, int bit_width, struct sl_buffer* out) {
  if (bit_width < 0 || bit_width > 32 || n < 0 ||
      (bit_width < 32 && value >> bit_width != 0))
    return EINVAL;
  // Runs of any length are valid; the encoder above writes short ones as
  // literals only because those are shorter when values change.
  return n == 0 ? 0 : put_run(out, value, n, bit_width);
}

int sl_pq_rle_encode_i16(const int16_t* values, int64_t n, int bit_width, struct sl_buffer* out) {
  if (bit_width > 16) return EINVAL;
  return rle_encode(NULL, values, n, bit_width, out);
}

int sl_pq_bit_width(uint64_t max_value) {
  int w = 0;
  while (max_value != 0) {
    ++w;
    max_value >>= 1;
  }
  return w;
}
