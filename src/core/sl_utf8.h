// UTF-8 validation shared by the Arrow validator and the readers that check
// string columns (CSV, Parquet, Avro).
#ifndef SL_UTF8_H
#define SL_UTF8_H

#include <stdint.h>

/// Index of the first byte of the first invalid UTF-8 sequence in s[0, n)
/// (bad lead byte, truncated or broken continuation, overlong form,
/// surrogate, code point past U+10FFFF), or -1 when all of it is valid.
int64_t sl_utf8_invalid_at(const uint8_t* s, int64_t n);
/// The same, and *high = whether a byte past ASCII was met (before the
/// invalid one, if any): when not, no cut between two bytes splits a
/// character.
int64_t sl_utf8_check(const uint8_t* s, int64_t n, int* high);
/// sl_utf8_check by the byte-at-a-time loop (vector = 0) or, where the CPU
/// has AVX2, 32 bytes a step (vector = 1); tests compare them. `high` may be
/// NULL.
int64_t sl_utf8_invalid_at_impl(const uint8_t* s, int64_t n, int vector, int* high);

#endif
