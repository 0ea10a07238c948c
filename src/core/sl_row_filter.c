// Row filters: parsing against a schema, the range test readers prune
// splits with, and evaluation on decoded batches. See sl_row_filter.h.
#include "sl_row_filter.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sl_alloc.h"
#include "sl_array.h"
#include "sl_decimal.h"
#include "sl_error.h"
#include "sl_type.h"
#include "sl_utf8.h"
#include "sl_value_parse.h"
#include "sl_value_text.h"
#include "sl_value_tz.h"

static int compare(enum sl_filter_kind kind, const union sl_filter_value* a,
                   const union sl_filter_value* b);

/* ---- Parsing ------------------------------------------------------------------ */

/// Units per second of a time or timestamp format's unit letter.
static int64_t units_per_second(char unit) {
  return unit == 's' ? 1 : unit == 'm' ? 1000 : unit == 'u' ? 1000000 : 1000000000;
}

/// The kind a column of Arrow format `f` compares as; 0 and *kind, else ENOTSUP.
static int kind_of(const char* f, enum sl_filter_kind* kind) {
  if (f[0] != '\0' && f[1] == '\0') {
    switch (f[0]) {
      case 'c': case 's': case 'i': case 'l': *kind = SL_FILTER_INT; return 0;
      case 'C': case 'S': case 'I': case 'L': *kind = SL_FILTER_UINT; return 0;
      case 'f': case 'g': *kind = SL_FILTER_FLOAT; return 0;
      case 'b': *kind = SL_FILTER_BOOL; return 0;
      case 'u': case 'U': case 'z': case 'Z': *kind = SL_FILTER_BYTES; return 0;
      case 'n': *kind = SL_FILTER_NULL; return 0;
      default: return ENOTSUP;
    }
  }
  if (f[0] == 't' && (f[1] == 'd' || f[1] == 't' || f[1] == 's' || f[1] == 'D')) {
    *kind = SL_FILTER_INT;
    return 0;
  }
  if (f[0] == 'd' && f[1] == ':') {
    *kind = SL_FILTER_DECIMAL;
    return 0;
  }
  if (f[0] == 'w' && f[1] == ':') {  // fixed_size_binary: bytewise, as pyarrow compares it
    *kind = SL_FILTER_BYTES;
    return 0;
  }
  return ENOTSUP;
}

/// The least 256-bit value: no decimal is below it.
static const uint64_t k_decimal_min[4] = {0, 0, 0, UINT64_C(1) << 63};

/// A decimal format's ("d:P,S[,W]") scale and value width in bytes.
static void decimal_layout(const char* f, int* scale, int* bytes) {
  const char* comma = strchr(f, ',');
  *scale = comma != NULL ? (int)strtol(comma + 1, NULL, 10) : 0;
  const char* width = comma != NULL ? strchr(comma + 1, ',') : NULL;
  long bits = width != NULL ? strtol(width + 1, NULL, 10) : 128;
  *bytes = bits == 32 || bits == 64 || bits == 256 ? (int)(bits / 8) : 16;
}

void sl_filter_decimal_widen(const uint8_t* le, int n, uint64_t d[4]) {
  uint64_t fill = (le[n - 1] & 0x80) ? UINT64_MAX : 0;
  for (int k = 0; k < 4; ++k) d[k] = fill;
  for (int b = 0; b < n; ++b) {
    d[b / 8] &= ~((uint64_t)0xff << (8 * (b % 8)));
    d[b / 8] |= (uint64_t)le[b] << (8 * (b % 8));
  }
}

/// Adds `delta` (+1 or -1) to d.
static void decimal_step(uint64_t d[4], int delta) {
  for (int k = 0; k < 4; ++k) {
    uint64_t before = d[k];
    d[k] += delta > 0 ? 1 : UINT64_MAX;
    if (delta > 0 ? d[k] != 0 : before != 0) break;
  }
}

/// A number's text (sign, digits, '.', exponent: 1.5, -2, 1E+3, 2.5e-07)
/// as an unscaled value of a decimal column of scale `scale`, bounded as
/// sl_filter_integer_bound bounds numbers on integer columns: DuckDB compares a
/// decimal column with the literal's exact value, so x > 1.255 on a scale-2
/// column is x > 1.25, and x = 1.255 holds for no row. Returns 0 and *value,
/// -1 when no row passes, 1 when every non-null row does, -2 when `v` is
/// no number.
static int decimal_bound(int scale, const char* v, size_t n, enum sl_filter_op op,
                         union sl_filter_value* value) {
  struct sl_decimal_text t;
  if (!sl_decimal_text_parse((const uint8_t*)v, n, &t)) return -2;
  // value = digits * 10^shift, scaled value = digits * 10^(shift + scale).
  int64_t shift = t.exponent - t.fraction + t.n_lost + scale;
  int keep = t.n_digits;
  int inexact = t.lost_nonzero;
  if (shift < 0) {
    int64_t drop = -shift;
    keep = drop >= t.n_digits ? 0 : t.n_digits - (int)drop;
    for (int k = keep; k < t.n_digits; ++k) inexact |= t.digits[k] != '0';
    shift = 0;
  }
  int negative = t.negative;
  int beyond = keep > 0 && keep + shift > 76;  // |literal| >= 10^76: past every value
  if (beyond) {
    int above = !negative;
    switch (op) {
      case SL_FILTER_EQ: return -1;
      case SL_FILTER_NE: return 1;
      case SL_FILTER_GT: case SL_FILTER_GE: return above ? -1 : 1;
      default: return above ? 1 : -1;
    }
  }
  uint64_t d[4];
  sl_decimal_from_digits(t.digits, keep, shift, negative, d);
  if (inexact) {
    // d is the literal truncated toward zero; fl and fl + 1 bracket it.
    if (negative) decimal_step(d, -1);  // now the floor
    switch (op) {
      case SL_FILTER_EQ: return -1;
      case SL_FILTER_NE: return 1;
      case SL_FILTER_GT: case SL_FILTER_LE: break;  // x > 2.5: x > 2; x <= 2.5: x <= 2
      default: decimal_step(d, 1); break;            // x >= 2.5, x < 2.5: against 3
    }
  }
  memcpy(value->d, d, sizeof d);
  return 0;
}

