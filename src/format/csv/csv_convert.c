// Text to values. Numbers are parsed by hand: the common cases (integers, and
// decimals of up to 19 significant digits) never touch the C library; floats
// go Clinger fast path -> Eisel-Lemire -> strtod, so every result equals
// strtod's (correct rounding) while strtod itself runs only for the rare
// inputs the first two cannot decide.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv_internal.h"
#include "csv_float.h"
#include "core/sl_decimal.h"
#include "core/sl_value_tz.h"

static inline int is_eight_digits(uint64_t v) {
  return ((v + UINT64_C(0x4646464646464646)) | (v - UINT64_C(0x3030303030303030))) &
             UINT64_C(0x8080808080808080)
             ? 0
             : 1;
}

// Eight ASCII digits (little-endian load) to their value (fast_float's SWAR).
static inline uint64_t parse_eight_digits(uint64_t v) {
  const uint64_t mask = UINT64_C(0x000000FF000000FF);
  const uint64_t mul1 = UINT64_C(0x000F424000000064);
  const uint64_t mul2 = UINT64_C(0x0000271000000001);
  v -= UINT64_C(0x3030303030303030);
  v = (v * 10) + (v >> 8);
  return (((v & mask) * mul1) + (((v >> 16) & mask) * mul2)) >> 32;
}

