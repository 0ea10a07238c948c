// The shortest decimal digits of a float64 or float32: what the text writers
// (CSV, JSON Lines, `sluice cat`) print for floating-point values.
#ifndef SL_SHORTEST_H
#define SL_SHORTEST_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// For finite, non-zero `v`: the fewest decimal digits that read back as
/// |v|, and of those the closest to it, as *digits × 10^*exponent (no
/// trailing zeros in *digits).
void sl_shortest_double(double v, uint64_t* digits, int* exponent);
void sl_shortest_float(float v, uint32_t* digits, int* exponent);

#ifdef __cplusplus
}
#endif

#endif
