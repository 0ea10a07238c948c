// The fused numeric rows (see csv_fast_numeric) on CPUs with AVX-512 VBMI2:
// where each field ends comes from a 64-byte window of delimiter masks; a
// numeric field is then one 32-byte load whose digits are compacted into
// lanes (vpcompressb) and summed eight at a time. It exists because the
// scalar loop spends most of a W1 load finding where each number ends digit
// by digit (branches that mispredict on numbers of 15 to 18 digits); here
// the length comes from a mask and the value from a fixed sequence of
// vector operations. Anything not of the plain shape (exponents, 20+
// digits, long fields, quotes inside numbers) goes to the scalar parsers,
// so both loops give the same values.
#include "csv_reader_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "csv_float.h"

// Bytes ahead of a window to prefetch (256 to 2048 measured alike; a
// prefetch past the input's end is harmless).
#define CSV_PREFETCH_AHEAD 512

#define CSV_AVX512 \
  __attribute__((target("avx2,bmi,bmi2,popcnt,avx512f,avx512bw,avx512vl,avx512vbmi2")))

int csv_fused_avx512_supported(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512vbmi2") && __builtin_cpu_supports("bmi2") &&
         __builtin_cpu_supports("popcnt");
}

// 32 digit lanes (values 0..9, lane 0 the most significant; lanes 19 and
// up zero) as the 19-digit number of lanes 0..18: pairs, fours and eights
// by multiply-add, then the three parts of 8, 8 and 3 digits.
CSV_AVX512 static inline uint64_t digits19(__m256i v) {
  const __m256i by10 = _mm256_set1_epi16(0x010A);       // bytes 10, 1
  const __m256i by100 = _mm256_set1_epi32(0x00010064);  // words 100, 1
  const __m256i by10k = _mm256_set1_epi32(0x00012710);  // words 10000, 1
  __m256i pairs = _mm256_maddubs_epi16(v, by10);
  __m256i fours = _mm256_madd_epi16(pairs, by100);
  __m256i eights = _mm256_madd_epi16(_mm256_packus_epi32(fours, fours), by10k);
  uint64_t lo = (uint64_t)_mm_cvtsi128_si64(_mm256_castsi256_si128(eights));
  uint32_t hi = (uint32_t)_mm_cvtsi128_si32(_mm256_extracti128_si256(eights, 1));
  // lanes 16..23 as eight digits; only 16..18 can be non-zero
  return ((lo & 0xFFFFFFFFu) * 100000000 + (lo >> 32)) * 1000 + hi / 100000;
}

// The field of L bytes (L < 32) at the start of x as a decimal: an optional
// sign, then digits with at most one point, at most 19 digits in all.
// Returns 0 for anything else (the scalar parser decides it).
CSV_AVX512 static inline int field_double(__m256i x, unsigned L, double* out) {
  __m256i d = _mm256_sub_epi8(x, _mm256_set1_epi8('0'));
  uint32_t is_digit = _mm256_cmple_epu8_mask(d, _mm256_set1_epi8(9));
  uint32_t is_point = _mm256_cmpeq_epi8_mask(x, _mm256_set1_epi8('.'));
  unsigned first = (unsigned)_mm_cvtsi128_si32(_mm256_castsi256_si128(x)) & 0xFF;
  unsigned sign = first == '-' || first == '+';
  uint32_t body = _bzhi_u32(~0u, L) & ~sign;
  uint32_t digits = body & is_digit, other = body & ~is_digit;
  if ((other & ~is_point) != 0 || (other & (other - 1)) != 0) return 0;
  unsigned n = (unsigned)__builtin_popcount(digits);
  if (n - 1 > 18) return 0;  // no digits, or more than 19
  unsigned int_digits = other != 0 ? (unsigned)__builtin_ctz(other) - sign : n;
  // The digits left-aligned in 19 lanes: the value is w * 10^(int_digits - 19),
  // whatever the number of trailing zeros that puts in w.
  uint64_t w = digits19(_mm256_maskz_compress_epi8(digits, d));
  int neg = first == '-';
  if (w == 0) {
    *out = neg ? -0.0 : 0.0;
    return 1;
  }
  return csv_eisel_lemire(w, (int64_t)int_digits - 19, neg, out);
}

// The field of L bytes (L < 32) at the start of x as an integer: an
// optional sign and 1 to 18 digits (no overflow possible). Returns 0 for
// anything else.
CSV_AVX512 static inline int field_int(__m256i x, unsigned L, int64_t* out) {
  __m256i d = _mm256_sub_epi8(x, _mm256_set1_epi8('0'));
  uint32_t is_digit = _mm256_cmple_epu8_mask(d, _mm256_set1_epi8(9));
  unsigned first = (unsigned)_mm_cvtsi128_si32(_mm256_castsi256_si128(x)) & 0xFF;
  unsigned sign = first == '-' || first == '+';
  uint32_t body = _bzhi_u32(~0u, L) & ~sign;
  if ((body & ~is_digit) != 0) return 0;
  unsigned n = (unsigned)__builtin_popcount(body);
  if (n - 1 > 17) return 0;
  // right-aligned in lanes 0..18: the value itself
  __m256i v = _mm256_maskz_compress_epi8(body, d);
  v = _mm256_maskz_expand_epi8(_bzhi_u32(~0u, 19) & ~_bzhi_u32(~0u, 19 - n), v);
  int64_t w = (int64_t)digits19(v);
  *out = first == '-' ? -w : w;
  return 1;
}

