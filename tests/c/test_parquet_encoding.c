// Parquet encodings and page codecs (pq_encoding.h, pq_codec.h):
// - RLE/bit-packed hybrid round trips at every bit width 0..32 (random data,
//   long runs, odd lengths, decoding in uneven chunks), the spec's byte
//   examples, truncation at every prefix length;
// - DELTA_BINARY_PACKED: the spec's examples, round trips through a simple
//   bit-by-bit reference encoder written here (INT32/INT64 extremes, widths
//   up to 64, wrapping), header validation, truncation;
// - DELTA_LENGTH_BYTE_ARRAY / DELTA_BYTE_ARRAY (the spec's examples), PLAIN,
//   BYTE_STREAM_SPLIT;
// - codecs: round trips, size mismatches, truncations, concatenated gzip
//   members, LZ4 Hadoop framing and its raw fallback, allocation failures;
// - streams written by pyarrow (tests/py/parquet_encoding_vectors.py, run at
//   test time; skipped without python3 + pyarrow) decoded and compared with
//   the values pyarrow was given; the DELTA_* and BYTE_STREAM_SPLIT pages of
//   the parquet-testing files (parquet-mr, Arrow) compared with what pyarrow
//   reads from them; every compressed page of parquet-testing decompressed.
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>
#include <libdeflate.h>
#include <lz4.h>
#include <lz4frame.h>

#include "core/sl_alloc.h"
#include "core/sl_buffer.h"
#include "core/sl_error.h"
#include "format/parquet/pq_codec.h"
#include "format/parquet/pq_encoding.h"
#include "test_util.h"

/* ---- helpers -------------------------------------------------------------- */

static uint64_t rng_next(uint64_t* s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1DULL;
}

static uint32_t mask_of(int w) { return w == 32 ? UINT32_MAX : (uint32_t)((1ULL << w) - 1); }

/// Values of width w: a mix of random stretches, long runs and short runs.
static void fill_values(uint32_t* v, int64_t n, int w, uint64_t* rng) {
  int64_t i = 0;
  while (i < n) {
    uint64_t kind = rng_next(rng) % 4;
    int64_t len = (int64_t)(rng_next(rng) % (kind == 0 ? 300 : 20)) + 1;
    uint32_t x = (uint32_t)rng_next(rng) & mask_of(w);
    for (int64_t k = 0; k < len && i < n; ++k, ++i)
      v[i] = kind == 0 || kind == 1 ? x : ((uint32_t)rng_next(rng) & mask_of(w));
  }
}

/* ---- RLE / bit-packed hybrid ----------------------------------------------- */

/// Decodes `n` values from `data` in chunks of varying size.
static int decode_chunked(const uint8_t* data, int64_t size, int w, int64_t n, uint32_t* out,
                          uint64_t* rng, struct sluice_error* err) {
  struct pq_rle_decoder d;
  int rc = sl_pq_rle_init(&d, data, size, w, err);
  int64_t done = 0;
  while (rc == 0 && done < n) {
    int64_t k = (int64_t)(rng_next(rng) % 5 == 0 ? rng_next(rng) % 10 : rng_next(rng) % 500);
    if (k > n - done) k = n - done;
    rc = sl_pq_rle_get_u32(&d, out + done, k, err);
    done += k;
  }
  return rc;
}

static void test_rle_roundtrip_all_widths(void** state) {
  (void)state;
  static const int64_t k_lengths[] = {0, 1, 7, 8, 9, 15, 16, 17, 100, 1000, 10007};
  uint64_t rng = 0x1234567887654321ULL;
  uint32_t* values = malloc(10007 * sizeof *values);
  uint32_t* got = malloc(10007 * sizeof *got);
  int16_t* levels = malloc(10007 * sizeof *levels);
  int16_t* got16 = malloc(10007 * sizeof *got16);
  for (int w = 0; w <= 32; ++w) {
    for (size_t li = 0; li < sizeof k_lengths / sizeof k_lengths[0]; ++li) {
      int64_t n = k_lengths[li];
      fill_values(values, n, w, &rng);
      struct sl_buffer buf;
      sl_buffer_init(&buf, NULL);
      assert_int_equal(sl_pq_rle_encode_u32(values, n, w, &buf), 0);
      struct sluice_error err = {0};
      memset(got, 0xAB, (size_t)n * sizeof *got);
      int rc = decode_chunked(buf.data, buf.size, w, n, got, &rng, &err);
      if (rc != 0) fail_msg("width %d n %lld: %s", w, (long long)n, err.message);
      for (int64_t i = 0; i < n; ++i)
        if (got[i] != values[i])
          fail_msg("width %d n %lld: value %lld is %u, want %u", w, (long long)n, (long long)i,
                   got[i], values[i]);
      // Levels: the same stream through the int16 path.
      if (w <= 15) {
        struct pq_rle_decoder d;
        assert_int_equal(sl_pq_rle_init(&d, buf.data, buf.size, w, &err), 0);
        assert_int_equal(sl_pq_rle_get_i16(&d, got16, n, &err), 0);
        for (int64_t i = 0; i < n; ++i) assert_int_equal(got16[i], (int16_t)values[i]);
        for (int64_t i = 0; i < n; ++i) levels[i] = (int16_t)values[i];
        struct sl_buffer b16;
        sl_buffer_init(&b16, NULL);
        assert_int_equal(sl_pq_rle_encode_i16(levels, n, w, &b16), 0);
        assert_int_equal(b16.size, buf.size);
        assert_memory_equal(b16.data, buf.data, (size_t)buf.size);
        sl_buffer_reset(&b16);
      }
      // One value more than encoded: an error, unless the last group's
      // padding holds it (allowed), never a crash.
      if (w > 0) {
        uint32_t* more = malloc((size_t)(n + 9) * sizeof *more);
        struct pq_rle_decoder d;
        assert_int_equal(sl_pq_rle_init(&d, buf.data, buf.size, w, &err), 0);
        assert_int_equal(sl_pq_rle_get_u32(&d, more, n + 9, &err), EILSEQ);
        free(more);
      }
      sl_buffer_reset(&buf);
    }
  }
  free(values);
  free(got);
  free(levels);
  free(got16);
}

/// One run of equal values (all-defined levels) decodes to those values
/// for every width and length, short runs included; values too wide for
/// the width are refused.
static void test_rle_run_encoder(void** state) {
  (void)state;
  static const int64_t k_lengths[] = {0, 1, 7, 8, 9, 1000, 100003};
  uint32_t* got = malloc(100003 * sizeof *got);
  assert_non_null(got);
  for (int w = 1; w <= 32; ++w) {
    uint32_t value = w == 32 ? 0xFEDCBA98u : (uint32_t)((1ull << w) - 1) - (uint32_t)(w / 3);
    for (size_t li = 0; li < sizeof k_lengths / sizeof k_lengths[0]; ++li) {
      int64_t n = k_lengths[li];
      struct sl_buffer buf;
      sl_buffer_init(&buf, NULL);
      assert_int_equal(sl_pq_rle_encode_run(value, n, w, &buf), 0);
      assert_true(buf.size <= 10 + 4);
      struct sluice_error err = {0};
      struct pq_rle_decoder d;
      assert_int_equal(sl_pq_rle_init(&d, buf.data, buf.size, w, &err), 0);
      memset(got, 0, (size_t)n * sizeof *got);
      assert_int_equal(sl_pq_rle_get_u32(&d, got, n, &err), 0);
      for (int64_t i = 0; i < n; ++i) assert_int_equal(got[i], value);
      uint32_t extra;
      if (n > 0) assert_int_equal(sl_pq_rle_get_u32(&d, &extra, 1, &err), EILSEQ);
      sl_buffer_reset(&buf);
    }
  }
  struct sl_buffer buf;
  sl_buffer_init(&buf, NULL);
  assert_int_equal(sl_pq_rle_encode_run(4, 10, 2, &buf), EINVAL);
  assert_int_equal(sl_pq_rle_encode_run(1, 10, 33, &buf), EINVAL);
  assert_int_equal(sl_pq_rle_encode_run(1, -1, 1, &buf), EINVAL);
  assert_int_equal(buf.size, 0);
  sl_buffer_reset(&buf);
  free(got);
}

static void test_rle_encoder_rejects_wide_values(void** state) {
  (void)state;
  struct sl_buffer buf;
  sl_buffer_init(&buf, NULL);
  uint32_t v[3] = {1, 8, 2};
  assert_int_equal(sl_pq_rle_encode_u32(v, 3, 3, &buf), EINVAL);
  int16_t l[2] = {0, -1};
  assert_int_equal(sl_pq_rle_encode_i16(l, 2, 4, &buf), EINVAL);
  assert_int_equal(sl_pq_rle_encode_u32(v, 3, 33, &buf), EINVAL);
  sl_buffer_reset(&buf);
}

