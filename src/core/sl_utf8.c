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

int64_t sl_utf8_invalid_at(const uint8_t* s, int64_t n) {
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