int sl_filter_date_bound(const char* f, const char* v, size_t n, enum sl_filter_op op,
                         union sl_filter_value* value) {
  int64_t seconds;
  int32_t nanos;
  int zoned;
  // With a zone, seconds are UTC's: the date's midnight in UTC compares
  // with the instant, as pyarrow compares an aware datetime with a date.
  if (!sl_parse_timestamp((const uint8_t*)v, (int64_t)n, &seconds, &nanos, &zoned)) return -2;
  (void)zoned;
  const int64_t per = f[2] == 'D' ? 86400 : 1;  // date64 counts milliseconds
  int64_t units = f[2] == 'D' ? seconds / per - (seconds % per < 0) : seconds;
  int exact = f[2] == 'D' ? seconds % per == 0 && nanos == 0 : nanos % 1000000 == 0;
  if (f[2] != 'D') {
    if (seconds > INT64_MAX / 1000 || seconds < INT64_MIN / 1000) return -2;
    units = seconds * 1000 + nanos / 1000000;
  }
  if (!exact) {
    switch (op) {
      case SL_FILTER_EQ: return -1;
      case SL_FILTER_NE: return 1;
      case SL_FILTER_GT: case SL_FILTER_LE: break;
      default: ++units; break;
    }
  }
  value->i = units;
  return 0;
}

/// A time-of-day or timestamp column's (format `f`) condition `op` on the
/// text v[0, n), as an equivalent condition on a value of the column's
/// unit, bounded as sl_filter_date_bound bounds dates: pyarrow and DuckDB
/// compare a literal finer than the unit exactly, so on a timestamp[ms]
/// column ts > 12:00:00.0005 is ts > 12:00:00.000 and ts = 12:00:00.0005
/// holds for no row. A zone in a timestamp's text is honoured, else it is
/// taken as written. Returns as sl_filter_date_bound does; -3 when the
/// value is past the column's range (timestamp[ns] spans 1677 to 2262).
static int temporal_bound(const char* f, const char* v, size_t n, enum sl_filter_op op,
                          union sl_filter_value* value) {
  const int64_t per = units_per_second(f[2]), step = 1000000000 / per;
  int64_t units;
  int exact;
  if (f[1] == 't') {
    int64_t nanos;
    if (!sl_parse_time((const uint8_t*)v, (int64_t)n, &nanos)) return -2;
    units = nanos / step;
    exact = nanos % step == 0;
  } else {
    int64_t seconds;
    int32_t nanos;
    int zoned;
    if (!sl_parse_timestamp((const uint8_t*)v, (int64_t)n, &seconds, &nanos, &zoned)) return -2;
    // The floor in the unit (INT64_MIN ns included).
    exact = nanos % step == 0;
    if (!sl_timestamp_in_unit(seconds, nanos - (int32_t)(nanos % step), per, &units)) return -3;
  }
  if (!exact) {
    switch (op) {
      case SL_FILTER_EQ: return -1;
      case SL_FILTER_NE: return 1;
      case SL_FILTER_GT: case SL_FILTER_LE: break;  // ts > 0.5 ms: ts > 0
      default:                                        // ts >= 0.5 ms: ts >= 1
        if (units == INT64_MAX) return op == SL_FILTER_GE ? -1 : 1;
        ++units;
        break;
    }
  }
  value->i = units;
  return 0;
}

/// A UUID's text v[0, n) as its 16 bytes, as DuckDB reads one: 32 hex
/// digits in any case, '-' anywhere among them, optionally in braces.
/// 1 on success.
static int uuid_text(const char* v, size_t n, uint8_t out[16]) {
  if (n >= 2 && v[0] == '{' && v[n - 1] == '}') {
    ++v;
    n -= 2;
  }
  int digits = 0;
  for (size_t i = 0; i < n; ++i) {
    char ch = v[i];
    if (ch == '-') continue;  // (anywhere, as DuckDB's UUID text takes them)
    int d = ch >= '0' && ch <= '9' ? ch - '0' : (ch | 0x20) >= 'a' && (ch | 0x20) <= 'f'
                                                    ? (ch | 0x20) - 'a' + 10 : -1;
    if (d < 0 || digits == 32) return 0;
    if (digits % 2 == 0) out[digits / 2] = (uint8_t)(d << 4);
    else out[digits / 2] |= (uint8_t)d;
    ++digits;
  }
  return digits == 32;
}

/// Whether `v` is `word` in any case.
static int same_word(const char* v, const char* word) {
  for (; *v != '\0' && *word != '\0'; ++v, ++word) {
    if ((*v | 0x20) != *word) return 0;
  }
  return *v == *word;
}

/// Whether a number's text starts with a blank, which strtod and strtoll
/// would skip: refused, as a trailing one is.
static int blank_first(const char* v) {
  return *v == ' ' || (*v >= '\t' && *v <= '\r');
}

/// Integer text (optional sign, digits) as int64; 1 on success.
static int int_text(const char* v, int64_t* out) {
  return !blank_first(v) && sl_parse_int64(v, strlen(v), INT64_MIN, INT64_MAX, out) == 0;
}

