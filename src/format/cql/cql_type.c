// CQL types: see cql_type.h. The mapping to Arrow (README, "Cassandra"):
// text/ascii utf8, bigint/counter int64, int int32, smallint int16, tinyint
// int8, boolean bool, float/double float32/64, timestamp timestamp[ms, UTC],
// date date32, time time64[ns], uuid/timeuuid fixed_size_binary(16) as
// arrow.uuid, blob binary, inet utf8 (the address as text), varint
// decimal128(38, 0), decimal utf8 (every value has its own scale, which no
// Arrow decimal column can hold), duration month_day_nano_interval,
// list/set list, map map, UDT and tuple struct, vector<float|double|int|
// bigint, n> fixed_size_list; other custom types binary (their bytes).
#include "cql_type.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "../../core/sl_endian.h"
#include "../../core/sl_alloc.h"
#include "../../core/sl_decimal.h"
#include "../../core/sl_array.h"
#include "../../core/sl_error.h"

/// Deeper nesting than this in a type is refused (a stack guard; real
/// schemas nest a few levels).
#define CQL_MAX_DEPTH 32

static const char k_vector_prefix[] = "org.apache.cassandra.db.marshal.VectorType(";
static const char k_duration_class[] = "org.apache.cassandra.db.marshal.DurationType";

static char* copy_name(const char* s, size_t n, const struct sluice_allocator* alloc) {
  return sl_strndup(alloc, s != NULL ? s : "", s != NULL ? n : 0);
}

void sl_cql_type_free(struct cql_type* t, const struct sluice_allocator* alloc) {
  if (t == NULL) return;
  for (int i = 0; i < t->n_children; ++i) sl_cql_type_free(&t->children[i], alloc);
  if (t->children != NULL) {
    sl_free(alloc, t->children, (size_t)(t->n_children > 0 ? t->n_children : 1) * sizeof *t->children);
  }
  if (t->name != NULL) sl_free(alloc, t->name, strlen(t->name) + 1);
  if (t->custom != NULL) sl_free(alloc, t->custom, strlen(t->custom) + 1);
  memset(t, 0, sizeof *t);
}

static int alloc_children(struct cql_type* t, int n, const struct sluice_allocator* alloc) {
  t->children = sl_calloc(alloc, (size_t)(n > 0 ? n : 1), sizeof *t->children);
  if (t->children == NULL) return ENOMEM;
  t->n_children = n;
  return 0;
}

/// A VectorType class name: "...VectorType(<element class>, <n>)". Fixed-width
/// elements become a vector; anything else stays a custom (binary) type.
static int vector_of(struct cql_type* t, const struct sluice_allocator* alloc) {
  const char* s = t->custom;
  size_t k = sizeof k_vector_prefix - 1;
  if (strncmp(s, k_vector_prefix, k) != 0) return 0;
  const char* comma = strrchr(s, ',');
  size_t len = strlen(s);
  if (comma == NULL || s[len - 1] != ')') return 0;
  static const struct {
    const char* cls;
    int id;
  } elements[] = {{"org.apache.cassandra.db.marshal.FloatType", CQL_FLOAT},
                  {"org.apache.cassandra.db.marshal.DoubleType", CQL_DOUBLE},
                  {"org.apache.cassandra.db.marshal.Int32Type", CQL_INT},
                  {"org.apache.cassandra.db.marshal.LongType", CQL_BIGINT}};
  // "...VectorType(org.apache.cassandra.db.marshal.FloatType , 3)"
  const char* cls_end = comma;
  while (cls_end > s + k && cls_end[-1] == ' ') --cls_end;
  int element = -1;
  for (size_t i = 0; i < sizeof elements / sizeof elements[0]; ++i) {
    size_t n = strlen(elements[i].cls);
    if ((size_t)(cls_end - s) == k + n && strncmp(s + k, elements[i].cls, n) == 0) {
      element = elements[i].id;
    }
  }
  char* end = NULL;
  long dim = strtol(comma + 1, &end, 10);
  if (element < 0 || end != s + len - 1 || dim < 1 || dim > (1 << 20)) return 0;
  if (alloc_children(t, 1, alloc) != 0) return ENOMEM;
  t->children[0].id = element;
  t->children[0].name = copy_name("item", 4, alloc);
  if (t->children[0].name == NULL) return ENOMEM;
  t->id = CQL_VECTOR;
  t->dimension = (int32_t)dim;
  return 0;
}

