// Arrow values as CQL values (protocol v4 serialization): see cql_encode.h.
// The inverse of cql_type.c's decoding, so that a table read by sluice
// writes back to the same values; besides those types, the Arrow types a
// CSV, Parquet or pandas column is likely to have are accepted where the CQL
// type can hold their values (any integer width for any CQL integer, with a
// range check per value; text for uuid, inet and decimal).
#include "cql_encode.h"

#include <arpa/inet.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../core/sl_alloc.h"
#include "../../core/sl_endian.h"
#include "../../core/sl_error.h"
#include "../../core/sl_read.h"
#include "../../core/sl_value_parse.h"

#define MS_PER_DAY INT64_C(86400000)
#define NS_PER_DAY INT64_C(86400000000000)
/// Digits of a decimal written from text: far beyond any real value, and
/// bounds the quadratic conversion to binary.
#define MAX_DECIMAL_DIGITS 4096

static const char* cql_type_name(int id) {
  switch (id) {
    case CQL_ASCII: return "ascii";
    case CQL_BIGINT: return "bigint";
    case CQL_BLOB: return "blob";
    case CQL_BOOLEAN: return "boolean";
    case CQL_COUNTER: return "counter";
    case CQL_DECIMAL: return "decimal";
    case CQL_DOUBLE: return "double";
    case CQL_FLOAT: return "float";
    case CQL_INT: return "int";
    case CQL_TIMESTAMP: return "timestamp";
    case CQL_UUID: return "uuid";
    case CQL_VARCHAR: return "text";
    case CQL_VARINT: return "varint";
    case CQL_TIMEUUID: return "timeuuid";
    case CQL_INET: return "inet";
    case CQL_DATE: return "date";
    case CQL_TIME: return "time";
    case CQL_SMALLINT: return "smallint";
    case CQL_TINYINT: return "tinyint";
    case CQL_DURATION: return "duration";
    case CQL_LIST: return "list";
    case CQL_MAP: return "map";
    case CQL_SET: return "set";
    case CQL_UDT: return "user-defined type";
    case CQL_TUPLE: return "tuple";
    case CQL_VECTOR: return "vector";
    default: return "custom type";
  }
}

/// The CQL spelling of a custom type's class, as cqlsh and system_schema
/// show it: "VectorType(UTF8Type, 2)" is vector<text, 2>; other classes by
/// name.
static void custom_type_text(const char* custom, char* out, size_t cap) {
  static const char k_marshal[] = "org.apache.cassandra.db.marshal.";
  static const char k_vector[] = "org.apache.cassandra.db.marshal.VectorType(";
  static const struct {
    const char* cls;
    const char* cql;
  } simple[] = {{"AsciiType", "ascii"},     {"LongType", "bigint"},
                {"BytesType", "blob"},      {"BooleanType", "boolean"},
                {"DecimalType", "decimal"}, {"DoubleType", "double"},
                {"DurationType", "duration"}, {"FloatType", "float"},
                {"InetAddressType", "inet"}, {"Int32Type", "int"},
                {"UTF8Type", "text"},       {"TimestampType", "timestamp"},
                {"UUIDType", "uuid"},       {"IntegerType", "varint"},
                {"TimeUUIDType", "timeuuid"}, {"SimpleDateType", "date"},
                {"TimeType", "time"},       {"ShortType", "smallint"},
                {"ByteType", "tinyint"}};
  size_t k = sizeof k_vector - 1;
  const char* comma = strrchr(custom, ',');
  size_t len = strlen(custom);
  if (strncmp(custom, k_vector, k) != 0 || comma == NULL || custom[len - 1] != ')') {
    snprintf(out, cap, "custom type %s", custom);
    return;
  }
  const char* cls = custom + k;
  size_t n = (size_t)(comma - cls);
  while (n > 0 && cls[n - 1] == ' ') --n;
  if (n > sizeof k_marshal - 1 && strncmp(cls, k_marshal, sizeof k_marshal - 1) == 0) {
    cls += sizeof k_marshal - 1;
    n -= sizeof k_marshal - 1;
  }
  for (size_t i = 0; i < sizeof simple / sizeof simple[0]; ++i) {
    if (strlen(simple[i].cls) == n && strncmp(cls, simple[i].cls, n) == 0) {
      cls = simple[i].cql;
      n = strlen(cls);
      break;
    }
  }
  const char* dim = comma + 1;
  while (*dim == ' ') ++dim;
  snprintf(out, cap, "vector<%.*s, %.*s>", (int)n, cls, (int)(custom + len - 1 - dim), dim);
}

