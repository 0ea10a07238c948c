#include "sl_utf8.h"

#include <string.h>

// Written by hand: a tight loop with 32- and 8-byte ASCII fast paths, run over every
// string column a reader checks.
static inline uint64_t load8(const uint8_t* p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

#define SL_HIGH_BITS UINT64_C(0x8080808080808080)

/// `high`: set to 1 on meeting a byte past ASCII (left alone otherwise).
static int64_t invalid_at_scalar(const uint8_t* s, int64_t n, int* high) {
  int64_t i = 0;
  while (i < n) {
    // ASCII runs dominate real data: 32 bytes a step, then 8. A tail shorter
    // than 8 bytes is checked by the last 8 bytes of the text (the bytes
    // before i in them are valid already), not byte by byte.
    while (i + 32 <= n &&
           ((load8(s + i) | load8(s + i + 8) | load8(s + i + 16) | load8(s + i + 24)) &
            SL_HIGH_BITS) == 0) {
      i += 32;
    }
    while (i + 8 <= n && (load8(s + i) & SL_HIGH_BITS) == 0) i += 8;
    if (i >= n || (n - i < 8 && n >= 8 && (load8(s + n - 8) & SL_HIGH_BITS) == 0)) break;
    uint8_t c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    *high = 1;
    int len;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07;
    else return i;
    if (i + len > n) return i;
    for (int k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    // Overlong forms, surrogates, and code points past U+10FFFF.
    if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
      return i;
    i += len;
  }
  return -1;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define SL_UTF8_AVX2 __attribute__((target("avx2")))

// Text with a non-ASCII character every few bytes (accented words, CJK)
// leaves the loop above byte by byte: 32 bytes a step here, by the lookup
// algorithm of Keiser and Lemire ("Validating UTF-8 in less than one
// instruction per byte", 2021; simdjson's and simdutf's): three 16-entry
// tables, indexed by the high and low nibble of each byte's predecessor and
// the high nibble of the byte, give the errors a pair of bytes may make;
// what is left to check is that a third or fourth byte follows a 3- or
// 4-byte lead.
enum {
  U8_TOO_SHORT = 1 << 0,       // 11______ followed by 0_______ or 11______
  U8_TOO_LONG = 1 << 1,        // 0_______ followed by 10______
  U8_OVERLONG_3 = 1 << 2,      // 11100000 100_____
  U8_TOO_LARGE = 1 << 3,       // 11110100 1001____, 11110100 101_____, 11110101.. 1001____..
  U8_SURROGATE = 1 << 4,       // 11101101 101_____
  U8_OVERLONG_2 = 1 << 5,      // 1100000_ 10______
  U8_TOO_LARGE_1000 = 1 << 6,  // 11110101.. 1000____
  U8_OVERLONG_4 = 1 << 6,      // 11110000 1000____
  U8_TWO_CONTS = 1 << 7,       // 10______ 10______ (unless a 3rd or 4th byte)
  U8_CARRY = U8_TOO_SHORT | U8_TOO_LONG | U8_TWO_CONTS,
};

/// A 16-entry table in both 128-bit lanes (for _mm256_shuffle_epi8).
SL_UTF8_AVX2 static inline __m256i u8_table(const uint8_t* t) {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)(const void*)t));
}

SL_UTF8_AVX2 static inline __m256i nibble_high(__m256i v) {
  return _mm256_and_si256(_mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0F));
}

