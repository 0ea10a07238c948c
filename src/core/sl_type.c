#include "sl_type.h"

#include <stdio.h>
#include <string.h>

#include "sl_error.h"

// Parses a non-negative decimal integer that fits int32; advances *p.
static int parse_int32(const char** p, int32_t* out) {
  const char* s = *p;
  int64_t v = 0;
  if (*s < '0' || *s > '9') return -1;
  while (*s >= '0' && *s <= '9') {
    v = v * 10 + (*s - '0');
    if (v > INT32_MAX) return -1;
    ++s;
  }
  *p = s;
  *out = (int32_t)v;
  return 0;
}

static int bad_format(const char* format, struct sluice_error* error) {
  return sl_error_set(error, EINVAL, "unknown or malformed Arrow format string '%.64s'",
                      format);
}

static int parse_unit(char c, enum sl_time_unit* unit) {
  switch (c) {
    case 's': *unit = SL_SECOND; return 0;
    case 'm': *unit = SL_MILLI; return 0;
    case 'u': *unit = SL_MICRO; return 0;
    case 'n': *unit = SL_NANO; return 0;
    default: return -1;
  }
}

static int parse_single(char c, enum sl_type_id* id) {
  static const struct {
    char c;
    enum sl_type_id id;
  } table[] = {
      {'n', SL_TYPE_NA},         {'b', SL_TYPE_BOOL},         {'c', SL_TYPE_INT8},
      {'C', SL_TYPE_UINT8},      {'s', SL_TYPE_INT16},        {'S', SL_TYPE_UINT16},
      {'i', SL_TYPE_INT32},      {'I', SL_TYPE_UINT32},       {'l', SL_TYPE_INT64},
      {'L', SL_TYPE_UINT64},     {'e', SL_TYPE_HALF_FLOAT},   {'f', SL_TYPE_FLOAT},
      {'g', SL_TYPE_DOUBLE},     {'z', SL_TYPE_BINARY},       {'Z', SL_TYPE_LARGE_BINARY},
      {'u', SL_TYPE_STRING},     {'U', SL_TYPE_LARGE_STRING},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i) {
    if (table[i].c == c) {
      *id = table[i].id;
      return 0;
    }
  }
  return -1;
}

static int parse_temporal(const char* format, struct sl_type* out, struct sluice_error* error) {
  const char* f = format + 1;  // after 't'
  switch (f[0]) {
    case 'd':
      if (strcmp(f, "dD") == 0) out->id = SL_TYPE_DATE32;
      else if (strcmp(f, "dm") == 0) out->id = SL_TYPE_DATE64;
      else return bad_format(format, error);
      out->unit = f[1] == 'D' ? SL_SECOND : SL_MILLI;
      return 0;
    case 't':
      if (f[2] != '\0' || parse_unit(f[1], &out->unit) != 0) return bad_format(format, error);
      out->id = (out->unit == SL_SECOND || out->unit == SL_MILLI) ? SL_TYPE_TIME32 : SL_TYPE_TIME64;
      return 0;
    case 's':
      if (parse_unit(f[1], &out->unit) != 0 || f[2] != ':') return bad_format(format, error);
      out->id = SL_TYPE_TIMESTAMP;
      out->timezone = f + 3;
      return 0;
    case 'D':
      if (f[2] != '\0' || parse_unit(f[1], &out->unit) != 0) return bad_format(format, error);
      out->id = SL_TYPE_DURATION;
      return 0;
    case 'i':
      if (strcmp(f, "iM") == 0) out->id = SL_TYPE_INTERVAL_MONTHS;
      else if (strcmp(f, "iD") == 0) out->id = SL_TYPE_INTERVAL_DAY_TIME;
      else if (strcmp(f, "in") == 0) out->id = SL_TYPE_INTERVAL_MONTH_DAY_NANO;
      else return bad_format(format, error);
      return 0;
    default:
      return bad_format(format, error);
  }
}

