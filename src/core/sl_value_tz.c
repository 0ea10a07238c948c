#include "sl_value_tz.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sl_alloc.h"
#include "sl_endian.h"

/// A POSIX TZ rule date: Mm.w.d, Jn (1..365, no Feb 29) or n (0..365).
struct tz_rule_date {
  char kind;  ///< 'M', 'J' or 'n'
  int month, week, day;
  int32_t time;  ///< seconds after local midnight (may be negative or > 24h)
};

struct sl_tz {
  const struct sluice_allocator* alloc;
  int64_t n;             ///< transitions
  size_t cap;            ///< entries allocated in times/offsets
  int64_t* times;        ///< ascending UTC instants
  int32_t* offsets;      ///< offset in effect from times[i]
  int32_t first_offset;  ///< before the first transition (type 0)
  int has_rule;          ///< the footer applies after the last transition
  int32_t std_offset, dst_offset;  ///< seconds east of UTC
  int has_dst;
  struct tz_rule_date start, end;
};

/// A signed big-endian number of 4 or 8 bytes (TZif's sizes).
static int64_t read_be(const uint8_t* p, int bytes) {
  uint64_t v = sl_load_be(p, bytes);
  return bytes == 4 ? (int32_t)(uint32_t)v : (int64_t)v;
}

int sl_tz_fixed_offset(const char* zone, int32_t* seconds) {
  if (zone[0] != '+' && zone[0] != '-') return 0;
  const char* p = zone + 1;
  int d[4];
  for (int i = 0; i < 4; ++i) {
    if (i == 2 && *p == ':') ++p;  // the colon is optional, as in Arrow C++
    if (*p < '0' || *p > '9') return 0;
    d[i] = *p++ - '0';
  }
  int h = d[0] * 10 + d[1], m = d[2] * 10 + d[3];
  if (*p != '\0' || h > 23 || m > 59) return 0;
  *seconds = (zone[0] == '-' ? -1 : 1) * (h * 3600 + m * 60);
  return 1;
}

/* ---- POSIX TZ strings ("CET-1CEST,M3.5.0,M10.5.0/3") --------------------- */

static const char* parse_name(const char* p) {
  if (*p == '<') {
    while (*p != '\0' && *p != '>') ++p;
    return *p == '>' ? p + 1 : NULL;
  }
  const char* start = p;
  while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')) ++p;
  return p - start >= 3 ? p : NULL;
}

static const char* parse_number(const char* p, int* out) {
  if (*p < '0' || *p > '9') return NULL;
  int v = 0;
  while (*p >= '0' && *p <= '9' && v < 100000) v = v * 10 + (*p++ - '0');
  *out = v;
  return p;
}

/// [+-]hh[:mm[:ss]] in seconds.
static const char* parse_hms(const char* p, int32_t* out) {
  int sign = 1, h = 0, m = 0, s = 0;
  if (*p == '+' || *p == '-') sign = *p++ == '-' ? -1 : 1;
  if ((p = parse_number(p, &h)) == NULL || h > 167) return NULL;
  if (*p == ':' && (p = parse_number(p + 1, &m)) == NULL) return NULL;
  if (*p == ':' && (p = parse_number(p + 1, &s)) == NULL) return NULL;
  *out = sign * (h * 3600 + m * 60 + s);
  return p;
}

static const char* parse_rule_date(const char* p, struct tz_rule_date* d) {
  d->time = 7200;
  d->kind = *p == 'M' || *p == 'J' ? *p++ : 'n';
  if (d->kind == 'M') {
    if ((p = parse_number(p, &d->month)) == NULL || *p++ != '.') return NULL;
    if ((p = parse_number(p, &d->week)) == NULL || *p++ != '.') return NULL;
    if ((p = parse_number(p, &d->day)) == NULL) return NULL;
    if (d->month < 1 || d->month > 12 || d->week < 1 || d->week > 5 || d->day > 6) return NULL;
  } else if ((p = parse_number(p, &d->day)) == NULL || d->day > 365) {
    return NULL;
  }
  if (*p == '/' && (p = parse_hms(p + 1, &d->time)) == NULL) return NULL;
  return p;
}

static int parse_posix_tz(const char* s, struct sl_tz* tz) {
  const char* p = parse_name(s);
  int32_t offset;
  if (p == NULL || (p = parse_hms(p, &offset)) == NULL) return 0;
  tz->std_offset = -offset;  // POSIX offsets count west of UTC
  if (*p == '\0') return 1;
  if ((p = parse_name(p)) == NULL) return 0;
  tz->dst_offset = tz->std_offset + 3600;
  if (*p != ',' && *p != '\0') {
    if ((p = parse_hms(p, &offset)) == NULL) return 0;
    tz->dst_offset = -offset;
  }
  if (*p != ',') return 0;  // no rule: we cannot tell when DST applies
  if ((p = parse_rule_date(p + 1, &tz->start)) == NULL || *p != ',') return 0;
  if ((p = parse_rule_date(p + 1, &tz->end)) == NULL || *p != '\0') return 0;
  tz->has_dst = 1;
  return 1;
}