static int is_int(enum sl_type_id id) { return id >= SL_TYPE_INT8 && id <= SL_TYPE_UINT64; }
static int is_float(enum sl_type_id id) { return id == SL_TYPE_FLOAT || id == SL_TYPE_DOUBLE; }
static int is_string(enum sl_type_id id) {
  return id == SL_TYPE_STRING || id == SL_TYPE_LARGE_STRING;
}
static int is_list(enum sl_type_id id) {
  return id == SL_TYPE_LIST || id == SL_TYPE_LARGE_LIST || id == SL_TYPE_FIXED_SIZE_LIST;
}

/// Whether values of Arrow type `a` can be written as CQL type `cql`
/// (nested types: at this level only; children are checked on their own).
static int compatible(const struct cql_type* cql, const struct sl_type* a) {
  enum sl_type_id id = a->id;
  if (id == SL_TYPE_NA) return 1;  // all null: fits any column
  switch (cql->id) {
    case CQL_BOOLEAN: return id == SL_TYPE_BOOL;
    // Floats per value, when whole (a pandas integer column with a missing
    // value is float64), as DSBulk and the drivers take them.
    case CQL_TINYINT: case CQL_SMALLINT: case CQL_INT: case CQL_BIGINT:
      return is_int(id) || is_float(id);
    case CQL_VARINT:
      return is_int(id) || is_float(id) || (id == SL_TYPE_DECIMAL128 && a->scale == 0);
    case CQL_FLOAT: case CQL_DOUBLE: return is_float(id) || is_int(id);
    case CQL_ASCII: case CQL_VARCHAR: case CQL_INET: return is_string(id);
    case CQL_BLOB:  // not text: its UTF-8 bytes are not what a blob column holds
      return id == SL_TYPE_BINARY || id == SL_TYPE_LARGE_BINARY || id == SL_TYPE_FIXED_SIZE_BINARY;
    case CQL_CUSTOM:
      return is_string(id) || id == SL_TYPE_BINARY || id == SL_TYPE_LARGE_BINARY ||
             id == SL_TYPE_FIXED_SIZE_BINARY;
    case CQL_UUID: case CQL_TIMEUUID:
      return is_string(id) || (id == SL_TYPE_FIXED_SIZE_BINARY && a->byte_width == 16);
    case CQL_TIMESTAMP:
      return id == SL_TYPE_TIMESTAMP || id == SL_TYPE_DATE64 || id == SL_TYPE_DATE32;
    case CQL_DATE: return id == SL_TYPE_DATE32 || id == SL_TYPE_DATE64;
    case CQL_TIME: return id == SL_TYPE_TIME32 || id == SL_TYPE_TIME64;
    case CQL_DECIMAL: return id == SL_TYPE_DECIMAL128 || is_string(id) || is_int(id);
    case CQL_DURATION: return id == SL_TYPE_INTERVAL_MONTH_DAY_NANO || id == SL_TYPE_DURATION;
    case CQL_LIST: case CQL_SET: return is_list(id);
    case CQL_MAP: return id == SL_TYPE_MAP;
    case CQL_UDT: case CQL_TUPLE: return id == SL_TYPE_STRUCT;
    case CQL_VECTOR: return id == SL_TYPE_FIXED_SIZE_LIST && a->list_size == cql->dimension;
    default: return 0;  // counters: the node refuses INSERTs into their tables
  }
}

void sl_cql_encoder_free(struct cql_encoder* e, const struct sluice_allocator* alloc) {
  if (e == NULL || e->children == NULL) return;
  for (int i = 0; i < e->n_children; ++i) sl_cql_encoder_free(&e->children[i], alloc);
  sl_free(alloc, e->children, (size_t)e->n_children * sizeof *e->children);
  e->children = NULL;
}

/// The Arrow child of a struct named `name`, or NULL.
static const struct sl_text_field* child_named(const struct sl_text_field* f, const char* name) {
  for (int64_t i = 0; i < f->n_children; ++i) {
    if (strcmp(f->children[i].name, name) == 0) return &f->children[i];
  }
  return NULL;
}