/// Parses literal `v` for a column of format `f` and kind `kind`.
static int literal(const char* f, enum sl_filter_kind kind, char* v, size_t n,
                   union sl_filter_value* out, const char** why) {
  if (kind != SL_FILTER_BYTES && strlen(v) != n) {
    *why = "free of NUL bytes";
    return 0;
  }
  switch (kind) {
    case SL_FILTER_NULL:  // (not reached: a null column's literals are not read)
      *why = "comparable with a null";
      return 0;
    case SL_FILTER_BYTES:
      out->bytes.s = (const uint8_t*)v;
      out->bytes.len = (int64_t)n;
      return 1;
    case SL_FILTER_BOOL:
      if (n == 1 && (v[0] == '0' || v[0] == '1')) {
        out->i = v[0] - '0';
        return 1;
      }
      if (same_word(v, "true") || same_word(v, "false")) {
        out->i = n == 4;
        return 1;
      }
      *why = "true or false";
      return 0;
    case SL_FILTER_FLOAT: {
      char* end = NULL;
      errno = 0;
      // A float32 column compares with the literal as a float32 (as DuckDB
      // and polars cast it): 0.1 finds the stored float32(0.1).
      out->f = n == 0 ? 0 : strtod(v, &end);
      if (n == 0 || end != v + n || blank_first(v)) {
        *why = "a number";
        return 0;
      }
      // A finite number past float64's range is refused, as pyarrow refuses
      // it (as an infinity, f = 1e400 found the inf rows).
      if (isinf(out->f) && errno == ERANGE) {
        *why = "a number within float64's range";
        return 0;
      }
      // A number past float32's range stays a double (as float32 it would
      // be an infinity, which f32 = 1e39 would then find).
      if (f[0] == 'f' && !(isfinite(out->f) && isinf(strtof(v, NULL)))) {
        out->f = (double)strtof(v, NULL);
      }
      return 1;
    }
    case SL_FILTER_UINT: {
      uint64_t u = 0;
      for (size_t i = 0; i < n; ++i) {
        unsigned d = (unsigned)(v[i] - '0');
        if (d > 9 || u > (UINT64_MAX - d) / 10) {
          *why = "an unsigned integer";
          return 0;
        }
        u = u * 10 + d;
      }
      if (n == 0) {
        *why = "an unsigned integer";
        return 0;
      }
      out->u = u;
      return 1;
    }
    case SL_FILTER_DECIMAL:
      *why = "a number";
      return 0;
    case SL_FILTER_INT:
      break;
  }
  // Integers, and durations in the column's unit. Dates, times and
  // timestamps take their text forms only: a bare 2024 is not a year
  // (it would be day 2024 of 1970, as DuckDB and pyarrow refuse it).
  if (f[0] != 't' || f[1] == 'D') {
    if (int_text(v, &out->i)) return 1;
    *why = f[0] == 't' ? "an integer (the duration in the column's unit)" : "an integer";
    return 0;
  }
  if (f[0] == 't' && f[1] == 'd') {  // date32 (days) or date64 (milliseconds)
    int64_t days;
    if (n == 10 && sl_parse_ymd(v, &days)) {
      out->i = f[2] == 'D' ? days : days * 86400000;
      return 1;
    }
    *why = "a YYYY-MM-DD date";
    return 0;
  }
  if (f[0] == 't' && f[1] == 't') {  // time of day: temporal_bound
    *why = "a time of day (HH:MM:SS[.f])";
    return 0;
  }
  if (f[0] == 't' && f[1] == 's') {  // timestamp: temporal_bound
    *why = "a date-time (YYYY-MM-DD[ hh:mm:ss[.f]][Z|+hh:mm])";
    return 0;
  }
  *why = "an integer";
  return 0;
}

/// Whether v[0, n) is `word` (lower case) in any case.
static int same_word_n(const char* v, size_t n, const char* word) {
  size_t k = 0;
  for (; k < n && word[k] != '\0'; ++k)
    if ((v[k] | 0x20) != word[k]) return 0;
  return k == n && word[k] == '\0';
}

int sl_filter_integer_bound(enum sl_filter_kind kind, const char* v, size_t n,
                            enum sl_filter_op op, union sl_filter_value* value) {
  // inf and nan compare as pyarrow compares them with an integer column
  // (DuckDB agrees but for NaN, which it orders above every number).
  const int sign = n > 0 && (v[0] == '+' || v[0] == '-');
  if (same_word_n(v + sign, n - (size_t)sign, "nan")) return op == SL_FILTER_NE ? 1 : -1;
  int below = 0, above = 0;
  if (same_word_n(v + sign, n - (size_t)sign, "inf") ||
      same_word_n(v + sign, n - (size_t)sign, "infinity")) {
    below = sign && v[0] == '-';
    above = !below;
  } else {
    // The literal's exact value (strtod would round 9007199254740993.0 to
    // ...992), bounded to an integer as a scale-0 decimal column bounds it.
    union sl_filter_value d;
    int verdict = decimal_bound(0, v, n, op, &d);
    if (verdict != 0) return verdict;
    const int negative = (int64_t)d.d[3] < 0;
    const uint64_t fill = negative ? UINT64_MAX : 0;
    const int fits = d.d[1] == fill && d.d[2] == fill && d.d[3] == fill &&
                     (kind == SL_FILTER_UINT ? !negative : ((int64_t)d.d[0] < 0) == negative);
    if (fits) {
      if (kind == SL_FILTER_UINT) value->u = d.d[0];
      else value->i = (int64_t)d.d[0];
      return 0;
    }
    below = negative;
    above = !negative;
  }
  // Past the column's range: every value is on one side of the literal.
  switch (op) {
    case SL_FILTER_EQ: return -1;
    case SL_FILTER_NE: return 1;
    case SL_FILTER_GT: case SL_FILTER_GE: return below ? 1 : -1;
    default: return above ? 1 : -1;
  }
}

size_t sl_filter_op_parse(const char* p, size_t left, enum sl_filter_op* op) {
  // Two-character operators first, so "<=" is not read as "<" then "=".
  static const struct {
    const char* s;
    enum sl_filter_op op;
  } ops[] = {{"!=", SL_FILTER_NE}, {"<=", SL_FILTER_LE}, {">=", SL_FILTER_GE},
             {"=", SL_FILTER_EQ},  {"<", SL_FILTER_LT},  {">", SL_FILTER_GT}};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; ++i) {
    size_t m = strlen(ops[i].s);
    if (left >= m && memcmp(p, ops[i].s, m) == 0) {
      *op = ops[i].op;
      return m;
    }
  }
  return 0;
}

static void condition_free(const struct sluice_allocator* alloc, struct sl_filter_condition* c) {
  if (c->values != NULL) {
    if (c->kind == SL_FILTER_BYTES) {
      for (int i = 0; i < c->n_values; ++i) {
        sl_free(alloc, (void*)c->values[i].bytes.s, (size_t)c->values[i].bytes.len + 1);
      }
    }
    sl_free(alloc, c->values, (size_t)c->values_capacity * sizeof *c->values);
  }
  if (c->name != NULL) sl_free(alloc, c->name, strlen(c->name) + 1);
  memset(c, 0, sizeof *c);
}

void sl_row_filter_free(struct sl_row_filter* filter) {
  if (filter == NULL) return;
  const struct sluice_allocator* alloc = filter->alloc;
  for (int i = 0; i < filter->n_conditions; ++i) condition_free(alloc, &filter->conditions[i]);
  sl_free(alloc, filter->conditions, (size_t)filter->n_conditions * sizeof *filter->conditions);
  sl_free(alloc, filter, sizeof *filter);
}

