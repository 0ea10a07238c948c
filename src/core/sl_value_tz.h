// Named time zones ("Europe/Paris") for rendering timestamps as local time
// with their UTC offset: the system's tz database (TZif files, RFC 8536),
// including the POSIX rule that extends it past its last transition.
#ifndef SL_VALUE_TZ_H
#define SL_VALUE_TZ_H

#include <stdint.h>

#include "sluice.h"

struct sl_tz;

/// a / b rounded toward negative infinity (b > 0): days of a second count,
/// seconds of a timestamp, before 1970 too.
static inline int64_t sl_floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/// a - sl_floor_div(a, b) * b in [0, b), without that product, which
/// overflows for a near INT64_MIN (the time of day of such a second).
static inline int64_t sl_floor_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return r < 0 ? r + b : r;
}

/// Loads zone `name` from $TZDIR or /usr/share/zoneinfo. ENOENT when there is
/// no such zone (or the name is not a plain zone name), EILSEQ when its file
/// is malformed, ENOMEM.
int sl_tz_load(const char* name, const struct sluice_allocator* alloc, struct sl_tz** out);
void sl_tz_free(struct sl_tz* tz);

/// A fixed-offset zone as Arrow C++ takes one: "+HH:MM" or "+HHMM" (or
/// '-'), hours 00..23 and minutes 00..59 ("+05", "+5:30" and "+24:00" are
/// not zones to it). 1 and *seconds (east of UTC), else 0.
int sl_tz_fixed_offset(const char* zone, int32_t* seconds);

/// The UTC offset in seconds in effect at `utc_seconds` (seconds since the
/// epoch, UTC).
int32_t sl_tz_offset(const struct sl_tz* tz, int64_t utc_seconds);

/// The date `YYYY-MM-DD` in text[0, 10) (a real day of the proleptic
/// Gregorian calendar) as days since 1970-01-01: 1 and *days, else 0.
int sl_parse_ymd(const char* text, int64_t* days);
/// A date at the start of p[0, n) whose year is an ISO 8601 expanded one: a
/// sign and 4 or more digits (`+10000-01-01`, as sluice writes years past
/// 9999; `-0001-01-01`, astronomical: 2 BC), or 5 or more digits without a
/// sign (`10000-01-01`, as pyarrow, DuckDB and numpy write them); at most 9
/// digits. Returns the bytes it takes (0: none) and *days.
int64_t sl_parse_ymd_expanded(const uint8_t* p, int64_t n, int64_t* days);

#endif