int sl_cql_encoder_init(struct cql_encoder* e, const struct cql_type* cql,
                     const struct sl_text_field* arrow, const char* column,
                     const struct sluice_allocator* alloc, struct sluice_error* error) {
  memset(e, 0, sizeof *e);
  e->cql = cql;
  e->arrow = arrow;
  if (arrow == NULL) return 0;  // a UDT field the struct lacks: written as null
  const struct sl_text_field* values = arrow->dictionary != NULL ? arrow->dictionary : arrow;
  e->dictionary = arrow->dictionary != NULL;
  if (!compatible(cql, &values->type)) {
    char arrow_name[96];
    sl_type_name(&values->type, arrow_name, sizeof arrow_name);
    char cql_name[160];
    const char* hint = "";
    if (cql->custom != NULL && (cql->id == CQL_CUSTOM || cql->id == CQL_VECTOR)) {
      custom_type_text(cql->custom, cql_name, sizeof cql_name);
    } else {
      snprintf(cql_name, sizeof cql_name, "%s", cql_type_name(cql->id));
    }
    char decimal_hint[256];
    if (cql->id == CQL_VECTOR) {
      hint = " (a fixed_size_list of its dimension)";
    } else if (cql->id == CQL_DECIMAL && is_float(values->type.id)) {
      // Refused: a float holds a binary fraction, not the decimal digits a
      // CSV had (1.10 would become 1.100000000000000088817841970012523).
      snprintf(decimal_hint, sizeof decimal_hint, " (a float is not an exact decimal: read the "
               "column as text, schema=%.40s:string (CLI: --schema %.40s:string) for a CSV, or "
               "as decimal128)", column, column);
      hint = decimal_hint;
    } else if (cql->id == CQL_CUSTOM && strncmp(cql_name, "vector<", 7) == 0) {
      hint = " (sluice writes vectors of float, double, int and bigint only)";
    }
    snprintf(e->mismatch, sizeof e->mismatch, "Arrow %s cannot be written as CQL %s%s",
             arrow_name, cql_name, hint);
    return 0;
  }
  if (values->type.id == SL_TYPE_NA) return 0;  // never encoded: every value is null
  const struct sl_text_field* kids[64];
  int n = 0;
  switch (cql->id) {
    case CQL_LIST: case CQL_SET: case CQL_VECTOR:
      n = 1, kids[0] = &values->children[0];
      break;
    case CQL_MAP: {
      const struct sl_text_field* entries = &values->children[0];
      if (entries->n_children < 2) {
        return sl_error_set(error, EINVAL, "column '%s': map entries need a key and a value",
                            column);
      }
      n = 2, kids[0] = &entries->children[0], kids[1] = &entries->children[1];
      break;
    }
    case CQL_TUPLE:
      if (values->n_children != cql->n_children) {
        return sl_error_set(error, EINVAL,
                            "column '%s': a struct of %lld fields cannot be written as a tuple "
                            "of %d",
                            column, (long long)values->n_children, cql->n_children);
      }
      n = cql->n_children;
      for (int i = 0; i < n && i < 64; ++i) kids[i] = &values->children[i];
      break;
    case CQL_UDT:
      // By name: a field the struct lacks is written as null; a struct field
      // the type lacks is an error rather than silently dropped.
      for (int64_t i = 0; i < values->n_children; ++i) {
        int found = 0;
        for (int j = 0; j < cql->n_children; ++j) {
          const char* name = cql->children[j].name;
          found |= name != NULL && strcmp(name, values->children[i].name) == 0;
        }
        if (!found) {
          return sl_error_set(error, EINVAL, "column '%s': the user-defined type has no field '%s'",
                              column, values->children[i].name);
        }
      }
      n = cql->n_children;
      for (int i = 0; i < n && i < 64; ++i) {
        const char* name = cql->children[i].name;
        kids[i] = name != NULL ? child_named(values, name) : NULL;
      }
      break;
    default: break;
  }
  if (n > 64) {
    return sl_error_set(error, ENOTSUP, "column '%s': more than 64 fields in a %s", column,
                        cql_type_name(cql->id));
  }
  if (n == 0) return 0;
  e->children = sl_calloc(alloc, (size_t)n, sizeof *e->children);
  if (e->children == NULL) return sl_error_set(error, ENOMEM, "column '%s': out of memory", column);
  e->n_children = n;
  for (int i = 0; i < n; ++i) {
    int rc = sl_cql_encoder_init(&e->children[i], &cql->children[i], kids[i], column, alloc, error);
    if (rc != 0) {
      sl_cql_encoder_free(e, alloc);
      return rc;
    }
    e->children[i].struct_child = kids[i] != NULL ? kids[i] - values->children : -1;
  }
  if (cql->id == CQL_VECTOR) {
    int id = cql->children[0].id;
    if (id != CQL_FLOAT && id != CQL_DOUBLE && id != CQL_INT && id != CQL_BIGINT) {
      sl_cql_encoder_free(e, alloc);
      return sl_error_set(error, ENOTSUP,
                          "column '%s': vectors of %s are not supported (float, double, int, "
                          "bigint are)",
                          column, cql_type_name(id));
    }
  }
  return 0;
}

/* ---- Bytes ------------------------------------------------------------------------- */

