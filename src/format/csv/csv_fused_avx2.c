// The fused numeric rows (csv_fused_rows.h) on CPUs with AVX2 but without
// AVX-512 VBMI2 (AMD before Zen 4, many laptops): with no byte compaction,
// a decimal's sign and point are removed by two one-lane shifts, each
// blended in from its position on, which leaves the digits in lanes 0..n-1.
#include "csv_reader_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include "csv_float.h"

#define CSV_AVX2 __attribute__((target("avx2,bmi,bmi2,popcnt")))

int sl_csv_fused_avx2_supported(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2") &&
         __builtin_cpu_supports("popcnt");
}

#define CSV_FUSED_TARGET CSV_AVX2
#define CSV_FUSED_ROWS sl_csv_fused_rows_avx2
#include "csv_fused_rows.h"

// Lane i of the result is lane i + 1 of v (lane 31 zero).
CSV_AVX2 static inline __m256i down_one_lane(__m256i v) {
  return _mm256_alignr_epi8(_mm256_permute2x128_si256(v, v, 0x81), v, 1);
}

// The field of L bytes (L < 32) at q, if it is an optional sign then
// digits with at most one point (`point`: whether there may be one), 1 to
// 19 digits: 1 with its shape in *sh and its digits in lanes 0..n-1 of *out
// as values 0..9, every other lane zero. 0 for any other field.
CSV_AVX2 static inline int digit_lanes(const uint8_t* q, unsigned L, int point,
                                       struct csv_decimal_shape* sh, __m256i* out) {
  __m256i x = _mm256_loadu_si256((const __m256i*)(const void*)q);
  __m256i d = _mm256_sub_epi8(x, _mm256_set1_epi8('0'));
  uint32_t is_digit =
      (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_min_epu8(d, _mm256_set1_epi8(9)), d));
  uint32_t is_point =
      point ? (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(x, _mm256_set1_epi8('.'))) : 0;
  if (!decimal_shape(is_digit, is_point, q[0], L, sh)) return 0;
  const __m256i lane = _mm256_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
                                        17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31);
  // The sign out (every lane down one), then the point (lanes from it on;
  // without one, lanes from n on, which are cleared anyway).
  d = _mm256_blendv_epi8(d, down_one_lane(d), _mm256_set1_epi8(sh->sign ? -1 : 0));
  __m256i from_point = _mm256_cmpgt_epi8(lane, _mm256_set1_epi8((char)((int)sh->int_digits - 1)));
  d = _mm256_blendv_epi8(d, down_one_lane(d), from_point);
  *out = _mm256_and_si256(d, _mm256_cmpgt_epi8(_mm256_set1_epi8((char)sh->n), lane));
  return 1;
}

CSV_AVX2 static inline int field_double(const uint8_t* q, unsigned L, double* out) {
  struct csv_decimal_shape sh;
  __m256i v;
  if (!digit_lanes(q, L, 1, &sh, &v)) return 0;
  // The digits left-aligned in 19 lanes: the value is w * 10^(int_digits - 19),
  // whatever the number of trailing zeros that puts in w.
  uint64_t w = digits19(v);
  int neg = q[0] == '-';
  if (w == 0) {
    *out = neg ? -0.0 : 0.0;
    return 1;
  }
  return csv_eisel_lemire(w, (int64_t)sh.int_digits - 19, neg, out);
}

CSV_AVX2 static inline int field_int(const uint8_t* q, unsigned L, int64_t* out) {
  static const uint64_t pow10[19] = {1,
                                     10,
                                     100,
                                     1000,
                                     10000,
                                     100000,
                                     1000000,
                                     10000000,
                                     100000000,
                                     1000000000,
                                     10000000000,
                                     100000000000,
                                     1000000000000,
                                     10000000000000,
                                     100000000000000,
                                     1000000000000000,
                                     10000000000000000,
                                     100000000000000000,
                                     1000000000000000000};
  struct csv_decimal_shape sh;
  __m256i v;
  if (!digit_lanes(q, L, 0, &sh, &v)) return 0;
  if (sh.n > 18) return 0;  // 19 digits may overflow: the scalar parser checks
  // Left-aligned, the lanes read as the value times 10^(19 - n).
  int64_t w = (int64_t)(digits19(v) / pow10[19 - sh.n]);
  *out = q[0] == '-' ? -w : w;
  return 1;
}

CSV_AVX2 static inline void load_window(const uint8_t* w, const struct csv_fused_plan* f,
                                        uint64_t* stops, uint64_t* quotes) {
  _mm_prefetch((const char*)w + CSV_PREFETCH_AHEAD, _MM_HINT_T0);
  const __m256i delim = _mm256_set1_epi8((char)f->delim), quote = _mm256_set1_epi8((char)f->quote);
  const __m256i lf = _mm256_set1_epi8('\n'), cr = _mm256_set1_epi8('\r');
  uint64_t s[2], qs[2];
  for (int h = 0; h < 2; ++h) {
    __m256i y = _mm256_loadu_si256((const __m256i*)(const void*)(w + 32 * h));
    __m256i is_quote = _mm256_cmpeq_epi8(y, quote);
    __m256i is_stop = _mm256_or_si256(
        _mm256_or_si256(_mm256_cmpeq_epi8(y, delim), _mm256_cmpeq_epi8(y, lf)),
        _mm256_or_si256(is_quote, _mm256_cmpeq_epi8(y, cr)));
    qs[h] = (uint32_t)_mm256_movemask_epi8(is_quote);
    s[h] = (uint32_t)_mm256_movemask_epi8(is_stop);
  }
  *quotes = qs[0] | qs[1] << 32;
  *stops = s[0] | s[1] << 32;
}

#else

int sl_csv_fused_avx2_supported(void) { return 0; }

int64_t sl_csv_fused_rows_avx2(const struct csv_fused_plan* f, const uint8_t** pos,
                            const uint8_t* end, const uint8_t* limit, int64_t rows, int64_t want) {
  (void)f, (void)pos, (void)end, (void)limit, (void)want;
  return rows;
}

#endif
