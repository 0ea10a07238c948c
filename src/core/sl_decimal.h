// Decimal precision checks (see sl_decimal.c).
#ifndef SL_DECIMAL_H
#define SL_DECIMAL_H

#include <stdint.h>

/// 1 when the little-endian two's complement value at `le` (`width` 16 or
/// 32 bytes: decimal128 or decimal256) has at most `precision` (1..76)
/// decimal digits, i.e. |value| < 10^precision; else 0.
int sl_decimal_fits(const uint8_t* le, int width, int precision);

#endif
