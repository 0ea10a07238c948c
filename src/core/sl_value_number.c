// Numbers as text, fast: integers digit pairs at a time, doubles by Grisu2
// (a printf of a double costs ~250 ns; CSV and JSON output of float columns
// spend most of their time here).
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sl_value_text.h"

static const char k_digit_pairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

size_t sl_format_uint64(uint64_t v, char* buf) {
  char tmp[24];
  char* p = tmp + sizeof tmp;
  while (v >= 100) {
    unsigned pair = (unsigned)(v % 100) * 2;
    v /= 100;
    *--p = k_digit_pairs[pair + 1];
    *--p = k_digit_pairs[pair];
  }
  if (v >= 10) {
    *--p = k_digit_pairs[v * 2 + 1];
    *--p = k_digit_pairs[v * 2];
  } else {
    *--p = (char)('0' + v);
  }
  size_t n = (size_t)(tmp + sizeof tmp - p);
  memcpy(buf, p, n);
  buf[n] = '\0';
  return n;
}

size_t sl_format_int64(int64_t v, char* buf) {
  if (v >= 0) return sl_format_uint64((uint64_t)v, buf);
  buf[0] = '-';
  // Negate in unsigned arithmetic: -INT64_MIN does not fit an int64.
  return 1 + sl_format_uint64(0 - (uint64_t)v, buf + 1);
}

/* ---- Grisu2 (F. Loitsch, "Printing floating-point numbers quickly and
 * accurately with integers", PLDI 2010): digits that read back as the double,
 * the shortest in all but rare cases, with 64-bit integer arithmetic only. -- */

struct diyfp {
  uint64_t f;
  int e;
};

static struct diyfp diyfp_mul(struct diyfp x, struct diyfp y) {
  // The upper 64 bits of the 128-bit product, rounded.
  uint64_t a = x.f >> 32, b = x.f & 0xffffffffu, c = y.f >> 32, d = y.f & 0xffffffffu;
  uint64_t ac = a * c, bc = b * c, ad = a * d, bd = b * d;
  uint64_t mid = (bd >> 32) + (ad & 0xffffffffu) + (bc & 0xffffffffu) + (1u << 31);
  struct diyfp r = {ac + (ad >> 32) + (bc >> 32) + (mid >> 32), x.e + y.e + 64};
  return r;
}

static struct diyfp diyfp_normalize(struct diyfp x) {
  while ((x.f >> 63) == 0) {
    x.f <<= 1;
    x.e--;
  }
  return x;
}