/// Nonzero bytes where `in` (after `prev`, the 32 bytes before it) breaks UTF-8.
SL_UTF8_AVX2 static inline __m256i block_errors(__m256i in, __m256i prev) {
  // Lane i of prevK is the byte K places before byte i of `in`.
  __m256i joint = _mm256_permute2x128_si256(prev, in, 0x21);
  __m256i prev1 = _mm256_alignr_epi8(in, joint, 15);
  __m256i prev2 = _mm256_alignr_epi8(in, joint, 14);
  __m256i prev3 = _mm256_alignr_epi8(in, joint, 13);
  static const uint8_t byte_1_high[16] = {
      U8_TOO_LONG, U8_TOO_LONG, U8_TOO_LONG, U8_TOO_LONG, U8_TOO_LONG, U8_TOO_LONG, U8_TOO_LONG,
      U8_TOO_LONG, U8_TWO_CONTS, U8_TWO_CONTS, U8_TWO_CONTS, U8_TWO_CONTS,
      U8_TOO_SHORT | U8_OVERLONG_2, U8_TOO_SHORT, U8_TOO_SHORT | U8_OVERLONG_3 | U8_SURROGATE,
      U8_TOO_SHORT | U8_TOO_LARGE | U8_TOO_LARGE_1000 | U8_OVERLONG_4};
  static const uint8_t byte_1_low[16] = {
      U8_CARRY | U8_OVERLONG_3 | U8_OVERLONG_2 | U8_OVERLONG_4, U8_CARRY | U8_OVERLONG_2,
      U8_CARRY, U8_CARRY, U8_CARRY | U8_TOO_LARGE, U8_CARRY | U8_TOO_LARGE | U8_TOO_LARGE_1000,
      U8_CARRY | U8_TOO_LARGE | U8_TOO_LARGE_1000, U8_CARRY | U8_TOO_LARGE | U8_TOO_LARGE_1000,
      U8_CARRY | U8_TOO_LARGE | U8_TOO_LARGE_1000, U8_CARRY | U8_TOO_LARGE | U8_TOO_LARGE_1000,
      U8_CARRY | U8_TOO_LARGE | U8_TOO_LARGE_1000, U8_CARRY | U8_TOO_LARGE | U8_TOO_LARGE_1000,
      U8_CARRY | U8_TOO_LARGE | U8_TOO_LARGE_1000,
      U8_CARRY | U8_TOO_LARGE | U8_TOO_LARGE_1000 | U8_SURROGATE,
      U8_CARRY | U8_TOO_LARGE | U8_TOO_LARGE_1000, U8_CARRY | U8_TOO_LARGE | U8_TOO_LARGE_1000};
  static const uint8_t byte_2_high[16] = {
      U8_TOO_SHORT, U8_TOO_SHORT, U8_TOO_SHORT, U8_TOO_SHORT, U8_TOO_SHORT, U8_TOO_SHORT,
      U8_TOO_SHORT, U8_TOO_SHORT,
      U8_TOO_LONG | U8_OVERLONG_2 | U8_TWO_CONTS | U8_OVERLONG_3 | U8_TOO_LARGE_1000 |
          U8_OVERLONG_4,
      U8_TOO_LONG | U8_OVERLONG_2 | U8_TWO_CONTS | U8_OVERLONG_3 | U8_TOO_LARGE,
      U8_TOO_LONG | U8_OVERLONG_2 | U8_TWO_CONTS | U8_SURROGATE | U8_TOO_LARGE,
      U8_TOO_LONG | U8_OVERLONG_2 | U8_TWO_CONTS | U8_SURROGATE | U8_TOO_LARGE,
      U8_TOO_SHORT, U8_TOO_SHORT, U8_TOO_SHORT, U8_TOO_SHORT};
  __m256i special = _mm256_and_si256(
      _mm256_and_si256(_mm256_shuffle_epi8(u8_table(byte_1_high), nibble_high(prev1)),
                       _mm256_shuffle_epi8(u8_table(byte_1_low),
                                           _mm256_and_si256(prev1, _mm256_set1_epi8(0x0F)))),
      _mm256_shuffle_epi8(u8_table(byte_2_high), nibble_high(in)));
  // A third byte after 111_____, a fourth after 1111____: their high bit.
  __m256i third = _mm256_subs_epu8(prev2, _mm256_set1_epi8((char)(0xE0 - 0x80)));
  __m256i fourth = _mm256_subs_epu8(prev3, _mm256_set1_epi8((char)(0xF0 - 0x80)));
  __m256i must23 = _mm256_and_si256(_mm256_or_si256(third, fourth), _mm256_set1_epi8((char)0x80));
  return _mm256_xor_si256(must23, special);
}

/// Where to go on byte by byte from i, everything before it being valid: the
/// start of a character begun in the 3 bytes before i that may run past it.
static int64_t resume_at(const uint8_t* s, int64_t i) {
  for (int64_t k = 1; k <= 3 && i - k >= 0; ++k) {
    if ((s[i - k] & 0xC0) != 0x80) return i - k;
  }
  return i;
}

SL_UTF8_AVX2 static int64_t invalid_at_avx2(const uint8_t* s, int64_t n, int* high) {
  __m256i prev = _mm256_setzero_si256(), incomplete = _mm256_setzero_si256();
  // Nonzero where a byte of the last 3 still wants continuation bytes.
  const __m256i max_complete = _mm256_setr_epi8(
      -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
      -1, -1, -1, -1, -1, -1, -1, (char)(0xF0 - 1), (char)(0xE0 - 1), (char)(0xC0 - 1));
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256i in = _mm256_loadu_si256((const __m256i*)(const void*)(s + i));
    __m256i error;
    if (_mm256_movemask_epi8(in) == 0) {
      error = incomplete;  // a lead at the end of the last block, and no more
      incomplete = _mm256_setzero_si256();
    } else {
      *high = 1;
      error = block_errors(in, prev);
      incomplete = _mm256_subs_epu8(in, max_complete);
    }
    prev = in;
    // The bad byte is in this block or in the 3 before it: found exactly
    // byte by byte from there.
    if (!_mm256_testz_si256(error, error)) break;
  }
  int64_t from = resume_at(s, i);
  int64_t bad = invalid_at_scalar(s + from, n - from, high);
  return bad < 0 ? -1 : from + bad;
}

static int have_avx2(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}
#endif

int64_t sl_utf8_invalid_at_impl(const uint8_t* s, int64_t n, int vector, int* high) {
  int scratch = 0;
  if (high == NULL) high = &scratch;
  *high = 0;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (vector && have_avx2()) return invalid_at_avx2(s, n, high);
#else
  (void)vector;
#endif
  return invalid_at_scalar(s, n, high);
}

int64_t sl_utf8_invalid_at(const uint8_t* s, int64_t n) {
  // Short texts (most CSV fields) are done before the vector loop would start.
  return sl_utf8_invalid_at_impl(s, n, n >= 64, NULL);
}

int64_t sl_utf8_check(const uint8_t* s, int64_t n, int* high) {
  return sl_utf8_invalid_at_impl(s, n, n >= 64, high);
}
