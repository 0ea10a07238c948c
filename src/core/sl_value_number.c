// Numbers as text, fast: integers digit pairs at a time, floating point by
// their shortest digits (sl_shortest.h; a printf of a double costs ~250 ns,
// and CSV and JSON output of float columns spend most of their time here).
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sl_shortest.h"
#include "sl_value_text.h"

static const char k_digit_pairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/// Two digits at a time.
static void put2(char* p, uint32_t v) { memcpy(p, k_digit_pairs + 2 * v, 2); }

/// Exactly eight digits of v < 10^8 (with leading zeros), in 32-bit
/// arithmetic: a 64-bit division per digit pair cost a fifth of W1's CSV
/// output time.
static void put8(char* p, uint32_t v) {
  uint32_t hi = v / 10000, lo = v % 10000;
  put2(p, hi / 100);
  put2(p + 2, hi % 100);
  put2(p + 4, lo / 100);
  put2(p + 6, lo % 100);
}

/// The digits of v < 10^8 (no leading zeros, at least one); returns how many.
static size_t put_up_to_8(char* p, uint32_t v) {
  size_t n = v < 10 ? 1 : v < 100 ? 2 : v < 1000 ? 3 : v < 10000 ? 4 : v < 100000 ? 5
           : v < 1000000 ? 6 : v < 10000000 ? 7 : 8;
  char* q = p + n;
  while (v >= 100) {
    q -= 2;
    put2(q, v % 100);
    v /= 100;
  }
  if (v >= 10) {
    put2(q - 2, v);
  } else {
    q[-1] = (char)('0' + v);
  }
  return n;
}

size_t sl_format_uint64(uint64_t v, char* buf) {
  size_t n;
  if (v < 100000000) {
    n = put_up_to_8(buf, (uint32_t)v);
  } else if (v < UINT64_C(10000000000000000)) {
    n = put_up_to_8(buf, (uint32_t)(v / 100000000));
    put8(buf + n, (uint32_t)(v % 100000000));
    n += 8;
  } else {
    n = put_up_to_8(buf, (uint32_t)(v / UINT64_C(10000000000000000)));
    uint64_t rest = v % UINT64_C(10000000000000000);
    put8(buf + n, (uint32_t)(rest / 100000000));
    put8(buf + n + 8, (uint32_t)(rest % 100000000));
    n += 16;
  }
  buf[n] = '\0';
  return n;
}

size_t sl_format_int64(int64_t v, char* buf) {
  if (v >= 0) return sl_format_uint64((uint64_t)v, buf);
  buf[0] = '-';
  // Negate in unsigned arithmetic: -INT64_MIN does not fit an int64.
  return 1 + sl_format_uint64(0 - (uint64_t)v, buf + 1);
}

/// Spells `n` significant digits (no trailing zeros, n >= 1) times 10^exp10
/// (the exponent of the first digit) as `%.<precision>g` does. `buf` gets at
/// most 32 bytes (n <= 17). Returns the length stored (without the NUL).
static size_t spell_g(int negative, const char* digits, int n, int exp10, int precision,
                      char* buf, size_t cap) {
  char tmp[48];
  // Straight into buf when it has room for any spelling (the text writers'
  // case), else through tmp and cut to cap.
  char* out = cap >= sizeof tmp ? buf : tmp;
  size_t k = 0;
  if (negative) out[k++] = '-';
  if (exp10 < -4 || exp10 >= precision) {
    out[k++] = digits[0];
    if (n > 1) {
      out[k++] = '.';
      memcpy(out + k, digits + 1, (size_t)(n - 1));
      k += (size_t)(n - 1);
    }
    out[k++] = 'e';
    out[k++] = exp10 < 0 ? '-' : '+';
    int e = exp10 < 0 ? -exp10 : exp10;
    if (e >= 100) out[k++] = (char)('0' + e / 100);
    out[k++] = (char)('0' + e / 10 % 10);
    out[k++] = (char)('0' + e % 10);
  } else if (exp10 >= 0) {
    if (n > exp10 + 1) {
      memcpy(out + k, digits, (size_t)exp10 + 1);
      k += (size_t)exp10 + 1;
      out[k++] = '.';
      memcpy(out + k, digits + exp10 + 1, (size_t)(n - exp10 - 1));
      k += (size_t)(n - exp10 - 1);
    } else {
      memcpy(out + k, digits, (size_t)n);
      k += (size_t)n;
      for (int i = n; i <= exp10; ++i) out[k++] = '0';
    }
  } else {
    out[k++] = '0';
    out[k++] = '.';
    for (int i = 0; i < -exp10 - 1; ++i) out[k++] = '0';
    memcpy(out + k, digits, (size_t)n);
    k += (size_t)n;
  }
  if (out == buf) {
    buf[k] = '\0';
    return k;
  }
  if (cap == 0) return 0;
  if (k >= cap) k = cap - 1;
  memcpy(buf, out, k);
  buf[k] = '\0';
  return k;
}