/// 10^k as f * 2^e (f normalized, rounded), for k = -300, -292, ..., 324.
struct cached_power {
  uint64_t f;
  int e;
  int k;
};
static const struct cached_power k_cached_powers[] = {
    {0xAB70FE17C79AC6CAu, -1060, -300},
    {0xFF77B1FCBEBCDC4Fu, -1034, -292},
    {0xBE5691EF416BD60Cu, -1007, -284},
    {0x8DD01FAD907FFC3Cu, -980, -276},
    {0xD3515C2831559A83u, -954, -268},
    {0x9D71AC8FADA6C9B5u, -927, -260},
    {0xEA9C227723EE8BCBu, -901, -252},
    {0xAECC49914078536Du, -874, -244},
    {0x823C12795DB6CE57u, -847, -236},
    {0xC21094364DFB5637u, -821, -228},
    {0x9096EA6F3848984Fu, -794, -220},
    {0xD77485CB25823AC7u, -768, -212},
    {0xA086CFCD97BF97F4u, -741, -204},
    {0xEF340A98172AACE5u, -715, -196},
    {0xB23867FB2A35B28Eu, -688, -188},
    {0x84C8D4DFD2C63F3Bu, -661, -180},
    {0xC5DD44271AD3CDBAu, -635, -172},
    {0x936B9FCEBB25C996u, -608, -164},
    {0xDBAC6C247D62A584u, -582, -156},
    {0xA3AB66580D5FDAF6u, -555, -148},
    {0xF3E2F893DEC3F126u, -529, -140},
    {0xB5B5ADA8AAFF80B8u, -502, -132},
    {0x87625F056C7C4A8Bu, -475, -124},
    {0xC9BCFF6034C13053u, -449, -116},
    {0x964E858C91BA2655u, -422, -108},
    {0xDFF9772470297EBDu, -396, -100},
    {0xA6DFBD9FB8E5B88Fu, -369, -92},
    {0xF8A95FCF88747D94u, -343, -84},
    {0xB94470938FA89BCFu, -316, -76},
    {0x8A08F0F8BF0F156Bu, -289, -68},
    {0xCDB02555653131B6u, -263, -60},
    {0x993FE2C6D07B7FACu, -236, -52},
    {0xE45C10C42A2B3B06u, -210, -44},
    {0xAA242499697392D3u, -183, -36},
    {0xFD87B5F28300CA0Eu, -157, -28},
    {0xBCE5086492111AEBu, -130, -20},
    {0x8CBCCC096F5088CCu, -103, -12},
    {0xD1B71758E219652Cu, -77, -4},
    {0x9C40000000000000u, -50, 4},
    {0xE8D4A51000000000u, -24, 12},
    {0xAD78EBC5AC620000u, 3, 20},
    {0x813F3978F8940984u, 30, 28},
    {0xC097CE7BC90715B3u, 56, 36},
    {0x8F7E32CE7BEA5C70u, 83, 44},
    {0xD5D238A4ABE98068u, 109, 52},
    {0x9F4F2726179A2245u, 136, 60},
    {0xED63A231D4C4FB27u, 162, 68},
    {0xB0DE65388CC8ADA8u, 189, 76},
    {0x83C7088E1AAB65DBu, 216, 84},
    {0xC45D1DF942711D9Au, 242, 92},
    {0x924D692CA61BE758u, 269, 100},
    {0xDA01EE641A708DEAu, 295, 108},
    {0xA26DA3999AEF774Au, 322, 116},
    {0xF209787BB47D6B85u, 348, 124},
    {0xB454E4A179DD1877u, 375, 132},
    {0x865B86925B9BC5C2u, 402, 140},
    {0xC83553C5C8965D3Du, 428, 148},
    {0x952AB45CFA97A0B3u, 455, 156},
    {0xDE469FBD99A05FE3u, 481, 164},
    {0xA59BC234DB398C25u, 508, 172},
    {0xF6C69A72A3989F5Cu, 534, 180},
    {0xB7DCBF5354E9BECEu, 561, 188},
    {0x88FCF317F22241E2u, 588, 196},
    {0xCC20CE9BD35C78A5u, 614, 204},
    {0x98165AF37B2153DFu, 641, 212},
    {0xE2A0B5DC971F303Au, 667, 220},
    {0xA8D9D1535CE3B396u, 694, 228},
    {0xFB9B7CD9A4A7443Cu, 720, 236},
    {0xBB764C4CA7A44410u, 747, 244},
    {0x8BAB8EEFB6409C1Au, 774, 252},
    {0xD01FEF10A657842Cu, 800, 260},
    {0x9B10A4E5E9913129u, 827, 268},
    {0xE7109BFBA19C0C9Du, 853, 276},
    {0xAC2820D9623BF429u, 880, 284},
    {0x80444B5E7AA7CF85u, 907, 292},
    {0xBF21E44003ACDD2Du, 933, 300},
    {0x8E679C2F5E44FF8Fu, 960, 308},
    {0xD433179D9C8CB841u, 986, 316},
    {0x9E19DB92B4E31BA9u, 1013, 324}
};

/// Digits of v (finite, > 0) into `digits` (up to 17) and the decimal
/// exponent of the last digit: v ~ digits * 10^*exp10.
/// `w` = the value (f * 2^e, not normalized); `lower_closer` when it is a
/// power of two above the smallest normal, whose lower neighbour is nearer.
/// Whether one digit less might still be inside the (exact) rounding
/// interval although it failed Grisu's shrunk one: within a few units of
/// error (`unit` at this digit position) of either end.
static int near_miss(uint64_t rest, uint64_t delta, uint64_t unit, uint64_t ten) {
  if (unit > UINT64_C(100000000000000000)) return 1;
  return rest - delta <= 4 * unit || rest + 4 * unit >= ten;
}