/// Encodings.md: "the numbers 0 through 7 using bit width 3" bit-packed is
/// 10001000 11000110 11111010; an RLE run is <varint(count << 1)> <value in
/// ceil(w / 8) bytes>.
static void test_rle_spec_examples(void** state) {
  (void)state;
  struct sluice_error err = {0};
  const uint8_t packed[] = {0x03, 0x88, 0xC6, 0xFA};
  uint32_t out[8];
  struct pq_rle_decoder d;
  assert_int_equal(sl_pq_rle_init(&d, packed, sizeof packed, 3, &err), 0);
  assert_int_equal(sl_pq_rle_get_u32(&d, out, 8, &err), 0);
  for (uint32_t i = 0; i < 8; ++i) assert_int_equal(out[i], i);
  uint32_t in[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  struct sl_buffer buf;
  sl_buffer_init(&buf, NULL);
  assert_int_equal(sl_pq_rle_encode_u32(in, 8, 3, &buf), 0);
  assert_int_equal(buf.size, 4);
  assert_memory_equal(buf.data, packed, 4);
  sl_buffer_reset(&buf);

  // 100 times the value 5 then 300 times 0x1234 (width 13 -> 2 value bytes).
  const uint8_t runs[] = {0xC8, 0x01, 0x05, 0xD8, 0x04, 0x34, 0x12};
  uint32_t many[400];
  assert_int_equal(sl_pq_rle_init(&d, runs, 3, 3, &err), 0);
  assert_int_equal(sl_pq_rle_get_u32(&d, many, 100, &err), 0);
  for (int i = 0; i < 100; ++i) assert_int_equal(many[i], 5);
  assert_int_equal(sl_pq_rle_init(&d, runs + 3, 4, 13, &err), 0);
  assert_int_equal(sl_pq_rle_get_u32(&d, many, 300, &err), 0);
  for (int i = 0; i < 300; ++i) assert_int_equal(many[i], 0x1234);
  // A zero-length run (header 0x00, value 0) is skipped.
  const uint8_t empty_run[] = {0x00, 0x00, 0x10, 0x05};
  assert_int_equal(sl_pq_rle_init(&d, empty_run, sizeof empty_run, 3, &err), 0);
  assert_int_equal(sl_pq_rle_get_u32(&d, many, 8, &err), 0);
  for (int i = 0; i < 8; ++i) assert_int_equal(many[i], 5);
  assert_int_equal(sl_pq_rle_get_u32(&d, many, 1, &err), EILSEQ);

  // The deprecated BIT_PACKED, MSB first: 00000101 00111001 01110111.
  const uint8_t msb[] = {0x05, 0x39, 0x77};
  int16_t lv[8];
  int64_t consumed = 0;
  assert_int_equal(sl_pq_bit_packed_levels_decode(msb, 3, 3, 8, lv, &consumed, &err), 0);
  assert_int_equal(consumed, 3);
  for (int i = 0; i < 8; ++i) assert_int_equal(lv[i], i);
  assert_int_equal(sl_pq_bit_packed_levels_decode(msb, 2, 3, 8, lv, &consumed, &err), EILSEQ);
  assert_int_equal(sl_pq_bit_packed_levels_decode(msb, 3, 17, 1, lv, &consumed, &err), EILSEQ);
}

static void test_rle_bad_input(void** state) {
  (void)state;
  struct sluice_error err = {0};
  struct pq_rle_decoder d;
  uint32_t out[16];
  assert_int_equal(sl_pq_rle_init(&d, NULL, 0, 33, &err), EILSEQ);
  assert_int_equal(sl_pq_rle_init(&d, NULL, 0, -1, &err), EILSEQ);
  // Overlong varint header (6 bytes), header beyond 32 bits.
  const uint8_t overlong[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x01};
  assert_int_equal(sl_pq_rle_init(&d, overlong, sizeof overlong, 1, &err), 0);
  assert_int_equal(sl_pq_rle_get_u32(&d, out, 1, &err), EILSEQ);
  const uint8_t big[] = {0xFF, 0xFF, 0xFF, 0xFF, 0x7F, 0x00};
  assert_int_equal(sl_pq_rle_init(&d, big, sizeof big, 1, &err), 0);
  assert_int_equal(sl_pq_rle_get_u32(&d, out, 1, &err), EILSEQ);
  // A huge bit-packed run with few bytes: only what is there.
  const uint8_t huge[] = {0xFF, 0xFF, 0xFF, 0xFF, 0x07, 0xAA};
  assert_int_equal(sl_pq_rle_init(&d, huge, sizeof huge, 1, &err), 0);
  assert_int_equal(sl_pq_rle_get_u32(&d, out, 8, &err), 0);
  assert_int_equal(out[0], 0);
  assert_int_equal(out[1], 1);
  assert_int_equal(sl_pq_rle_get_u32(&d, out, 1, &err), EILSEQ);
  // RLE value wider than the bit width.
  const uint8_t wide[] = {0x10, 0x09};
  assert_int_equal(sl_pq_rle_init(&d, wide, sizeof wide, 3, &err), 0);
  assert_int_equal(sl_pq_rle_get_u32(&d, out, 1, &err), EILSEQ);
  // Levels wider than 16 bits.
  int16_t lv[1];
  assert_int_equal(sl_pq_rle_init(&d, wide, sizeof wide, 17, &err), 0);
  assert_int_equal(sl_pq_rle_get_i16(&d, lv, 1, &err), EILSEQ);
}

static void test_rle_truncation_every_prefix(void** state) {
  (void)state;
  uint64_t rng = 42;
  uint32_t values[600], out[600];
  for (int w = 0; w <= 32; w += (w < 4 ? 1 : 5)) {
    fill_values(values, 600, w, &rng);
    struct sl_buffer buf;
    sl_buffer_init(&buf, NULL);
    assert_int_equal(sl_pq_rle_encode_u32(values, 600, w, &buf), 0);
    for (int64_t len = 0; len < buf.size; ++len) {
      // An exact-size heap copy so that ASan sees any overread.
      uint8_t* copy = malloc(len > 0 ? (size_t)len : 1);
      memcpy(copy, buf.data, (size_t)len);
      struct sluice_error err = {0};
      int rc = decode_chunked(copy, len, w, 600, out, &rng, &err);
      if (rc != EILSEQ && !(w == 0 && len == 0))
        fail_msg("width %d prefix %lld of %lld: rc %d", w, (long long)len, (long long)buf.size, rc);
      free(copy);
    }
    sl_buffer_reset(&buf);
  }
}

static void test_dict_indices(void** state) {
  (void)state;
  struct sluice_error err = {0};
  uint64_t rng = 7;
  uint32_t values[1000], out[1000];
  for (int64_t i = 0; i < 1000; ++i) values[i] = (uint32_t)(rng_next(&rng) % 1000);
  struct sl_buffer buf;
  sl_buffer_init(&buf, NULL);
  uint8_t w = 10;
  assert_int_equal(sl_buffer_append(&buf, &w, 1), 0);
  assert_int_equal(sl_pq_rle_encode_u32(values, 1000, 10, &buf), 0);
  assert_int_equal(sl_pq_dict_indices_decode(buf.data, buf.size, 1000, 1000, out, &err), 0);
  assert_memory_equal(out, values, sizeof values);
  // Index 999 and a dictionary of 999 entries: error naming the index.
  values[500] = 999;
  buf.size = 1;
  assert_int_equal(sl_pq_rle_encode_u32(values, 1000, 10, &buf), 0);
  assert_int_equal(sl_pq_dict_indices_decode(buf.data, buf.size, 1000, 999, out, &err), EILSEQ);
  assert_non_null(strstr(err.message, "999"));
  // Bad bit width byte; missing byte.
  buf.data[0] = 33;
  assert_int_equal(sl_pq_dict_indices_decode(buf.data, buf.size, 10, 1000, out, &err), EILSEQ);
  assert_int_equal(sl_pq_dict_indices_decode(buf.data, 0, 10, 1000, out, &err), EILSEQ);
  // Width 0 with no runs at all: every index is 0.
  const uint8_t zero[] = {0};
  assert_int_equal(sl_pq_dict_indices_decode(zero, 1, 5, 1, out, &err), 0);
  for (int i = 0; i < 5; ++i) assert_int_equal(out[i], 0);
  sl_buffer_reset(&buf);
  assert_int_equal(sl_pq_bit_width(0), 0);
  assert_int_equal(sl_pq_bit_width(1), 1);
  assert_int_equal(sl_pq_bit_width(999), 10);
  assert_int_equal(sl_pq_bit_width(1024), 11);
  assert_int_equal(sl_pq_bit_width(UINT32_MAX), 32);
  assert_int_equal(sl_pq_bit_width(UINT64_MAX), 64);
}

/* ---- DELTA_BINARY_PACKED ------------------------------------------------------ */

struct bit_writer {
  uint8_t* data;
  int64_t bit;
};

static void put_bits(struct bit_writer* bw, uint64_t v, int w) {
  for (int i = 0; i < w; ++i, ++bw->bit)
    if ((v >> i) & 1) bw->data[bw->bit >> 3] |= (uint8_t)(1u << (bw->bit & 7));
}

static void put_uleb(struct sl_buffer* b, uint64_t v) {
  do {
    uint8_t byte = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v) byte |= 0x80;
    assert_int_equal(sl_buffer_append(b, &byte, 1), 0);
  } while (v);
}

static uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

static int width_of(uint64_t v) {
  int w = 0;
  while (v) {
    ++w;
    v >>= 1;
  }
  return w;
}

/// Reference DELTA_BINARY_PACKED encoder, bit by bit. is32: deltas wrap in
/// 32 bits (as Arrow's INT32 writer computes them).
static void delta_encode(const int64_t* v, int64_t n, bool is32, int64_t block, int64_t minis,
                         struct sl_buffer* b) {
  put_uleb(b, (uint64_t)block);
  put_uleb(b, (uint64_t)minis);
  put_uleb(b, (uint64_t)n);
  put_uleb(b, zigzag(n > 0 ? v[0] : 0));
  int64_t per = block / minis;
  for (int64_t start = 1; start < n; start += block) {
    int64_t cnt = n - start < block ? n - start : block;
    int64_t* d = calloc((size_t)block, sizeof *d);
    int64_t min = INT64_MAX;
    for (int64_t i = 0; i < cnt; ++i) {
      uint64_t diff = (uint64_t)v[start + i] - (uint64_t)v[start + i - 1];
      d[i] = is32 ? (int64_t)(int32_t)(uint32_t)diff : (int64_t)diff;
      if (d[i] < min) min = d[i];
    }
    put_uleb(b, zigzag(min));
    int64_t width_at = b->size;
    for (int64_t m = 0; m < minis; ++m) {
      uint8_t garbage = 0x5A;  // unused miniblocks: readers accept any width
      assert_int_equal(sl_buffer_append(b, &garbage, 1), 0);
    }
    for (int64_t m = 0; m * per < cnt; ++m) {
      uint64_t max = 0;
      for (int64_t i = m * per; i < (m + 1) * per && i < cnt; ++i) {
        uint64_t rel = is32 ? (uint64_t)(uint32_t)((uint32_t)d[i] - (uint32_t)min)
                            : (uint64_t)d[i] - (uint64_t)min;
        if (rel > max) max = rel;
      }
      int w = width_of(max);
      b->data[width_at + m] = (uint8_t)w;
      int64_t bytes = per * w / 8;
      assert_int_equal(sl_buffer_reserve(b, bytes), 0);
      memset(b->data + b->size, 0, (size_t)bytes);
      struct bit_writer bw = {b->data + b->size, 0};
      for (int64_t i = m * per; i < (m + 1) * per; ++i) {
        uint64_t rel = 0;
        if (i < cnt)
          rel = is32 ? (uint64_t)(uint32_t)((uint32_t)d[i] - (uint32_t)min)
                     : (uint64_t)d[i] - (uint64_t)min;
        put_bits(&bw, rel, w);
      }
      b->size += bytes;
    }
    free(d);
  }
}

/// Encodings.md examples 1 (1..5) and 2 (7 5 3 1 2 3 4 5), with a header of
/// 128 values in 4 miniblocks (the spec's "8 values, 1 miniblock" breaks its
/// own multiple-of-128 rule, and Arrow rejects it too).
static void test_delta_spec_examples(void** state) {
  (void)state;
  struct sluice_error err = {0};
  int64_t consumed = 0;
  const uint8_t ex1[] = {0x80, 0x01, 0x04, 0x05, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00};
  int32_t v32[8];
  assert_int_equal(sl_pq_delta_binary_decode_i32(ex1, sizeof ex1, 5, v32, &consumed, &err), 0);
  for (int i = 0; i < 5; ++i) assert_int_equal(v32[i], i + 1);
  assert_int_equal(consumed, sizeof ex1);
  int64_t count = 0;
  assert_int_equal(sl_pq_delta_binary_count(ex1, sizeof ex1, &count, &err), 0);
  assert_int_equal(count, 5);
  // Example 2: deltas -2 -2 -2 1 1 1 1, min -2, relative 0 0 0 3 3 3 3 in 2
  // bits; the widths of the unused miniblocks (7, 9, 33) must be ignored.
  const uint8_t ex2[] = {0x80, 0x01, 0x04, 0x08, 0x0E, 0x03, 0x02, 0x07, 0x09, 0x21,
                         0xC0, 0x3F, 0, 0, 0, 0, 0, 0, 0xEE};
  const int64_t want2[] = {7, 5, 3, 1, 2, 3, 4, 5};
  int64_t v64[8];
  assert_int_equal(sl_pq_delta_binary_decode_i64(ex2, sizeof ex2, 8, v64, &consumed, &err), 0);
  assert_memory_equal(v64, want2, sizeof want2);
  assert_int_equal(consumed, sizeof ex2 - 1);  // the trailing 0xEE is not part of it
  // Fewer values than the header holds: fine; more: EILSEQ.
  assert_int_equal(sl_pq_delta_binary_decode_i32(ex2, sizeof ex2, 3, v32, &consumed, &err), 0);
  assert_int_equal(v32[2], 3);
  assert_int_equal(consumed, sizeof ex2 - 1);
  assert_int_equal(sl_pq_delta_binary_decode_i32(ex2, sizeof ex2, 9, v32, &consumed, &err), EILSEQ);
  // The same data through the reference encoder.
  struct sl_buffer b;
  sl_buffer_init(&b, NULL);
  delta_encode(want2, 8, false, 128, 4, &b);
  assert_int_equal(sl_pq_delta_binary_decode_i64(b.data, b.size, 8, v64, &consumed, &err), 0);
  assert_memory_equal(v64, want2, sizeof want2);
  sl_buffer_reset(&b);
  // The spec's literal bytes (block size 8): rejected.
  const uint8_t spec8[] = {0x08, 0x01, 0x05, 0x02, 0x02, 0x00};
  assert_int_equal(sl_pq_delta_binary_decode_i32(spec8, sizeof spec8, 5, v32, &consumed, &err), EILSEQ);
}

static void test_delta_header_validation(void** state) {
  (void)state;
  struct sluice_error err = {0};
  int64_t consumed, v[4];
  // miniblocks not dividing the block into multiples of 32 / zero
  const uint8_t bad_minis[] = {0x80, 0x01, 0x03, 0x01, 0x00};
  assert_int_equal(sl_pq_delta_binary_decode_i64(bad_minis, 5, 1, v, &consumed, &err), EILSEQ);
  const uint8_t zero_minis[] = {0x80, 0x01, 0x00, 0x01, 0x00};
  assert_int_equal(sl_pq_delta_binary_decode_i64(zero_minis, 5, 1, v, &consumed, &err), EILSEQ);
  const uint8_t eight_minis[] = {0x80, 0x01, 0x08, 0x01, 0x00};  // 16 values each
  assert_int_equal(sl_pq_delta_binary_decode_i64(eight_minis, 5, 1, v, &consumed, &err), EILSEQ);
  const uint8_t zero_block[] = {0x00, 0x01, 0x01, 0x00};
  assert_int_equal(sl_pq_delta_binary_decode_i64(zero_block, 4, 1, v, &consumed, &err), EILSEQ);
  // Overlong / overflowing varints.
  const uint8_t overlong[] = {0x80, 0x01, 0x04, 0x02, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                              0xFF, 0xFF, 0xFF, 0xFF, 0x7F};
  assert_int_equal(sl_pq_delta_binary_decode_i64(overlong, sizeof overlong, 1, v, &consumed, &err), EILSEQ);
  // Miniblock width 33 for INT32 (65 for INT64).
  const uint8_t w33[] = {0x80, 0x01, 0x04, 0x02, 0x00, 0x00, 33, 0, 0, 0};
  uint8_t padded[sizeof w33 + 33 * 4];
  memset(padded, 0, sizeof padded);
  memcpy(padded, w33, sizeof w33);
  int32_t v32[2];
  assert_int_equal(sl_pq_delta_binary_decode_i32(padded, sizeof padded, 2, v32, &consumed, &err), EILSEQ);
  assert_int_equal(sl_pq_delta_binary_decode_i64(padded, sizeof padded, 2, v, &consumed, &err), 0);
  padded[6] = 65;
  assert_int_equal(sl_pq_delta_binary_decode_i64(padded, sizeof padded, 2, v, &consumed, &err), EILSEQ);
  // Count 1: header only, no blocks.
  const uint8_t one[] = {0x80, 0x01, 0x04, 0x01, 0x03};
  assert_int_equal(sl_pq_delta_binary_decode_i64(one, 5, 1, v, &consumed, &err), 0);
  assert_int_equal(v[0], -2);
  assert_int_equal(consumed, 5);
}