/* ---- Calendar ---------------------------------------------------------------- */

/// Days since 1970-01-01 of y-m-d (H. Hinnant's days_from_civil).
static int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  int64_t era = sl_floor_div(y, 400);
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

static int is_leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

// Straight-line: CSV date and timestamp columns call this once per value
// (a loop over the three parts, kept in memory, was a sixth of a mixed
// CSV's load).
/// "-MM-DD" at t of year y, a real day: 1 and *days, else 0.
static inline int month_day(int64_t y, const unsigned char* t, int64_t* days) {
  static const int dim[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  unsigned m0 = t[1] - '0', m1 = t[2] - '0', d0 = t[4] - '0', d1 = t[5] - '0';
  if ((m0 > 9) | (m1 > 9) | (d0 > 9) | (d1 > 9) | (t[0] != '-') | (t[3] != '-')) return 0;
  int m = (int)(m0 * 10 + m1), d = (int)(d0 * 10 + d1);
  if (m < 1 || m > 12 || d < 1 || d > dim[m - 1] + (m == 2 && is_leap(y))) return 0;
  *days = days_from_civil(y, m, d);
  return 1;
}

int sl_parse_ymd(const char* text, int64_t* days) {
  const unsigned char* t = (const unsigned char*)text;
  unsigned y0 = t[0] - '0', y1 = t[1] - '0', y2 = t[2] - '0', y3 = t[3] - '0';
  if ((y0 > 9) | (y1 > 9) | (y2 > 9) | (y3 > 9)) return 0;
  return month_day(y0 * 1000 + y1 * 100 + y2 * 10 + y3, t + 4, days);
}

int64_t sl_parse_ymd_expanded(const uint8_t* p, int64_t n, int64_t* days) {
  int64_t i = 0;
  int sign = 1;
  if (n > 0 && (p[0] == '+' || p[0] == '-')) sign = p[i++] == '-' ? -1 : 1;
  int64_t y = 0, start = i;
  for (; i < n && (unsigned)(p[i] - '0') <= 9; ++i) {
    if (i - start == 9) return 0;  // (no date32 or timestamp reaches a billion years)
    y = y * 10 + (p[i] - '0');
  }
  int64_t digits = i - start;
  if (digits < 4 || (start == 0 && digits < 5)) return 0;  // sign and 4+, or 5+
  if (n < i + 6 || !month_day(y * sign, p + i, days)) return 0;
  return i + 6;
}

static int64_t year_of_days(int64_t days) {
  int64_t y = sl_floor_div(days * 400, 146097) + 1970;  // close; then fix up
  while (days_from_civil(y, 1, 1) > days) --y;
  while (days_from_civil(y + 1, 1, 1) <= days) ++y;
  return y;
}

/// Local seconds since the epoch at which rule date `d` falls in year `y`.
static int64_t rule_local_time(const struct tz_rule_date* d, int64_t y) {
  int64_t day;
  if (d->kind == 'J') {  // 1..365, February 29 never counted
    day = days_from_civil(y, 1, 1) + d->day - 1;
    if (is_leap(y) && d->day >= 60) ++day;
  } else if (d->kind == 'n') {
    day = days_from_civil(y, 1, 1) + d->day;
  } else {
    static const int k_month_days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int64_t first = days_from_civil(y, d->month, 1);
    int weekday = (int)(((first % 7) + 11) % 7);  // 1970-01-01 was a Thursday (4)
    int64_t mday = 1 + (d->day - weekday + 7) % 7 + (d->week - 1) * 7;
    int length = k_month_days[d->month - 1] + (d->month == 2 && is_leap(y));
    while (mday > length) mday -= 7;
    day = first + mday - 1;
  }
  return day * 86400 + d->time;
}

static int32_t rule_offset(const struct sl_tz* tz, int64_t t) {
  if (!tz->has_dst) return tz->std_offset;
  int64_t y = year_of_days(sl_floor_div(t + tz->std_offset, 86400));
  // Start is given in standard local time, end in daylight local time.
  int64_t start = rule_local_time(&tz->start, y) - tz->std_offset;
  int64_t end = rule_local_time(&tz->end, y) - tz->dst_offset;
  int in_dst = start < end ? (t >= start && t < end) : !(t >= end && t < start);
  return in_dst ? tz->dst_offset : tz->std_offset;
}

int32_t sl_tz_offset(const struct sl_tz* tz, int64_t utc_seconds) {
  if (tz->n == 0 || utc_seconds < tz->times[0]) {
    return tz->n == 0 && tz->has_rule ? rule_offset(tz, utc_seconds) : tz->first_offset;
  }
  if (utc_seconds >= tz->times[tz->n - 1] && tz->has_rule) return rule_offset(tz, utc_seconds);
  int64_t lo = 0, hi = tz->n - 1;  // last transition <= utc_seconds
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (tz->times[mid] <= utc_seconds) lo = mid;
    else hi = mid - 1;
  }
  return tz->offsets[lo];
}

/* ---- TZif -------------------------------------------------------------------- */

