// Values spelled as text: dates, times and timestamps as ISO 8601, UUIDs.
#ifndef SL_VALUE_PARSE_H
#define SL_VALUE_PARSE_H

#include <stdint.h>

/// ISO 8601 date-time: "YYYY-MM-DD[T ]hh:mm[:ss[.f{1,9}]][Z|+hh[:mm]|-hh[:mm]]"
/// or a bare date. *seconds/*nanos are UTC when a zone is given; *has_zone
/// says whether one was. 1 on success, else 0.
int sl_parse_timestamp(const uint8_t* p, int64_t n, int64_t* seconds, int32_t* nanos,
                       int* has_zone);
/// Time of day `HH:MM`, `HH:MM:SS` or `HH:MM:SS.f` (fraction digits past the
/// ninth must be zeros), 00:00 to 23:59:59.999999999, as nanoseconds since
/// midnight. 1 on success, else 0.
int sl_parse_time(const uint8_t* p, int64_t n, int64_t* nanos);
/// seconds + nanos (0 <= nanos < 10^9, a whole number of units) as a count of
/// units of which `per_second` make a second (1, 10^3, 10^6 or 10^9): 1 with
/// *out, or 0 when it is outside int64. Exact to the ends: a second before
/// the epoch times per_second may overflow where the sum does not
/// (1677-09-21 00:12:43.145224192 is INT64_MIN ns).
int sl_timestamp_in_unit(int64_t seconds, int32_t nanos, int64_t per_second, int64_t* out);
/// A UUID as RFC 4122 spells it, 8-4-4-4-12 hex digits (either case), or
/// as 32 hex digits without hyphens: 1 with its 16 bytes in `out`, else 0.
int sl_parse_uuid(const uint8_t* p, int64_t n, uint8_t out[16]);

#endif