static void check_delta_roundtrip(const int64_t* v, int64_t n, bool is32, int64_t block,
                                  int64_t minis) {
  struct sl_buffer b;
  sl_buffer_init(&b, NULL);
  delta_encode(v, n, is32, block, minis, &b);
  struct sluice_error err = {0};
  int64_t consumed = -1;
  if (is32) {
    int32_t* out = malloc((size_t)(n + 1) * sizeof *out);
    int rc = sl_pq_delta_binary_decode_i32(b.data, b.size, n, out, &consumed, &err);
    if (rc != 0) fail_msg("i32 n %lld: %s", (long long)n, err.message);
    for (int64_t i = 0; i < n; ++i) assert_int_equal(out[i], (int32_t)v[i]);
    free(out);
  } else {
    int64_t* out = malloc((size_t)(n + 1) * sizeof *out);
    int rc = sl_pq_delta_binary_decode_i64(b.data, b.size, n, out, &consumed, &err);
    if (rc != 0) fail_msg("i64 n %lld: %s", (long long)n, err.message);
    for (int64_t i = 0; i < n; ++i)
      if (out[i] != v[i]) fail_msg("i64 n %lld: value %lld", (long long)n, (long long)i);
    free(out);
  }
  assert_int_equal(consumed, b.size);
  // Every shorter prefix: EILSEQ (exact-size copies for ASan).
  for (int64_t len = 0; len < b.size; len += (b.size > 2000 ? 37 : 1)) {
    uint8_t* copy = malloc(len ? (size_t)len : 1);
    memcpy(copy, b.data, (size_t)len);
    int64_t out[4096];
    int64_t k = n < 4096 ? n : 4096;
    int rc = is32 ? sl_pq_delta_binary_decode_i32(copy, len, k, (int32_t*)out, &consumed, &err)
                  : sl_pq_delta_binary_decode_i64(copy, len, k, out, &consumed, &err);
    if (rc != EILSEQ && !(n == 0 && len == 0))
      fail_msg("n %lld prefix %lld of %lld: rc %d", (long long)n, (long long)len, (long long)b.size, rc);
    free(copy);
  }
  sl_buffer_reset(&b);
}

static void test_delta_roundtrips(void** state) {
  (void)state;
  uint64_t rng = 99;
  static const int64_t k_lengths[] = {0, 1, 2, 31, 32, 33, 128, 129, 1000, 3000};
  int64_t* v = malloc(3000 * sizeof *v);
  for (int kind = 0; kind < 6; ++kind) {
    for (size_t li = 0; li < sizeof k_lengths / sizeof k_lengths[0]; ++li) {
      int64_t n = k_lengths[li];
      for (int64_t i = 0; i < n; ++i) {
        uint64_t r = rng_next(&rng);
        switch (kind) {
          case 0: v[i] = (int64_t)(r % 100); break;                    // small
          case 1: v[i] = i * 3 - 50; break;                            // linear
          case 2: v[i] = (int64_t)r; break;                            // full 64 bits
          case 3: v[i] = (r & 1) ? INT64_MAX : INT64_MIN; break;       // wrapping
          case 4: v[i] = (int32_t)(uint32_t)r; break;                  // full 32 bits
          default: v[i] = (r & 1) ? INT32_MAX : INT32_MIN; break;
        }
      }
      check_delta_roundtrip(v, n, false, 128, 4);
      check_delta_roundtrip(v, n, false, 256, 2);
      if (kind != 2 && kind != 3) {
        check_delta_roundtrip(v, n, true, 128, 4);
        check_delta_roundtrip(v, n, true, 128, 1);
      }
    }
  }
  free(v);
}

/* ---- byte arrays, PLAIN, BYTE_STREAM_SPLIT ------------------------------------ */

static void test_delta_length_byte_array_spec(void** state) {
  (void)state;
  // Encodings.md: "Hello", "World", "Foobar", "ABCDEF" ->
  // DeltaEncoding(5, 5, 6, 6) "HelloWorldFoobarABCDEF".
  struct sl_buffer b;
  sl_buffer_init(&b, NULL);
  const int64_t lens_in[] = {5, 5, 6, 6};
  delta_encode(lens_in, 4, true, 128, 4, &b);
  int64_t header = b.size;
  assert_int_equal(sl_buffer_append(&b, "HelloWorldFoobarABCDEF", 22), 0);
  const uint8_t* ptrs[4];
  int32_t lens[4];
  int64_t consumed = 0;
  struct sluice_error err = {0};
  assert_int_equal(sl_pq_delta_length_byte_array_decode(b.data, b.size, 4, ptrs, lens, &consumed, &err), 0);
  assert_int_equal(consumed, header + 22);
  const char* want[] = {"Hello", "World", "Foobar", "ABCDEF"};
  for (int i = 0; i < 4; ++i) {
    assert_int_equal(lens[i], (int32_t)strlen(want[i]));
    assert_memory_equal(ptrs[i], want[i], strlen(want[i]));
  }
  for (int64_t len = 0; len < b.size; ++len)
    assert_int_equal(sl_pq_delta_length_byte_array_decode(b.data, len, 4, ptrs, lens, &consumed, &err), EILSEQ);
  sl_buffer_reset(&b);
  // A negative length.
  const int64_t neg[] = {5, -1};
  delta_encode(neg, 2, true, 128, 4, &b);
  assert_int_equal(sl_buffer_append(&b, "Hello", 5), 0);
  assert_int_equal(sl_pq_delta_length_byte_array_decode(b.data, b.size, 2, ptrs, lens, &consumed, &err), EILSEQ);
  sl_buffer_reset(&b);
}

static void build_dba(const int64_t* prefixes, const int64_t* suffix_lens, const char* suffixes,
                      int64_t n, struct sl_buffer* b) {
  delta_encode(prefixes, n, true, 128, 4, b);
  delta_encode(suffix_lens, n, true, 128, 4, b);
  assert_int_equal(sl_buffer_append(b, suffixes, (int64_t)strlen(suffixes)), 0);
}

static void test_delta_byte_array_spec(void** state) {
  (void)state;
  // Encodings.md: "axis", "axle", "babble", "babyhood" -> prefixes
  // (0, 2, 0, 3), suffix lengths (4, 2, 6, 5), "axislebabbleyhood".
  const int64_t pre[] = {0, 2, 0, 3}, suf[] = {4, 2, 6, 5};
  struct sl_buffer b, scratch;
  sl_buffer_init(&b, NULL);
  struct test_allocator ta;
  test_allocator_init(&ta);
  sl_buffer_init(&scratch, &ta.base);
  build_dba(pre, suf, "axislebabbleyhood", 4, &b);
  const uint8_t* ptrs[4];
  int32_t lens[4];
  struct sluice_error err = {0};
  assert_int_equal(sl_pq_delta_byte_array_decode(b.data, b.size, 4, &scratch, ptrs, lens, &err), 0);
  const char* want[] = {"axis", "axle", "babble", "babyhood"};
  for (int i = 0; i < 4; ++i) {
    assert_int_equal(lens[i], (int32_t)strlen(want[i]));
    assert_memory_equal(ptrs[i], want[i], strlen(want[i]));
  }
  for (int64_t len = 0; len < b.size; ++len) {
    scratch.size = 0;
    assert_int_equal(sl_pq_delta_byte_array_decode(b.data, len, 4, &scratch, ptrs, lens, &err), EILSEQ);
  }
  sl_buffer_reset(&b);
  // A prefix longer than the previous value.
  const int64_t bad_pre[] = {0, 5};
  const int64_t bad_suf[] = {4, 1};
  build_dba(bad_pre, bad_suf, "axisx", 2, &b);
  scratch.size = 0;
  assert_int_equal(sl_pq_delta_byte_array_decode(b.data, b.size, 2, &scratch, ptrs, lens, &err), EILSEQ);
  assert_non_null(strstr(err.message, "prefix"));
  // Allocation failure of the prefix scratch: ENOMEM, nothing leaked.
  sl_buffer_reset(&scratch);
  sl_buffer_reset(&b);
  build_dba(pre, suf, "axislebabbleyhood", 4, &b);
  for (long long fail = 1; fail <= 3; ++fail) {
    ta.allocations = 0;
    ta.fail_at = fail;
    int rc = sl_pq_delta_byte_array_decode(b.data, b.size, 4, &scratch, ptrs, lens, &err);
    assert_true(rc == 0 || rc == ENOMEM);
    sl_buffer_reset(&scratch);
  }
  assert_int_equal(ta.live_bytes, 0);
  sl_buffer_reset(&b);
}