static int read_type(struct sl_cql_cursor* c, const char* name, size_t name_len,
                     const struct sluice_allocator* alloc, struct cql_type* out, int depth) {
  memset(out, 0, sizeof *out);
  if (depth > CQL_MAX_DEPTH) return -1;
  uint16_t id;
  if (sl_cql_read_short(c, &id) != 0) return -1;
  out->id = id;
  out->name = copy_name(name, name_len, alloc);
  if (out->name == NULL) return ENOMEM;
  int rc = 0;
  const uint8_t* s;
  size_t n;
  switch (id) {
    case CQL_CUSTOM:
      if (sl_cql_read_string(c, &s, &n) != 0) return -1;
      out->custom = sl_strndup(alloc, (const char*)s, n);
      if (out->custom == NULL) return ENOMEM;
      if (strcmp(out->custom, k_duration_class) == 0) out->id = CQL_DURATION;
      return vector_of(out, alloc);
    case CQL_LIST: case CQL_SET:
      if ((rc = alloc_children(out, 1, alloc)) != 0) return rc;
      return read_type(c, "item", 4, alloc, &out->children[0], depth + 1);
    case CQL_MAP:
      if ((rc = alloc_children(out, 2, alloc)) != 0) return rc;
      rc = read_type(c, "key", 3, alloc, &out->children[0], depth + 1);
      return rc != 0 ? rc : read_type(c, "value", 5, alloc, &out->children[1], depth + 1);
    case CQL_UDT: {
      uint16_t fields;
      if (sl_cql_read_string(c, &s, &n) != 0 || sl_cql_read_string(c, &s, &n) != 0 ||
          sl_cql_read_short(c, &fields) != 0) {
        return -1;
      }
      if ((rc = alloc_children(out, fields, alloc)) != 0) return rc;
      for (int i = 0; rc == 0 && i < fields; ++i) {
        rc = sl_cql_read_string(c, &s, &n) != 0
                 ? -1
                 : read_type(c, (const char*)s, n, alloc, &out->children[i], depth + 1);
      }
      return rc;
    }
    case CQL_TUPLE: {
      uint16_t items;
      if (sl_cql_read_short(c, &items) != 0) return -1;
      if ((rc = alloc_children(out, items, alloc)) != 0) return rc;
      for (int i = 0; rc == 0 && i < items; ++i) {
        char field[16];
        int len = snprintf(field, sizeof field, "f%d", i);
        rc = read_type(c, field, (size_t)len, alloc, &out->children[i], depth + 1);
      }
      return rc;
    }
    case CQL_ASCII: case CQL_BIGINT: case CQL_BLOB: case CQL_BOOLEAN: case CQL_COUNTER:
    case CQL_DECIMAL: case CQL_DOUBLE: case CQL_FLOAT: case CQL_INT: case CQL_TIMESTAMP:
    case CQL_UUID: case CQL_VARCHAR: case CQL_VARINT: case CQL_TIMEUUID: case CQL_INET:
    case CQL_DATE: case CQL_TIME: case CQL_SMALLINT: case CQL_TINYINT: case CQL_DURATION:
      return 0;
    default:
      return -1;  // an id this protocol version does not define
  }
}

int sl_cql_type_read(struct sl_cql_cursor* c, const char* name, size_t name_len,
                  const struct sluice_allocator* alloc, struct cql_type* out) {
  int rc = read_type(c, name, name_len, alloc, out, 0);
  if (rc != 0) sl_cql_type_free(out, alloc);
  return rc;
}