/// A big-endian two's complement number of n bytes, without the leading
/// bytes that only repeat the sign (CQL varints are minimal).
static int put_twos_complement(struct sl_buffer* out, const uint8_t* be, int n) {
  int skip = 0;
  while (skip < n - 1 && ((be[skip] == 0x00 && !(be[skip + 1] & 0x80)) ||
                          (be[skip] == 0xFF && (be[skip + 1] & 0x80)))) {
    ++skip;
  }
  return sl_buffer_append(out, be + skip, n - skip);
}

static int put_varint64(struct sl_buffer* out, int64_t v) {
  uint8_t be[8];
  sl_store_be(be, (uint64_t)v, 8);
  return put_twos_complement(out, be, 8);
}

/// Cassandra's unsigned vint (VIntCoding): as many leading one bits in the
/// first byte as bytes follow it.
static int put_vint(struct sl_buffer* out, uint64_t v) {
  // VIntCoding.computeUnsignedVIntSize: 1 byte to 7 bits, then one byte more
  // per 7 bits, 9 bytes past 56.
  int size = (639 - __builtin_clzll(v | 1) * 9) >> 6;
  uint8_t b[9];
  if (size == 9) {
    b[0] = 0xFF;
    sl_store_be(b + 1, v, 8);
  } else {
    sl_store_be(b, v, size);
    b[0] |= (uint8_t)(0xFF00u >> (size - 1));  // size - 1 leading ones
  }
  return sl_buffer_append(out, b, size);
}

static uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

/* ---- Reading the Arrow side ---------------------------------------------------------- */

/// The bytes of a string / binary value at absolute position p.
static void binary_at(const struct sl_type* t, const struct ArrowArray* a, int64_t p,
                      const uint8_t** data, int64_t* n) {
  if (t->id == SL_TYPE_FIXED_SIZE_BINARY) {
    *data = (const uint8_t*)a->buffers[1] + p * t->byte_width;
    *n = t->byte_width;
  } else if (t->id == SL_TYPE_LARGE_STRING || t->id == SL_TYPE_LARGE_BINARY) {
    const int64_t* off = a->buffers[1];
    *data = (const uint8_t*)a->buffers[2] + off[p];
    *n = off[p + 1] - off[p];
  } else {
    const int32_t* off = a->buffers[1];
    *data = (const uint8_t*)a->buffers[2] + off[p];
    *n = (int64_t)off[p + 1] - off[p];
  }
}

/// An integer column's value; *huge = the uint64 value exceeds INT64_MAX.
static int64_t int_at(const struct sl_type* t, const struct ArrowArray* a, int64_t p, int* huge) {
  *huge = t->id == SL_TYPE_UINT64 && ((const uint64_t*)a->buffers[1])[p] > (uint64_t)INT64_MAX;
  return sl_int_value(t->id, a->buffers[1], p);
}

static double float_at(const struct sl_type* t, const struct ArrowArray* a, int64_t p) {
  if (t->id == SL_TYPE_FLOAT) return ((const float*)a->buffers[1])[p];
  if (t->id == SL_TYPE_DOUBLE) return ((const double*)a->buffers[1])[p];
  int huge;
  int64_t v = int_at(t, a, p, &huge);
  return huge ? (double)((const uint64_t*)a->buffers[1])[p] : (double)v;
}

/// A float that is a whole number within int64 as *v; EINVAL otherwise
/// (NaN included: an integer column has no spelling for it).
static int whole_float(double d, int64_t* v, const char** why) {
  if (!(d == floor(d)) || d < -9223372036854775808.0 || d >= 9223372036854775808.0) {
    *why = "a float that is not a whole number within int64 (NaN, 1.5, 1e30)";
    return EINVAL;
  }
  *v = (int64_t)d;
  return 0;
}

/// Integer value p of `a` as a CQL varint (uint64 past int64 included).
static int put_int_varint(struct sl_buffer* out, const struct sl_type* t,
                          const struct ArrowArray* a, int64_t p) {
  int huge;
  int64_t v = int_at(t, a, p, &huge);
  if (!huge) return put_varint64(out, v);
  uint8_t be[9] = {0};
  sl_store_be(be + 1, (uint64_t)v, 8);
  return put_twos_complement(out, be, 9);
}

/// Whether integer value p of `a` is exactly a double (as_float = 0) or a
/// float (1): 2^53 + 1 is not, and rounding it silently would store another
/// number (pyarrow's safe cast refuses it too).
static int int_is_exact(const struct sl_type* t, const struct ArrowArray* a, int64_t p,
                        int as_float) {
  if (is_float(t->id)) return 1;
  int huge;
  int64_t v = int_at(t, a, p, &huge);
  uint64_t u = huge ? ((const uint64_t*)a->buffers[1])[p] : 0;
  double d = huge ? (double)u : (double)v;
  if (as_float) d = (double)(float)d;
  // d is integral; compare in the integer's own domain where it fits.
  if (huge) return d < 18446744073709551616.0 && (uint64_t)d == u;
  return d >= -9223372036854775808.0 && d < 9223372036854775808.0 && (int64_t)d == v;
}