static void test_plain(void** state) {
  (void)state;
  struct sluice_error err = {0};
  const uint8_t bits[] = {0xA5, 0x03};
  uint8_t out[10];
  int64_t consumed = 0;
  assert_int_equal(sl_pq_plain_bool_decode(bits, 2, 10, out, &consumed, &err), 0);
  const uint8_t want[] = {1, 0, 1, 0, 0, 1, 0, 1, 1, 1};
  assert_memory_equal(out, want, 10);
  assert_int_equal(consumed, 2);
  assert_int_equal(sl_pq_plain_bool_decode(bits, 1, 10, out, &consumed, &err), EILSEQ);

  const uint8_t ba[] = {3, 0, 0, 0, 'a', 'b', 'c', 0, 0, 0, 0, 1, 0, 0, 0, 'z'};
  const uint8_t* ptrs[3];
  int32_t lens[3];
  assert_int_equal(sl_pq_plain_byte_array_decode(ba, sizeof ba, 3, ptrs, lens, &consumed, &err), 0);
  assert_int_equal(consumed, sizeof ba);
  assert_int_equal(lens[0], 3);
  assert_memory_equal(ptrs[0], "abc", 3);
  assert_int_equal(lens[1], 0);
  assert_int_equal(lens[2], 1);
  assert_int_equal(ptrs[2][0], 'z');
  for (int64_t len = 0; len < (int64_t)sizeof ba; ++len)
    assert_int_equal(sl_pq_plain_byte_array_decode(ba, len, 3, ptrs, lens, &consumed, &err), EILSEQ);
  const uint8_t huge[] = {0xFF, 0xFF, 0xFF, 0xFF, 0};
  assert_int_equal(sl_pq_plain_byte_array_decode(huge, 5, 1, ptrs, lens, &consumed, &err), EILSEQ);
}

static void test_byte_stream_split(void** state) {
  (void)state;
  struct sluice_error err = {0};
  for (int width = 1; width <= 9; ++width) {
    const int64_t n = 37;
    uint8_t values[37 * 9], split[37 * 9], out[37 * 9];
    for (int64_t i = 0; i < n * width; ++i) values[i] = (uint8_t)(i * 7 + width);
    for (int64_t i = 0; i < n; ++i)
      for (int k = 0; k < width; ++k) split[k * n + i] = values[i * width + k];
    assert_int_equal(sl_pq_byte_stream_split_decode(split, n * width, n, width, out, &err), 0);
    assert_memory_equal(out, values, (size_t)(n * width));
    assert_int_equal(sl_pq_byte_stream_split_decode(split, n * width - 1, n, width, out, &err), EILSEQ);
  }
  assert_int_equal(sl_pq_byte_stream_split_decode(NULL, 0, 1, 0, NULL, &err), EILSEQ);
}

/* ---- codecs ---------------------------------------------------------------- */

static const enum pq_codec k_write_codecs[] = {PQ_CODEC_UNCOMPRESSED, PQ_CODEC_SNAPPY,
                                               PQ_CODEC_GZIP,         PQ_CODEC_BROTLI,
                                               PQ_CODEC_ZSTD,         PQ_CODEC_LZ4_RAW};

static void make_page(uint8_t* p, int64_t n, uint64_t seed) {
  uint64_t rng = seed;
  for (int64_t i = 0; i < n; ++i)
    p[i] = (i / 64) % 3 == 0 ? (uint8_t)rng_next(&rng) : (uint8_t)("parquet page "[i % 13]);
}

static void test_codec_roundtrips(void** state) {
  (void)state;
  struct pq_codec_ctx* ctx;
  struct sluice_error err = {0};
  assert_int_equal(sl_pq_codec_ctx_new(NULL, &ctx, &err), 0);
  static const int64_t k_sizes[] = {0, 1, 100, 70000, 300000};
  uint8_t* page = malloc(300000);
  uint8_t* back = malloc(300001);
  for (size_t c = 0; c < sizeof k_write_codecs / sizeof k_write_codecs[0]; ++c) {
    enum pq_codec codec = k_write_codecs[c];
    for (size_t s = 0; s < sizeof k_sizes / sizeof k_sizes[0]; ++s) {
      int64_t n = k_sizes[s];
      make_page(page, n, (uint64_t)n + 1);
      struct sl_buffer z;
      sl_buffer_init(&z, NULL);
      // Something already in the buffer: compression appends.
      assert_int_equal(sl_buffer_append(&z, "XY", 2), 0);
      int rc = sl_pq_compress(ctx, codec, PQ_LEVEL_DEFAULT, page, n, &z, &err);
      if (rc != 0) fail_msg("%s compress %lld: %s", sl_pq_codec_name(codec), (long long)n, err.message);
      assert_memory_equal(z.data, "XY", 2);
      rc = sl_pq_decompress(ctx, codec, z.data + 2, z.size - 2, back, n, &err);
      if (rc != 0) fail_msg("%s decompress %lld: %s", sl_pq_codec_name(codec), (long long)n, err.message);
      if (n > 0) assert_memory_equal(back, page, (size_t)n);
      // Wrong uncompressed sizes: EILSEQ naming the codec.
      rc = sl_pq_decompress(ctx, codec, z.data + 2, z.size - 2, back, n + 1, &err);
      assert_int_equal(rc, EILSEQ);
      assert_non_null(strstr(err.message, sl_pq_codec_name(codec)));
      if (n > 0) {
        rc = sl_pq_decompress(ctx, codec, z.data + 2, z.size - 2, back, n - 1, &err);
        assert_int_equal(rc, EILSEQ);
        assert_non_null(strstr(err.message, sl_pq_codec_name(codec)));
      }
      // Truncations (exact-size copies): EILSEQ, never a crash.
      if (codec != PQ_CODEC_UNCOMPRESSED && n <= 70000) {
        int64_t zn = z.size - 2;
        for (int64_t len = 0; len < zn; len += (zn > 300 ? zn / 97 + 1 : 1)) {
          uint8_t* copy = malloc(len ? (size_t)len : 1);
          memcpy(copy, z.data + 2, (size_t)len);
          rc = sl_pq_decompress(ctx, codec, copy, len, back, n, &err);
          if (rc != EILSEQ && !(n == 0 && len == 0))  // zero bytes = an empty page
            fail_msg("%s: prefix %lld of %lld gave %d", sl_pq_codec_name(codec), (long long)len,
                     (long long)zn, rc);
          free(copy);
        }
      }
      sl_buffer_reset(&z);
    }
    // Explicit levels.
    struct sl_buffer z;
    sl_buffer_init(&z, NULL);
    make_page(page, 5000, 3);
    if (codec == PQ_CODEC_GZIP || codec == PQ_CODEC_ZSTD || codec == PQ_CODEC_BROTLI) {
      assert_int_equal(sl_pq_compress(ctx, codec, 1, page, 5000, &z, &err), 0);
      assert_int_equal(sl_pq_decompress(ctx, codec, z.data, z.size, back, 5000, &err), 0);
      assert_memory_equal(back, page, 5000);
      // Past the range: gzip refuses it, zstd and brotli take their
      // strongest, as pyarrow does; zstd's negative levels are levels.
      int level = 1000;
      assert_int_equal(sl_pq_codec_level(codec, &level, &err), codec == PQ_CODEC_GZIP ? EINVAL : 0);
      if (codec != PQ_CODEC_GZIP) assert_int_equal(level, codec == PQ_CODEC_ZSTD ? 22 : 11);
      level = -3;
      assert_int_equal(sl_pq_codec_level(codec, &level, &err), codec == PQ_CODEC_ZSTD ? 0 : EINVAL);
      if (codec == PQ_CODEC_ZSTD) {
        z.size = 0;
        assert_int_equal(sl_pq_compress(ctx, codec, level, page, 5000, &z, &err), 0);
        assert_int_equal(sl_pq_decompress(ctx, codec, z.data, z.size, back, 5000, &err), 0);
        assert_memory_equal(back, page, 5000);
      }
    }
    int level = 3;
    assert_int_equal(sl_pq_codec_level(codec, &level, &err),
                     codec == PQ_CODEC_SNAPPY || codec == PQ_CODEC_UNCOMPRESSED ? EINVAL : 0);
    sl_buffer_reset(&z);
  }
  struct sl_buffer z;
  sl_buffer_init(&z, NULL);
  assert_int_equal(sl_pq_compress(ctx, PQ_CODEC_LZO, PQ_LEVEL_DEFAULT, page, 10, &z, &err), ENOTSUP);
  assert_int_equal(sl_pq_compress(ctx, (enum pq_codec)42, PQ_LEVEL_DEFAULT, page, 10, &z, &err), ENOTSUP);
  assert_int_equal(sl_pq_decompress(ctx, PQ_CODEC_LZO, page, 10, back, 10, &err), ENOTSUP);
  assert_int_equal(sl_pq_decompress(ctx, (enum pq_codec)42, page, 10, back, 10, &err), ENOTSUP);
  assert_int_equal(sl_pq_decompress(ctx, PQ_CODEC_ZSTD, page, -1, back, 10, &err), EILSEQ);
  assert_int_equal(sl_pq_decompress(ctx, PQ_CODEC_ZSTD, page, 10, back, (int64_t)1 << 40, &err), EILSEQ);
  // Garbage input for every codec: EILSEQ.
  make_page(page, 1000, 5);
  const enum pq_codec k_read[] = {PQ_CODEC_SNAPPY, PQ_CODEC_GZIP, PQ_CODEC_BROTLI, PQ_CODEC_ZSTD,
                                  PQ_CODEC_LZ4, PQ_CODEC_LZ4_RAW};
  for (size_t c = 0; c < sizeof k_read / sizeof k_read[0]; ++c)
    assert_int_equal(sl_pq_decompress(ctx, k_read[c], page, 1000, back, 5000, &err), EILSEQ);
  sl_buffer_reset(&z);
  free(page);
  free(back);
  sl_pq_codec_ctx_free(ctx);
}