/// `*maybe_shorter` tells whether n-1 digits could also read back as v
/// (Grisu2 misses the shortest form in about 0.1% of cases, all of them near
/// the interval's ends).
static int grisu2(struct diyfp w, int lower_closer, char* digits, int* exp10,
                  int* maybe_shorter) {
  // The rounding interval's boundaries: half-way to the neighbours.
  struct diyfp plus = diyfp_normalize((struct diyfp){(w.f << 1) + 1, w.e - 1});
  struct diyfp minus = lower_closer ? (struct diyfp){(w.f << 2) - 1, w.e - 2}
                                    : (struct diyfp){(w.f << 1) - 1, w.e - 1};
  minus.f <<= minus.e - plus.e;
  minus.e = plus.e;
  w = diyfp_normalize(w);
  // A cached power that brings plus's exponent into [-60, -32].
  int f = -60 - plus.e - 1;
  int k = (f * 78913) / (1 << 18) + (f > 0);
  int index = (300 + k + 7) / 8;
  const struct cached_power* c = &k_cached_powers[index];
  struct diyfp ck = {c->f, c->e};
  struct diyfp sw = diyfp_mul(w, ck), sp = diyfp_mul(plus, ck), sm = diyfp_mul(minus, ck);
  // Shrink the interval by one unit each side for the multiplication error.
  sm.f += 1;
  sp.f -= 1;
  *exp10 = -c->k;
  uint64_t delta = sp.f - sm.f, dist = sp.f - sw.f;
  int shift = -sp.e;
  uint64_t one = UINT64_C(1) << shift;
  uint32_t p1 = (uint32_t)(sp.f >> shift);
  uint64_t p2 = sp.f & (one - 1);
  int n = 0;
  uint32_t pow10 = 1000000000;
  int kappa = 10;
  while (pow10 > p1 && kappa > 1) {
    pow10 /= 10;
    --kappa;
  }
  uint64_t rest = 0, ten_kappa = 0;
  int done = 0, prev_near = 0;
  while (kappa > 0) {
    digits[n++] = (char)('0' + p1 / pow10);
    p1 %= pow10;
    --kappa;
    rest = ((uint64_t)p1 << shift) + p2;
    if (rest <= delta) {
      *exp10 += kappa;
      ten_kappa = (uint64_t)pow10 << shift;
      done = 1;
      break;
    }
    prev_near = near_miss(rest, delta, 1, (uint64_t)pow10 << shift);
    pow10 /= 10;
  }
  if (!done) {
    int m = 0;
    uint64_t unit = 1;
    for (;;) {
      p2 *= 10;
      digits[n++] = (char)('0' + (p2 >> shift));
      p2 &= one - 1;
      ++m;
      delta *= 10;
      dist *= 10;
      unit = unit > UINT64_C(1000000000000000000) ? unit : unit * 10;
      if (p2 <= delta) break;
      prev_near = near_miss(p2, delta, unit, one);
    }
    *exp10 -= m;
    rest = p2;
    ten_kappa = one;
  }
  // Move the last digit toward v while staying inside the interval.
  while (rest < dist && delta - rest >= ten_kappa &&
         (rest + ten_kappa < dist || dist - rest > rest + ten_kappa - dist)) {
    digits[n - 1]--;
    rest += ten_kappa;
  }
  *maybe_shorter = n > 1 && prev_near;
  return n;
}

/// Spells `n` significant digits (no trailing zeros, n >= 1) times 10^exp10
/// (the exponent of the first digit) as `%.<precision>g` does. `buf` gets at
/// most 32 bytes (n <= 17).
static void spell_g(int negative, const char* digits, int n, int exp10, int precision, char* buf,
                    size_t cap) {
  char out[48];
  size_t k = 0;
  if (negative) out[k++] = '-';
  if (exp10 < -4 || exp10 >= precision) {
    out[k++] = digits[0];
    if (n > 1) {
      out[k++] = '.';
      for (int i = 1; i < n; ++i) out[k++] = digits[i];
    }
    out[k++] = 'e';
    out[k++] = exp10 < 0 ? '-' : '+';
    int e = exp10 < 0 ? -exp10 : exp10;
    if (e >= 100) out[k++] = (char)('0' + e / 100);
    out[k++] = (char)('0' + e / 10 % 10);
    out[k++] = (char)('0' + e % 10);
  } else if (exp10 >= 0) {
    for (int i = 0; i <= exp10; ++i) out[k++] = i < n ? digits[i] : '0';
    if (n > exp10 + 1) {
      out[k++] = '.';
      for (int i = exp10 + 1; i < n; ++i) out[k++] = digits[i];
    }
  } else {
    out[k++] = '0';
    out[k++] = '.';
    for (int i = 0; i < -exp10 - 1; ++i) out[k++] = '0';
    for (int i = 0; i < n; ++i) out[k++] = digits[i];
  }
  if (cap == 0) return;
  if (k >= cap) k = cap - 1;
  memcpy(buf, out, k);
  buf[k] = '\0';
}

