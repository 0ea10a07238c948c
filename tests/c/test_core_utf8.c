// UTF-8 validation: the 32-bytes-a-step AVX2 loop finds the same first bad
// byte as the byte-at-a-time one, for every sequence of one to four bytes
// (valid or not) at every position around its 32-byte blocks, and for random
// text mixing ASCII, valid characters and bad bytes.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/sl_utf8.h"

static uint64_t next(uint64_t* state) {
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return *state;
}

static void same_answer(const uint8_t* s, int64_t n) {
  int scalar_high, vector_high;
  int64_t scalar = sl_utf8_invalid_at_impl(s, n, 0, &scalar_high);
  int64_t vector = sl_utf8_invalid_at_impl(s, n, 1, &vector_high);
  if (scalar != vector) {
    fail_msg("length %lld: byte at a time says %lld, vector %lld", (long long)n,
             (long long)scalar, (long long)vector);
  }
  int64_t upto = scalar < 0 ? n : scalar;  // whether a byte before the bad one is past ASCII
  int high = 0;
  for (int64_t i = 0; i < upto; ++i) high |= s[i] >= 0x80;
  // (a bad byte past ASCII may count, as the scan meets it)
  if (scalar_high != high && !(scalar >= 0 && s[scalar] >= 0x80 && scalar_high)) {
    fail_msg("length %lld: byte at a time says high %d, wanted %d", (long long)n, scalar_high,
             high);
  }
  if (vector_high < high) {
    fail_msg("length %lld: vector says high %d, wanted %d", (long long)n, vector_high, high);
  }
}

// Every 1-, 2-, 3- and 4-byte sequence whose bytes are drawn from the bytes
// that decide validity, at each position from 24 to 72 of ASCII text.
static void test_sequences_around_blocks(void** state) {
  (void)state;
  static const uint8_t lead[] = {0x41, 0x7F, 0x80, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0,
                                 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4,
                                 0xF5, 0xF7, 0xF8, 0xFF};
  static const uint8_t cont[] = {0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xF0};
  const size_t nl = sizeof lead, nc = sizeof cont;
  uint8_t buf[128];
  for (size_t a = 0; a < nl; ++a) {
    for (size_t b = 0; b < nc; ++b) {
      for (size_t c = 0; c < nc; ++c) {
        for (size_t d = 0; d < nc; d += (nc - 1) / 3) {
          uint8_t seq[4] = {lead[a], cont[b], cont[c], cont[d]};
          for (int len = 1; len <= 4; ++len) {
            for (int at = 24; at <= 72; ++at) {
              memset(buf, 'x', sizeof buf);
              memcpy(buf + at, seq, (size_t)len);
              same_answer(buf, 100);
              same_answer(buf, at + len);  // the sequence ends the text
            }
          }
        }
      }
    }
  }
}

// Random text: runs of ASCII, valid 2-, 3- and 4-byte characters, and now
// and then a random byte, in lengths up to 300.
static void test_random_text(void** state) {
  (void)state;
  static const char* const chars[] = {"\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
                                      "\xe4\xb8\xad", "\xed\x9f\xbf", "\xee\x80\x80",
                                      "\xf4\x8f\xbf\xbf", "\xc2\x80"};
  uint64_t rng = 0x9E3779B97F4A7C15u;
  uint8_t buf[320];
  int bad = 0;
  for (int iter = 0; iter < 200000; ++iter) {
    int64_t n = (int64_t)(next(&rng) % 300);
    int64_t i = 0;
    unsigned noise = (unsigned)(next(&rng) % 4);  // 0: none
    while (i < n) {
      uint64_t r = next(&rng);
      if (noise != 0 && r % (200 * noise) == 0) {
        buf[i++] = (uint8_t)(r >> 20);
      } else if (r % 3 == 0) {
        const char* c = chars[(r >> 8) % (sizeof chars / sizeof chars[0])];
        size_t len = strlen(c);
        if (i + (int64_t)len > n) break;
        memcpy(buf + i, c, len);
        i += (int64_t)len;
      } else {
        buf[i++] = (uint8_t)('a' + (r >> 8) % 26);
      }
    }
    same_answer(buf, i);
    bad += sl_utf8_invalid_at_impl(buf, i, 0, NULL) >= 0;
  }
  assert_true(bad > 1000);  // the bad bytes were there to be found
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sequences_around_blocks),
      cmocka_unit_test(test_random_text),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
