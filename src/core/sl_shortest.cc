// sl_shortest.h by Dragonbox (J. Jeon, "Dragonbox: A New Floating-Point
// Binary-to-Decimal Conversion Algorithm", 2020), from Debian's
// libdragonbox-dev (header-only). The one C++ file of libsluice: a C entry
// point over the library's template. Measured on W1's float64 columns: about
// three times the speed of the Grisu2 it replaced, which also needed a strtod
// round trip per value to find the shortest digits. No exceptions, RTTI or
// C++ runtime calls: the object links into C programs as it is.
#include "sl_shortest.h"

#include <dragonbox/dragonbox.h>

void sl_shortest_double(double v, uint64_t* digits, int* exponent) {
  auto r = jkj::dragonbox::to_decimal(v, jkj::dragonbox::policy::sign::ignore,
                                      jkj::dragonbox::policy::trailing_zero::remove);
  *digits = r.significand;
  *exponent = r.exponent;
}

void sl_shortest_float(float v, uint32_t* digits, int* exponent) {
  auto r = jkj::dragonbox::to_decimal(v, jkj::dragonbox::policy::sign::ignore,
                                      jkj::dragonbox::policy::trailing_zero::remove);
  *digits = r.significand;
  *exponent = r.exponent;
}