/// qsort's orders of filter values of each kind (qsort takes no context).
static int order_int(const void* a, const void* b) { return compare(SL_FILTER_INT, a, b); }
static int order_uint(const void* a, const void* b) { return compare(SL_FILTER_UINT, a, b); }
static int order_decimal(const void* a, const void* b) { return compare(SL_FILTER_DECIMAL, a, b); }
static int order_bytes(const void* a, const void* b) { return compare(SL_FILTER_BYTES, a, b); }
static int order_float(const void* a, const void* b) {  // NaNs last
  int s = compare(SL_FILTER_FLOAT, a, b);
  if (s != 2) return s;
  return isnan(((const union sl_filter_value*)a)->f) - isnan(((const union sl_filter_value*)b)->f);
}

/// Sorts an = or != condition's values for `holds`.
static void sort_values(struct sl_filter_condition* c) {
  int (*order)(const void*, const void*) =
      c->kind == SL_FILTER_UINT ? order_uint : c->kind == SL_FILTER_FLOAT ? order_float
      : c->kind == SL_FILTER_DECIMAL ? order_decimal : c->kind == SL_FILTER_BYTES ? order_bytes
      : order_int;
  if (c->n_values > 1) qsort(c->values, (size_t)c->n_values, sizeof *c->values, order);
}

/// Parses text[0, n) (one condition) into *c; messages quote it as
/// shown[0, shown_n).
static int parse_condition_shown(const char* text, size_t n, const char* shown, int shown_n,
                                 const struct ArrowSchema* schema, const uint8_t* inferred,
                                 const struct sluice_allocator* alloc,
                                 struct sl_filter_condition* c, struct sluice_error* error) {
  size_t k = 0;
  while (k < n && strchr("=!<>", text[k]) == NULL) ++k;
  // (k == 0: a column named '', which pyarrow's filters take)
  if (k >= n) {
    return sl_error_set(error, EINVAL, "filter '%.*s': expected NAME=VALUE, NAME!=VALUE, "
                        "NAME<VALUE, NAME<=VALUE, NAME>VALUE or NAME>=VALUE", shown_n, shown);
  }
  c->name = sl_percent_decoded(text, k, alloc);
  if (c->name == NULL) return sl_error_set(error, ENOMEM, "out of memory");
  c->column = -1;
  int64_t matches = 0;
  for (int64_t i = 0; i < schema->n_children; ++i) {
    const char* name = schema->children[i]->name;
    if (name != NULL && strcmp(name, c->name) == 0 && matches++ == 0) c->column = i;
  }
  // Taking the first would filter by a column the user may not have meant
  // (pyarrow refuses it: "Multiple matches for FieldRef").
  if (matches > 1) {
    char name[256];  // (one line)
    return sl_error_set(error, EINVAL, "filter '%.*s': column '%s' appears %lld times: "
                        "filtering by it is ambiguous (rename the columns at the source)",
                        shown_n, shown, sl_escaped(c->name, strlen(c->name), 0, name, sizeof name),
                        (long long)matches);
  }
  if (c->column < 0) {
    char name[256];  // (one line)
    return sl_error_set(error, EINVAL, "filter '%.*s': no column '%s'", shown_n, shown,
                        sl_escaped(c->name, strlen(c->name), 0, name, sizeof name));
  }
  const struct ArrowSchema* column = schema->children[c->column];
  const struct ArrowSchema* typed = column->dictionary != NULL ? column->dictionary : column;
  c->format = typed->format;
  c->index_format = column->dictionary != NULL ? column->format : NULL;
  if (kind_of(typed->format, &c->kind) != 0) {
    char type[64];
    sl_format_name(typed->format, type, sizeof type);
    return sl_error_set(error, ENOTSUP, "filter '%.*s': column '%s' has type %s, which filters "
                        "do not compare (integers, 32- and 64-bit floats, decimals, bool, strings, "
                        "binary, fixed-size binary, dates, times, timestamps and durations do)",
                        shown_n, shown, c->name, type);
  }
  const char* p = text + k;
  size_t left = n - k, op_len = sl_filter_op_parse(p, left, &c->op);
  if (op_len == 0) {
    return sl_error_set(error, EINVAL, "filter '%.*s': unknown operator", shown_n, shown);
  }
  p += op_len;
  left -= op_len;
  // Room for every value ('|' between them): as many as pyarrow's `in` takes.
  size_t room = 1;
  for (size_t i = 0; i < left; ++i) room += p[i] == '|';
  if (room > INT32_MAX / sizeof *c->values) {
    return sl_error_set(error, EINVAL, "filter on column '%s': %zu values, more than %d",
                        c->name, room, (int)(INT32_MAX / sizeof *c->values));
  }
  c->values = sl_alloc(alloc, room * sizeof *c->values);
  if (c->values == NULL) return sl_error_set(error, ENOMEM, "out of memory");
  c->values_capacity = (int)room;
  if (c->kind == SL_FILTER_NULL) {  // no literal is read: nothing compares with a null
    if (room > 1 && c->op != SL_FILTER_EQ && c->op != SL_FILTER_NE) {
      return sl_error_set(error, EINVAL, "filter '%.*s': several values ('|') go with = and != "
                          "only", shown_n, shown);
    }
    memset(c->values, 0, sizeof *c->values);
    c->n_values = 1;
    return 0;
  }
  int single_verdict = 0;  // sl_filter_integer_bound's for a lone value of <, <=, >, >=
  // A UUID column's values are UUIDs' text (its 16 bytes, which the text
  // form could spell only as %XX escapes, compare as they are stored).
  const int uuid = strcmp(typed->format, "w:16") == 0 &&
                   sl_metadata_is_extension(column->metadata, "arrow.uuid");
  for (;;) {
    size_t m = 0;
    while (m < left && p[m] != '|') ++m;
    // Bytes may hold NULs (%00): a binary column's values can.
    size_t vn = 0;
    char* v = sl_percent_decoded_bytes(p, m, alloc, &vn);
    if (v == NULL) return sl_error_set(error, ENOMEM, "out of memory");
    uint8_t id[16];
    const int not_uuid = uuid && !(strlen(v) == vn && uuid_text(v, vn, id));
    if (uuid && !not_uuid) {
      char* bytes = sl_alloc(alloc, sizeof id + 1);
      if (bytes == NULL) {
        sl_free(alloc, v, vn + 1);
        return sl_error_set(error, ENOMEM, "out of memory");
      }
      memcpy(bytes, id, sizeof id);
      bytes[sizeof id] = '\0';
      sl_free(alloc, v, vn + 1);
      v = bytes;
      vn = sizeof id;
    }
    const char* why = NULL;
    union sl_filter_value value;
    int ok, verdict = 0;
    if (c->kind == SL_FILTER_DECIMAL) {
      int scale, width;
      decimal_layout(c->format, &scale, &width);
      const int sign = vn > 0 && (v[0] == '+' || v[0] == '-');
      // NaN as pyarrow compares it with a decimal column: no row but for !=.
      verdict = same_word_n(v + sign, vn - (size_t)sign, "nan")
                    ? (c->op == SL_FILTER_NE ? 1 : -1)
                    : decimal_bound(scale, v, vn, c->op, &value);
      ok = verdict != -2;
      why = "a number";
    } else if (not_uuid) {
      ok = 0;
      why = "a UUID (32 hex digits, '-' anywhere among them)";
    } else {
      ok = literal(c->format, c->kind, v, vn, &value, &why);
      // Another number on an integer column, a date-time on a date column:
      // compared as DuckDB and pyarrow compare them. A duration's is a
      // number of its unit (Python writes a timedelta of 1.5 s so on a
      // duration[s] column): compared by its exact value, as pyarrow
      // compares a timedelta finer than the column.
      const int plain_int = (c->kind == SL_FILTER_INT || c->kind == SL_FILTER_UINT) &&
                            (c->format[0] != 't' || c->format[1] == 'D');
      const int date = c->format[0] == 't' && c->format[1] == 'd';
      const int clock = c->format[0] == 't' && (c->format[1] == 't' || c->format[1] == 's');
      if (!ok && (plain_int || date || clock)) {
        verdict = plain_int ? sl_filter_integer_bound(c->kind, v, vn, c->op, &value)
                  : date    ? sl_filter_date_bound(c->format, v, vn, c->op, &value)
                            : temporal_bound(c->format, v, vn, c->op, &value);
        ok = verdict != -2 && verdict != -3;
        if (date) why = "a YYYY-MM-DD date or a date-time";
        if (verdict == -3) {
          c->pending = inferred != NULL && inferred[c->column];
          char type[64];
          sl_format_name(c->format, type, sizeof type);
          int rc = sl_error_set(error, EINVAL, "filter '%.*s': '%s' is past the range of column "
                                "'%s' (%s%s)", shown_n, shown, v, c->name, type,
                                c->format[2] == 'n' ? ": years 1677 to 2262" : "");
          sl_free(alloc, v, vn + 1);
          return rc;
        }
      }
    }
    if (!ok || c->kind != SL_FILTER_BYTES) {
      if (!ok) {
        c->pending = inferred != NULL && inferred[c->column];
        char type[64];
        sl_format_name(c->format, type, sizeof type);
        // The value as decoded (%XX escapes are the Python layer's quoting).
        const int shown_decoded =
            strlen(v) == vn && sl_utf8_invalid_at((const uint8_t*)v, (int64_t)vn) < 0;
        char value[256];  // (one line: a newline in it spelled \n)
        sl_escaped(shown_decoded ? v : p, shown_decoded ? vn : m, 0, value, sizeof value);
        int rc = sl_error_set(error, EINVAL, "filter '%.*s': '%s' is not %s, as column '%s' "
                              "(%s) needs", shown_n, shown, value, why, c->name, type);
        sl_free(alloc, v, vn + 1);
        return rc;
      }
      sl_free(alloc, v, vn + 1);
    }
    if (verdict == 0) {
      c->values[c->n_values++] = value;
    } else if (c->op != SL_FILTER_EQ && c->op != SL_FILTER_NE) {
      single_verdict = verdict;  // (one value: several are refused below)
      ++c->n_values;
    }  // (= and != with a value no row holds: it drops out of the list)
    if (m == left) break;
    p += m + 1;
    left -= m + 1;
  }
  if (c->n_values > 1 && c->op != SL_FILTER_EQ && c->op != SL_FILTER_NE) {
    return sl_error_set(error, EINVAL, "filter '%.*s': several values ('|') go with = and != "
                        "only", shown_n, shown);
  }
  if (c->n_values == 0 || single_verdict != 0) {
    // No row passes, or every non-null row: as x < MIN, x >= MIN.
    int none = single_verdict != 0 ? single_verdict < 0 : c->op == SL_FILTER_EQ;
    c->op = none ? SL_FILTER_LT : SL_FILTER_GE;
    if (c->kind == SL_FILTER_UINT) c->values[0].u = 0;
    else if (c->kind == SL_FILTER_DECIMAL) memcpy(c->values[0].d, k_decimal_min, sizeof k_decimal_min);
    else c->values[0].i = INT64_MIN;
    c->n_values = 1;
  }
  if (c->op == SL_FILTER_EQ || c->op == SL_FILTER_NE) sort_values(c);
  return 0;
}