static void test_gzip_concatenated_members(void** state) {
  (void)state;
  uint8_t page[20000], back[20000], z[30000];
  make_page(page, sizeof page, 11);
  struct libdeflate_compressor* c = libdeflate_alloc_compressor(6);
  size_t a = libdeflate_gzip_compress(c, page, 12345, z, sizeof z);
  size_t b = libdeflate_gzip_compress(c, page + 12345, sizeof page - 12345, z + a, sizeof z - a);
  size_t e = libdeflate_gzip_compress(c, page, 0, z + a + b, sizeof z - a - b);  // empty member
  libdeflate_free_compressor(c);
  assert_true(a > 0 && b > 0 && e > 0);
  struct pq_codec_ctx* ctx;
  struct sluice_error err = {0};
  assert_int_equal(sl_pq_codec_ctx_new(NULL, &ctx, &err), 0);
  assert_int_equal(sl_pq_decompress(ctx, PQ_CODEC_GZIP, z, (int64_t)(a + b + e), back, sizeof page, &err), 0);
  assert_memory_equal(back, page, sizeof page);
  // The first member alone says less than the header: EILSEQ.
  assert_int_equal(sl_pq_decompress(ctx, PQ_CODEC_GZIP, z, (int64_t)a, back, sizeof page, &err), EILSEQ);
  // Trailing garbage after the members: EILSEQ.
  z[a + b] = 0x42;
  assert_int_equal(sl_pq_decompress(ctx, PQ_CODEC_GZIP, z, (int64_t)(a + b + 1), back, sizeof page, &err), EILSEQ);
  sl_pq_codec_ctx_free(ctx);
}

static void put_be32(uint8_t* p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}

static void test_lz4_hadoop_and_raw(void** state) {
  (void)state;
  uint8_t page[10000], back[10000], z[12000];
  make_page(page, sizeof page, 13);
  // Two Hadoop blocks: [raw size][packed size][block] twice.
  int64_t pos = 0;
  for (int part = 0; part < 2; ++part) {
    const uint8_t* src = page + part * 4000;
    int len = part == 0 ? 4000 : 6000;
    int got = LZ4_compress_default((const char*)src, (char*)z + pos + 8, len, (int)sizeof z - (int)pos - 8);
    assert_true(got > 0);
    put_be32(z + pos, (uint32_t)len);
    put_be32(z + pos + 4, (uint32_t)got);
    pos += 8 + got;
  }
  struct pq_codec_ctx* ctx;
  struct sluice_error err = {0};
  assert_int_equal(sl_pq_codec_ctx_new(NULL, &ctx, &err), 0);
  assert_int_equal(sl_pq_decompress(ctx, PQ_CODEC_LZ4, z, pos, back, sizeof page, &err), 0);
  assert_memory_equal(back, page, sizeof page);
  // LZ4_RAW does not accept the framing.
  assert_int_equal(sl_pq_decompress(ctx, PQ_CODEC_LZ4_RAW, z, pos, back, sizeof page, &err), EILSEQ);
  // A raw block under codec LZ4: the fallback.
  int got = LZ4_compress_default((const char*)page, (char*)z, sizeof page, sizeof z);
  assert_true(got > 0);
  memset(back, 0, sizeof back);
  assert_int_equal(sl_pq_decompress(ctx, PQ_CODEC_LZ4, z, got, back, sizeof page, &err), 0);
  assert_memory_equal(back, page, sizeof page);
  assert_int_equal(sl_pq_decompress(ctx, PQ_CODEC_LZ4, z, got - 1, back, sizeof page, &err), EILSEQ);
  assert_non_null(strstr(err.message, "LZ4"));
  // LZ4 frames (early parquet-rs), two back to back.
  LZ4F_preferences_t prefs;
  memset(&prefs, 0, sizeof prefs);
  size_t f1 = LZ4F_compressFrame(z, sizeof z, page, 3000, &prefs);
  assert_false(LZ4F_isError(f1));
  size_t f2 = LZ4F_compressFrame(z + f1, sizeof z - f1, page + 3000, sizeof page - 3000, &prefs);
  assert_false(LZ4F_isError(f2));
  memset(back, 0, sizeof back);
  assert_int_equal(sl_pq_decompress(ctx, PQ_CODEC_LZ4, z, (int64_t)(f1 + f2), back, sizeof page, &err), 0);
  assert_memory_equal(back, page, sizeof page);
  for (size_t len = 0; len < f1 + f2; len += 97) {
    uint8_t* copy = malloc(len ? len : 1);
    memcpy(copy, z, len);
    assert_int_equal(sl_pq_decompress(ctx, PQ_CODEC_LZ4, copy, (int64_t)len, back, sizeof page, &err), EILSEQ);
    free(copy);
  }
  assert_int_equal(sl_pq_decompress(ctx, PQ_CODEC_LZ4, z, (int64_t)(f1 + f2), back, sizeof page - 1, &err), EILSEQ);
  assert_int_equal(sl_pq_decompress(ctx, PQ_CODEC_LZ4, z, (int64_t)(f1 + f2), back, 3000, &err), EILSEQ);
  assert_int_equal(sl_pq_decompress(ctx, PQ_CODEC_LZ4, z, (int64_t)f1, back, sizeof page, &err), EILSEQ);
  sl_pq_codec_ctx_free(ctx);
}

static void test_codec_names(void** state) {
  (void)state;
  struct sluice_error err = {0};
  enum pq_codec c;
  assert_int_equal(sl_pq_codec_from_name("ZSTD", &c, &err), 0);
  assert_int_equal(c, PQ_CODEC_ZSTD);
  assert_int_equal(sl_pq_codec_from_name("lz4", &c, &err), 0);
  assert_int_equal(c, PQ_CODEC_LZ4_RAW);
  assert_int_equal(sl_pq_codec_from_name("none", &c, &err), 0);
  assert_int_equal(c, PQ_CODEC_UNCOMPRESSED);
  assert_int_equal(sl_pq_codec_from_name("Snappy", &c, &err), 0);
  assert_int_equal(c, PQ_CODEC_SNAPPY);
  assert_int_equal(sl_pq_codec_from_name("zst", &c, &err), EINVAL);
  assert_int_equal(sl_pq_codec_from_name("zstdx", &c, &err), EINVAL);
  assert_string_equal(sl_pq_codec_name(PQ_CODEC_GZIP), "GZIP");
}