/// Grisu2 is not always shortest: while above `floor` digits (15 for double,
/// 6 for float, where the printf loops %.15g.. / %.6g.. start), try the digits
/// rounded to one less and keep them if they read back as `v`. Then spells
/// them as `%.Ng` would.
static void shorten_and_spell(int negative, char* digits, int n, int exp10, int floor, double v,
                              int is_float, int maybe_shorter, char* buf, size_t cap) {
  while (n > 1 && digits[n - 1] == '0') {
    --n;
    ++exp10;
    maybe_shorter = 1;  // the hint was about the unstripped digits
  }
  int first = exp10 + n - 1;  // exponent of the first digit
  while (maybe_shorter && n > floor) {
    char shorter[20];
    int m = n - 1, e = first;
    // A dropped 5 is a tie in the digits but not in v: both roundings may fit.
    int len = 0, found = 0;
    int first_try = digits[m] >= '5', last_try = digits[m] == '5' ? 0 : first_try;
    for (int up = first_try; !found && up >= last_try; --up) {
      memcpy(shorter, digits, (size_t)m);
      e = first;
      if (up) {
        int i = m - 1;
        while (i >= 0 && shorter[i] == '9') shorter[i--] = '0';
        if (i >= 0) {
          shorter[i]++;
        } else {  // 99..9 became 100..0
          shorter[0] = '1';
          ++e;
        }
      }
      len = m;
      while (len > 1 && shorter[len - 1] == '0') --len;
      spell_g(negative, shorter, len, e, floor, buf, cap);
      found = is_float ? strtof(buf, NULL) == (float)v : strtod(buf, NULL) == v;
    }
    if (!found) break;
    memcpy(digits, shorter, (size_t)len);
    n = len;
    first = e;
  }
  spell_g(negative, digits, n, first, n > floor ? n : floor, buf, cap);
}

void sl_format_double(double v, char* buf, size_t cap) {
  if (isnan(v)) {
    snprintf(buf, cap, "nan");
    return;
  }
  if (isinf(v)) {
    snprintf(buf, cap, v < 0 ? "-inf" : "inf");
    return;
  }
  if (v == 0) {
    snprintf(buf, cap, signbit(v) ? "-0" : "0");
    return;
  }
  // Whole numbers below 1e15 print as integers under %.15g, exactly.
  if (fabs(v) < 1e15 && v == (double)(int64_t)v) {
    char digits[24];
    sl_format_int64((int64_t)v, digits);
    snprintf(buf, cap, "%s", digits);
    return;
  }
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  uint64_t fraction = bits & ((UINT64_C(1) << 52) - 1);
  int biased = (int)(bits >> 52) & 0x7ff;
  struct diyfp w = biased == 0 ? (struct diyfp){fraction, -1074}
                               : (struct diyfp){fraction | (UINT64_C(1) << 52), biased - 1075};
  char digits[20];
  int exp10;
  int maybe_shorter;
  int n = grisu2(w, fraction == 0 && biased > 1, digits, &exp10, &maybe_shorter);
  shorten_and_spell(v < 0, digits, n, exp10, 15, v, 0, maybe_shorter, buf, cap);
}

void sl_format_float(float v, char* buf, size_t cap) {
  if (isnan(v) || isinf(v)) {
    sl_format_double(v, buf, cap);
    return;
  }
  if (v == 0) {
    snprintf(buf, cap, signbit(v) ? "-0" : "0");
    return;
  }
  uint32_t bits;
  memcpy(&bits, &v, sizeof bits);
  uint32_t fraction = bits & ((UINT32_C(1) << 23) - 1);
  int biased = (int)(bits >> 23) & 0xff;
  struct diyfp w = biased == 0 ? (struct diyfp){fraction, -149}
                               : (struct diyfp){fraction | (UINT32_C(1) << 23), biased - 150};
  char digits[20];
  int exp10;
  int maybe_shorter;
  int n = grisu2(w, fraction == 0 && biased > 1, digits, &exp10, &maybe_shorter);
  shorten_and_spell(v < 0, digits, n, exp10, 6, v, 1, maybe_shorter, buf, cap);
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