/// parse_condition_shown, quoting the condition %XX-decoded in messages
/// (the escapes are the Python layer's quoting, not what the user wrote),
/// unless decoding gives a NUL byte or bytes that are not UTF-8 (a message
/// must stay text: `%80` is shown as typed).
static int parse_condition(const char* text, size_t n, const struct ArrowSchema* schema,
                           const uint8_t* inferred, const struct sluice_allocator* alloc,
                           struct sl_filter_condition* c, struct sluice_error* error) {
  size_t dn = 0;
  char* decoded = memchr(text, '%', n) != NULL ? sl_percent_decoded_bytes(text, n, alloc, &dn) : NULL;
  const int use = decoded != NULL && strlen(decoded) == dn && dn <= INT32_MAX &&
                  sl_utf8_invalid_at((const uint8_t*)decoded, (int64_t)dn) < 0;
  char head[SL_FILTER_QUOTE_SIZE];
  int shown_n;
  const char* shown = sl_filter_quoted(use ? decoded : text, use ? dn : n, head, &shown_n);
  int rc = parse_condition_shown(text, n, shown, shown_n, schema, inferred, alloc, c, error);
  if (decoded != NULL) sl_free(alloc, decoded, dn + 1);
  return rc;
}

const char* sl_filter_quoted(const char* s, size_t n, char* buf, int* shown_n) {
  if (n <= SL_FILTER_QUOTE_SIZE - 8 && sl_plain_ascii(s, n)) {
    *shown_n = (int)n;
    return s;
  }
  sl_escaped(s, n, 0, buf, SL_FILTER_QUOTE_SIZE);
  *shown_n = (int)strlen(buf);
  return buf;
}

