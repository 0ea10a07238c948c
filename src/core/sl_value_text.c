#include "sl_value_text.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sl_alloc.h"
#include "sl_array.h"
#include "sl_error.h"
#include "sl_read.h"
#include "sl_value_tz.h"

/* ---- Text buffer ------------------------------------------------------------ */

void sl_text_init(struct sl_text* text, const struct sluice_allocator* alloc) {
  text->data = NULL;
  text->len = 0;
  text->cap = 0;
  text->alloc = alloc;
}

void sl_text_clear(struct sl_text* text) {
  text->len = 0;
  if (text->data != NULL) text->data[0] = '\0';
}

void sl_text_reset(struct sl_text* text) {
  if (text->data != NULL) sl_free_buffer(text->alloc, text->data, text->cap);
  sl_text_init(text, text->alloc);
}

int sl_text_reserve(struct sl_text* text, size_t extra) {
  size_t need;
  // +1 keeps room for the terminating NUL.
  if (sl_add_size(text->len, extra, &need) != 0 || sl_add_size(need, 1, &need) != 0) {
    return ERANGE;
  }
  if (need <= text->cap) return 0;
  size_t cap = text->cap < 64 ? 64 : text->cap;
  while (cap < need) {
    if (sl_mul_size(cap, 2, &cap) != 0) return ERANGE;
  }
  char* data = text->data == NULL ? sl_alloc_buffer(text->alloc, cap)
                                  : sl_realloc_buffer(text->alloc, text->data, text->cap, cap);
  if (data == NULL) return ENOMEM;
  text->data = data;
  text->cap = cap;
  return 0;
}

int sl_text_append(struct sl_text* text, const char* s, size_t n) {
  SL_RETURN_NOT_OK(sl_text_reserve(text, n));
  if (n > 0) memcpy(text->data + text->len, s, n);
  text->len += n;
  text->data[text->len] = '\0';
  return 0;
}

int sl_text_append_str(struct sl_text* text, const char* s) {
  return sl_text_append(text, s, strlen(s));
}

int sl_text_append_char(struct sl_text* text, char c) { return sl_text_append(text, &c, 1); }

const char* sl_text_cstr(const struct sl_text* text) {
  return text->data == NULL ? "" : text->data;
}

/* ---- Fields ----------------------------------------------------------------- */

static int parse_fixed_offset(const char* tz, int64_t* seconds);

static int is_utc_name(const char* tz) {
  static const char* const k_utc[] = {"UTC", "Etc/UTC", "Z", "GMT", "Etc/GMT", "UCT", "Zulu",
                                      "Etc/UCT", "Etc/Zulu", "Universal", "Etc/Universal"};
  for (size_t i = 0; i < sizeof k_utc / sizeof k_utc[0]; ++i) {
    if (strcmp(tz, k_utc[i]) == 0) return 1;
  }
  return 0;
}

static int is_utc_or_fixed(const char* tz) {
  int64_t unused;
  return tz == NULL || tz[0] == '\0' || is_utc_name(tz) || parse_fixed_offset(tz, &unused);
}

void sl_text_field_reset(struct sl_text_field* field) {
  if (field->children != NULL) {
    for (int64_t i = 0; i < field->n_children; ++i) sl_text_field_reset(&field->children[i]);
    sl_free(field->alloc, field->children, (size_t)field->n_children * sizeof *field->children);
  }
  if (field->dictionary != NULL) {
    sl_text_field_reset(field->dictionary);
    sl_free(field->alloc, field->dictionary, sizeof *field->dictionary);
  }
  sl_tz_free(field->tz);
  field->tz = NULL;
  field->children = NULL;
  field->dictionary = NULL;
  field->n_children = 0;
}

int sl_text_field_init(struct sl_text_field* field, const struct ArrowSchema* schema,
                       const struct sluice_allocator* alloc, struct sluice_error* error) {
  memset(field, 0, sizeof *field);
  field->alloc = alloc;
  field->name = schema->name != NULL ? schema->name : "";
  SL_RETURN_NOT_OK(sl_type_parse(schema->format, &field->type, error));
  if (field->type.id == SL_TYPE_TIMESTAMP && !is_utc_or_fixed(field->type.timezone)) {
    // Unknown zones fall back to the UTC instant marked Z (rendering must not
    // fail on a zone name this system lacks).
    if (sl_tz_load(field->type.timezone, alloc, &field->tz) == ENOMEM) {
      return sl_error_set(error, ENOMEM, "out of memory");
    }
  }
  field->uuid = field->type.id == SL_TYPE_FIXED_SIZE_BINARY && field->type.byte_width == 16 &&
                sl_metadata_is_extension(schema->metadata, "arrow.uuid");
  if (schema->n_children < 0 || (schema->n_children > 0 && schema->children == NULL)) {
    return sl_error_set(error, EINVAL, "field '%s': bad child count", field->name);
  }
  if (schema->n_children > 0) {
    field->children = sl_calloc(alloc, (size_t)schema->n_children, sizeof *field->children);
    if (field->children == NULL) return sl_error_set(error, ENOMEM, "out of memory");
    field->n_children = schema->n_children;
    for (int64_t i = 0; i < schema->n_children; ++i) {
      int rc = sl_text_field_init(&field->children[i], schema->children[i], alloc, error);
      if (rc != 0) {
        sl_text_field_reset(field);
        return rc;
      }
    }
  }
  if (schema->dictionary != NULL) {
    field->dictionary = sl_calloc(alloc, 1, sizeof *field->dictionary);
    int rc = field->dictionary == NULL
                 ? sl_error_set(error, ENOMEM, "out of memory")
                 : sl_text_field_init(field->dictionary, schema->dictionary, alloc, error);
    if (rc != 0) {
      sl_text_field_reset(field);
      return rc;
    }
  }
  return 0;
}