/// Spells the shortest digits of a finite, non-zero value: `digits` (no
/// trailing zeros) times 10^exponent, as `%.<max(n, floor)>g` would spell
/// them (the precision printf would need to round-trip the value, starting
/// from 15 for double and 6 for float).
static size_t spell_shortest(int negative, uint64_t digits, int exponent, int floor, char* buf,
                             size_t cap) {
  char text[24];
  size_t n = sl_format_uint64(digits, text);
  int first = exponent + (int)n - 1;  // the exponent of the first digit
  int precision = (int)n > floor ? (int)n : floor;
  return spell_g(negative, text, (int)n, first, precision, buf, cap);
}

/// snprintf's count, as the length it stored (at most cap - 1).
static size_t stored(int n, size_t cap) {
  if (n < 0 || cap == 0) return 0;
  return (size_t)n < cap ? (size_t)n : cap - 1;
}

size_t sl_format_double(double v, char* buf, size_t cap) {
  if (isnan(v)) return stored(snprintf(buf, cap, "nan"), cap);
  if (isinf(v)) return stored(snprintf(buf, cap, v < 0 ? "-inf" : "inf"), cap);
  if (v == 0) return stored(snprintf(buf, cap, signbit(v) ? "-0" : "0"), cap);
  // Whole numbers below 1e15 print as integers under %.15g, exactly.
  if (fabs(v) < 1e15 && v == (double)(int64_t)v) {
    char digits[24];
    size_t n = sl_format_int64((int64_t)v, digits);
    if (cap == 0) return 0;
    if (n >= cap) n = cap - 1;
    memcpy(buf, digits, n);
    buf[n] = '\0';
    return n;
  }
  uint64_t digits;
  int exponent;
  sl_shortest_double(v, &digits, &exponent);
  return spell_shortest(v < 0, digits, exponent, 15, buf, cap);
}

size_t sl_format_float(float v, char* buf, size_t cap) {
  if (isnan(v) || isinf(v)) return sl_format_double(v, buf, cap);
  if (v == 0) return stored(snprintf(buf, cap, signbit(v) ? "-0" : "0"), cap);
  uint32_t digits;
  int exponent;
  sl_shortest_float(v, &digits, &exponent);
  return spell_shortest(v < 0, digits, exponent, 6, buf, cap);
}

size_t sl_json_float_spelling(char* buf, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (buf[i] == '.' || buf[i] == 'e' || buf[i] == 'E') return n;
  }
  memcpy(buf + n, ".0", 3);
  return n + 2;
}

int sl_parse_size(const char* text, size_t n, int64_t lo, int64_t hi, int64_t* out) {
  int64_t x = 0;
  size_t i = 0;
  for (; i < n && text[i] >= '0' && text[i] <= '9'; ++i) {
    if (x > (INT64_MAX - 9) / 10) return EINVAL;
    x = x * 10 + (text[i] - '0');
  }
  if (i == 0) return EINVAL;
  int shift = 0;
  if (i < n) {
    char c = text[i++];
    shift = c == 'k' || c == 'K' ? 10 : c == 'm' || c == 'M' ? 20 : c == 'g' || c == 'G' ? 30 : -1;
    if (shift < 0 || i != n) return EINVAL;
  }
  if (x > (INT64_MAX >> shift)) return EINVAL;
  x <<= shift;
  if (x < lo || x > hi) return EINVAL;
  *out = x;
  return 0;
}

int sl_parse_int64(const char* text, size_t n, int64_t lo, int64_t hi, int64_t* out) {
  char num[32];
  if (n == 0 || n >= sizeof num) return EINVAL;
  memcpy(num, text, n);
  num[n] = '\0';
  char* end = NULL;
  errno = 0;
  long long x = strtoll(num, &end, 10);
  if (errno != 0 || *end != '\0' || x < lo || x > hi) return EINVAL;
  *out = x;
  return 0;
}