/// v * 10^? to milliseconds, exact: EINVAL when sub-millisecond digits or
/// an overflow would be lost.
static int to_millis(int64_t v, enum sl_time_unit unit, int64_t* ms, const char** why) {
  switch (unit) {
    case SL_SECOND:
      if (v > INT64_MAX / 1000 || v < INT64_MIN / 1000) {
        *why = "a timestamp beyond the range of CQL timestamps";
        return EINVAL;
      }
      *ms = v * 1000;
      return 0;
    case SL_MILLI: *ms = v; return 0;
    default: {
      int64_t per = unit == SL_MICRO ? 1000 : 1000000;
      if (v % per != 0) {
        *why = "a timestamp with sub-millisecond digits, which CQL timestamps cannot hold "
               "(cast it to milliseconds first)";
        return EINVAL;
      }
      *ms = v / per;
      return 0;
    }
  }
}

/// "[-+]digits[.digits][(e|E)[-+]digits]" as CQL decimal: a scale and the
/// unscaled varint. The digits go to binary by schoolbook base-256
/// multiply-add (no bignum library in Debian's C set is worth a dependency
/// for this).
static int put_decimal_text(struct sl_buffer* out, const uint8_t* s, int64_t n, const char** why) {
  *why = "text that is not a decimal number";
  int64_t i = 0;
  int negative = 0;
  if (i < n && (s[i] == '-' || s[i] == '+')) negative = s[i++] == '-';
  uint8_t mag[MAX_DECIMAL_DIGITS / 2 + 2];  // little-endian base 256; 10^k < 256^(k/2+1)
  int mag_len = 0, digits = 0;
  int64_t scale = 0;
  int seen_point = 0, seen_digit = 0;
  for (; i < n; ++i) {
    uint8_t c = s[i];
    if (c == '.' && !seen_point) {
      seen_point = 1;
      continue;
    }
    if (c < '0' || c > '9') break;
    seen_digit = 1;
    if (seen_point) ++scale;
    if (mag_len == 0 && c == '0') continue;  // leading zeros add nothing
    if (++digits > MAX_DECIMAL_DIGITS) {
      *why = "a decimal of more than 4096 digits";
      return EINVAL;
    }
    unsigned carry = (unsigned)(c - '0');
    for (int k = 0; k < mag_len; ++k) {
      unsigned v = mag[k] * 10u + carry;
      mag[k] = (uint8_t)v;
      carry = v >> 8;
    }
    if (carry != 0) mag[mag_len++] = (uint8_t)carry;
  }
  if (!seen_digit) return EINVAL;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    // Any exponent that leaves room for the digits: the scale's limit below
    // is the one that tells.
    const int64_t k_exponent_max = (int64_t)1 << 53;
    int64_t j = i + 1, exponent;
    if (j < n && s[j] == '+') ++j;  // strtoll takes '-' but a '+' too: no "e+-1"
    if (j >= n || s[j] == '+' ||
        sl_parse_int64((const char*)s + j, (size_t)(n - j), -k_exponent_max, k_exponent_max,
                       &exponent) != 0) {
      return EINVAL;
    }
    scale -= exponent;
    i = n;
  }
  if (i != n) return EINVAL;
  if (scale < -CQL_DECIMAL_MAX_SCALE || scale > CQL_DECIMAL_MAX_SCALE) {
    // The reader's limit: what is written reads back.
    *why = "a decimal with a scale beyond +-100000 (digits after the point less the exponent)";
    return EINVAL;
  }
  // Big-endian two's complement with one spare byte for the sign.
  uint8_t be[MAX_DECIMAL_DIGITS / 2 + 3];
  int len = mag_len + 1;
  be[0] = 0;
  for (int k = 0; k < mag_len; ++k) be[len - 1 - k] = mag[k];
  if (negative) {
    unsigned carry = 1;
    for (int k = len - 1; k >= 0; --k) {
      unsigned v = (uint8_t)~be[k] + carry;
      be[k] = (uint8_t)v;
      carry = v >> 8;
    }
  }
  int rc = sl_buffer_append_be(out, (uint32_t)(int32_t)scale, 4);
  return rc != 0 ? rc : put_twos_complement(out, be, len);
}