/// pyarrow's name of an Arrow type sluice does not take, or NULL: messages
/// still name them so.
static const char* unsupported_name(const char* format) {
  static const struct {
    const char* format;
    const char* name;
  } k_unsupported[] = {{"vu", "string_view"},    {"vz", "binary_view"},
                       {"+vl", "list_view"},     {"+vL", "large_list_view"},
                       {"+r", "run_end_encoded"}};
  for (size_t i = 0; i < sizeof k_unsupported / sizeof k_unsupported[0]; ++i)
    if (strcmp(format, k_unsupported[i].format) == 0) return k_unsupported[i].name;
  return NULL;
}

static int parse_union(const char* format, struct sl_type* out, struct sluice_error* error) {
  // "+ud:" / "+us:" then a possibly empty comma-separated list of codes.
  const char* p = format + 4;
  out->id = format[2] == 'd' ? SL_TYPE_DENSE_UNION : SL_TYPE_SPARSE_UNION;
  out->n_type_codes = 0;
  if (*p == '\0') return 0;
  for (;;) {
    int32_t code;
    if (parse_int32(&p, &code) != 0 || code > 127 || out->n_type_codes >= 128) {
      return bad_format(format, error);
    }
    for (int32_t i = 0; i < out->n_type_codes; ++i) {
      if (out->type_codes[i] == (int8_t)code) {
        return sl_error_set(error, EINVAL, "union format '%.64s' repeats type code %d", format,
                            (int)code);
      }
    }
    out->type_codes[out->n_type_codes++] = (int8_t)code;
    if (*p == '\0') return 0;
    if (*p != ',') return bad_format(format, error);
    ++p;
  }
}

static int parse_nested(const char* format, struct sl_type* out, struct sluice_error* error) {
  const char* f = format + 1;  // after '+'
  if (strcmp(f, "l") == 0) out->id = SL_TYPE_LIST;
  else if (strcmp(f, "L") == 0) out->id = SL_TYPE_LARGE_LIST;
  else if (strcmp(f, "s") == 0) out->id = SL_TYPE_STRUCT;
  else if (strcmp(f, "m") == 0) out->id = SL_TYPE_MAP;
  else if (f[0] == 'w' && f[1] == ':') {
    const char* p = f + 2;
    if (parse_int32(&p, &out->list_size) != 0 || *p != '\0') return bad_format(format, error);
    out->id = SL_TYPE_FIXED_SIZE_LIST;
  } else if (f[0] == 'u' && (f[1] == 'd' || f[1] == 's') && f[2] == ':') {
    return parse_union(format, out, error);
  } else if (strcmp(f, "vl") == 0 || strcmp(f, "vL") == 0 || strcmp(f, "r") == 0) {
    return sl_error_set(error, ENOTSUP, "Arrow type %s ('%s') is not supported",
                        unsupported_name(format), format);
  } else {
    return bad_format(format, error);
  }
  return 0;
}