int sl_filter_has_empty_condition(const char* text) {
  size_t n = strlen(text);
  if (n == 0) return 0;
  if (strchr(",;", text[0]) != NULL || strchr(",;", text[n - 1]) != NULL) return 1;
  for (size_t i = 0; i + 1 < n; ++i)
    if (strchr(",;", text[i]) != NULL && strchr(",;", text[i + 1]) != NULL) return 1;
  return 0;
}

int sl_row_filter_may_pass(const struct sl_row_filter* filter,
                           int (*may)(void* ctx, const struct sl_filter_condition* c),
                           void* ctx) {
  if (filter == NULL) return 1;
  for (int k = 0; k < filter->n_conditions;) {
    int group = filter->conditions[k].group, ruled_out = 0;
    for (; k < filter->n_conditions && filter->conditions[k].group == group; ++k)
      if (!ruled_out && !filter->conditions[k].pending &&
          filter->conditions[k].kind != SL_FILTER_NULL && !may(ctx, &filter->conditions[k]))
        ruled_out = 1;
    if (!ruled_out) return 1;
  }
  return 0;
}

int sl_row_filter_parse(const char* text, const struct ArrowSchema* schema,
                        const struct sluice_allocator* alloc, struct sl_row_filter** out,
                        struct sluice_error* error) {
  return sl_row_filter_parse_inferred(text, schema, NULL, alloc, out, error);
}

int sl_row_filter_parse_inferred(const char* text, const struct ArrowSchema* schema,
                                 const uint8_t* inferred, const struct sluice_allocator* alloc,
                                 struct sl_row_filter** out, struct sluice_error* error) {
  *out = NULL;
  if (text == NULL || *text == '\0') return 0;
  if (sl_filter_has_empty_condition(text)) {
    char line[1024];  // (one line)
    return sl_error_set(error, EINVAL, "filter '%s': an empty condition (',' or ';' at an "
                        "end, or two in a row)", sl_escaped_line(text, line, sizeof line));
  }
  int n = 1, groups = 1;
  for (const char* at = text; *at != '\0'; ++at) {
    n += *at == ',' || *at == ';';
    groups += *at == ';';
  }
  struct sl_row_filter* f = sl_calloc(alloc, 1, sizeof *f);
  struct sl_filter_condition* conditions = sl_calloc(alloc, (size_t)n, sizeof *conditions);
  if (f == NULL || conditions == NULL) {
    sl_free(alloc, f, sizeof *f);
    sl_free(alloc, conditions, (size_t)n * sizeof *conditions);
    return sl_error_set(error, ENOMEM, "out of memory");
  }
  f->alloc = alloc;
  f->n_groups = groups;
  f->conditions = conditions;
  int rc = 0, group = 0;
  for (const char* at = text; rc == 0 && *at != '\0';) {
    size_t len = strcspn(at, ",;");
    struct sl_filter_condition* c = &conditions[f->n_conditions];
    struct sluice_error why;
    memset(&why, 0, sizeof why);
    rc = parse_condition(at, len, schema, inferred, alloc, c, &why);
    if (rc != 0 && c->pending) {
      // Told only if the whole input leaves the column's type as it is.
      if (f->pending.code == 0) {
        f->pending = why;
        size_t used = strlen(f->pending.message);
        snprintf(f->pending.message + used, sizeof f->pending.message - used,
                 " (the column's type was inferred from the data read, which no value widened; "
                 "schema=%s:TYPE gives it)", c->name);
      }
      rc = 0;
    } else if (rc != 0 && error != NULL) {
      *error = why;
    }
    c->group = group;
    ++f->n_conditions;  // freed with the others, parsed or not
    group += at[len] == ';';
    at += len + (at[len] != '\0');
  }
  if (rc != 0) {
    f->n_conditions = n;  // (the rest are zeroed: nothing to free)
    sl_row_filter_free(f);
    return rc;
  }
  *out = f;
  return 0;
}

/* ---- Comparing ------------------------------------------------------------------ */

/// Sign of a - b in kind `kind`; for floats, a NaN on either side gives 2
/// (unordered).
static int compare(enum sl_filter_kind kind, const union sl_filter_value* a,
                   const union sl_filter_value* b) {
  switch (kind) {
    case SL_FILTER_INT:
    case SL_FILTER_BOOL:
      return (a->i > b->i) - (a->i < b->i);
    case SL_FILTER_UINT:
      return (a->u > b->u) - (a->u < b->u);
    case SL_FILTER_FLOAT:
      if (isnan(a->f) || isnan(b->f)) return 2;
      return (a->f > b->f) - (a->f < b->f);
    case SL_FILTER_DECIMAL: {
      if (a->d[3] != b->d[3]) return (int64_t)a->d[3] > (int64_t)b->d[3] ? 1 : -1;
      for (int k = 2; k >= 0; --k)
        if (a->d[k] != b->d[k]) return a->d[k] > b->d[k] ? 1 : -1;
      return 0;
    }
    case SL_FILTER_BYTES: {
      int64_t n = a->bytes.len < b->bytes.len ? a->bytes.len : b->bytes.len;
      int c = n > 0 ? memcmp(a->bytes.s, b->bytes.s, (size_t)n) : 0;
      if (c == 0) c = (a->bytes.len > b->bytes.len) - (a->bytes.len < b->bytes.len);
      return (c > 0) - (c < 0);
    }
    case SL_FILTER_NULL:
      return 2;
  }
  return 2;
}

/// Whether non-null value `v` passes `c` (an unordered comparison passes
/// only !=, as in SQL and Arrow compute).
static int passes(const struct sl_filter_condition* c, const union sl_filter_value* v) {
  if (c->op == SL_FILTER_EQ || c->op == SL_FILTER_NE) {
    // Bisection over the sorted values; a NaN (last) equals nothing.
    int lo = 0, hi = c->n_values, any = 0;
    while (lo < hi && !any) {
      int mid = lo + (hi - lo) / 2, s = compare(c->kind, &c->values[mid], v);
      any = s == 0;
      if (s < 0) lo = mid + 1;
      else hi = mid;  // (2: a NaN at mid, or v is NaN and nothing equals it)
    }
    return c->op == SL_FILTER_EQ ? any : !any;
  }
  int s = compare(c->kind, v, &c->values[0]);
  if (s == 2) return 0;
  switch (c->op) {
    case SL_FILTER_LT: return s < 0;
    case SL_FILTER_LE: return s <= 0;
    case SL_FILTER_GT: return s > 0;
    default: return s >= 0;
  }
}

