// Decimal values: precision checks and numbers' text (see sl_decimal.c).
#ifndef SL_DECIMAL_H
#define SL_DECIMAL_H

#include <stddef.h>
#include <stdint.h>

/// A number's text split into what a decimal needs: its value is
/// (-1 if negative) * digits * 10^(exponent - fraction + n_lost).
struct sl_decimal_text {
  int negative;
  /// The significant digits ('0'..'9', leading zeros dropped), the first
  /// 80 of them: more than any decimal holds (76).
  char digits[80];
  int n_digits;
  /// Significant digits past those 80, and whether any of them is not 0.
  int n_lost;
  int lost_nonzero;
  /// Digits after the point, and the exponent (saturated at +-1,000,000).
  int64_t fraction;
  int64_t exponent;
};

/// Splits `p` (`n` bytes: an optional sign, digits with at most one point,
/// at least one digit, then an optional e/E, an optional sign and digits;
/// nothing else, no spaces) into `out`. 1 when it is such a number, else 0.
int sl_decimal_text_parse(const uint8_t* p, size_t n, struct sl_decimal_text* out);

/// The 256-bit two's complement value (little-endian limbs) of `n`
/// decimal digits followed by `zeros` zeros, negated if `negative`. The
/// caller keeps n + zeros at most 76, so the magnitude never overflows.
void sl_decimal_from_digits(const char* digits, int n, int64_t zeros, int negative,
                            uint64_t d[4]);

/// 1 when the little-endian two's complement value at `le` (`width` 16 or
/// 32 bytes: decimal128 or decimal256) has at most `precision` (1..76)
/// decimal digits, i.e. |value| < 10^precision; else 0.
int sl_decimal_fits(const uint8_t* le, int width, int precision);

/// The big-endian two's complement `be` (`n` bytes, as Avro and CQL store
/// decimals) as the little-endian value of `width` bytes (16 or 32) at
/// `le`, sign-extended: 0, or EOVERFLOW when the value needs more bytes
/// (bytes past the width may only repeat the sign).
int sl_decimal_from_be(const uint8_t* be, int64_t n, int width, uint8_t* le);

#endif