/* ---- Values -------------------------------------------------------------------------- */

static int encode_at(const struct cql_encoder* e, const struct ArrowArray* a, int64_t i,
                     int null_length, struct sl_buffer* out, const char** why);

/// Elements [begin, end) of a list's child as a CQL collection's elements
/// (or, for maps, the entries' keys and values).
static int encode_elements(const struct cql_encoder* e, const struct ArrowArray* child,
                           int64_t begin, int64_t end, struct sl_buffer* out, const char** why) {
  if (end - begin > INT32_MAX) {
    *why = "a collection of more than 2^31 elements";
    return EINVAL;
  }
  SL_RETURN_NOT_OK(sl_buffer_append_be(out, (uint32_t)(end - begin), 4));
  for (int64_t j = begin; j < end; ++j) {
    if (e->cql->id == CQL_MAP) {
      for (int k = 0; k < 2; ++k) {
        const struct cql_encoder* kv = &e->children[k];
        if (sl_value_is_null(kv->arrow, child->children[k], j)) {
          *why = "a null key or value in a map (Cassandra collections hold no nulls)";
          return EINVAL;
        }
        SL_RETURN_NOT_OK(encode_at(kv, child->children[k], j, CQL_NULL_NULL, out, why));
      }
    } else {
      if (sl_value_is_null(e->children[0].arrow, child, j)) {
        *why = "a null element in a list or set (Cassandra collections hold no nulls)";
        return EINVAL;
      }
      SL_RETURN_NOT_OK(encode_at(&e->children[0], child, j, CQL_NULL_NULL, out, why));
    }
  }
  return 0;
}