/* ---- Arrow types --------------------------------------------------------------- */

static const char* leaf_format(int id) {
  switch (id) {
    case CQL_ASCII: case CQL_VARCHAR: case CQL_INET: case CQL_DECIMAL: return "u";
    case CQL_BIGINT: case CQL_COUNTER: return "l";
    case CQL_INT: return "i";
    case CQL_SMALLINT: return "s";
    case CQL_TINYINT: return "c";
    case CQL_BOOLEAN: return "b";
    case CQL_FLOAT: return "f";
    case CQL_DOUBLE: return "g";
    case CQL_TIMESTAMP: return "tsm:UTC";
    case CQL_DATE: return "tdD";
    case CQL_TIME: return "ttn";
    case CQL_UUID: case CQL_TIMEUUID: return "w:16";
    case CQL_VARINT: return "d:38,0";
    case CQL_DURATION: return "tin";
    default: return "z";  // blob and custom types: their bytes
  }
}

int sl_cql_type_arrow_schema(const struct cql_type* t, const struct sluice_allocator* alloc,
                          struct ArrowSchema* out, struct sluice_error* error) {
  char vector[32];
  const char* format;
  int64_t children = 0;
  switch (t->id) {
    case CQL_LIST: case CQL_SET: format = "+l", children = 1; break;
    case CQL_MAP: format = "+m", children = 1; break;
    case CQL_UDT: case CQL_TUPLE: format = "+s", children = t->n_children; break;
    case CQL_VECTOR:
      snprintf(vector, sizeof vector, "+w:%d", (int)t->dimension);
      format = vector, children = 1;
      break;
    default: format = leaf_format(t->id); break;
  }
  SL_RETURN_NOT_OK(sl_schema_init(out, alloc, format, t->name, ARROW_FLAG_NULLABLE, children,
                                  error));
  int rc = 0;
  if (t->id == CQL_UUID || t->id == CQL_TIMEUUID) rc = sl_schema_set_extension(out, "arrow.uuid", error);
  if (rc == 0 && t->id == CQL_MAP) {
    // entries: struct<key (not null), value>
    struct ArrowSchema* entries = out->children[0];
    rc = sl_schema_init(entries, alloc, "+s", "entries", 0, 2, error);
    if (rc == 0) rc = sl_cql_type_arrow_schema(&t->children[0], alloc, entries->children[0], error);
    if (rc == 0) entries->children[0]->flags &= ~ARROW_FLAG_NULLABLE;
    if (rc == 0) rc = sl_cql_type_arrow_schema(&t->children[1], alloc, entries->children[1], error);
  } else {
    for (int64_t i = 0; rc == 0 && i < children; ++i) {
      rc = sl_cql_type_arrow_schema(&t->children[i], alloc, out->children[i], error);
    }
  }
  if (rc != 0) out->release(out);
  return rc;
}

/* ---- Values ---------------------------------------------------------------------- */

/// Cassandra's unsigned vint (VIntCoding): the first byte's leading ones
/// count the bytes that follow. -1 when it runs past `end`.
static int read_vint(const uint8_t** p, const uint8_t* end, uint64_t* out) {
  if (*p >= end) return -1;
  uint8_t first = **p;
  int extra = 0;
  while (extra < 8 && (first & (0x80u >> extra))) ++extra;
  if (end - *p < 1 + extra) return -1;
  uint64_t v = extra == 8 ? 0 : first & (0xFFu >> extra);
  for (int i = 1; i <= extra; ++i) v = v << 8 | (*p)[i];
  *p += 1 + extra;
  *out = v;
  return 0;
}

static int64_t unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