/* ---- Scalars ---------------------------------------------------------------- */

static double half_to_double(uint16_t h) {
  int sign = (h >> 15) & 1, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  double v;
  if (exponent == 0) {
    v = ldexp(mantissa, -24);
  } else if (exponent == 31) {
    v = mantissa != 0 ? NAN : INFINITY;
  } else {
    v = ldexp(mantissa + 1024, exponent - 25);
  }
  return sign ? -v : v;
}

/// Days since 1970-01-01 to a proleptic Gregorian date (H. Hinnant's
/// civil_from_days), valid for the full int64 range of days we can meet.
static void civil_from_days(int64_t z, int64_t* y, unsigned* m, unsigned* d) {
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  unsigned doe = (unsigned)(z - era * 146097);
  unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

size_t sl_format_date(int64_t days, char* buf, size_t cap) {
  int64_t y;
  unsigned m, d;
  civil_from_days(days, &y, &m, &d);
  int n = snprintf(buf, cap, (y >= 0 && y <= 9999) ? "%04" PRId64 "-%02u-%02u"
                                                   : "%+05" PRId64 "-%02u-%02u",
                   y, m, d);
  return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

static int append_date(struct sl_text* out, int64_t days) {
  char buf[48];
  return sl_text_append(out, buf, sl_format_date(days, buf, sizeof buf));
}

static const int64_t k_units_per_second[] = {1, 1000, 1000000, 1000000000};
static const int k_fraction_digits[] = {0, 3, 6, 9};

/// "HH:MM:SS[.fff]" for a time of day (or the time part of a timestamp) of
/// `value` units past midnight, 0 <= value < one day.
static int append_time_of_day(struct sl_text* out, int64_t value, enum sl_time_unit unit) {
  int64_t per_second = k_units_per_second[unit];
  int64_t seconds = sl_floor_div(value, per_second);
  int64_t fraction = value - seconds * per_second;
  char buf[64];
  int n = snprintf(buf, sizeof buf, "%02" PRId64 ":%02" PRId64 ":%02" PRId64, seconds / 3600,
                   seconds / 60 % 60, seconds % 60);
  if (k_fraction_digits[unit] > 0) {
    n += snprintf(buf + n, sizeof buf - (size_t)n, ".%0*" PRId64, k_fraction_digits[unit],
                  fraction);
  }
  return sl_text_append(out, buf, (size_t)n);
}

/// A fixed offset zone (sl_tz_fixed_offset: Arrow C++'s forms) in seconds,
/// or 0 when `tz` is not one.
static int parse_fixed_offset(const char* tz, int64_t* seconds) {
  int32_t s;
  if (!sl_tz_fixed_offset(tz, &s)) return 0;
  *seconds = s;
  return 1;
}

static int append_timestamp(struct sl_text* out, int64_t value, const struct sl_type* type,
                            const struct sl_tz* zone) {
  const char* tz = type->timezone != NULL ? type->timezone : "";
  int64_t per_second = k_units_per_second[type->unit];
  int64_t offset_seconds = 0;
  int fixed = parse_fixed_offset(tz, &offset_seconds);
  // Local wall time and its offset, as Arrow prints zoned timestamps; UTC and
  // zones the system lacks print the UTC instant with a Z.
  int64_t seconds = sl_floor_div(value, per_second);
  if (zone != NULL) {
    offset_seconds = sl_tz_offset(zone, seconds);
    fixed = 1;
    // Local mean time (before ~1900) has offsets with seconds ("-04:56:02"),
    // which no reader takes (polars, pyarrow.csv and pyarrow.json refuse
    // them): the UTC instant with a Z, which every reader takes, as CSV,
    // JSON Lines and the CLI all spell it.
    if (offset_seconds % 60 != 0) fixed = 0;
  }
  int64_t sub = sl_floor_mod(value, per_second);
  // Values within a day of the int64 range stay in UTC rather than overflow.
  if (fixed && seconds > INT64_MIN + 86400 && seconds < INT64_MAX - 86400) {
    seconds += offset_seconds;
  } else {
    offset_seconds = 0;
  }
  int64_t days = sl_floor_div(seconds, 86400);
  int64_t in_day = sl_floor_mod(seconds, 86400);
  SL_RETURN_NOT_OK(append_date(out, days));
  SL_RETURN_NOT_OK(sl_text_append_char(out, ' '));
  SL_RETURN_NOT_OK(append_time_of_day(out, in_day * per_second + sub, type->unit));
  if (fixed) {
    char buf[48];
    int64_t m = offset_seconds < 0 ? -offset_seconds / 60 : offset_seconds / 60;
    int n = snprintf(buf, sizeof buf, "%c%02" PRId64 ":%02" PRId64,
                     offset_seconds < 0 ? '-' : '+', m / 60, m % 60);
    return sl_text_append(out, buf, (size_t)n);
  }
  if (tz[0] != '\0') return sl_text_append_char(out, 'Z');
  return 0;
}

/// Decimal128/256: little-endian two's complement integers of `width` bytes,
/// printed with `scale` digits after the point.
int sl_text_append_decimal(struct sl_text* out, const uint8_t* bytes, int width, int scale) {
  uint32_t limbs[8] = {0};
  int n_limbs = width == 32 ? 8 : 4;
  for (int i = 0; i < n_limbs; ++i) {
    memcpy(&limbs[i], bytes + 4 * i, 4);
  }
  int negative = (limbs[n_limbs - 1] >> 31) & 1;
  if (negative) {  // two's complement negation: invert and add one
    uint64_t carry = 1;
    for (int i = 0; i < n_limbs; ++i) {
      uint64_t v = (uint64_t)(uint32_t)~limbs[i] + carry;
      limbs[i] = (uint32_t)v;
      carry = v >> 32;
    }
  }
  char digits[96];
  int n_digits = 0;
  for (;;) {  // repeated division by 10^9, most significant limb first
    uint64_t rem = 0;
    int nonzero = 0;
    for (int i = n_limbs - 1; i >= 0; --i) {
      uint64_t cur = (rem << 32) | limbs[i];
      limbs[i] = (uint32_t)(cur / 1000000000u);
      rem = cur % 1000000000u;
      nonzero |= limbs[i] != 0;
    }
    for (int k = 0; k < 9; ++k) {
      digits[n_digits++] = (char)('0' + rem % 10);
      rem /= 10;
    }
    if (!nonzero) break;
  }
  while (n_digits > 1 && digits[n_digits - 1] == '0') --n_digits;
  // digits[] is least significant first. A value whose text would need more
  // than 64 zeros besides its digits (scale far from its precision: pyarrow
  // takes decimal128(38, 250)) is spelled in E notation, as Python's
  // Decimal spells it (5E-250, 1.5E+171); the rest fit buf.
  char buf[200];
  size_t n = 0;
  if (negative) buf[n++] = '-';
  int64_t zeros = scale <= 0 ? -(int64_t)scale : (int64_t)scale - n_digits;
  int is_zero = n_digits == 1 && digits[0] == '0';
  if (zeros > 64 && !is_zero) {
    buf[n++] = digits[n_digits - 1];
    if (n_digits > 1) buf[n++] = '.';
    for (int i = n_digits - 2; i >= 0; --i) buf[n++] = digits[i];
    int64_t exponent = (int64_t)n_digits - 1 - scale;
    n += (size_t)snprintf(buf + n, sizeof buf - n, "E%+" PRId64, exponent);
    return sl_text_append(out, buf, n);
  }
  if (zeros > 64) scale = 0;  // zero: "0"
  if (scale <= 0) {
    for (int i = n_digits - 1; i >= 0; --i) buf[n++] = digits[i];
    if (!is_zero) {
      for (int i = 0; i < -scale; ++i) buf[n++] = '0';
    }
  } else {
    int int_digits = n_digits > scale ? n_digits - scale : 0;
    if (int_digits == 0) buf[n++] = '0';
    for (int i = n_digits - 1; i >= scale; --i) buf[n++] = digits[i];
    buf[n++] = '.';
    for (int i = scale - 1; i >= 0; --i) buf[n++] = i < n_digits ? digits[i] : '0';
  }
  return sl_text_append(out, buf, n);
}

int sl_text_append_hex(struct sl_text* out, const uint8_t* data, int64_t n) {
  static const char hex[] = "0123456789abcdef";
  SL_RETURN_NOT_OK(sl_text_reserve(out, (size_t)n * 2));
  for (int64_t i = 0; i < n; ++i) {
    out->data[out->len++] = hex[data[i] >> 4];
    out->data[out->len++] = hex[data[i] & 15];
  }
  out->data[out->len] = '\0';
  return 0;
}

size_t sl_base64_encode(const uint8_t* data, size_t n, char* out) {
  static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t k = 0;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)data[i] << 16;
    if (i + 1 < n) v |= (uint32_t)data[i + 1] << 8;
    if (i + 2 < n) v |= data[i + 2];
    out[k++] = digits[(v >> 18) & 63];
    out[k++] = digits[(v >> 12) & 63];
    out[k++] = i + 1 < n ? digits[(v >> 6) & 63] : '=';
    out[k++] = i + 2 < n ? digits[v & 63] : '=';
  }
  return k;
}

/// Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid.
static int utf8_sequence_length(const uint8_t* s, size_t n) {
  uint8_t c = s[0];
  int len;
  uint32_t min;
  if (c < 0x80) return 1;
  if ((c & 0xe0) == 0xc0) len = 2, min = 0x80;
  else if ((c & 0xf0) == 0xe0) len = 3, min = 0x800;
  else if ((c & 0xf8) == 0xf0) len = 4, min = 0x10000;
  else return 0;
  if ((size_t)len > n) return 0;
  uint32_t cp = c & (0x7f >> len);
  for (int i = 1; i < len; ++i) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return len;
}

/// The spelling of the character at s[i] (sl_text_append_escaped): either
/// s + i itself, or esc (16 bytes) holding its escape; *len = its bytes,
/// *consumed = the input bytes it stands for.
static const char* escape_next(const char* s, size_t n, size_t i, char quote, char* esc,
                               size_t* len, size_t* consumed) {
  unsigned char c = (unsigned char)s[i];
  size_t seq = c < 0x80 ? 1 : (size_t)utf8_sequence_length((const uint8_t*)s + i, n - i);
  *consumed = seq == 0 ? 1 : seq;
  if (c == '\\' || (quote != 0 && c == (unsigned char)quote) || c == '\n' || c == '\t' ||
      c == '\r') {
    esc[0] = '\\';
    esc[1] = c == '\n' ? 'n' : c == '\t' ? 't' : c == '\r' ? 'r' : (char)c;
    *len = 2;
    return esc;
  }
  if (seq == 0 || c < 0x20 || c == 0x7f) {
    *len = (size_t)snprintf(esc, 16, "\\x%02x", c);
    return esc;
  }
  if (seq > 1) {
    uint32_t cp = c & (0x7fu >> seq);
    for (size_t k = 1; k < seq; ++k) cp = (cp << 6) | ((unsigned char)s[i + k] & 0x3fu);
    if ((cp >= 0x80 && cp < 0xa0) || (cp >= 0x202a && cp <= 0x202e) ||
        (cp >= 0x2066 && cp <= 0x2069) || cp == 0x200e || cp == 0x200f || cp == 0x061c) {
      *len = (size_t)snprintf(esc, 16, "\\u%04x", (unsigned)cp);
      return esc;
    }
  }
  *len = seq;
  return s + i;
}