/// The value bytes (no length) of the non-null value at absolute position p
/// of `a`, whose Arrow type is `f` (dictionaries already looked through).
static int encode_body(const struct cql_encoder* e, const struct sl_text_field* f,
                       const struct ArrowArray* a, int64_t p, struct sl_buffer* out,
                       const char** why) {
  const struct sl_type* t = &f->type;
  int huge = 0;
  switch (e->cql->id) {
    case CQL_BOOLEAN: {
      uint8_t b = (uint8_t)sl_bit_get(a->buffers[1], p);
      return sl_buffer_append(out, &b, 1);
    }
    case CQL_TINYINT: case CQL_SMALLINT: case CQL_INT: case CQL_BIGINT: {
      static const struct { int id, width; int64_t lo, hi; } ranges[] = {
          {CQL_TINYINT, 1, INT8_MIN, INT8_MAX}, {CQL_SMALLINT, 2, INT16_MIN, INT16_MAX},
          {CQL_INT, 4, INT32_MIN, INT32_MAX}, {CQL_BIGINT, 8, INT64_MIN, INT64_MAX}};
      int64_t v = 0;
      if (is_float(t->id)) {
        SL_RETURN_NOT_OK(whole_float(float_at(t, a, p), &v, why));
      } else {
        v = int_at(t, a, p, &huge);
      }
      for (size_t k = 0; k < sizeof ranges / sizeof ranges[0]; ++k) {
        if (ranges[k].id != e->cql->id) continue;
        if (huge || v < ranges[k].lo || v > ranges[k].hi) {
          *why = "an integer out of the range of its CQL type";
          return EINVAL;
        }
        return sl_buffer_append_be(out, (uint64_t)v, ranges[k].width);
      }
      return EINVAL;
    }
    case CQL_VARINT:
      if (t->id == SL_TYPE_DECIMAL128) {
        const uint8_t* le = (const uint8_t*)a->buffers[1] + p * 16;
        uint8_t be[16];
        for (int k = 0; k < 16; ++k) be[k] = le[15 - k];
        return put_twos_complement(out, be, 16);
      } else if (is_float(t->id)) {
        int64_t v;
        SL_RETURN_NOT_OK(whole_float(float_at(t, a, p), &v, why));
        return put_varint64(out, v);
      } else {
        return put_int_varint(out, t, a, p);
      }
    case CQL_FLOAT: {
      if (!int_is_exact(t, a, p, 1)) {
        *why = "an integer that CQL float cannot hold exactly (past 2^24)";
        return EINVAL;
      }
      double d = float_at(t, a, p);
      // A finite double past float's range would become an infinity (and
      // its cast is undefined in C): an error, as the integer widths are.
      if (isfinite(d) && (d > FLT_MAX || d < -FLT_MAX)) {
        *why = "a number beyond the range of CQL float (about 3.4e38)";
        return EINVAL;
      }
      float v = (float)d;
      uint32_t bits;
      memcpy(&bits, &v, 4);
      return sl_buffer_append_be(out, bits, 4);
    }
    case CQL_DOUBLE: {
      if (!int_is_exact(t, a, p, 0)) {
        *why = "an integer that CQL double cannot hold exactly (past 2^53)";
        return EINVAL;
      }
      double v = float_at(t, a, p);
      uint64_t bits;
      memcpy(&bits, &v, 8);
      return sl_buffer_append_be(out, bits, 8);
    }
    case CQL_ASCII: case CQL_VARCHAR: case CQL_BLOB: case CQL_CUSTOM: {
      const uint8_t* data;
      int64_t n;
      binary_at(t, a, p, &data, &n);
      if (n > INT32_MAX) {
        *why = "a value of 2 GiB or more";
        return EINVAL;
      }
      return sl_buffer_append(out, data, n);
    }
    case CQL_UUID: case CQL_TIMEUUID: {
      const uint8_t* data;
      int64_t n;
      binary_at(t, a, p, &data, &n);
      uint8_t uuid[16];
      if (t->id == SL_TYPE_FIXED_SIZE_BINARY) return sl_buffer_append(out, data, 16);
      if (!sl_parse_uuid(data, n, uuid)) {
        *why = "text that is not a UUID (8-4-4-4-12 hex digits)";
        return EINVAL;
      }
      return sl_buffer_append(out, uuid, 16);
    }
    case CQL_INET: {
      const uint8_t* data;
      int64_t n;
      binary_at(t, a, p, &data, &n);
      char text[64];
      uint8_t addr[16];
      if (n <= 0 || n >= (int64_t)sizeof text) {
        *why = "text that is not an IPv4 or IPv6 address";
        return EINVAL;
      }
      memcpy(text, data, (size_t)n);
      text[n] = '\0';
      int v6 = memchr(text, ':', (size_t)n) != NULL;
      if (inet_pton(v6 ? AF_INET6 : AF_INET, text, addr) != 1) {
        *why = "text that is not an IPv4 or IPv6 address";
        return EINVAL;
      }
      return sl_buffer_append(out, addr, v6 ? 16 : 4);
    }
    case CQL_TIMESTAMP: {
      int64_t v = sl_int_value(t->id == SL_TYPE_DATE32 ? SL_TYPE_INT32 : SL_TYPE_INT64,
                               a->buffers[1], p);
      int64_t ms = v;
      if (t->id == SL_TYPE_DATE32) ms = v * MS_PER_DAY;  // |v| < 2^31: no overflow
      else if (t->id == SL_TYPE_TIMESTAMP) SL_RETURN_NOT_OK(to_millis(v, t->unit, &ms, why));
      return sl_buffer_append_be(out, (uint64_t)ms, 8);
    }
    case CQL_DATE: {
      int64_t days;
      if (t->id == SL_TYPE_DATE32) {
        days = ((const int32_t*)a->buffers[1])[p];
      } else {
        int64_t ms = ((const int64_t*)a->buffers[1])[p];
        if (ms % MS_PER_DAY != 0) {
          *why = "a date64 that is not a whole day";
          return EINVAL;
        }
        days = ms / MS_PER_DAY;
        if (days < INT32_MIN || days > INT32_MAX) {
          *why = "a date beyond the range of CQL dates";
          return EINVAL;
        }
      }
      return sl_buffer_append_be(out, (uint32_t)((uint32_t)(int32_t)days + 0x80000000u), 4);
    }
    case CQL_TIME: {
      static const int64_t ns_per[] = {1000000000, 1000000, 1000, 1};
      int64_t v = t->id == SL_TYPE_TIME32 ? ((const int32_t*)a->buffers[1])[p]
                                          : ((const int64_t*)a->buffers[1])[p];
      int64_t per = ns_per[t->unit];
      if (v < 0 || v >= NS_PER_DAY / per) {
        *why = "a time of day outside 00:00 to 24:00";
        return EINVAL;
      }
      return sl_buffer_append_be(out, (uint64_t)(v * per), 8);
    }
    case CQL_DECIMAL:
      if (is_int(t->id)) {  // scale 0, the integer unscaled
        SL_RETURN_NOT_OK(sl_buffer_append_be(out, 0, 4));
        return put_int_varint(out, t, a, p);
      }
      if (t->id == SL_TYPE_DECIMAL128) {
        const uint8_t* le = (const uint8_t*)a->buffers[1] + p * 16;
        uint8_t be[16];
        for (int k = 0; k < 16; ++k) be[k] = le[15 - k];
        SL_RETURN_NOT_OK(sl_buffer_append_be(out, (uint32_t)t->scale, 4));
        return put_twos_complement(out, be, 16);
      } else {
        const uint8_t* data;
        int64_t n;
        binary_at(t, a, p, &data, &n);
        return put_decimal_text(out, data, n, why);
      }
    case CQL_DURATION: {
      int64_t months = 0, days = 0, nanos;
      if (t->id == SL_TYPE_INTERVAL_MONTH_DAY_NANO) {
        const uint8_t* v = (const uint8_t*)a->buffers[1] + p * 16;
        int32_t m32, d32;
        memcpy(&m32, v, 4);
        memcpy(&d32, v + 4, 4);
        memcpy(&nanos, v + 8, 8);
        months = m32, days = d32;
      } else {
        static const int64_t ns_per[] = {1000000000, 1000000, 1000, 1};
        int64_t v = ((const int64_t*)a->buffers[1])[p], per = ns_per[t->unit];
        if (v > INT64_MAX / per || v < INT64_MIN / per) {
          *why = "a duration beyond 2^63 nanoseconds";
          return EINVAL;
        }
        nanos = v * per;
      }
      int rc = put_vint(out, zigzag(months));
      if (rc == 0) rc = put_vint(out, zigzag(days));
      return rc != 0 ? rc : put_vint(out, zigzag(nanos));
    }
    case CQL_LIST: case CQL_SET: case CQL_MAP: {
      int64_t begin, end;
      if (t->id == SL_TYPE_FIXED_SIZE_LIST) {
        begin = p * t->list_size, end = begin + t->list_size;
      } else if (t->id == SL_TYPE_LARGE_LIST) {
        begin = ((const int64_t*)a->buffers[1])[p], end = ((const int64_t*)a->buffers[1])[p + 1];
      } else {
        begin = ((const int32_t*)a->buffers[1])[p], end = ((const int32_t*)a->buffers[1])[p + 1];
      }
      return encode_elements(e, a->children[0], begin, end, out, why);
    }
    case CQL_UDT: case CQL_TUPLE:
      for (int k = 0; k < e->n_children; ++k) {
        const struct cql_encoder* field = &e->children[k];
        if (field->struct_child < 0) {
          SL_RETURN_NOT_OK(sl_buffer_append_be(out, (uint32_t)-1, 4));
          continue;
        }
        const struct ArrowArray* child = a->children[field->struct_child];
        SL_RETURN_NOT_OK(encode_at(field, child, p, CQL_NULL_NULL, out, why));
      }
      return 0;
    case CQL_VECTOR: {
      // Fixed-width elements, back to back, no lengths.
      const struct ArrowArray* child = a->children[0];
      const struct cql_encoder* item = &e->children[0];
      for (int64_t j = p * t->list_size; j < (p + 1) * t->list_size; ++j) {
        if (sl_value_is_null(item->arrow, child, j)) {
          *why = "a null element in a vector";
          return EINVAL;
        }
        SL_RETURN_NOT_OK(encode_body(item, item->arrow, child, child->offset + j, out, why));
      }
      return 0;
    }
    default:
      *why = "a type the writer does not know";
      return EINVAL;
  }
}