int sl_filter_range_may_pass(const struct sl_filter_condition* c,
                             const union sl_filter_value* min,
                             const union sl_filter_value* max) {
  if (c->pending || c->kind == SL_FILTER_NULL) return 1;
  if (compare(c->kind, min, max) == 2) return 1;  // NaN bounds say nothing
  switch (c->op) {
    case SL_FILTER_EQ:
      for (int i = 0; i < c->n_values; ++i) {
        int lo = compare(c->kind, &c->values[i], min), hi = compare(c->kind, &c->values[i], max);
        if (lo == 2 || hi == 2 || (lo >= 0 && hi <= 0)) return 1;
      }
      return 0;
    case SL_FILTER_NE:  // only a split of one value, named here, fails
      return compare(c->kind, min, max) != 0 || passes(c, min);
    case SL_FILTER_LT: {  // unordered (2) cannot prove anything
      int s = compare(c->kind, min, &c->values[0]);
      return s < 0 || s == 2;
    }
    case SL_FILTER_LE: {
      int s = compare(c->kind, min, &c->values[0]);
      return s <= 0 || s == 2;
    }
    case SL_FILTER_GT: return compare(c->kind, max, &c->values[0]) > 0;  // 2 included
    case SL_FILTER_GE: return compare(c->kind, max, &c->values[0]) >= 0;
  }
  return 1;
}

/* ---- Evaluating ------------------------------------------------------------------ */

static int valid_at(const struct ArrowArray* a, int64_t i) {
  const uint8_t* bits = a->n_buffers > 0 ? a->buffers[0] : NULL;
  if (bits == NULL || a->null_count == 0) return 1;
  int64_t j = a->offset + i;
  return (bits[j >> 3] >> (j & 7)) & 1;
}

/// Value i of `a` (format `f`, kind `kind`; a dictionary's values when the
/// column is dictionary-encoded), unless it is null: 1 and *v.
static int value_at(const struct ArrowArray* a, const char* f, enum sl_filter_kind kind, int64_t i,
                    union sl_filter_value* v) {
  if (!valid_at(a, i)) return 0;
  int64_t j = a->offset + i;
  const void* data = a->buffers[1];
  if (kind == SL_FILTER_BYTES && f[0] == 'w') {  // fixed_size_binary: "w:N"
    int64_t width = strtol(f + 2, NULL, 10);
    v->bytes.s = (const uint8_t*)data + j * width;
    v->bytes.len = width;
    return 1;
  }
  if (kind == SL_FILTER_BYTES) {
    int large = f[0] == 'U' || f[0] == 'Z';
    const uint8_t* bytes = a->buffers[2];
    int64_t start = large ? ((const int64_t*)data)[j] : ((const int32_t*)data)[j];
    int64_t end = large ? ((const int64_t*)data)[j + 1] : ((const int32_t*)data)[j + 1];
    v->bytes.s = bytes + start;
    v->bytes.len = end - start;
    return 1;
  }
  if (kind == SL_FILTER_BOOL) {
    v->i = (((const uint8_t*)data)[j >> 3] >> (j & 7)) & 1;
    return 1;
  }
  if (kind == SL_FILTER_FLOAT) {
    v->f = f[0] == 'f' ? ((const float*)data)[j] : ((const double*)data)[j];
    return 1;
  }
  if (kind == SL_FILTER_DECIMAL) {
    int scale, width;
    decimal_layout(f, &scale, &width);
    sl_filter_decimal_widen((const uint8_t*)data + j * width, width, v->d);
    return 1;
  }
  // Integers of every width; temporal types by their storage width.
  char w = f[0];
  if (f[0] == 't') w = (f[1] == 'd' && f[2] == 'D') || (f[1] == 't' && (f[2] == 's' || f[2] == 'm'))
                           ? 'i' : 'l';
  switch (w) {
    case 'c': v->i = ((const int8_t*)data)[j]; break;
    case 's': v->i = ((const int16_t*)data)[j]; break;
    case 'i': v->i = ((const int32_t*)data)[j]; break;
    case 'C': v->u = ((const uint8_t*)data)[j]; break;
    case 'S': v->u = ((const uint16_t*)data)[j]; break;
    case 'I': v->u = ((const uint32_t*)data)[j]; break;
    case 'L': v->u = ((const uint64_t*)data)[j]; break;
    default: v->i = ((const int64_t*)data)[j]; break;
  }
  return 1;
}

/// Index i of a dictionary-encoded column (its index type `f`), unless null.
static int index_at(const struct ArrowArray* a, const char* f, int64_t i, int64_t* index) {
  union sl_filter_value v;
  enum sl_filter_kind kind = (f[0] >= 'A' && f[0] <= 'Z') ? SL_FILTER_UINT : SL_FILTER_INT;
  if (!value_at(a, f, kind, i, &v)) return 0;
  *index = kind == SL_FILTER_UINT ? (int64_t)v.u : v.i;
  return 1;
}

/// Rows [0, rows) of `x` (type T, widened to W) against bound `b` by `op`,
/// eight rows to a selection byte: loops the compiler vectorizes.
#define COMPARE_ROWS(T, W, x, b, op, rows, selection)                                   \
  do {                                                                                  \
    for (int64_t i = 0; i < (rows); i += 8) {                                           \
      int64_t m = (rows) - i < 8 ? (rows) - i : 8;                                      \
      unsigned byte = 0;                                                                \
      for (int64_t k = 0; k < m; ++k) {                                                 \
        W v = (W)(x)[i + k];                                                            \
        int keep = (op) == SL_FILTER_EQ   ? v == (b)                                    \
                   : (op) == SL_FILTER_NE ? v != (b)                                    \
                   : (op) == SL_FILTER_LT ? v < (b)                                     \
                   : (op) == SL_FILTER_LE ? v <= (b)                                    \
                   : (op) == SL_FILTER_GT ? v > (b)                                     \
                                          : v >= (b);                                   \
        byte |= (unsigned)keep << k;                                                    \
      }                                                                                 \
      (selection)[i >> 3] &= (uint8_t)byte;                                             \
    }                                                                                   \
  } while (0)