int sl_text_append_escaped(struct sl_text* out, const char* s, size_t n, char quote) {
  for (size_t i = 0; i < n;) {
    char esc[16];
    size_t len, consumed;
    const char* spelled = escape_next(s, n, i, quote, esc, &len, &consumed);
    SL_RETURN_NOT_OK(sl_text_append(out, spelled, len));
    i += consumed;
  }
  return 0;
}

const char* sl_escaped(const char* s, size_t n, char quote, char* buf, size_t cap) {
  char esc[16];
  size_t len, consumed, k = 0;
  for (size_t i = 0; i < n && k < cap; i += consumed) {
    escape_next(s, n, i, quote, esc, &len, &consumed);
    k += len;
  }
  size_t room = k < cap ? 1 : 4;  // for the NUL, and "..." when it is cut
  k = 0;
  for (size_t i = 0; i < n;) {
    const char* spelled = escape_next(s, n, i, quote, esc, &len, &consumed);
    if (k + len + room > cap) {
      memcpy(buf + k, "...", 3);
      k += 3;
      break;
    }
    memcpy(buf + k, spelled, len);
    k += len;
    i += consumed;
  }
  buf[k] = '\0';
  return buf;
}

int sl_plain_ascii(const char* s, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f) return 0;
  }
  return 1;
}

const char* sl_escaped_line(const char* s, char* buf, size_t cap) {
  size_t n = strlen(s);
  return sl_plain_ascii(s, n) ? s : sl_escaped(s, n, 0, buf, cap);
}