/// A varint (big-endian two's complement of n bytes) scaled by 10^-scale as
/// decimal text: "-12.345", "0.001", "1.2E+3", "1E-7", "0E+2".
static int decimal_text(struct sl_builder* b, const uint8_t* v, int32_t n, int32_t scale) {
  // Magnitude as base-256 digits, then repeated division by 10. One
  // scratch block: magnitude, digits (at most 3 per byte), the text.
  size_t digits_cap = (size_t)n * 3 + 2;
  size_t text_cap = digits_cap + 32 + (size_t)(scale > 0 ? scale : 0);
  size_t scratch_size = (size_t)n + digits_cap + text_cap;
  uint8_t* scratch = sl_alloc(b->alloc, scratch_size);
  uint8_t* mag = scratch;
  char* digits = scratch != NULL ? (char*)scratch + n : NULL;
  char* text = scratch != NULL ? digits + digits_cap : NULL;
  int rc = scratch == NULL ? ENOMEM : 0;
  if (rc == 0) {
    int negative = n > 0 && (v[0] & 0x80);
    unsigned carry = 1;
    for (int32_t i = n - 1; i >= 0; --i) {  // two's complement negation, low byte first
      unsigned x = negative ? (unsigned)(uint8_t)~v[i] + carry : v[i];
      mag[i] = (uint8_t)x;
      carry = negative ? x >> 8 : 0;
    }
    size_t nd = 0;
    int32_t start = 0;
    while (start < n && mag[start] == 0) ++start;
    while (start < n) {
      unsigned rem = 0;
      for (int32_t i = start; i < n; ++i) {
        unsigned cur = rem << 8 | mag[i];
        mag[i] = (uint8_t)(cur / 10);
        rem = cur % 10;
      }
      digits[nd++] = (char)('0' + rem);
      while (start < n && mag[start] == 0) ++start;
    }
    if (nd == 0) digits[nd++] = '0';
    size_t w = 0;
    if (negative) text[w++] = '-';
    // Java's BigDecimal.toString, as the drivers print (Python's Decimal
    // too): plain digits while the scale is not negative and the adjusted
    // exponent is -6 or more, else E notation of one digit before the point.
    int64_t adjusted = (int64_t)nd - 1 - scale;
    if (scale < 0 || adjusted < -6) {
      text[w++] = digits[nd - 1];
      if (nd > 1) text[w++] = '.';
      for (size_t i = nd - 1; i-- > 0;) text[w++] = digits[i];
      w += (size_t)snprintf(text + w, text_cap - w, "E%s%lld", adjusted > 0 ? "+" : "",
                            (long long)adjusted);
    } else if (scale == 0) {
      for (size_t i = nd; i-- > 0;) text[w++] = digits[i];
    } else if ((size_t)scale >= nd) {
      text[w++] = '0';
      text[w++] = '.';
      for (size_t i = nd; i < (size_t)scale; ++i) text[w++] = '0';
      for (size_t i = nd; i-- > 0;) text[w++] = digits[i];
    } else {
      for (size_t i = nd; i-- > 0;) {
        text[w++] = digits[i];
        if (i == (size_t)scale) text[w++] = '.';
      }
    }
    rc = sl_builder_append_binary(b, text, (int64_t)w);
  }
  sl_free(b->alloc, scratch, scratch_size);
  return rc;
}

/// Appends the [bytes] values of a collection or UDT body to `child`.
static int append_items(const struct cql_type* item, struct sl_builder* child,
                        struct sl_cql_cursor* c, int32_t count, const char** why) {
  for (int32_t i = 0; i < count; ++i) {
    const uint8_t* v;
    int32_t n;
    if (sl_cql_read_bytes(c, &v, &n) != 0) {
      *why = "a collection item runs past the end of its value";
      return EILSEQ;
    }
    SL_RETURN_NOT_OK(sl_cql_value_append(item, child, v, n, why));
  }
  return 0;
}