void sl_tz_free(struct sl_tz* tz) {
  if (tz == NULL) return;
  sl_free(tz->alloc, tz->times, tz->cap * sizeof *tz->times);
  sl_free(tz->alloc, tz->offsets, tz->cap * sizeof *tz->offsets);
  sl_free(tz->alloc, tz, sizeof *tz);
}

/// Parses one data block (`wide` = 8-byte times) of n bytes at p. Returns the
/// bytes it spans, or -1.
static int64_t parse_block(const uint8_t* p, int64_t n, int wide, struct sl_tz* tz, int keep) {
  if (n < 44 || memcmp(p, "TZif", 4) != 0) return -1;
  int64_t counts[6];
  for (int i = 0; i < 6; ++i) {
    counts[i] = read_be(p + 20 + 4 * i, 4);
    if (counts[i] < 0 || counts[i] > 100000) return -1;
  }
  int64_t isut = counts[0], isstd = counts[1], leap = counts[2], timecnt = counts[3],
          typecnt = counts[4], charcnt = counts[5];
  int tb = wide ? 8 : 4;
  int64_t size = 44 + timecnt * tb + timecnt + typecnt * 6 + charcnt + leap * (tb + 4) + isstd +
                 isut;
  if (size > n || typecnt == 0) return -1;
  if (!keep) return size;
  const uint8_t* times = p + 44;
  const uint8_t* idx = times + timecnt * tb;
  const uint8_t* types = idx + timecnt;
  tz->cap = (size_t)(timecnt > 0 ? timecnt : 1);
  tz->times = sl_calloc(tz->alloc, tz->cap, sizeof *tz->times);
  tz->offsets = sl_calloc(tz->alloc, tz->cap, sizeof *tz->offsets);
  if (tz->times == NULL || tz->offsets == NULL) return -2;
  tz->n = timecnt;
  for (int64_t i = 0; i < timecnt; ++i) {
    uint8_t type = idx[i];
    if (type >= typecnt) return -1;
    tz->times[i] = read_be(times + i * tb, tb);
    tz->offsets[i] = (int32_t)read_be(types + type * 6, 4);
    if (i > 0 && tz->times[i] < tz->times[i - 1]) return -1;
  }
  tz->first_offset = (int32_t)read_be(types, 4);
  return size;
}

static int valid_zone_name(const char* name) {
  if (name[0] == '\0' || name[0] == '/' || strlen(name) > 200) return 0;
  for (const char* p = name; *p != '\0'; ++p) {
    int ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
             *p == '/' || *p == '_' || *p == '-' || *p == '+';
    if (!ok || (p[0] == '/' && p[1] == '/')) return 0;
  }
  return strstr(name, "..") == NULL;
}

int sl_tz_load(const char* name, const struct sluice_allocator* alloc, struct sl_tz** out) {
  *out = NULL;
  if (!valid_zone_name(name)) return ENOENT;
  const char* dir = getenv("TZDIR");
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir != NULL && dir[0] != '\0' ? dir : "/usr/share/zoneinfo",
           name);
  FILE* f = fopen(path, "rb");
  if (f == NULL) return ENOENT;
  enum { MAX_ZONE_FILE = 1 << 16 };  // real zone files are a few KiB
  uint8_t* buf = sl_alloc(alloc, MAX_ZONE_FILE);
  struct sl_tz* tz = sl_calloc(alloc, 1, sizeof *tz);
  if (buf == NULL || tz == NULL) {
    fclose(f);
    sl_free(alloc, buf, MAX_ZONE_FILE);
    sl_free(alloc, tz, sizeof *tz);
    return ENOMEM;
  }
  tz->alloc = alloc;
  size_t n = fread(buf, 1, MAX_ZONE_FILE, f);
  int too_big = !feof(f);
  fclose(f);
  int64_t v1 = too_big ? -1 : parse_block(buf, (int64_t)n, 0, tz, 0);
  int rc = 0;
  if (v1 < 0) {
    rc = EILSEQ;
  } else if (buf[4] >= '2') {  // v2+: a 64-bit block and the POSIX footer
    int64_t v2 = parse_block(buf + v1, (int64_t)n - v1, 1, tz, 1);
    if (v2 < 0) {
      rc = v2 == -2 ? ENOMEM : EILSEQ;
    } else {
      size_t at = (size_t)(v1 + v2);
      if (at + 1 < n && buf[at] == '\n') {
        char footer[256];
        size_t len = 0;
        for (++at; at < n && buf[at] != '\n' && len + 1 < sizeof footer; ++at) {
          footer[len++] = (char)buf[at];
        }
        footer[len] = '\0';
        tz->has_rule = len > 0 && parse_posix_tz(footer, tz);
      }
    }
  } else {
    int64_t r = parse_block(buf, (int64_t)n, 0, tz, 1);
    if (r < 0) rc = r == -2 ? ENOMEM : EILSEQ;
  }
  sl_free(alloc, buf, MAX_ZONE_FILE);
  if (rc != 0) {
    sl_tz_free(tz);
    return rc;
  }
  *out = tz;
  return 0;
}