int sl_text_append_json_string(struct sl_text* out, const char* s, size_t n) {
  const uint8_t* p = (const uint8_t*)s;
  SL_RETURN_NOT_OK(sl_text_reserve(out, n + 2));
  SL_RETURN_NOT_OK(sl_text_append_char(out, '"'));
  size_t run = 0;  // start of the pending run of bytes copied verbatim
  for (size_t i = 0; i < n;) {
    uint8_t c = p[i];
    const char* esc = NULL;
    char buf[8];
    int len = 1;
    if (c == '"') esc = "\\\"";
    else if (c == '\\') esc = "\\\\";
    else if (c == '\n') esc = "\\n";
    else if (c == '\r') esc = "\\r";
    else if (c == '\t') esc = "\\t";
    else if (c < 0x20 || c == 0x7f) {
      snprintf(buf, sizeof buf, "\\u%04x", c);
      esc = buf;
    } else if (c >= 0x80) {
      len = utf8_sequence_length(p + i, n - i);
      if (len == 0) {
        snprintf(buf, sizeof buf, "\\u%04x", c);
        esc = buf;
        len = 1;
      }
    }
    if (esc != NULL) {
      SL_RETURN_NOT_OK(sl_text_append(out, s + run, i - run));
      SL_RETURN_NOT_OK(sl_text_append_str(out, esc));
      run = i + 1;
    }
    i += (size_t)len;
  }
  SL_RETURN_NOT_OK(sl_text_append(out, s + run, n - run));
  return sl_text_append_char(out, '"');
}

/* ---- Values ------------------------------------------------------------------- */

/// For unions: the child holding row `p` (physical) and its row in that child.
static int union_child(const struct sl_text_field* field, const struct ArrowArray* array,
                       int64_t p, int64_t* child, int64_t* child_row) {
  int dense = field->type.id == SL_TYPE_DENSE_UNION;
  // The C Data Interface has no validity buffer for unions; tolerate a
  // leading one from producers that keep the IPC layout.
  int64_t first = array->n_buffers - (dense ? 2 : 1);
  if (first < 0) return EINVAL;
  int8_t code = ((const int8_t*)array->buffers[first])[p];
  *child = -1;
  for (int64_t c = 0; c < field->n_children; ++c) {
    int64_t expect = field->type.n_type_codes > 0 ? field->type.type_codes[c] : c;
    if (expect == code) *child = c;
  }
  if (*child < 0 || *child >= array->n_children) return EINVAL;
  *child_row = dense ? ((const int32_t*)array->buffers[first + 1])[p] : p;
  return 0;
}

int sl_value_is_null(const struct sl_text_field* field, const struct ArrowArray* array,
                     int64_t i) {
  int64_t p = array->offset + i;
  enum sl_type_id id = field->type.id;
  if (id == SL_TYPE_NA) return 1;
  if (id == SL_TYPE_DENSE_UNION || id == SL_TYPE_SPARSE_UNION) {
    int64_t child, row;
    if (union_child(field, array, p, &child, &row) != 0) return 0;
    return sl_value_is_null(&field->children[child], array->children[child], row);
  }
  if (array->null_count != 0 && array->n_buffers > 0 && array->buffers[0] != NULL &&
      !sl_bit_get(array->buffers[0], p)) {
    return 1;
  }
  if (field->dictionary != NULL && array->dictionary != NULL) {
    int64_t index = sl_int_value(id, array->buffers[1], p);
    if (index < 0 || index >= array->dictionary->length) return 0;  // render reports it
    return sl_value_is_null(field->dictionary, array->dictionary, index);
  }
  return 0;
}

static int render_list(const struct sl_text_field* field, const struct ArrowArray* array,
                       int64_t p, struct sl_text* out, struct sluice_error* error) {
  int64_t begin, end;
  if (field->type.id == SL_TYPE_FIXED_SIZE_LIST) {
    begin = p * field->type.list_size;
    end = begin + field->type.list_size;
  } else if (field->type.id == SL_TYPE_LARGE_LIST) {
    begin = ((const int64_t*)array->buffers[1])[p];
    end = ((const int64_t*)array->buffers[1])[p + 1];
  } else {
    begin = ((const int32_t*)array->buffers[1])[p];
    end = ((const int32_t*)array->buffers[1])[p + 1];
  }
  const struct ArrowArray* child = array->children[0];
  const struct sl_text_field* child_field = &field->children[0];
  if (field->type.id == SL_TYPE_MAP) {
    if (child_field->n_children < 2 || child->n_children < 2) {
      return sl_error_set(error, EINVAL, "column '%s': map entries need a key and a value",
                          field->name);
    }
    // Entries are struct<key, value>; a JSON object needs string keys.
    const struct sl_text_field* key_field = &child_field->children[0];
    const struct sl_text_field* value_field = &child_field->children[1];
    const struct ArrowArray* keys = child->children[0];
    const struct ArrowArray* values = child->children[1];
    struct sl_text key;
    sl_text_init(&key, out->alloc);
    int rc = sl_text_append_char(out, '{');
    for (int64_t j = begin; j < end && rc == 0; ++j) {
      int64_t row = child->offset + j;
      if (j > begin) rc = sl_text_append_char(out, ',');
      sl_text_clear(&key);
      if (rc == 0) rc = sl_value_render(key_field, keys, row, SL_TEXT_PLAIN, &key, error);
      if (rc == 0) rc = sl_text_append_json_string(out, sl_text_cstr(&key), key.len);
      if (rc == 0) rc = sl_text_append_char(out, ':');
      if (rc == 0) rc = sl_value_render(value_field, values, row, SL_TEXT_JSON, out, error);
    }
    sl_text_reset(&key);
    if (rc == 0) rc = sl_text_append_char(out, '}');
    return rc;
  }
  SL_RETURN_NOT_OK(sl_text_append_char(out, '['));
  for (int64_t j = begin; j < end; ++j) {
    if (j > begin) SL_RETURN_NOT_OK(sl_text_append_char(out, ','));
    SL_RETURN_NOT_OK(sl_value_render(child_field, child, j, SL_TEXT_JSON, out, error));
  }
  return sl_text_append_char(out, ']');
}