/// Row i (logical) of `a` as a [bytes]; null as the length `null_length`.
static int encode_at(const struct cql_encoder* e, const struct ArrowArray* a, int64_t i,
                     int null_length, struct sl_buffer* out, const char** why) {
  if (e->arrow == NULL || sl_value_is_null(e->arrow, a, i)) {
    return sl_buffer_append_be(out, (uint32_t)null_length, 4);
  }
  if (e->mismatch[0] != '\0') {
    *why = e->mismatch;
    return EINVAL;
  }
  const struct sl_text_field* f = e->arrow;
  int64_t p = a->offset + i;
  if (e->dictionary) {
    int64_t index = sl_int_value(f->type.id, a->buffers[1], p);
    if (a->dictionary == NULL || index < 0 || index >= a->dictionary->length) {
      *why = "a dictionary index outside its dictionary";
      return EINVAL;
    }
    f = f->dictionary;
    a = a->dictionary;
    p = a->offset + index;
  }
  int64_t at = out->size;
  SL_RETURN_NOT_OK(sl_buffer_append_be(out, 0, 4));
  SL_RETURN_NOT_OK(encode_body(e, f, a, p, out, why));
  int64_t n = out->size - at - 4;
  if (n > INT32_MAX) {
    *why = "a value of 2 GiB or more";
    return EINVAL;
  }
  sl_store_be(out->data + at, (uint64_t)n, 4);
  return 0;
}

int sl_cql_encode_value(const struct cql_encoder* e, const struct ArrowArray* array, int64_t i,
                     enum cql_null_mode null_mode, struct sl_buffer* out, const char** why) {
  return encode_at(e, array, i, (int)null_mode, out, why);
}
