// Eisel-Lemire (Lemire, "Number Parsing at a Gigabyte per Second", 2021):
// the decimal w * 10^q (w < 2^64, any number of trailing zeros) to the
// nearest double, shared by the scalar parsers (csv_convert.c) and the
// AVX-512 fused rows (csv_fused_avx512.c).
#ifndef SL_CSV_FLOAT_H
#define SL_CSV_FLOAT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#define CSV_POW5_MIN_Q (-342)
#define CSV_POW5_MAX_Q 308

/// 5^q to 128 bits for q in [CSV_POW5_MIN_Q, CSV_POW5_MAX_Q] (csv_pow5.c).
extern const uint64_t sl_csv_pow5_128[CSV_POW5_MAX_Q - CSV_POW5_MIN_Q + 1][2];

__extension__ typedef unsigned __int128 csv_u128;

static inline void csv_mul128(uint64_t a, uint64_t b, uint64_t* hi, uint64_t* lo) {
  csv_u128 r = (csv_u128)a * b;
  *hi = (uint64_t)(r >> 64);
  *lo = (uint64_t)r;
}

// w * 10^q for w != 0. Returns 1 with the double's bits, 0 when the
// approximation cannot decide (the caller then uses strtod).
static inline __attribute__((always_inline)) int csv_eisel_lemire(uint64_t w, int64_t q, int neg,
                                                                double* out) {
  if (q < CSV_POW5_MIN_Q) {
    *out = neg ? -0.0 : 0.0;
    return 1;
  }
  if (q > CSV_POW5_MAX_Q) {
    *out = neg ? -HUGE_VAL : HUGE_VAL;
    return 1;
  }
  int lz = __builtin_clzll(w);
  w <<= lz;
  const uint64_t* pw = sl_csv_pow5_128[q - CSV_POW5_MIN_Q];
  uint64_t hi, lo;
  csv_mul128(w, pw[0], &hi, &lo);
  if ((hi & 0x1FF) == 0x1FF) {  // 55 bits of precision wanted: refine
    uint64_t hi2, lo2;
    csv_mul128(w, pw[1], &hi2, &lo2);
    lo += hi2;
    if (hi2 > lo) hi++;
    if (lo == UINT64_MAX && (q < -27 || q > 55)) return 0;
  }
  int upperbit = (int)(hi >> 63);
  int shift = upperbit + 64 - 52 - 3;
  uint64_t mant = hi >> shift;
  int64_t power2 = (((152170 + 65536) * q) >> 16) + 63 + upperbit - lz + 1023;
  if (power2 <= 0) {
    if (-power2 + 1 >= 64) {
      *out = neg ? -0.0 : 0.0;
      return 1;
    }
    mant >>= -power2 + 1;
    mant += mant & 1;
    mant >>= 1;
    power2 = mant < (UINT64_C(1) << 52) ? 0 : 1;
    uint64_t bits = (mant & ((UINT64_C(1) << 52) - 1)) | ((uint64_t)power2 << 52) |
                    ((uint64_t)neg << 63);
    memcpy(out, &bits, 8);
    return 1;
  }
  if (lo <= 1 && q >= -4 && q <= 23 && (mant & 3) == 1 && (mant << shift) == hi) {
    mant &= ~UINT64_C(1);  // exactly halfway: round to even
  }
  mant += mant & 1;
  mant >>= 1;
  if (mant >= (UINT64_C(2) << 52)) {
    mant = UINT64_C(1) << 52;
    power2++;
  }
  mant &= ~(UINT64_C(1) << 52);
  if (power2 >= 0x7FF) {
    *out = neg ? -HUGE_VAL : HUGE_VAL;
    return 1;
  }
  uint64_t bits = mant | ((uint64_t)power2 << 52) | ((uint64_t)neg << 63);
  memcpy(out, &bits, 8);
  return 1;
}

#endif