int sl_type_parse(const char* format, struct sl_type* out, struct sluice_error* error) {
  memset(out, 0, sizeof *out);
  out->timezone = "";
  if (format == NULL || format[0] == '\0') {
    return sl_error_set(error, EINVAL, "missing Arrow format string");
  }
  if (format[1] == '\0') {
    if (parse_single(format[0], &out->id) != 0) return bad_format(format, error);
    return 0;
  }
  switch (format[0]) {
    case 'v':
      if (strcmp(format, "vz") == 0 || strcmp(format, "vu") == 0) {
        return sl_error_set(error, ENOTSUP, "Arrow type %s ('%s') is not supported",
                            unsupported_name(format), format);
      }
      return bad_format(format, error);
    case 'w': {
      const char* p = format + 1;
      // Width 0 is legal (Arrow accepts fixed_size_binary(0)).
      if (*p++ != ':' || parse_int32(&p, &out->byte_width) != 0 || *p != '\0') {
        return bad_format(format, error);
      }
      out->id = SL_TYPE_FIXED_SIZE_BINARY;
      return 0;
    }
    case 'd': {
      const char* p = format + 1;
      int32_t bits = 128;
      if (*p++ != ':' || parse_int32(&p, &out->precision) != 0 || *p++ != ',') {
        return bad_format(format, error);
      }
      int negative = *p == '-';
      if (negative) ++p;
      if (parse_int32(&p, &out->scale) != 0) return bad_format(format, error);
      if (negative) out->scale = -out->scale;
      if (*p == ',') {
        ++p;
        if (parse_int32(&p, &bits) != 0) return bad_format(format, error);
      }
      if (*p != '\0') return bad_format(format, error);
      if (bits == 128) out->id = SL_TYPE_DECIMAL128;
      else if (bits == 256) out->id = SL_TYPE_DECIMAL256;
      else if (bits == 32 || bits == 64) {
        return sl_error_set(error, ENOTSUP, "Arrow type decimal%d ('%.64s') is not supported",
                            (int)bits, format);
      } else {
        return bad_format(format, error);
      }
      if (out->precision < 1 || out->precision > (bits == 128 ? 38 : 76)) {
        return sl_error_set(error, EINVAL, "decimal precision %d out of range in '%.64s'",
                            (int)out->precision, format);
      }
      out->byte_width = bits / 8;
      return 0;
    }
    case 't':
      return parse_temporal(format, out, error);
    case '+':
      return parse_nested(format, out, error);
    default:
      return bad_format(format, error);
  }
}

int sl_type_n_buffers(enum sl_type_id id) {
  switch (id) {
    case SL_TYPE_NA:
      return 0;
    case SL_TYPE_BINARY: case SL_TYPE_LARGE_BINARY:
    case SL_TYPE_STRING: case SL_TYPE_LARGE_STRING:
      return 3;
    case SL_TYPE_FIXED_SIZE_LIST: case SL_TYPE_STRUCT:
    case SL_TYPE_SPARSE_UNION:  // type ids only: unions have no validity bitmap
      return 1;
    case SL_TYPE_DENSE_UNION:   // type ids + offsets
      return 2;
    default:
      return 2;
  }
}

int sl_type_buffers_ok(enum sl_type_id id, int64_t n) {
  return n == sl_type_n_buffers(id) || (id == SL_TYPE_NA && n == 1);
}

int64_t sl_type_bit_width(const struct sl_type* type) {
  switch (type->id) {
    case SL_TYPE_BOOL: return 1;
    case SL_TYPE_INT8: case SL_TYPE_UINT8: return 8;
    case SL_TYPE_INT16: case SL_TYPE_UINT16: case SL_TYPE_HALF_FLOAT: return 16;
    case SL_TYPE_INT32: case SL_TYPE_UINT32: case SL_TYPE_FLOAT: case SL_TYPE_DATE32:
    case SL_TYPE_TIME32: case SL_TYPE_INTERVAL_MONTHS:
      return 32;
    case SL_TYPE_INT64: case SL_TYPE_UINT64: case SL_TYPE_DOUBLE: case SL_TYPE_DATE64:
    case SL_TYPE_TIME64: case SL_TYPE_TIMESTAMP: case SL_TYPE_DURATION:
    case SL_TYPE_INTERVAL_DAY_TIME:
      return 64;
    case SL_TYPE_INTERVAL_MONTH_DAY_NANO: return 128;
    case SL_TYPE_FIXED_SIZE_BINARY: case SL_TYPE_DECIMAL128: case SL_TYPE_DECIMAL256:
      return (int64_t)type->byte_width * 8;
    default:
      return 0;
  }
}

static const char* unit_name(enum sl_time_unit unit) {
  static const char* const names[] = {"s", "ms", "us", "ns"};
  return (unsigned)unit < 4 ? names[unit] : "?";
}