static int fixed_width_of(int id) {
  switch (id) {
    case CQL_BIGINT: case CQL_COUNTER: case CQL_TIMESTAMP: case CQL_TIME: case CQL_DOUBLE:
      return 8;
    case CQL_INT: case CQL_DATE: case CQL_FLOAT: return 4;
    case CQL_SMALLINT: return 2;
    case CQL_TINYINT: case CQL_BOOLEAN: return 1;
    case CQL_UUID: case CQL_TIMEUUID: return 16;
    default: return 0;
  }
}

int sl_cql_value_append(const struct cql_type* t, struct sl_builder* b, const uint8_t* v,
                     int32_t n, const char** why) {
  if (n < 0) return sl_builder_append_null(b);
  int width = fixed_width_of(t->id);
  if (width > 0) {
    // An empty value (legal for most types, "no value" in drivers) is null.
    if (n == 0) return sl_builder_append_null(b);
    if (n != width) {
      *why = "a value of the wrong width for its type";
      return EILSEQ;
    }
    uint64_t u = width <= 8 ? sl_load_be(v, width) : 0;
    switch (t->id) {
      case CQL_BIGINT: case CQL_COUNTER: case CQL_TIMESTAMP: return sl_builder_append_int64(b, (int64_t)u);
      case CQL_TIME:
        if ((int64_t)u < 0 || (int64_t)u >= INT64_C(86400000000000)) {
          *why = "a time of day outside 00:00 to 24:00";
          return EILSEQ;
        }
        return sl_builder_append_int64(b, (int64_t)u);
      case CQL_DOUBLE: {
        double d;
        memcpy(&d, &u, 8);
        return sl_builder_append_double(b, d);
      }
      case CQL_INT: return sl_builder_append_int32(b, (int32_t)(uint32_t)u);
      case CQL_DATE: return sl_builder_append_int32(b, (int32_t)((uint32_t)u - 0x80000000u));
      case CQL_FLOAT: {
        uint32_t bits = (uint32_t)u;
        float f;
        memcpy(&f, &bits, 4);
        return sl_builder_append_float(b, f);
      }
      case CQL_SMALLINT: return sl_builder_append_int16(b, (int16_t)(uint16_t)u);
      case CQL_TINYINT: return sl_builder_append_int8(b, (int8_t)(uint8_t)u);
      case CQL_BOOLEAN: return sl_builder_append_bool(b, u != 0);
      default: return sl_builder_append_fixed(b, v);  // uuid, timeuuid
    }
  }
  struct sl_cql_cursor c = {v, v + n};
  switch (t->id) {
    case CQL_INET: {
      char text[INET6_ADDRSTRLEN];
      if (n == 0) return sl_builder_append_null(b);  // as the drivers read it
      if ((n != 4 && n != 16) ||
          inet_ntop(n == 4 ? AF_INET : AF_INET6, v, text, sizeof text) == NULL) {
        *why = "an inet value that is neither 4 nor 16 bytes";
        return EILSEQ;
      }
      return sl_builder_append_binary(b, text, (int64_t)strlen(text));
    }
    case CQL_VARINT:
      if (n == 0) return sl_builder_append_null(b);
      // 2^127 - 1 fits decimal128's bytes but not its 38 digits: checked too.
      if (sl_builder_append_decimal_be(b, v, n) != 0 ||
          !sl_decimal_fits(b->values.data + (b->length - 1) * b->value_width,
                           (int)b->value_width, b->type.precision)) {
        *why = "a varint beyond decimal128's 38 digits";
        return EILSEQ;
      }
      return 0;
    case CQL_DECIMAL: {
      int32_t scale;
      if (n == 0) return sl_builder_append_null(b);
      if (sl_cql_read_int(&c, &scale) != 0 || c.p == c.end) {
        *why = "a decimal shorter than its scale and one byte";
        return EILSEQ;
      }
      if (scale < -CQL_DECIMAL_MAX_SCALE || scale > CQL_DECIMAL_MAX_SCALE) {
        *why = "a decimal with a scale beyond +-100000";
        return EILSEQ;
      }
      return decimal_text(b, c.p, (int32_t)(c.end - c.p), scale);
    }
    case CQL_DURATION: {
      uint64_t months, days, nanos;
      if (n == 0) return sl_builder_append_null(b);
      const uint8_t* p = v;
      if (read_vint(&p, v + n, &months) != 0 || read_vint(&p, v + n, &days) != 0 ||
          read_vint(&p, v + n, &nanos) != 0 || p != v + n) {
        *why = "a duration that is not three vints";
        return EILSEQ;
      }
      int64_t m = unzigzag(months), d = unzigzag(days), ns = unzigzag(nanos);
      if (m < INT32_MIN || m > INT32_MAX || d < INT32_MIN || d > INT32_MAX) {
        *why = "a duration whose months or days overflow 32 bits";
        return EILSEQ;
      }
      uint8_t mdn[16];
      int32_t m32 = (int32_t)m, d32 = (int32_t)d;
      memcpy(mdn, &m32, 4);
      memcpy(mdn + 4, &d32, 4);
      memcpy(mdn + 8, &ns, 8);
      return sl_builder_append_fixed(b, mdn);
    }
    case CQL_LIST: case CQL_SET: case CQL_MAP: {
      int32_t count;
      if (n == 0) return sl_builder_append_null(b);
      if (sl_cql_read_int(&c, &count) != 0 || count < 0 || count > n) {
        *why = "a collection with a bad element count";
        return EILSEQ;
      }
      struct sl_builder* child = sl_builder_child(b, 0);
      if (t->id == CQL_MAP) {
        struct sl_builder* keys = sl_builder_child(child, 0);
        for (int32_t i = 0; i < count; ++i) {
          int64_t nulls = keys->null_count;
          SL_RETURN_NOT_OK(append_items(&t->children[0], keys, &c, 1, why));
          if (keys->null_count != nulls) {  // (an Arrow map's keys are never null)
            *why = "a map key that is null";
            return EILSEQ;
          }
          SL_RETURN_NOT_OK(append_items(&t->children[1], sl_builder_child(child, 1), &c, 1, why));
          SL_RETURN_NOT_OK(sl_builder_struct_finish(child));
        }
      } else {
        SL_RETURN_NOT_OK(append_items(&t->children[0], child, &c, count, why));
      }
      if (c.p != c.end) {
        *why = "bytes left over after a collection's elements";
        return EILSEQ;
      }
      return sl_builder_list_finish(b);
    }
    case CQL_UDT: case CQL_TUPLE: {
      if (n == 0) return sl_builder_append_null(b);
      // A UDT value may stop short of the type's fields (fields added
      // later): the rest are null.
      for (int i = 0; i < t->n_children; ++i) {
        struct sl_builder* child = sl_builder_child(b, i);
        if (c.p == c.end) {
          SL_RETURN_NOT_OK(sl_builder_append_null(child));
        } else {
          SL_RETURN_NOT_OK(append_items(&t->children[i], child, &c, 1, why));
        }
      }
      if (c.p != c.end) {
        *why = "bytes left over after a UDT's or tuple's fields";
        return EILSEQ;
      }
      return sl_builder_struct_finish(b);
    }
    case CQL_VECTOR: {
      int w = fixed_width_of(t->children[0].id);
      if (n == 0) return sl_builder_append_null(b);
      if ((int64_t)n != (int64_t)w * t->dimension) {
        *why = "a vector whose size is not its dimension times the element width";
        return EILSEQ;
      }
      struct sl_builder* child = sl_builder_child(b, 0);
      for (int32_t i = 0; i < t->dimension; ++i) {
        SL_RETURN_NOT_OK(sl_cql_value_append(&t->children[0], child, v + (size_t)i * (size_t)w, w, why));
      }
      return sl_builder_list_finish(b);
    }
    default:  // text, ascii, blob, custom types
      return sl_builder_append_binary(b, v, n);
  }
}