static inline uint64_t load64(const uint8_t* p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

/// Leading zeros of a long run of digits dropped (one digit kept): they do
/// not count against the digits an integer holds, as pyarrow, polars and
/// DuckDB read 00001234567890123456789.
static inline void skip_leading_zeros(const uint8_t** p, int64_t* n) {
  while (*n > 1 && (*p)[0] == '0') {
    ++*p;
    --*n;
  }
}

static int parse_uint64_exact(const uint8_t* p, int64_t n, uint64_t* out) {
  if (n > 20) skip_leading_zeros(&p, &n);
  if (n <= 0 || n > 20) return 0;
  uint64_t v = 0;
  for (int64_t i = 0; i < n; ++i) {
    unsigned dgt = (unsigned)p[i] - '0';
    if (dgt > 9) return 0;
    if (v > (UINT64_MAX - dgt) / 10) return 0;
    v = v * 10 + dgt;
  }
  *out = v;
  return 1;
}

static int parse_int64_exact(const uint8_t* p, int64_t n, int64_t* out) {
  int neg = 0;
  if (n > 0 && (p[0] == '-' || p[0] == '+')) {
    neg = p[0] == '-';
    ++p;
    --n;
  }
  if (n > 18) skip_leading_zeros(&p, &n);
  if (n <= 0 || n > 19 + 1) return 0;
  uint64_t v = 0;
  if (n <= 18) {  // cannot overflow: no checks in the loop
    int64_t i = 0;
    if (n >= 8) {
      uint64_t chunk = load64(p);
      if (!is_eight_digits(chunk)) return 0;
      v = parse_eight_digits(chunk);
      i = 8;
      if (n >= 16) {
        chunk = load64(p + 8);
        if (!is_eight_digits(chunk)) return 0;
        v = v * 100000000 + parse_eight_digits(chunk);
        i = 16;
      }
    }
    for (; i < n; ++i) {
      unsigned dgt = (unsigned)p[i] - '0';
      if (dgt > 9) return 0;
      v = v * 10 + dgt;
    }
  } else if (!parse_uint64_exact(p, n, &v)) {
    return 0;
  }
  if (neg) {
    if (v > (uint64_t)INT64_MAX + 1) return 0;
    *out = (int64_t)(0 - v);
  } else {
    if (v > (uint64_t)INT64_MAX) return 0;
    *out = (int64_t)v;
  }
  return 1;
}

/* ---- floats --------------------------------------------------------------- */

static const double csv_exact_pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                         1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                         1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static int ieq(const uint8_t* p, int64_t n, const char* lit) {
  size_t m = strlen(lit);
  if ((size_t)n != m) return 0;
  for (size_t i = 0; i < m; ++i) {
    uint8_t c = p[i];
    if (c >= 'A' && c <= 'Z') c = (uint8_t)(c + 32);
    if (c != (uint8_t)lit[i]) return 0;
  }
  return 1;
}

// strtod needs a NUL-terminated copy. Numeric tokens longer than the buffer
// (hundreds of digits) are not taken as numbers: the column stays a string.
static int parse_double_slow(const uint8_t* p, int64_t n, double* out) {
  char buf[800];
  if (n >= (int64_t)sizeof buf) return 0;
  memcpy(buf, p, (size_t)n);
  buf[n] = '\0';
  char* endp = NULL;
  *out = strtod(buf, &endp);
  return endp == buf + n;
}

static int parse_double_general(const uint8_t* p, int64_t n, double* out) {
  const uint8_t* s = p;
  const uint8_t* e = p + n;
  int neg = 0;
  if (s < e && (*s == '-' || *s == '+')) {
    neg = *s == '-';
    ++s;
  }
  if (s == e) return 0;
  uint64_t w = 0;
  int64_t digits = 0;   // significant digits consumed into w
  int64_t dropped = 0;  // integer digits beyond 19 (scale w up)
  int any = 0, lost = 0;
  const uint8_t* int_start = s;
  while (s < e && *s == '0') ++s;  // leading zeros are not significant
  any = s != int_start;
  for (; s < e && (unsigned)(*s - '0') <= 9; ++s) {
    any = 1;
    if (digits < 19) {
      w = w * 10 + (unsigned)(*s - '0');
      digits++;
    } else {
      dropped++;
      lost |= *s != '0';
    }
  }
  int64_t frac_digits = 0;
  if (s < e && *s == '.') {
    ++s;
    const uint8_t* frac_start = s;
    if (w == 0) {  // 0.000ddd: zeros after the point are not significant either
      while (s < e && *s == '0') ++s;
      frac_digits = s - frac_start;
    }
    for (; s < e && (unsigned)(*s - '0') <= 9; ++s) {
      if (digits < 19) {
        w = w * 10 + (unsigned)(*s - '0');
        digits++;
        frac_digits++;
      } else {
        lost |= *s != '0';
      }
    }
    any |= s != frac_start;
  }
  if (!any) {
    s = neg || (p < e && *p == '+') ? p + 1 : p;
    if (ieq(s, e - s, "nan")) {
      *out = neg ? -NAN : NAN;
      return 1;
    }
    if (ieq(s, e - s, "inf") || ieq(s, e - s, "infinity")) {
      *out = neg ? -HUGE_VAL : HUGE_VAL;
      return 1;
    }
    return 0;
  }
  int64_t exp10 = 0;
  if (s < e && (*s == 'e' || *s == 'E')) {
    ++s;
    int eneg = 0;
    if (s < e && (*s == '-' || *s == '+')) {
      eneg = *s == '-';
      ++s;
    }
    if (s == e) return 0;
    for (; s < e && (unsigned)(*s - '0') <= 9; ++s) {
      if (exp10 < 100000) exp10 = exp10 * 10 + (*s - '0');
    }
    if (eneg) exp10 = -exp10;
  }
  if (s != e) return 0;
  if (lost) return parse_double_slow(p, n, out);
  int64_t q = exp10 + dropped - frac_digits;
  if (w == 0) {
    *out = neg ? -0.0 : 0.0;
    return 1;
  }
  if (w <= (UINT64_C(1) << 53) && q >= -22 && q <= 22) {  // Clinger: exact operands
    double v = (double)w;
    v = q < 0 ? v / csv_exact_pow10[-q] : v * csv_exact_pow10[q];
    *out = neg ? -v : v;
    return 1;
  }
  if (csv_eisel_lemire(w, q, neg, out)) return 1;
  return parse_double_slow(p, n, out);
}

// The common shape (at most 19 digits, optional point and exponent) in one
// pass with eight digits at a time. Parses a prefix of [p, e) and returns its
// end, or NULL when the text is not of that shape (the caller then uses the
// general parser, or gives up).
const uint8_t* sl_csv_scan_double(const uint8_t* p, const uint8_t* e, double* out) {
  const uint8_t* s = p;
  int neg = 0;
  if (s < e && (*s == '-' || *s == '+')) {
    neg = *s == '-';
    ++s;
  }
  // Leading zeros (0.000123) are not significant: they must not count
  // towards the 19 digits that fit w.
  const uint8_t* zeros_start = s;
  while (s < e && *s == '0') ++s;
  int any_zero = s != zeros_start;
  const uint8_t* digits_start = s;
  uint64_t w = 0;
  while (e - s >= 8 && is_eight_digits(load64(s))) {
    w = w * 100000000 + parse_eight_digits(load64(s));
    s += 8;
  }
  while (s < e && (unsigned)(*s - '0') <= 9) w = w * 10 + (unsigned)(*s++ - '0');
  int64_t n_digits = s - digits_start;
  int64_t q = 0;
  if (s < e && *s == '.') {
    ++s;
    if (n_digits == 0) {
      const uint8_t* z = s;
      while (s < e && *s == '0') ++s;
      q = -(s - z);
      any_zero |= s != z;
    }
    const uint8_t* frac_start = s;
    while (e - s >= 8 && is_eight_digits(load64(s))) {
      w = w * 100000000 + parse_eight_digits(load64(s));
      s += 8;
    }
    while (s < e && (unsigned)(*s - '0') <= 9) w = w * 10 + (unsigned)(*s++ - '0');
    q -= s - frac_start;
    n_digits += s - frac_start;
  }
  if (n_digits == 0) {
    if (!any_zero) return NULL;
    w = 0;  // all zeros: "0", "0.000", "00"
  } else if (n_digits > 19) {
    return NULL;
  }
  if (s < e && (*s == 'e' || *s == 'E')) {
    ++s;
    int eneg = 0;
    if (s < e && (*s == '-' || *s == '+')) {
      eneg = *s == '-';
      ++s;
    }
    if (s == e || (unsigned)(*s - '0') > 9) return NULL;
    int64_t x = 0;
    for (; s < e && (unsigned)(*s - '0') <= 9; ++s) {
      if (x < 100000) x = x * 10 + (*s - '0');
    }
    q += eneg ? -x : x;
  }
  if (w == 0) {
    *out = neg ? -0.0 : 0.0;
  } else if (w <= (UINT64_C(1) << 53) && q >= -22 && q <= 22) {
    // Clinger: both operands are exact doubles, so one IEEE multiplication or
    // division rounds correctly. Most decimals written in shortest form
    // (16 digits or fewer) take this path.
    double v = q >= 0 ? (double)w * csv_exact_pow10[q] : (double)w / csv_exact_pow10[-q];
    *out = neg ? -v : v;
  } else if (!csv_eisel_lemire(w, q, neg, out) && !parse_double_slow(p, s - p, out)) {
    return NULL;
  }
  return s;
}

static int parse_double_exact(const uint8_t* p, int64_t n, double* out) {
  const uint8_t* end = sl_csv_scan_double(p, p + n, out);
  if (end == NULL) return parse_double_general(p, n, out);
  return end == p + n;
}

/// Strips spaces and tabs around a number that did not parse as it is
/// (" 1", "2.5 "), as pyarrow does: 1 when there were some to strip.
static int trim_number(const uint8_t** p, int64_t* n) {
  const uint8_t* s = *p;
  const uint8_t* e = s + *n;
  while (s < e && (*s == ' ' || *s == '\t')) ++s;
  while (e > s && (e[-1] == ' ' || e[-1] == '\t')) --e;
  if (e - s == *n || s == e) return 0;
  *p = s;
  *n = e - s;
  return 1;
}

const char* sl_csv_integer_problem(const uint8_t* p, int64_t n) {
  (void)trim_number(&p, &n);
  int64_t i = n > 0 && (p[0] == '-' || p[0] == '+') ? 1 : 0;
  if (i == n) return "cannot parse";
  for (; i < n; ++i) {
    if ((unsigned)(p[i] - '0') > 9) return "cannot parse";
  }
  return "out of range:";
}

// The exact forms first, so that the common case pays nothing for the trim.
/// An unsigned integer, with a '+' as the signed parser (and DuckDB) take it.
static int parse_unsigned_exact(const uint8_t* p, int64_t n, uint64_t* out) {
  if (n > 1 && p[0] == '+') ++p, --n;
  return parse_uint64_exact(p, n, out);
}

int sl_csv_parse_uint64(const uint8_t* p, int64_t n, uint64_t* out) {
  return parse_unsigned_exact(p, n, out) ||
         (trim_number(&p, &n) && parse_unsigned_exact(p, n, out));
}

int sl_csv_parse_int64(const uint8_t* p, int64_t n, int64_t* out) {
  return parse_int64_exact(p, n, out) || (trim_number(&p, &n) && parse_int64_exact(p, n, out));
}

int sl_csv_parse_double(const uint8_t* p, int64_t n, double* out) {
  return parse_double_exact(p, n, out) || (trim_number(&p, &n) && parse_double_exact(p, n, out));
}

int sl_csv_is_number(const uint8_t* p, int64_t n) {
  double d;
  return sl_csv_parse_double(p, n, &d);
}

/// Whether d lies exactly halfway between two adjacent floats (the largest
/// finite float and 2^128 included).
static int float_midpoint(double d) {
  float f = (float)d;
  if ((double)f == d) return 0;
  float lo = (double)f < d ? f : nextafterf(f, -INFINITY);
  float hi = (double)f < d ? nextafterf(f, INFINITY) : f;
  double lo_d = isinf(lo) ? -ldexp(1.0, 128) : (double)lo;
  double hi_d = isinf(hi) ? ldexp(1.0, 128) : (double)hi;
  return (lo_d + hi_d) / 2 == d;  // (exact: both have at most 24 significant bits)
}

int sl_csv_parse_float(const uint8_t* p, int64_t n, float* out) {
  double d;
  if (!sl_csv_parse_double(p, n, &d)) return 0;
  // Text -> double -> float rounds twice, which differs from rounding the
  // text once only where the double is a midpoint between two floats (the
  // text may lie a little to either side of it): strtof decides those.
  if (isfinite(d) && float_midpoint(d)) {
    char buf[800];
    (void)trim_number(&p, &n);  // (sl_csv_parse_double took the text around spaces too)
    if (n >= (int64_t)sizeof buf) return 0;
    memcpy(buf, p, (size_t)n);
    buf[n] = '\0';
    char* endp = NULL;
    *out = strtof(buf, &endp);
    return endp == buf + n;
  }
  *out = (float)d;
  return 1;
}

const uint8_t* sl_csv_scan_int64(const uint8_t* p, const uint8_t* e, int64_t* out) {
  const uint8_t* s = p;
  int neg = 0;
  if (s < e && (*s == '-' || *s == '+')) {
    neg = *s == '-';
    ++s;
  }
  const uint8_t* d = s;
  uint64_t v = 0;
  if (e - s >= 8 && is_eight_digits(load64(s))) {  // W4's int32s have 9-10 digits
    v = parse_eight_digits(load64(s));
    s += 8;
  }
  while (s < e && (unsigned)(*s - '0') <= 9 && s - d < 18) v = v * 10 + (unsigned)(*s++ - '0');
  if (s == d) return NULL;
  if (s < e && (unsigned)(*s - '0') <= 9) {  // 19+ digits: the checked parser decides
    while (s < e && (unsigned)(*s - '0') <= 9) ++s;
    int64_t x;
    if (!sl_csv_parse_int64(p, s - p, &x)) return NULL;
    *out = x;
    return s;
  }
  *out = neg ? -(int64_t)v : (int64_t)v;
  return s;
}

/* ---- bool, dates, timestamps -------------------------------------------- */

int sl_csv_parse_bool(const uint8_t* p, int64_t n, int* out) {
  if (ieq(p, n, "true")) {
    *out = 1;
    return 1;
  }
  if (ieq(p, n, "false")) {
    *out = 0;
    return 1;
  }
  return 0;
}

static int parse_ymd(const uint8_t* p, int64_t n, int64_t* days) {
  return n >= 10 && sl_parse_ymd((const char*)p, days);
}

static int parse_date32_exact(const uint8_t* p, int64_t n, int32_t* out) {
  int64_t days;
  if (n == 10) {
    if (!parse_ymd(p, n, &days)) return 0;
  } else if (n < 11 || sl_parse_ymd_expanded(p, n, &days) != n || days < INT32_MIN ||
             days > INT32_MAX) {  // years past 0..9999, as the writers spell them
    return 0;
  }
  *out = (int32_t)days;
  return 1;
}

// The exact forms first, as for numbers: the common case pays nothing.
int sl_csv_parse_date32(const uint8_t* p, int64_t n, int32_t* out) {
  return parse_date32_exact(p, n, out) || (trim_number(&p, &n) && parse_date32_exact(p, n, out));
}

int sl_csv_parse_timestamp(const uint8_t* p, int64_t n, int64_t* seconds, int32_t* nanos,
                        int* zoned) {
  return sl_parse_timestamp(p, n, seconds, nanos, zoned) ||
         (trim_number(&p, &n) && sl_parse_timestamp(p, n, seconds, nanos, zoned));
}

int sl_csv_parse_time(const uint8_t* p, int64_t n, int64_t* nanos) {
  return sl_parse_time(p, n, nanos) || (trim_number(&p, &n) && sl_parse_time(p, n, nanos));
}

int sl_csv_parse_decimal(const uint8_t* p, int64_t n, int precision, int scale, int width,
                      uint8_t* out, const char** why) {
  *why = "cannot parse";
  trim_number(&p, &n);
  struct sl_decimal_text t;
  if (!sl_decimal_text_parse(p, (size_t)n, &t)) return 0;
  // value = digits * 10^(exponent - fraction + n_lost); stored: value * 10^scale.
  int64_t shift = t.exponent - t.fraction + t.n_lost + scale;
  int nd = t.n_digits;
  if (shift < 0) {  // digits past the scale: only zeros may go
    if (t.lost_nonzero) {
      *why = "more fraction digits than the scale holds in";
      return 0;
    }
    for (int64_t k = 0; k < -shift && nd > 0; ++k) {
      if (t.digits[nd - 1] != '0') {
        *why = "more fraction digits than the scale holds in";
        return 0;
      }
      --nd;
    }
    shift = 0;
  }
  if (nd > 0 && nd + shift > precision) {
    *why = "more digits than the precision holds in";
    return 0;
  }
  uint64_t limb[4];
  sl_decimal_from_digits(t.digits, nd, shift, t.negative, limb);
  for (int b = 0; b < width; ++b) out[b] = (uint8_t)(limb[b / 8] >> (8 * (b % 8)));
  return 1;
}

/* ---- inference ------------------------------------------------------------ */

#define CAN(k) (1u << (k))

void sl_csv_infer_init(struct csv_infer_state* s, const struct csv_nulls* nulls) {
  s->nulls = nulls;
  s->can = CAN(CSV_KIND_BOOL) | CAN(CSV_KIND_INT64) | CAN(CSV_KIND_DOUBLE) |
           CAN(CSV_KIND_DATE32) | CAN(CSV_KIND_TIMESTAMP) | CAN(CSV_KIND_TIME);
  s->any_value = 0;
  s->any_zone = 0;
  s->any_nanos = 0;
  s->any_wide = 0;
  s->any_bit = 0;
  s->any_int = 0;
  s->any_date = 0;
}

void sl_csv_infer_add_text(struct csv_infer_state* s) {
  s->any_value = 1;
  s->can = 0;
}

void sl_csv_infer_add(struct csv_infer_state* s, const uint8_t* p, int64_t n) {
  if (csv_is_null(s->nulls, p, n)) return;
  sl_csv_infer_add_value(s, p, n);
}

void sl_csv_infer_add_value(struct csv_infer_state* s, const uint8_t* p, int64_t n) {
  s->any_value = 1;
  if (s->can == 0) return;
  int b;
  int64_t i;
  double d;
  int32_t day;
  int64_t sec;
  int32_t ns;
  int zone;
  // 0 and 1 are bools too (as the converter and pyarrow take them): a
  // column of only 0 and 1 stays int64 (sl_csv_infer_format asks int first).
  int bit = csv_is_bit(p, n);
  s->any_bit |= bit;
  if ((s->can & CAN(CSV_KIND_BOOL)) && !bit && !sl_csv_parse_bool(p, n, &b)) {
    s->can &= ~CAN(CSV_KIND_BOOL);
  }
  // (asked past an int column too, while a float one is possible: any_int)
  if ((s->can & (CAN(CSV_KIND_INT64) | CAN(CSV_KIND_DOUBLE))) && !s->any_int) {
    if (sl_csv_parse_int64(p, n, &i)) {
      s->any_int = 1;
    } else {
      s->can &= ~CAN(CSV_KIND_INT64);
    }
  } else if ((s->can & CAN(CSV_KIND_INT64)) && !sl_csv_parse_int64(p, n, &i)) {
    s->can &= ~CAN(CSV_KIND_INT64);
  }
  if ((s->can & CAN(CSV_KIND_DOUBLE)) && !sl_csv_parse_double(p, n, &d)) {
    s->can &= ~CAN(CSV_KIND_DOUBLE);
  }
  if ((s->can & (CAN(CSV_KIND_DATE32) | CAN(CSV_KIND_TIMESTAMP))) && !s->any_date) {
    if (sl_csv_parse_date32(p, n, &day)) {
      s->any_date = 1;
    } else {
      s->can &= ~CAN(CSV_KIND_DATE32);
    }
  } else if ((s->can & CAN(CSV_KIND_DATE32)) && !sl_csv_parse_date32(p, n, &day)) {
    s->can &= ~CAN(CSV_KIND_DATE32);
  }
  if (s->can & CAN(CSV_KIND_TIME)) {
    int64_t t;
    if (!sl_csv_parse_time(p, n, &t)) {
      s->can &= ~CAN(CSV_KIND_TIME);
    } else {
      s->any_nanos |= t % 1000 != 0;
    }
  }
  if (s->can & CAN(CSV_KIND_TIMESTAMP)) {
    if (!sl_csv_parse_timestamp(p, n, &sec, &ns, &zone)) {
      s->can &= ~CAN(CSV_KIND_TIMESTAMP);
    } else {
      int64_t v;
      s->any_zone |= zone;
      s->any_nanos |= ns % 1000 != 0;
      s->any_wide |= !sl_timestamp_in_unit(sec, ns, 1000000000, &v);
      // A year past [us]'s +-294,247 (an expanded one): no unit holds it.
      if (!sl_timestamp_in_unit(sec, ns, 1000000, &v)) s->can &= ~CAN(CSV_KIND_TIMESTAMP);
      // Digits past the microsecond need [ns], which does not reach this
      // far: no unit holds the column without cutting digits, so it is
      // text (as pyarrow infers it; DuckDB and polars cut to [us]).
      if (s->any_nanos && s->any_wide) s->can &= ~CAN(CSV_KIND_TIMESTAMP);
    }
  }
}

const char* sl_csv_infer_format(const struct csv_infer_state* s) {
  if (!s->any_value) return "u";
  if (s->can & CAN(CSV_KIND_INT64)) return "l";
  if (s->can & CAN(CSV_KIND_BOOL)) return "b";
  if (s->can & CAN(CSV_KIND_DOUBLE)) return "g";
  if (s->can & CAN(CSV_KIND_DATE32)) return "tdD";
  // Microseconds (as DuckDB's TIMESTAMP and TIME), or nanoseconds when a
  // value has digits past the microsecond, so that no digit is lost. Times:
  // whole seconds and fractions alike (pyarrow infers whole seconds only).
  if (s->can & CAN(CSV_KIND_TIMESTAMP)) {
    if (s->any_nanos) return s->any_zone ? "tsn:UTC" : "tsn:";
    return s->any_zone ? "tsu:UTC" : "tsu:";
  }
  if (s->can & CAN(CSV_KIND_TIME)) return s->any_nanos ? "ttn" : "ttu";
  return "u";
}

const char* sl_csv_join_formats(const char* a, const char* b, char* buf, size_t cap) {
  if (strcmp(a, b) == 0) return a;
  int a_ts = strncmp(a, "ts", 2) == 0, b_ts = strncmp(b, "ts", 2) == 0;
  if ((strcmp(a, "l") == 0 || strcmp(a, "g") == 0) && (strcmp(b, "l") == 0 || strcmp(b, "g") == 0))
    return "g";
  if ((a_ts && strcmp(b, "tdD") == 0) || (b_ts && strcmp(a, "tdD") == 0)) return a_ts ? a : b;
  // Timestamps of one zone (or none): the finer unit; times likewise.
  if (a_ts && b_ts && strlen(a) >= 4 && strlen(b) >= 4 && strcmp(a + 3, b + 3) == 0) {
    snprintf(buf, cap, "ts%c%s", a[2] == 'n' || b[2] == 'n' ? 'n' : a[2], a + 3);
    return buf;
  }
  if (strncmp(a, "tt", 2) == 0 && strncmp(b, "tt", 2) == 0) return "ttn";
  return "u";
}