// Where fields end is read from a 64-byte window of masks that slides
// forward only when a field starts past its middle, so crossing a field
// costs a shift and a count, not a load and compares (W4's rows are twelve
// short fields, ten of them skipped). The loads of the fields' bytes for
// parsing are off that chain.
// The window of 64 bytes at w: its stop bytes (delimiter, line feed,
// quote, CR) and its quotes, as bit masks.
CSV_AVX512 static inline void load_window(const uint8_t* w, const struct csv_fused_plan* f,
                                          uint64_t* stops, uint64_t* quotes) {
  // Each window's address depends on the fields before it, so a miss here
  // stalls the whole row: fetch well ahead of it.
  _mm_prefetch((const char*)w + CSV_PREFETCH_AHEAD, _MM_HINT_T0);
  __m512i y = _mm512_loadu_si512((const void*)w);
  *quotes = _mm512_cmpeq_epi8_mask(y, _mm512_set1_epi8((char)f->quote));
  *stops = _mm512_cmpeq_epi8_mask(y, _mm512_set1_epi8((char)f->delim)) |
           _mm512_cmpeq_epi8_mask(y, _mm512_set1_epi8('\n')) | *quotes |
           _mm512_cmpeq_epi8_mask(y, _mm512_set1_epi8('\r'));
}

CSV_AVX512 int64_t csv_fused_rows_avx512(const struct csv_fused_plan* f, const uint8_t** pos,
                                         const uint8_t* end, const uint8_t* limit, int64_t rows,
                                         int64_t want) {
  const int64_t nc = f->n_cols;
  const uint8_t* p = *pos;
  // The window [w, w + 64) and its masks.
  const uint8_t* w = p;
  uint64_t stops, quotes;
  if (end - p < 64) goto done;
  load_window(w, f, &stops, &quotes);
  while (rows < want && p < limit) {
    if (f->comment != 0 && *p == f->comment) break;
    const uint8_t* q = p;
    for (int64_t c = 0; c < nc; ++c) {
      uint64_t off = (uint64_t)(q - w);
      if (off > 32) {
        if (end - q < 64) goto done;
        w = q;
        off = 0;
        load_window(w, f, &stops, &quotes);
      }
      uint64_t ahead = stops >> off;  // off <= 32: at least 32 bytes of q in the window
      unsigned L = ahead != 0 ? (unsigned)__builtin_ctzll(ahead) : 64;
      const uint8_t* t = q + L;
      switch (f->kind[c]) {
        case CSV_FUSED_F64: {
          if (L >= 32) goto done;
          __m256i x = _mm256_loadu_si256((const __m256i*)(const void*)q);
          double v;
          if (!field_double(x, L, &v) && csv_scan_double(q, t, &v) != t) goto done;
          memcpy(f->out[c] + rows * 8, &v, 8);
          break;
        }
        case CSV_FUSED_I64:
        case CSV_FUSED_I32: {
          if (L >= 32) goto done;
          __m256i x = _mm256_loadu_si256((const __m256i*)(const void*)q);
          int64_t v;
          if (!field_int(x, L, &v) && csv_scan_int64(q, t, &v) != t) goto done;
          if (f->kind[c] == CSV_FUSED_I64) {
            memcpy(f->out[c] + rows * 8, &v, 8);
          } else {
            if (v < INT32_MIN || v > INT32_MAX) goto done;
            int32_t v32 = (int32_t)v;
            memcpy(f->out[c] + rows * 4, &v32, 4);
          }
          break;
        }
        default:
          if (L == 0 && f->quote != 0 && *q == f->quote) {
            // Quoted (W4's ids): the closing quote is the next one in the
            // window, unless a quote follows it ("" inside) or the window
            // ends first; then the search goes on in the bytes.
            uint64_t after = quotes >> off >> 1;  // bit k: a quote at q + 1 + k
            unsigned close = after != 0 ? (unsigned)__builtin_ctzll(after) + 1 : 64;
            if (off + close + 1 < 64 && (after >> close & 1) == 0) {
              t = q + close + 1;
            } else {
              t = csv_skip_quoted(q, end, f->quote);
              if (t == NULL) goto done;
            }
          } else {
            if (L + off >= 64) goto done;  // a long field: the scalar loop crosses it
            if (*t == f->quote || *t == '\r') goto done;
            if (c == 0 && L == 0 && *t != f->delim) goto done;  // an empty line
          }
      }
      q = csv_fused_next(t, end, c + 1 == nc, f->delim);
      if (q == NULL) goto done;
    }
    rows++;
    p = q;
  }
done:
  *pos = p;
  return rows;
}

#else

int csv_fused_avx512_supported(void) { return 0; }

int64_t csv_fused_rows_avx512(const struct csv_fused_plan* f, const uint8_t** pos,
                              const uint8_t* end, const uint8_t* limit, int64_t rows,
                              int64_t want) {
  (void)f, (void)pos, (void)end, (void)limit, (void)want;
  return rows;
}

#endif