static int render_struct(const struct sl_text_field* field, const struct ArrowArray* array,
                         int64_t p, struct sl_text* out, struct sluice_error* error) {
  if (array->n_children < field->n_children) {
    return sl_error_set(error, EINVAL, "column '%s': struct has %lld children, schema %lld",
                        field->name, (long long)array->n_children, (long long)field->n_children);
  }
  SL_RETURN_NOT_OK(sl_text_append_char(out, '{'));
  for (int64_t c = 0; c < field->n_children; ++c) {
    if (c > 0) SL_RETURN_NOT_OK(sl_text_append_char(out, ','));
    const char* name = field->children[c].name;
    SL_RETURN_NOT_OK(sl_text_append_json_string(out, name, strlen(name)));
    SL_RETURN_NOT_OK(sl_text_append_char(out, ':'));
    SL_RETURN_NOT_OK(
        sl_value_render(&field->children[c], array->children[c], p, SL_TEXT_JSON, out, error));
  }
  return sl_text_append_char(out, '}');
}

static int append_quoted_if_json(struct sl_text* out, const char* s, size_t n,
                                 enum sl_text_style style) {
  if (style == SL_TEXT_JSON) return sl_text_append_json_string(out, s, n);
  return sl_text_append(out, s, n);
}

/// Renders a value whose text never needs escaping; JSON gets it quoted when
/// it is not a JSON number.
static int append_scalar(struct sl_text* out, const char* s, int quote_in_json,
                         enum sl_text_style style) {
  if (style == SL_TEXT_JSON && quote_in_json) return sl_text_append_json_string(out, s, strlen(s));
  return sl_text_append_str(out, s);
}

int sl_text_append_binary(const struct sl_text_field* field, const uint8_t* bytes, int64_t n,
                          struct sl_text* out) {
  if (!field->uuid || n != 16) return sl_text_append_hex(out, bytes, n);
  static const int group_end[5] = {4, 6, 8, 10, 16};
  int rc = 0;
  for (int g = 0, at = 0; rc == 0 && g < 5; at = group_end[g++]) {
    if (g > 0) rc = sl_text_append_char(out, '-');
    if (rc == 0) rc = sl_text_append_hex(out, bytes + at, group_end[g] - at);
  }
  return rc;
}