/// One value compared on a plain numeric column (the common filters):
/// without the general path's per-row dispatch. 0 when not such a case.
static int fast_compare(const struct sl_filter_condition* c, const struct ArrowArray* a,
                        int64_t rows, uint8_t* selection) {
  if (a->dictionary != NULL || a->n_buffers < 2 || a->buffers[1] == NULL) return 0;
  const char* f = c->format;
  int plain = f[1] == '\0' || (f[0] == 't' && (f[1] == 's' || f[1] == 'D')) ||
              strcmp(f, "tdD") == 0 || strcmp(f, "tdm") == 0;
  if (!plain) return 0;
  enum sl_filter_op op = c->op;
  const void* data = a->buffers[1];
  int64_t o = a->offset;
  // NaN compares false but for != (true), as `passes` decides too.
  if (c->kind == SL_FILTER_FLOAT && f[0] == 'g') {
    double b = c->values[0].f;
    COMPARE_ROWS(double, double, (const double*)data + o, b, op, rows, selection);
  } else if (c->kind == SL_FILTER_FLOAT && f[0] == 'f') {
    double b = c->values[0].f;
    COMPARE_ROWS(float, double, (const float*)data + o, b, op, rows, selection);
  } else if (c->kind == SL_FILTER_INT && (f[0] == 'l' || f[0] == 't') && strcmp(f, "tdD") != 0) {
    int64_t b = c->values[0].i;
    COMPARE_ROWS(int64_t, int64_t, (const int64_t*)data + o, b, op, rows, selection);
  } else if (c->kind == SL_FILTER_INT && (f[0] == 'i' || strcmp(f, "tdD") == 0)) {
    int64_t b = c->values[0].i;
    COMPARE_ROWS(int32_t, int64_t, (const int32_t*)data + o, b, op, rows, selection);
  } else {
    return 0;
  }
  // Nulls pass nothing: AND the validity bits in.
  const uint8_t* valid = a->buffers[0];
  if (valid != NULL && a->null_count != 0) {
    for (int64_t r = 0; r < rows; ++r) {
      int64_t j = o + r;
      if (!((valid[j >> 3] >> (j & 7)) & 1)) selection[r >> 3] &= (uint8_t) ~(1u << (r & 7));
    }
  }
  return 1;
}

/// ANDs condition `c` over column `a` (of the batch's schema child `f`)
/// into `selection`.
static int select_condition(const struct sl_filter_condition* c, const struct ArrowArray* a,
                            const char* index_format, int64_t rows, uint8_t* selection,
                            const struct sluice_allocator* alloc, struct sluice_error* error) {
  if (c->kind == SL_FILTER_NULL) {  // (a null array has no buffers to read)
    memset(selection, 0, (size_t)((rows + 7) / 8));
    return 0;
  }
  if (a->dictionary != NULL) {
    // Judge each dictionary value once, then look rows up by index.
    const struct ArrowArray* d = a->dictionary;
    size_t bytes = (size_t)(d->length > 0 ? d->length : 1);
    uint8_t* ok = sl_alloc(alloc, bytes);
    if (ok == NULL) return sl_error_set(error, ENOMEM, "filter: out of memory");
    for (int64_t k = 0; k < d->length; ++k) {
      union sl_filter_value v;
      ok[k] = (uint8_t)(value_at(d, c->format, c->kind, k, &v) && passes(c, &v));
    }
    for (int64_t r = 0; r < rows; ++r) {
      if (!((selection[r >> 3] >> (r & 7)) & 1)) continue;
      int64_t index;
      int keep = index_at(a, index_format, r, &index) && index >= 0 && index < d->length &&
                 ok[index];
      if (!keep) selection[r >> 3] &= (uint8_t) ~(1u << (r & 7));
    }
    sl_free(alloc, ok, bytes);
    return 0;
  }
  if (c->n_values == 1 && fast_compare(c, a, rows, selection)) return 0;
  for (int64_t r = 0; r < rows; ++r) {
    if (!((selection[r >> 3] >> (r & 7)) & 1)) continue;
    union sl_filter_value v;
    if (!value_at(a, c->format, c->kind, r, &v) || !passes(c, &v)) {
      selection[r >> 3] &= (uint8_t) ~(1u << (r & 7));
    }
  }
  return 0;
}

int sl_row_filter_select(const struct sl_row_filter* filter, const struct ArrowArray* batch,
                         const int64_t* at, uint8_t* selection, int64_t* selected,
                         struct sluice_error* error) {
  int64_t rows = batch->length, bytes = (rows + 7) / 8;
  // One group: its conditions clear bits of the selection itself. Several:
  // each group's in a scratch selection, or-ed into the result.
  uint8_t* group_selection = selection;
  if (filter->n_groups > 1) {
    group_selection = sl_alloc(filter->alloc, (size_t)(bytes > 0 ? bytes : 1));
    if (group_selection == NULL) return sl_error_set(error, ENOMEM, "filter: out of memory");
    memset(selection, 0, (size_t)bytes);
  }
  int rc = 0;
  for (int k = 0; rc == 0 && k < filter->n_conditions; ++k) {
    const struct sl_filter_condition* c = &filter->conditions[k];
    if (k == 0 || c->group != filter->conditions[k - 1].group) {
      memset(group_selection, 0xff, (size_t)bytes);
      if (rows % 8 != 0) group_selection[bytes - 1] = (uint8_t)((1u << (rows % 8)) - 1);
    }
    if (at[k] < 0 || at[k] >= batch->n_children) {
      rc = sl_error_set(error, EINVAL, "filter: column '%s' is not in the batch", c->name);
      break;
    }
    const struct ArrowArray* a = batch->children[at[k]];
    if (a->length < rows) {
      rc = sl_error_set(error, EINVAL, "filter: column '%s' has %" PRId64 " rows, the batch %"
                        PRId64, c->name, a->length, rows);
      break;
    }
    if (c->pending) memset(group_selection, 0, (size_t)bytes);  // no row passes
    else rc = select_condition(c, a, c->index_format, rows, group_selection, filter->alloc, error);
    int group_ends = k + 1 == filter->n_conditions || filter->conditions[k + 1].group != c->group;
    if (rc == 0 && group_ends && group_selection != selection)
      for (int64_t i = 0; i < bytes; ++i) selection[i] |= group_selection[i];
  }
  if (group_selection != selection) sl_free(filter->alloc, group_selection, (size_t)(bytes > 0 ? bytes : 1));
  if (rc != 0) return rc;
  int64_t n = 0;
  for (int64_t i = 0; i < bytes; ++i) n += __builtin_popcount(selection[i]);
  *selected = n;
  return 0;
}