/// fail_at = 1, 2, ... over a context's life (create, then pages through
/// every codec that allocates): each step succeeds or gives ENOMEM, and
/// nothing leaks.
static void test_codec_allocation_failures(void** state) {
  (void)state;
  uint8_t page[50000], back[50000];
  make_page(page, sizeof page, 17);
  const enum pq_codec k_codecs[] = {PQ_CODEC_ZSTD, PQ_CODEC_GZIP, PQ_CODEC_BROTLI};
  // Compressed inputs, made with the default allocator.
  struct sl_buffer z[3];
  struct pq_codec_ctx* plain;
  struct sluice_error err = {0};
  assert_int_equal(sl_pq_codec_ctx_new(NULL, &plain, &err), 0);
  for (int c = 0; c < 3; ++c) {
    sl_buffer_init(&z[c], NULL);
    assert_int_equal(sl_pq_compress(plain, k_codecs[c], PQ_LEVEL_DEFAULT, page, sizeof page, &z[c], &err), 0);
  }
  sl_pq_codec_ctx_free(plain);
  // An LZ4 frame (codec LZ4 allocates a frame context for it).
  LZ4F_preferences_t prefs;
  memset(&prefs, 0, sizeof prefs);
  static uint8_t frame[60000];
  size_t frame_size = LZ4F_compressFrame(frame, sizeof frame, page, sizeof page, &prefs);
  assert_false(LZ4F_isError(frame_size));
  bool completed = false;
  for (long long fail = 1; fail < 100000 && !completed; ++fail) {
    struct test_allocator ta;
    test_allocator_init(&ta);
    ta.fail_at = fail;
    struct pq_codec_ctx* ctx = NULL;
    int rc = sl_pq_codec_ctx_new(&ta.base, &ctx, &err);
    for (int c = 0; c < 3 && rc == 0; ++c) {
      rc = sl_pq_decompress(ctx, k_codecs[c], z[c].data, z[c].size, back, sizeof page, &err);
      if (rc == 0) assert_memory_equal(back, page, sizeof page);
      // A second page through the same context (reused state).
      if (rc == 0) rc = sl_pq_decompress(ctx, k_codecs[c], z[c].data, z[c].size, back, sizeof page, &err);
      if (rc == 0) {
        struct sl_buffer out;
        sl_buffer_init(&out, &ta.base);
        rc = sl_pq_compress(ctx, k_codecs[c], PQ_LEVEL_DEFAULT, page, sizeof page, &out, &err);
        sl_buffer_reset(&out);
      }
    }
    for (int twice = 0; twice < 2 && rc == 0; ++twice) {
      rc = sl_pq_decompress(ctx, PQ_CODEC_LZ4, frame, (int64_t)frame_size, back, sizeof page, &err);
      if (rc == 0) assert_memory_equal(back, page, sizeof page);
    }
    if (rc != 0 && rc != ENOMEM) fail_msg("fail_at %lld: rc %d: %s", fail, rc, err.message);
    sl_pq_codec_ctx_free(ctx);
    assert_int_equal(ta.live_bytes, 0);
    completed = rc == 0 && ta.allocations < fail;
  }
  assert_true(completed);
  for (int c = 0; c < 3; ++c) sl_buffer_reset(&z[c]);
}

/* ---- garbage ------------------------------------------------------------------ */