int sl_value_render(const struct sl_text_field* field, const struct ArrowArray* array,
                    int64_t i, enum sl_text_style style, struct sl_text* out,
                    struct sluice_error* error) {
  const struct sl_type* type = &field->type;
  int64_t p = array->offset + i;
  const void* data = array->n_buffers > 1 ? array->buffers[1] : NULL;
  char buf[96];
  int rc = 0;
  if (style == SL_TEXT_JSON && sl_value_is_null(field, array, i)) {
    rc = sl_text_append(out, "null", 4);
    return rc != 0 ? sl_error_set(error, rc, "out of memory rendering a value") : 0;
  }
  if (field->dictionary != NULL) {
    if (array->dictionary == NULL) {
      return sl_error_set(error, EINVAL, "column '%s': dictionary missing", field->name);
    }
    int64_t index = sl_int_value(type->id, data, p);
    if (index < 0 || index >= array->dictionary->length) {
      return sl_error_set(error, EINVAL, "column '%s': dictionary index %lld out of range",
                          field->name, (long long)index);
    }
    return sl_value_render(field->dictionary, array->dictionary, index, style, out, error);
  }
  if (style == SL_TEXT_PLAIN && type->id == SL_TYPE_NA) return 0;
  switch (type->id) {
    case SL_TYPE_NA:
      rc = sl_text_append(out, "null", 4);
      break;
    case SL_TYPE_BOOL:
      rc = sl_text_append_str(out, sl_bit_get(data, p) ? "true" : "false");
      break;
    case SL_TYPE_INT8: case SL_TYPE_INT16: case SL_TYPE_INT32: case SL_TYPE_INT64:
    case SL_TYPE_UINT8: case SL_TYPE_UINT16: case SL_TYPE_UINT32:
      rc = sl_text_append(out, buf, sl_format_int64(sl_int_value(type->id, data, p), buf));
      break;
    case SL_TYPE_UINT64:
      rc = sl_text_append(out, buf, sl_format_uint64(((const uint64_t*)data)[p], buf));
      break;
    case SL_TYPE_HALF_FLOAT: case SL_TYPE_FLOAT: case SL_TYPE_DOUBLE: {
      double v;
      if (type->id == SL_TYPE_DOUBLE) {
        v = ((const double*)data)[p];
        sl_format_double(v, buf, sizeof buf);
      } else if (type->id == SL_TYPE_FLOAT) {
        v = ((const float*)data)[p];
        sl_format_float((float)v, buf, sizeof buf);
      } else {
        // As the float32 that holds it exactly, as pyarrow writes it: the
        // half's own shortest digits (6.55e+04 for 65504) read back as
        // another value in every reader, which parse floats and doubles.
        v = half_to_double(((const uint16_t*)data)[p]);
        sl_format_float((float)v, buf, sizeof buf);
      }
      if (style == SL_TEXT_JSON) {
        if (isfinite(v)) {
          sl_json_float_spelling(buf, strlen(buf));
        } else {
          snprintf(buf, sizeof buf, "null");
        }
      }
      rc = sl_text_append_str(out, buf);
      break;
    }
    case SL_TYPE_STRING: case SL_TYPE_BINARY: case SL_TYPE_LARGE_STRING:
    case SL_TYPE_LARGE_BINARY: case SL_TYPE_FIXED_SIZE_BINARY: {
      const uint8_t* bytes;
      int64_t n;
      if (type->id == SL_TYPE_FIXED_SIZE_BINARY) {
        n = type->byte_width;
        bytes = n == 0 ? (const uint8_t*)"" : (const uint8_t*)data + p * n;
      } else {
        int64_t start;
        if (type->id == SL_TYPE_LARGE_STRING || type->id == SL_TYPE_LARGE_BINARY) {
          const int64_t* offsets = data;
          start = offsets[p];
          n = offsets[p + 1] - offsets[p];
        } else {
          const int32_t* offsets = data;
          start = offsets[p];
          n = (int64_t)offsets[p + 1] - offsets[p];
        }
        // buffers[2] may be NULL when every value is empty: no pointer
        // arithmetic on it then.
        bytes = n == 0 ? (const uint8_t*)"" : (const uint8_t*)array->buffers[2] + start;
      }
      if (type->id == SL_TYPE_STRING || type->id == SL_TYPE_LARGE_STRING) {
        rc = append_quoted_if_json(out, (const char*)bytes, (size_t)n, style);
      } else {
        if (style == SL_TEXT_JSON) rc = sl_text_append_char(out, '"');
        if (rc == 0) rc = sl_text_append_binary(field, bytes, n, out);
        if (rc == 0 && style == SL_TEXT_JSON) rc = sl_text_append_char(out, '"');
      }
      break;
    }
    case SL_TYPE_DECIMAL128: case SL_TYPE_DECIMAL256: {
      int width = type->id == SL_TYPE_DECIMAL128 ? 16 : 32;
      // Decimals are JSON numbers: exact digits, no float rounding.
      rc = sl_text_append_decimal(out, (const uint8_t*)data + p * width, width, type->scale);
      break;
    }
    case SL_TYPE_DATE32: case SL_TYPE_DATE64: {
      struct sl_text tmp;
      int64_t days = type->id == SL_TYPE_DATE32 ? ((const int32_t*)data)[p]
                                                : sl_floor_div(((const int64_t*)data)[p], 86400000);
      sl_text_init(&tmp, out->alloc);
      rc = append_date(&tmp, days);
      if (rc == 0) rc = append_scalar(out, sl_text_cstr(&tmp), 1, style);
      sl_text_reset(&tmp);
      break;
    }
    case SL_TYPE_TIME32: case SL_TYPE_TIME64: case SL_TYPE_TIMESTAMP: {
      struct sl_text tmp;
      sl_text_init(&tmp, out->alloc);
      if (type->id == SL_TYPE_TIMESTAMP) {
        rc = append_timestamp(&tmp, ((const int64_t*)data)[p], type, field->tz);
      } else {
        int64_t v = type->id == SL_TYPE_TIME32 ? ((const int32_t*)data)[p]
                                               : ((const int64_t*)data)[p];
        // Arrow wants 0 <= v < one day, but writers produce 24:00:00 and
        // worse; wrapping would print a wrong value, so spell it as it is.
        if (v == INT64_MIN) {
          char raw[32];
          int n = snprintf(raw, sizeof raw, "%" PRId64, v);
          rc = sl_text_append(&tmp, raw, (size_t)n);
        } else {
          if (v < 0) rc = sl_text_append(&tmp, "-", 1);
          if (rc == 0) rc = append_time_of_day(&tmp, v < 0 ? -v : v, type->unit);
        }
      }
      if (rc == 0) rc = append_scalar(out, sl_text_cstr(&tmp), 1, style);
      sl_text_reset(&tmp);
      break;
    }
    case SL_TYPE_DURATION:
      // The count of units (the unit is in the type), as Arrow's CSV writer.
      rc = sl_text_append(out, buf, sl_format_int64(((const int64_t*)data)[p], buf));
      break;
    case SL_TYPE_INTERVAL_MONTHS:
      snprintf(buf, sizeof buf, "%" PRId32 "M", ((const int32_t*)data)[p]);
      rc = append_scalar(out, buf, 1, style);
      break;
    case SL_TYPE_INTERVAL_DAY_TIME: {
      int32_t v[2];
      memcpy(v, (const uint8_t*)data + p * 8, 8);
      snprintf(buf, sizeof buf, "%" PRId32 "d%" PRId32 "ms", v[0], v[1]);
      rc = append_scalar(out, buf, 1, style);
      break;
    }
    case SL_TYPE_INTERVAL_MONTH_DAY_NANO: {
      int32_t md[2];
      int64_t ns;
      memcpy(md, (const uint8_t*)data + p * 16, 8);
      memcpy(&ns, (const uint8_t*)data + p * 16 + 8, 8);
      snprintf(buf, sizeof buf, "%" PRId32 "M%" PRId32 "d%" PRId64 "ns", md[0], md[1], ns);
      rc = append_scalar(out, buf, 1, style);
      break;
    }
    case SL_TYPE_LIST: case SL_TYPE_LARGE_LIST: case SL_TYPE_FIXED_SIZE_LIST: case SL_TYPE_MAP:
      if (field->n_children < 1 || array->n_children < 1) {
        return sl_error_set(error, EINVAL, "column '%s': list without child", field->name);
      }
      rc = render_list(field, array, p, out, error);
      break;
    case SL_TYPE_STRUCT:
      rc = render_struct(field, array, p, out, error);
      break;
    case SL_TYPE_DENSE_UNION: case SL_TYPE_SPARSE_UNION: {
      int64_t child, row;
      if (union_child(field, array, p, &child, &row) != 0) {
        return sl_error_set(error, EINVAL, "column '%s': bad union type id", field->name);
      }
      // `row` is already physical for the child's parent frame; the child's
      // own offset is added by the recursive call.
      if (style == SL_TEXT_PLAIN && sl_value_is_null(&field->children[child],
                                                     array->children[child], row)) {
        return 0;
      }
      return sl_value_render(&field->children[child], array->children[child], row, style, out,
                             error);
    }
    default:
      return sl_error_set(error, ENOTSUP, "column '%s': cannot render type", field->name);
  }
  // Text appends fail only for memory; a nested value's other errors (a
  // map without keys, a bad union type id) say their own reason.
  if (rc == ENOMEM) return sl_error_set(error, rc, "out of memory rendering a value");
  return rc;
}

