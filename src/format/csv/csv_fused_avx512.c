// The fused numeric rows (csv_fused_rows.h) on CPUs with AVX-512 VBMI2: a
// numeric field's digits are compacted into lanes (vpcompressb) and summed
// eight at a time.
#include "csv_reader_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "csv_float.h"

#define CSV_AVX512 \
  __attribute__((target("avx2,bmi,bmi2,popcnt,avx512f,avx512bw,avx512vl,avx512vbmi2")))

int sl_csv_fused_avx512_supported(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512vbmi2") && __builtin_cpu_supports("bmi2") &&
         __builtin_cpu_supports("popcnt");
}

#define CSV_FUSED_TARGET CSV_AVX512
#define CSV_FUSED_ROWS sl_csv_fused_rows_avx512
#include "csv_fused_rows.h"

// The field of L bytes (L < 32) at q as a decimal: an optional sign, then
// digits with at most one point, at most 19 digits in all. Returns 0 for
// anything else (the scalar parser decides it).
CSV_AVX512 static inline int field_double(const uint8_t* q, unsigned L, double* out) {
  __m256i x = _mm256_loadu_si256((const __m256i*)(const void*)q);
  __m256i d = _mm256_sub_epi8(x, _mm256_set1_epi8('0'));
  uint32_t is_digit = _mm256_cmple_epu8_mask(d, _mm256_set1_epi8(9));
  uint32_t is_point = _mm256_cmpeq_epi8_mask(x, _mm256_set1_epi8('.'));
  unsigned first = (unsigned)_mm_cvtsi128_si32(_mm256_castsi256_si128(x)) & 0xFF;
  struct csv_decimal_shape sh;
  if (!decimal_shape(is_digit, is_point, first, L, &sh)) return 0;
  // The digits left-aligned in 19 lanes: the value is w * 10^(int_digits - 19),
  // whatever the number of trailing zeros that puts in w.
  uint64_t w = digits19(_mm256_maskz_compress_epi8(sh.digits, d));
  int neg = first == '-';
  if (w == 0) {
    *out = neg ? -0.0 : 0.0;
    return 1;
  }
  return csv_eisel_lemire(w, (int64_t)sh.int_digits - 19, neg, out);
}

// The field of L bytes (L < 32) at q as an integer: an optional sign and 1
// to 18 digits (no overflow possible). Returns 0 for anything else.
CSV_AVX512 static inline int field_int(const uint8_t* q, unsigned L, int64_t* out) {
  __m256i x = _mm256_loadu_si256((const __m256i*)(const void*)q);
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

#else

int sl_csv_fused_avx512_supported(void) { return 0; }

int64_t sl_csv_fused_rows_avx512(const struct csv_fused_plan* f, const uint8_t** pos,
                              const uint8_t* end, const uint8_t* limit, int64_t rows,
                              int64_t want) {
  (void)f, (void)pos, (void)end, (void)limit, (void)want;
  return rows;
}

#endif