static void write_format_name(const char* format, char* out, size_t cap) {
  struct sl_type type;
  if (sl_type_parse(format, &type, NULL) == 0) {
    sl_type_name(&type, out, cap);
    return;
  }
  const char* name = unsupported_name(format);
  if (name != NULL) {
    snprintf(out, cap, "%s", name);
    return;
  }
  int precision, scale, bits, end = 0;
  if (sscanf(format, "d:%d,%d,%d%n", &precision, &scale, &bits, &end) == 3 &&
      format[end] == '\0' && (bits == 32 || bits == 64)) {
    snprintf(out, cap, "decimal%d(%d, %d)", bits, precision, scale);
    return;
  }
  snprintf(out, cap, "%s", format);
}

void sluice_type_name(const char* format, char* out, size_t cap) {
  if (out == NULL || cap == 0) return;
  if (format == NULL) {  // (a public entry: strcmp on NULL crashed)
    snprintf(out, cap, "(null)");
    return;
  }
  sl_format_name(format, out, cap);
}

static void write_type_name(const struct sl_type* type, char* out, size_t cap) {
  static const char* const simple[SL_TYPE_COUNT] = {
      [SL_TYPE_NA] = "null", [SL_TYPE_BOOL] = "bool",
      [SL_TYPE_INT8] = "int8", [SL_TYPE_UINT8] = "uint8",
      [SL_TYPE_INT16] = "int16", [SL_TYPE_UINT16] = "uint16",
      [SL_TYPE_INT32] = "int32", [SL_TYPE_UINT32] = "uint32",
      [SL_TYPE_INT64] = "int64", [SL_TYPE_UINT64] = "uint64",
      [SL_TYPE_HALF_FLOAT] = "halffloat", [SL_TYPE_FLOAT] = "float",
      [SL_TYPE_DOUBLE] = "double", [SL_TYPE_BINARY] = "binary",
      [SL_TYPE_LARGE_BINARY] = "large_binary", [SL_TYPE_STRING] = "string",
      [SL_TYPE_LARGE_STRING] = "large_string", [SL_TYPE_DATE32] = "date32[day]",
      [SL_TYPE_DATE64] = "date64[ms]", [SL_TYPE_INTERVAL_MONTHS] = "month_interval",
      [SL_TYPE_INTERVAL_DAY_TIME] = "day_time_interval",
      [SL_TYPE_INTERVAL_MONTH_DAY_NANO] = "month_day_nano_interval",
      [SL_TYPE_LIST] = "list", [SL_TYPE_LARGE_LIST] = "large_list",
      [SL_TYPE_STRUCT] = "struct", [SL_TYPE_MAP] = "map",
      [SL_TYPE_DENSE_UNION] = "dense_union", [SL_TYPE_SPARSE_UNION] = "sparse_union",
  };
  if (cap == 0) return;
  switch (type->id) {
    case SL_TYPE_FIXED_SIZE_BINARY:
      snprintf(out, cap, "fixed_size_binary[%d]", (int)type->byte_width);
      return;
    case SL_TYPE_DECIMAL128: case SL_TYPE_DECIMAL256:
      snprintf(out, cap, "decimal%d(%d, %d)", type->id == SL_TYPE_DECIMAL128 ? 128 : 256,
               (int)type->precision, (int)type->scale);
      return;
    case SL_TYPE_TIME32: snprintf(out, cap, "time32[%s]", unit_name(type->unit)); return;
    case SL_TYPE_TIME64: snprintf(out, cap, "time64[%s]", unit_name(type->unit)); return;
    case SL_TYPE_DURATION: snprintf(out, cap, "duration[%s]", unit_name(type->unit)); return;
    case SL_TYPE_TIMESTAMP:
      if (type->timezone != NULL && type->timezone[0] != '\0') {
        snprintf(out, cap, "timestamp[%s, tz=%s]", unit_name(type->unit), type->timezone);
      } else {
        snprintf(out, cap, "timestamp[%s]", unit_name(type->unit));
      }
      return;
    case SL_TYPE_FIXED_SIZE_LIST:
      snprintf(out, cap, "fixed_size_list[%d]", (int)type->list_size);
      return;
    default: {
      const char* name = (unsigned)type->id < SL_TYPE_COUNT ? simple[type->id] : NULL;
      snprintf(out, cap, "%s", name != NULL ? name : "unknown");
      return;
    }
  }
}