/* ---- Percent escapes -------------------------------------------------------- */

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// The byte a %XX escape at s[i] (within s[0, n)) stands for, or -1 when
/// there is none there (with keep_nul, %00 stays as written: names are C
/// strings).
static int escaped_byte(const char* s, size_t n, size_t i, int keep_nul) {
  if (s[i] != '%' || i + 2 >= n) return -1;
  int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
  return hi < 0 || lo < 0 || (keep_nul && hi + lo == 0) ? -1 : hi * 16 + lo;
}

static char* percent_decoded(const char* s, size_t n, const struct sluice_allocator* alloc,
                             int keep_nul, size_t* decoded) {
  size_t len = 0;
  for (size_t i = 0; i < n; ++i, ++len) i += escaped_byte(s, n, i, keep_nul) >= 0 ? 2 : 0;
  char* out = sl_alloc(alloc, len + 1);
  if (out == NULL) return NULL;
  size_t w = 0;
  for (size_t i = 0; i < n; ++i) {
    int b = escaped_byte(s, n, i, keep_nul);
    out[w++] = b >= 0 ? (char)b : s[i];
    i += b >= 0 ? 2 : 0;
  }
  out[w] = '\0';
  if (decoded != NULL) *decoded = w;
  return out;
}

char* sl_percent_decoded(const char* s, size_t n, const struct sluice_allocator* alloc) {
  return percent_decoded(s, n, alloc, 1, NULL);
}

char* sl_percent_decoded_bytes(const char* s, size_t n, const struct sluice_allocator* alloc,
                               size_t* decoded) {
  return percent_decoded(s, n, alloc, 0, decoded);
}
