// Dates, times and timestamps spelled as ISO 8601 text, for every reader
// that meets them as text (CSV values, row-filter literals).
#include "sl_value_parse.h"

#include "sl_value_tz.h"

static inline int digits_at(const uint8_t* p, int k, int* out) {
  int v = 0;
  for (int i = 0; i < k; ++i) {
    unsigned dgt = (unsigned)p[i] - '0';
    if (dgt > 9) return 0;
    v = v * 10 + (int)dgt;
  }
  *out = v;
  return 1;
}

/// `HH:MM[:SS[.F]]` at p[i, n) (F: 1 or more digits; ',' also separates F
/// when `comma`; digits past the ninth must be zeros, as no Arrow unit holds
/// them): the fields (ranges unchecked), and the index after them, or -1.
static int64_t clock_at(const uint8_t* p, int64_t i, int64_t n, int comma, int* hh, int* mm,
                        int* ss, int32_t* ns) {
  if (n < i + 5 || !digits_at(p + i, 2, hh) || p[i + 2] != ':' || !digits_at(p + i + 3, 2, mm)) {
    return -1;
  }
  i += 5;
  if (i >= n || p[i] != ':') return i;
  if (n < i + 3 || !digits_at(p + i + 1, 2, ss)) return -1;
  i += 3;
  if (i >= n || !(p[i] == '.' || (comma && p[i] == ','))) return i;
  ++i;
  int k = 0;
  for (; i < n && (unsigned)(p[i] - '0') <= 9; ++i, ++k) {
    if (k < 9) *ns = *ns * 10 + (p[i] - '0');
    else if (p[i] != '0') return -1;
  }
  if (k == 0) return -1;
  for (; k < 9; ++k) *ns *= 10;
  return i;
}

int sl_parse_timestamp(const uint8_t* p, int64_t n, int64_t* seconds, int32_t* nanos,
                        int* has_zone) {
  int64_t days;
  int64_t i = 10;
  if (!(n >= 10 && sl_parse_ymd((const char*)p, &days)) &&
      (n < 11 || (i = sl_parse_ymd_expanded(p, n, &days)) == 0)) {  // a year past 0..9999
    return 0;
  }
  int hh = 0, mm = 0, ss = 0;
  int32_t ns = 0;
  *has_zone = 0;
  if (i < n) {
    if (p[i] != 'T' && p[i] != ' ') return 0;
    i = clock_at(p, i + 1, n, 1, &hh, &mm, &ss, &ns);
    // No leap second (:60): pyarrow and DuckDB read it as text, and Arrow's
    // UTC timeline has no place for it.
    if (i < 0 || hh > 23 || mm > 59 || ss > 59) return 0;
    if (i < n) {
      int zh = 0, zm = 0;
      if (p[i] == 'Z' && i + 1 == n) {
        *has_zone = 1;
      } else if (p[i] == '+' || p[i] == '-') {
        int sign = p[i] == '-' ? -1 : 1;
        int64_t r = n - i - 1;
        const uint8_t* z = p + i + 1;
        if (r == 2) {
          if (!digits_at(z, 2, &zh)) return 0;
        } else if (r == 4) {
          if (!digits_at(z, 2, &zh) || !digits_at(z + 2, 2, &zm)) return 0;
        } else if (r == 5 && z[2] == ':') {
          if (!digits_at(z, 2, &zh) || !digits_at(z + 3, 2, &zm)) return 0;
        } else {
          return 0;
        }
        if (zh > 23 || zm > 59) return 0;
        *has_zone = 1;
        // local = UTC + offset, so UTC = local - offset
        *seconds = -(int64_t)sign * (zh * 3600 + zm * 60);
        *seconds += days * 86400 + hh * 3600 + mm * 60 + ss;
        *nanos = ns;
        return 1;
      } else {
        return 0;
      }
    }
  }
  *seconds = days * 86400 + hh * 3600 + mm * 60 + ss;
  *nanos = ns;
  return 1;
}

int sl_parse_time(const uint8_t* p, int64_t n, int64_t* nanos) {
  int hh = 0, mm = 0, ss = 0;
  int32_t ns = 0;
  if (clock_at(p, 0, n, 0, &hh, &mm, &ss, &ns) != n) return 0;
  if (hh > 23 || mm > 59 || ss > 59) return 0;
  *nanos = ((int64_t)hh * 3600 + mm * 60 + ss) * 1000000000 + ns;
  return 1;
}


int sl_timestamp_in_unit(int64_t seconds, int32_t nanos, int64_t per_second, int64_t* out) {
  int64_t part = (int64_t)nanos / (1000000000 / per_second);
  // Below the epoch with a fraction: (seconds + 1) units less what the
  // fraction lacks of a second, so that no product passes the sum.
  if (seconds < 0 && part > 0) ++seconds, part -= per_second;
  int64_t v;
  if (__builtin_mul_overflow(seconds, per_second, &v) || __builtin_add_overflow(v, part, &v)) {
    return 0;
  }
  *out = v;
  return 1;
}

static int hex_digit(uint8_t c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                             : -1;
}

int sl_parse_uuid(const uint8_t* p, int64_t n, uint8_t out[16]) {
  if (n != 36 && n != 32) return 0;
  int k = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (n == 36 && (i == 8 || i == 13 || i == 18 || i == 23)) {
      if (p[i] != '-') return 0;
      continue;
    }
    int d = hex_digit(p[i]);
    if (d < 0) return 0;
    if (k % 2 == 0) out[k / 2] = (uint8_t)(d << 4);
    else out[k / 2] |= (uint8_t)d;
    ++k;
  }
  return k == 32;
}