void sl_type_format(const struct sl_type* type, char* out, size_t cap) {
  static const char* const simple[SL_TYPE_COUNT] = {
      [SL_TYPE_NA] = "n", [SL_TYPE_BOOL] = "b", [SL_TYPE_INT8] = "c", [SL_TYPE_UINT8] = "C",
      [SL_TYPE_INT16] = "s", [SL_TYPE_UINT16] = "S", [SL_TYPE_INT32] = "i",
      [SL_TYPE_UINT32] = "I", [SL_TYPE_INT64] = "l", [SL_TYPE_UINT64] = "L",
      [SL_TYPE_HALF_FLOAT] = "e", [SL_TYPE_FLOAT] = "f", [SL_TYPE_DOUBLE] = "g",
      [SL_TYPE_BINARY] = "z", [SL_TYPE_LARGE_BINARY] = "Z", [SL_TYPE_STRING] = "u",
      [SL_TYPE_LARGE_STRING] = "U", [SL_TYPE_DATE32] = "tdD", [SL_TYPE_DATE64] = "tdm",
      [SL_TYPE_INTERVAL_MONTHS] = "tiM", [SL_TYPE_INTERVAL_DAY_TIME] = "tiD",
      [SL_TYPE_INTERVAL_MONTH_DAY_NANO] = "tin", [SL_TYPE_LIST] = "+l",
      [SL_TYPE_LARGE_LIST] = "+L", [SL_TYPE_STRUCT] = "+s", [SL_TYPE_MAP] = "+m",
  };
  static const char units[] = "smun";
  if (cap == 0) return;
  char u = (unsigned)type->unit < 4 ? units[type->unit] : '?';
  switch (type->id) {
    case SL_TYPE_FIXED_SIZE_BINARY: snprintf(out, cap, "w:%d", (int)type->byte_width); return;
    case SL_TYPE_DECIMAL128:
      snprintf(out, cap, "d:%d,%d", (int)type->precision, (int)type->scale);
      return;
    case SL_TYPE_DECIMAL256:
      snprintf(out, cap, "d:%d,%d,256", (int)type->precision, (int)type->scale);
      return;
    case SL_TYPE_TIME32: case SL_TYPE_TIME64: snprintf(out, cap, "tt%c", u); return;
    case SL_TYPE_DURATION: snprintf(out, cap, "tD%c", u); return;
    case SL_TYPE_TIMESTAMP:
      snprintf(out, cap, "ts%c:%s", u, type->timezone != NULL ? type->timezone : "");
      return;
    case SL_TYPE_FIXED_SIZE_LIST: snprintf(out, cap, "+w:%d", (int)type->list_size); return;
    case SL_TYPE_DENSE_UNION: case SL_TYPE_SPARSE_UNION: {
      size_t n = (size_t)snprintf(out, cap, "+u%c:", type->id == SL_TYPE_DENSE_UNION ? 'd' : 's');
      for (int32_t i = 0; i < type->n_type_codes && n < cap; ++i) {
        n += (size_t)snprintf(out + n, cap - n, "%s%d", i > 0 ? "," : "", (int)type->type_codes[i]);
      }
      return;
    }
    default: {
      const char* f = (unsigned)type->id < SL_TYPE_COUNT ? simple[type->id] : NULL;
      snprintf(out, cap, "%s", f != NULL ? f : "");
      return;
    }
  }
}

const char* sl_type_name(const struct sl_type* type, char* out, size_t cap) {
  write_type_name(type, out, cap);
  return out;
}

const char* sl_format_name(const char* format, char* out, size_t cap) {
  write_format_name(format, out, cap);
  return out;
}