/// Random bytes into every decoder: 0 or EILSEQ (ENOTSUP for codecs), never a
/// crash or an overread (run under ASan), never a hang.
static void test_garbage_never_crashes(void** state) {
  (void)state;
  uint64_t rng = 2026;
  struct pq_codec_ctx* ctx;
  struct sluice_error err = {0};
  assert_int_equal(sl_pq_codec_ctx_new(NULL, &ctx, &err), 0);
  uint32_t* u32 = malloc(4096 * sizeof *u32);
  int16_t* i16 = malloc(4096 * sizeof *i16);
  int64_t* i64 = malloc(4096 * sizeof *i64);
  const uint8_t** ptrs = malloc(4096 * sizeof *ptrs);
  int32_t* lens = malloc(4096 * sizeof *lens);
  uint8_t* out = malloc(4096 * 8);
  struct sl_buffer scratch;
  sl_buffer_init(&scratch, NULL);
  for (int iter = 0; iter < 3000; ++iter) {
    int64_t len = (int64_t)(rng_next(&rng) % 200);
    uint8_t* data = malloc(len ? (size_t)len : 1);
    // Mostly small bytes (plausible headers), sometimes anything.
    for (int64_t i = 0; i < len; ++i)
      data[i] = (uint8_t)(rng_next(&rng) % 3 == 0 ? rng_next(&rng) : rng_next(&rng) % 8);
    if (iter % 4 == 0 && len >= 5) {  // a valid DELTA header now and then
      data[0] = 0x80;
      data[1] = 0x01;
      data[2] = 0x04;
    }
    int64_t n = (int64_t)(rng_next(&rng) % 1000);
    int w = (int)(rng_next(&rng) % 33);
    int64_t consumed;
    int rc;
#define EXPECT_OK_OR_EILSEQ(call)                                                   \
  do {                                                                              \
    rc = (call);                                                                    \
    if (rc != 0 && rc != EILSEQ) fail_msg("iter %d: %s gave %d", iter, #call, rc);  \
  } while (0)
    struct pq_rle_decoder d;
    if (sl_pq_rle_init(&d, data, len, w, &err) == 0) EXPECT_OK_OR_EILSEQ(sl_pq_rle_get_u32(&d, u32, n, &err));
    if (sl_pq_rle_init(&d, data, len, w % 17, &err) == 0) EXPECT_OK_OR_EILSEQ(sl_pq_rle_get_i16(&d, i16, n, &err));
    EXPECT_OK_OR_EILSEQ(sl_pq_dict_indices_decode(data, len, n, (uint32_t)(rng_next(&rng) % 100000), u32, &err));
    EXPECT_OK_OR_EILSEQ(sl_pq_bit_packed_levels_decode(data, len, w % 17, n, i16, &consumed, &err));
    EXPECT_OK_OR_EILSEQ(sl_pq_delta_binary_decode_i32(data, len, n, (int32_t*)u32, &consumed, &err));
    EXPECT_OK_OR_EILSEQ(sl_pq_delta_binary_decode_i64(data, len, n, i64, &consumed, &err));
    EXPECT_OK_OR_EILSEQ(sl_pq_delta_length_byte_array_decode(data, len, n, ptrs, lens, &consumed, &err));
    scratch.size = 0;
    EXPECT_OK_OR_EILSEQ(sl_pq_delta_byte_array_decode(data, len, n, &scratch, ptrs, lens, &err));
    EXPECT_OK_OR_EILSEQ(sl_pq_plain_byte_array_decode(data, len, n, ptrs, lens, &consumed, &err));
    EXPECT_OK_OR_EILSEQ(sl_pq_plain_bool_decode(data, len, n, out, &consumed, &err));
    EXPECT_OK_OR_EILSEQ(sl_pq_byte_stream_split_decode(data, len, n, 1 + w % 8, out, &err));
    static const enum pq_codec k_codecs[] = {PQ_CODEC_SNAPPY, PQ_CODEC_GZIP, PQ_CODEC_BROTLI,
                                             PQ_CODEC_ZSTD, PQ_CODEC_LZ4, PQ_CODEC_LZ4_RAW};
    for (size_t c = 0; c < sizeof k_codecs / sizeof k_codecs[0]; ++c)
      EXPECT_OK_OR_EILSEQ(sl_pq_decompress(ctx, k_codecs[c], data, len, out, n * 4, &err));
#undef EXPECT_OK_OR_EILSEQ
    free(data);
  }
  sl_buffer_reset(&scratch);
  free(u32);
  free(i16);
  free(i64);
  free(ptrs);
  free(lens);
  free(out);
  sl_pq_codec_ctx_free(ctx);
}

/* ---- streams written by pyarrow ------------------------------------------------- */

/// Directory of this source file (CMake compiles with absolute paths).
static void source_dir(char* out, size_t cap) {
  snprintf(out, cap, "%s", __FILE__);
  char* slash = strrchr(out, '/');
  if (slash) *slash = '\0';
}

static uint8_t* read_vec(const char* dir, const char* name, const char* ext, size_t* size) {
  char path[1400];
  snprintf(path, sizeof path, "%s/%s.%s", dir, name, ext);
  uint8_t* p = test_read_file(path, size);
  if (p == NULL) fail_msg("missing %s", path);
  return p;
}

/// Every compressed page of the parquet-testing files (snappy, gzip with
/// concatenated members, brotli, zstd, Hadoop-framed and raw LZ4, LZ4_RAW)
/// decompresses to exactly the size its page header gives.
static void check_corpus_pages(const char* dir, long long expected) {
  char path[1100];
  snprintf(path, sizeof path, "%s/codec_pages.bin", dir);
  size_t size;
  uint8_t* all = test_read_file(path, &size);
  assert_non_null(all);
  struct pq_codec_ctx* ctx;
  struct sluice_error err = {0};
  assert_int_equal(sl_pq_codec_ctx_new(NULL, &ctx, &err), 0);
  long long pages = 0, per_codec[8] = {0};
  size_t pos = 0;
  while (pos + 9 <= size) {
    uint8_t codec = all[pos];
    uint32_t csize, usize;
    memcpy(&csize, all + pos + 1, 4);
    memcpy(&usize, all + pos + 5, 4);
    pos += 9;
    assert_true(csize <= size - pos);
    // Exact-size copies: ASan sees any overread.
    uint8_t* src = malloc(csize ? csize : 1);
    uint8_t* dst = malloc(usize ? usize : 1);
    memcpy(src, all + pos, csize);
    int rc = sl_pq_decompress(ctx, (enum pq_codec)codec, src, csize, dst, usize, &err);
    if (rc != 0) fail_msg("corpus page %lld (codec %d, %u -> %u bytes): %s", pages, codec, csize, usize, err.message);
    free(src);
    free(dst);
    pos += csize;
    ++pages;
    if (codec < 8) ++per_codec[codec];
  }
  assert_int_equal(pages, expected);
  // The corpus has pages of every codec the readers meet.
  for (int c = 1; c < 8; ++c)
    if (c != 3 && per_codec[c] == 0) fail_msg("no corpus page with codec %d", c);
  sl_pq_codec_ctx_free(ctx);
  free(all);
}

/// tests/py/parquet_encoding_vectors.py writes, per case, NAME.page (the
/// page's value bytes as pyarrow wrote them) and NAME.expect (the values:
/// int64 LE for integers; u32 length + bytes for strings; one byte for
/// bools), and NAME.meta (one line: encoding kind and value count).
static void test_pyarrow_vectors(void** state) {
  (void)state;
  char dir[1024], out_dir[1024], cmd[4096];
  source_dir(dir, sizeof dir);
  test_temp_path("pqvec", out_dir, sizeof out_dir);
  char corpora[1024];
  test_corpus_path("", corpora, sizeof corpora);
  snprintf(cmd, sizeof cmd, "python3 '%s/../py/parquet_encoding_vectors.py' '%s' '%s' > /dev/null 2>&1",
           dir, out_dir, corpora);
  int rc = system(cmd);
  if (rc != 0) {
    // The script exits 77 when pyarrow is not installed.
    if (WIFEXITED(rc) && WEXITSTATUS(rc) == 77) skip();
    fail_msg("vector generator failed (%d): %s", rc, cmd);
  }
  char list_path[1100];
  snprintf(list_path, sizeof list_path, "%s/cases.txt", out_dir);
  FILE* list = fopen(list_path, "r");
  assert_non_null(list);
  char name[256], kind[64];
  long long n;
  int cases = 0;
  while (fscanf(list, "%255s %63s %lld", name, kind, &n) == 3) {
    if (strcmp(kind, "codec_pages") == 0) {
      check_corpus_pages(out_dir, n);
      ++cases;
      continue;
    }
    size_t page_size, expect_size;
    uint8_t* page = read_vec(out_dir, name, "page", &page_size);
    uint8_t* expect = read_vec(out_dir, name, "expect", &expect_size);
    struct sluice_error err = {0};
    int64_t consumed = 0;
    if (strcmp(kind, "delta_i32") == 0 || strcmp(kind, "delta_i64") == 0) {
      assert_int_equal(expect_size, (size_t)n * 8);
      int64_t* got = malloc((size_t)n * 8 + 8);
      int64_t count = -1;
      assert_int_equal(sl_pq_delta_binary_count(page, (int64_t)page_size, &count, &err), 0);
      assert_int_equal(count, n);
      if (kind[7] == '3') {
        int32_t* g32 = malloc((size_t)n * 4 + 4);
        rc = sl_pq_delta_binary_decode_i32(page, (int64_t)page_size, n, g32, &consumed, &err);
        for (long long i = 0; rc == 0 && i < n; ++i) got[i] = g32[i];
        free(g32);
      } else {
        rc = sl_pq_delta_binary_decode_i64(page, (int64_t)page_size, n, got, &consumed, &err);
      }
      if (rc != 0) fail_msg("%s: %s", name, err.message);
      assert_int_equal(consumed, (int64_t)page_size);
      assert_memory_equal(got, expect, expect_size);
      free(got);
    } else if (strcmp(kind, "dlba") == 0 || strcmp(kind, "dba") == 0 || strcmp(kind, "plain_ba") == 0) {
      const uint8_t** ptrs = malloc((size_t)n * sizeof *ptrs + 8);
      int32_t* lens = malloc((size_t)n * sizeof *lens + 4);
      struct sl_buffer scratch;
      sl_buffer_init(&scratch, NULL);
      if (kind[0] == 'p') {
        rc = sl_pq_plain_byte_array_decode(page, (int64_t)page_size, n, ptrs, lens, &consumed, &err);
      } else if (kind[1] == 'l') {
        rc = sl_pq_delta_length_byte_array_decode(page, (int64_t)page_size, n, ptrs, lens, &consumed, &err);
      } else {
        rc = sl_pq_delta_byte_array_decode(page, (int64_t)page_size, n, &scratch, ptrs, lens, &err);
        consumed = (int64_t)page_size;
      }
      if (rc != 0) fail_msg("%s: %s", name, err.message);
      assert_int_equal(consumed, (int64_t)page_size);
      size_t at = 0;
      for (long long i = 0; i < n; ++i) {
        uint32_t len;
        memcpy(&len, expect + at, 4);
        at += 4;
        if ((uint32_t)lens[i] != len || memcmp(ptrs[i], expect + at, len) != 0)
          fail_msg("%s: value %lld differs", name, i);
        at += len;
      }
      sl_buffer_reset(&scratch);
      free(ptrs);
      free(lens);
    } else if (strcmp(kind, "rle_bool") == 0 || strcmp(kind, "plain_bool") == 0) {
      uint8_t* got = malloc((size_t)n + 1);
      if (kind[0] == 'p') {
        rc = sl_pq_plain_bool_decode(page, (int64_t)page_size, n, got, &consumed, &err);
      } else {
        // BOOLEAN RLE values: a 4-byte length prefix, then the hybrid at width 1.
        assert_true(page_size >= 4);
        uint32_t* v = malloc((size_t)n * 4 + 4);
        struct pq_rle_decoder d;
        rc = sl_pq_rle_init(&d, page + 4, (int64_t)page_size - 4, 1, &err);
        if (rc == 0) rc = sl_pq_rle_get_u32(&d, v, n, &err);
        for (long long i = 0; rc == 0 && i < n; ++i) got[i] = (uint8_t)v[i];
        free(v);
      }
      if (rc != 0) fail_msg("%s: %s", name, err.message);
      assert_memory_equal(got, expect, (size_t)n);
      free(got);
    } else if (strcmp(kind, "dict_idx") == 0) {
      // Expected: u32 dictionary size, then the indices as u32.
      uint32_t dict_size;
      memcpy(&dict_size, expect, 4);
      uint32_t* got = malloc((size_t)n * 4 + 4);
      rc = sl_pq_dict_indices_decode(page, (int64_t)page_size, n, dict_size, got, &err);
      if (rc != 0) fail_msg("%s: %s", name, err.message);
      assert_memory_equal(got, expect + 4, (size_t)n * 4);
      free(got);
    } else if (strncmp(kind, "bss", 3) == 0 && kind[3] >= '1' && kind[3] <= '9' && kind[4] == 0) {
      int width = kind[3] - '0';
      uint8_t* got = malloc((size_t)n * width + 1);
      rc = sl_pq_byte_stream_split_decode(page, (int64_t)page_size, n, width, got, &err);
      if (rc != 0) fail_msg("%s: %s", name, err.message);
      assert_memory_equal(got, expect, (size_t)n * width);
      free(got);
    } else {
      fail_msg("unknown vector kind %s", kind);
    }
    free(page);
    free(expect);
    ++cases;
  }
  fclose(list);
  print_message("%d vector cases decoded\n", cases);
  assert_true(cases > 0);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", out_dir);
  assert_int_equal(system(cmd), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rle_roundtrip_all_widths),
      cmocka_unit_test(test_rle_run_encoder),
      cmocka_unit_test(test_rle_encoder_rejects_wide_values),
      cmocka_unit_test(test_rle_spec_examples),
      cmocka_unit_test(test_rle_bad_input),
      cmocka_unit_test(test_rle_truncation_every_prefix),
      cmocka_unit_test(test_dict_indices),
      cmocka_unit_test(test_delta_spec_examples),
      cmocka_unit_test(test_delta_header_validation),
      cmocka_unit_test(test_delta_roundtrips),
      cmocka_unit_test(test_delta_length_byte_array_spec),
      cmocka_unit_test(test_delta_byte_array_spec),
      cmocka_unit_test(test_plain),
      cmocka_unit_test(test_byte_stream_split),
      cmocka_unit_test(test_codec_roundtrips),
      cmocka_unit_test(test_gzip_concatenated_members),
      cmocka_unit_test(test_lz4_hadoop_and_raw),
      cmocka_unit_test(test_codec_names),
      cmocka_unit_test(test_codec_allocation_failures),
      cmocka_unit_test(test_garbage_never_crashes),
      cmocka_unit_test(test_pyarrow_vectors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
