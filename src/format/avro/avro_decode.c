// The value decoder: runs the compiled program over one block's bytes,
// appending into the bound builders (or skipping unprojected fields). Every
// length and count is checked against the bytes left before it is used, so a
// forged count never reserves memory. Arrays of float/double are bulk copies.
#include <inttypes.h>
#include <string.h>

#include "avro_internal.h"
#include "core/sl_decimal.h"
#include "core/sl_error.h"
#include "core/sl_type.h"
#include "core/sl_utf8.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define AVRO_LITTLE_ENDIAN 1
#else
#define AVRO_LITTLE_ENDIAN 0
#endif

static int truncated(struct sluice_error* error, const char* what) {
  return sl_error_set(error, EILSEQ, "truncated %s (block ends)", what);
}

/// The error for avro_zigzag's status `rc` (1 or 2).
static int varint_error(int rc, struct sluice_error* error) {
  return rc == 1 ? truncated(error, "varint")
                 : sl_error_set(error, EILSEQ, "varint longer than 10 bytes");
}

static inline int read_long(struct avro_decoder* d, int64_t* out, struct sluice_error* error) {
  int rc = avro_zigzag(&d->p, d->end, out);
  return rc == 0 ? 0 : varint_error(rc, error);
}

static inline int read_int(struct avro_decoder* d, int32_t* out, struct sluice_error* error) {
  int64_t v = 0;
  SL_RETURN_NOT_OK(read_long(d, &v, error));
  if (v < INT32_MIN || v > INT32_MAX)
    return sl_error_set(error, EILSEQ, "int value %" PRId64 " out of the 32-bit range", v);
  *out = (int32_t)v;
  return 0;
}

static int read_len(struct avro_decoder* d, int64_t* n, const char* what,
                    struct sluice_error* error) {
  SL_RETURN_NOT_OK(read_long(d, n, error));
  if (*n < 0) return sl_error_set(error, EILSEQ, "negative %s length %" PRId64, what, *n);
  if (*n > d->end - d->p)
    return sl_error_set(error, EILSEQ, "%s length %" PRId64 " exceeds block end (%td bytes left)",
                        what, *n, d->end - d->p);
  return 0;
}

/// The next array/map block's item count (0 at the end); validated against
/// the bytes left. *bytes is the block's byte size when the writer gave one.
static int read_count(struct avro_decoder* d, const struct avro_op* item, int64_t* count,
                      int64_t* bytes, struct sluice_error* error) {
  *bytes = -1;
  SL_RETURN_NOT_OK(read_long(d, count, error));
  if (*count < 0) {
    if (*count == INT64_MIN) return sl_error_set(error, EILSEQ, "invalid block count");
    *count = -*count;
    SL_RETURN_NOT_OK(read_len(d, bytes, "array/map block", error));
  }
  int64_t left = d->end - d->p;
  int64_t min = item ? item->min_size : 1;
  if (min == 0) {
    if (*count > d->empty_left)
      return sl_error_set(error, EILSEQ, "array count %" PRId64 " of values that take no bytes "
                          "passes the limit of %" PRId64 " per split", *count, AVRO_MAX_EMPTY_VALUES);
    d->empty_left -= *count;
  } else if (*count > left / min) {
    return sl_error_set(error, EILSEQ, "array/map count %" PRId64 " exceeds block end "
                        "(%" PRId64 " bytes left)", *count, left);
  }
  return 0;
}

static int builder_error(int rc, struct sluice_error* error) {
  if (rc == EOVERFLOW)
    return sl_error_set(error, EOVERFLOW, "value does not fit its Arrow column (a decimal out "
                        "of range, or a column past 2 GiB)");
  if (rc == ENOMEM) return sl_error_set(error, ENOMEM, "out of memory");
  return sl_error_set(error, rc, "cannot append a value (error %d)", rc);
}

/// The decimal just appended to `b` has at most its type's precision in
/// digits: Arrow requires it (pyarrow's full validation refuses the array
/// otherwise), and neither Avro nor its writers enforce it.
static int check_decimal_digits(const struct sl_builder* b, struct sluice_error* error) {
  const uint8_t* v = b->values.data + (b->length - 1) * b->value_width;
  if (sl_decimal_fits(v, (int)b->value_width, b->type.precision)) return 0;
  return sl_error_set(error, EOVERFLOW, "decimal value with more digits than its precision %d",
                      (int)b->type.precision);
}

/// Appends v to a fixed-width column of 1 to 8 bytes (b->value_width): the
/// low bytes of its little-endian form are the narrower value.
static int append_low_bytes(struct sl_builder* b, int64_t v) {
  uint8_t le[8];
  for (int k = 0; k < 8; ++k) le[k] = (uint8_t)((uint64_t)v >> (8 * k));
  return sl_builder_append_fixed(b, le);
}

/// A time-millis or time-micros value (`day`: the day's length in its unit)
/// must be a time of day: 0 to day - 1.
static int check_time_of_day(int64_t v, int64_t day, struct sluice_error* error) {
  if (v >= 0 && v < day) return 0;
  return sl_error_set(error, EILSEQ, "%s value %" PRId64 " is not a time of day (0 to %" PRId64
                      ")", day == INT64_C(86400000) ? "time-millis" : "time-micros", v, day - 1);
}

#define APPEND(expr)                                      \
  do {                                                    \
    int rc_ = (expr);                                     \
    if (rc_ != 0) return builder_error(rc_, error);       \
  } while (0)

static int skip(struct avro_decoder* d, int32_t i, struct sluice_error* error);

/// The float16 bits of f when f is exactly a float16 (a NaN keeps its sign
/// and top payload bits), else -1: what the writer widened comes back, and
/// anything else is an error rather than a value rounded.
static int32_t exact_half(float f) {
  uint32_t b;
  memcpy(&b, &f, 4);
  const int32_t sign = (int32_t)((b >> 16) & 0x8000u);
  const uint32_t exp = (b >> 23) & 0xffu, mant = b & 0x7fffffu;
  if (exp == 0xff) {
    if (mant == 0) return sign | 0x7c00;  // infinity
    uint32_t payload = mant >> 13;
    return sign | 0x7c00 | (int32_t)(payload != 0 ? payload : 0x200);
  }
  if (exp == 0) return mant == 0 ? sign : -1;  // float subnormals are below float16's range
  const int e = (int)exp - 127;
  if (e > 15) return -1;
  if (e >= -14) {  // a normal float16
    if (mant & 0x1fffu) return -1;
    return sign | (int32_t)((uint32_t)(e + 15) << 10 | mant >> 13);
  }
  if (e < -24) return -1;
  // A float16 subnormal: m × 2^-24 with the float's 24-bit significand
  // shifted right by -(e + 1) bits, none of them lost.
  const uint32_t full = mant | 0x800000u;
  const int shift = -(e + 1);
  if (full & ((1u << shift) - 1)) return -1;
  return sign | (int32_t)(full >> shift);
}

static int skip_bytes(struct avro_decoder* d, int64_t n, const char* what,
                      struct sluice_error* error) {
  if (n > d->end - d->p) return truncated(error, what);
  d->p += n;
  return 0;
}

static int skip(struct avro_decoder* d, int32_t i, struct sluice_error* error) {
  const struct avro_op* op = &d->prog->ops[i];
  const int32_t* kids = d->prog->kids + op->kids;
  int64_t v = 0, n = 0, bytes = 0;
  switch (op->kind) {
    case OP_NULL: return 0;
    case OP_BOOL: return skip_bytes(d, 1, "boolean", error);
    case OP_INT32: case OP_INT64: case OP_ENUM: case OP_ENUM_MAP: case OP_INT_AS_LONG:
    case OP_INT_AS_FLOAT: case OP_INT_AS_DOUBLE: case OP_LONG_AS_FLOAT: case OP_LONG_AS_DOUBLE:
    case OP_NARROW: case OP_RESCALE: case OP_TIME:
      return read_long(d, &v, error);
    case OP_DEFAULT: return 0;
    case OP_FLOAT: case OP_FLOAT_AS_DOUBLE: case OP_HALF: return skip_bytes(d, 4, "float", error);
    case OP_DOUBLE: return skip_bytes(d, 8, "double", error);
    case OP_BINARY: case OP_STRING: case OP_DEC_BYTES:
      SL_RETURN_NOT_OK(read_len(d, &n, "bytes/string", error));
      d->p += n;
      return 0;
    case OP_FIXED: case OP_DEC_FIXED: case OP_DURATION: return skip_bytes(d, op->size, "fixed", error);
    case OP_RECORD:
      for (int32_t k = 0; k < op->n_kids; ++k) SL_RETURN_NOT_OK(skip(d, kids[k], error));
      return 0;
    case OP_ARRAY: case OP_MAP: {
      const struct avro_op* item = &d->prog->ops[kids[0]];
      for (;;) {
        SL_RETURN_NOT_OK(read_count(d, op->kind == OP_ARRAY ? item : NULL, &n, &bytes, error));
        if (n == 0) return 0;
        if (bytes >= 0) {  // the writer gave the block's size: skip it whole
          d->p += bytes;
          continue;
        }
        for (int64_t k = 0; k < n; ++k) {
          if (op->kind == OP_MAP) {
            SL_RETURN_NOT_OK(read_len(d, &v, "map key", error));
            d->p += v;
          }
          SL_RETURN_NOT_OK(skip(d, kids[0], error));
        }
      }
    }
    case OP_TO_BRANCH: return skip(d, kids[0], error);
    case OP_UNION_MAP: case OP_UNION_TO_ONE:
      SL_RETURN_NOT_OK(read_long(d, &v, error));
      if (v < 0 || v >= op->n_kids)
        return sl_error_set(error, EILSEQ, "invalid union index %" PRId64 " (%d branches)", v,
                            (int)op->n_kids);
      return skip(d, kids[v], error);
    case OP_NULLABLE: case OP_UNION:
      SL_RETURN_NOT_OK(read_long(d, &v, error));
      if (v < 0 || v >= (op->kind == OP_NULLABLE ? 2 : op->n_kids))
        return sl_error_set(error, EILSEQ, "invalid union index %" PRId64 " (%d branches)", v,
                            op->kind == OP_NULLABLE ? 2 : (int)op->n_kids);
      if (op->kind == OP_NULLABLE) return v == op->null_index ? 0 : skip(d, kids[0], error);
      return skip(d, kids[v], error);
    default:
      return sl_error_set(error, EINVAL, "bad Avro op %d", (int)op->kind);
  }
}

/// A block of `n` array items: bulk paths for fixed-width primitives.
static int decode_items(struct avro_decoder* d, int32_t item_i, int64_t n,
                        struct sluice_error* error);

/// The name of the field kid k of record op `op` fills: the reader's field
/// it feeds (targets), or the writer's field a reader schema drops; NULL
/// for the wrapper row of a non-record root.
static const char* kid_field_name(const struct avro_program* p, const struct avro_op* op,
                                  int32_t k) {
  int32_t t = p->targets[op->kids + k];
  const struct avro_node* record = t >= 0 ? op->node : op->writer;
  int64_t at = t >= 0 ? t : k;
  if (record == NULL || record->kind != AVRO_RECORD || at >= record->n) return NULL;
  return record->names[at];
}

/// Returns `rc`, an error inside kid k of record op `op`, with the message
/// saying which field (nested ones as one path: "field 'a.b': ..."). Only
/// errors pay for it.
static int field_error(const struct avro_program* p, const struct avro_op* op, int32_t k, int rc,
                       struct sluice_error* error) {
  const char* name = error != NULL ? kid_field_name(p, op, k) : NULL;
  if (name == NULL) return rc;
  if (strncmp(error->message, "field '", 7) == 0) {
    char inner[sizeof error->message];
    memcpy(inner, error->message + 7, sizeof inner - 7);
    inner[sizeof inner - 7] = '\0';
    sl_error_set(error, error->code, "field '%s.%s", name, inner);
  } else {
    sl_error_prefix(error, "field '%s'", name);
  }
  return rc;
}

static int decode(struct avro_decoder* d, int32_t i, struct sluice_error* error) {
  const struct avro_op* op = &d->prog->ops[i];
  struct sl_builder* b = d->bld[i];
  const int32_t* kids = d->prog->kids + op->kids;
  int64_t v = 0, n = 0, bytes = 0;
  switch (op->kind) {
    case OP_NULL: APPEND(sl_builder_append_null(b)); return 0;
    case OP_BOOL:
      if (d->p >= d->end) return truncated(error, "boolean");
      // (the spec's byte is 0 or 1; fastavro reads 2 as true, Java as false)
      if (*d->p > 1)
        return sl_error_set(error, EILSEQ, "invalid boolean byte 0x%02x (a boolean is 0 or 1)",
                            *d->p);
      APPEND(sl_builder_append_bool(b, *d->p++ != 0));
      return 0;
    case OP_INT32: {
      int32_t x = 0;
      SL_RETURN_NOT_OK(read_int(d, &x, error));
      APPEND(sl_builder_append_int32(b, x));
      return 0;
    }
    case OP_INT64:
      SL_RETURN_NOT_OK(read_long(d, &v, error));
      APPEND(sl_builder_append_int64(b, v));
      return 0;
    case OP_NARROW: {
      SL_RETURN_NOT_OK(read_long(d, &v, error));
      int64_t lo = 0, hi = INT64_MAX;
      switch ((char)op->size) {
        case 'c': lo = INT8_MIN; hi = INT8_MAX; break;
        case 's': lo = INT16_MIN; hi = INT16_MAX; break;
        case 'C': hi = UINT8_MAX; break;
        case 'S': hi = UINT16_MAX; break;
        case 'I': hi = UINT32_MAX; break;
        default: break;  // 'L': a uint64 the writer stored as a non-negative long
      }
      if (v < lo || v > hi) {
        char f[2] = {(char)op->size, '\0'}, tn[32];
        sl_format_name(f, tn, sizeof tn);
        return sl_error_set(error, EILSEQ, "value %" PRId64 " does not fit the Arrow type %s "
                            "its schema names (sluice.arrow_type '%s')", v, tn, f);
      }
      APPEND(append_low_bytes(b, v));
      return 0;
    }
    case OP_RESCALE: {
      SL_RETURN_NOT_OK(read_long(d, &v, error));
      int64_t x = 0;
      if (op->size < 0 && v % -op->size != 0) {
        return sl_error_set(error, EILSEQ, "value %" PRId64 " is not a whole number of the "
                            "unit its schema names (sluice.arrow_type %s)", v,
                            op->node->arrow_type);
      }
      if (op->size < 0) x = v / -op->size;
      if ((op->size > 0 && __builtin_mul_overflow(v, op->size, &x)) ||
          (b->value_width == 4 && (x < INT32_MIN || x > INT32_MAX))) {
        return sl_error_set(error, EILSEQ, "value %" PRId64 " does not fit the Arrow type its "
                            "schema names (sluice.arrow_type %s)", v, op->node->arrow_type);
      }
      APPEND(append_low_bytes(b, x));
      return 0;
    }
    case OP_TIME:  // Arrow's time32/time64 hold a time of day, as Avro's spec says
      SL_RETURN_NOT_OK(read_long(d, &v, error));
      SL_RETURN_NOT_OK(check_time_of_day(v, op->size, error));
      APPEND(append_low_bytes(b, v));
      return 0;
    case OP_HALF: {
      float f;
      if (d->end - d->p < 4) return truncated(error, "float");
      memcpy(&f, d->p, 4);
      d->p += 4;
      int32_t h = exact_half(f);
      if (h < 0) {
        return sl_error_set(error, EILSEQ, "float %.9g is not a float16, which its schema "
                            "names (sluice.arrow_type)", (double)f);
      }
      APPEND(sl_builder_append_uint16(b, (uint16_t)h));
      return 0;
    }
    case OP_FLOAT: {
      float f;
      if (d->end - d->p < 4) return truncated(error, "float");
      memcpy(&f, d->p, 4);
      d->p += 4;
      APPEND(sl_builder_append_float(b, f));
      return 0;
    }
    case OP_DOUBLE: {
      double f;
      if (d->end - d->p < 8) return truncated(error, "double");
      memcpy(&f, d->p, 8);
      d->p += 8;
      APPEND(sl_builder_append_double(b, f));
      return 0;
    }
    case OP_BINARY:
      SL_RETURN_NOT_OK(read_len(d, &n, "string/bytes", error));
      APPEND(sl_builder_append_binary(b, d->p, n));
      d->p += n;
      return 0;
    case OP_STRING:
      SL_RETURN_NOT_OK(read_len(d, &n, "string", error));
      if (sl_utf8_invalid_at(d->p, n) >= 0) return sl_error_set(error, EILSEQ, "string is not valid UTF-8");
      APPEND(sl_builder_append_binary(b, d->p, n));
      d->p += n;
      return 0;
    case OP_DEC_BYTES:
      SL_RETURN_NOT_OK(read_len(d, &n, "decimal", error));
      APPEND(sl_builder_append_decimal_be(b, d->p, n));
      d->p += n;
      return check_decimal_digits(b, error);
    case OP_FIXED: case OP_DEC_FIXED: case OP_DURATION:
      if (d->end - d->p < op->size) return truncated(error, "fixed");
      if (op->kind == OP_FIXED) {
        APPEND(sl_builder_append_fixed(b, d->p));
      } else if (op->kind == OP_DEC_FIXED) {
        APPEND(sl_builder_append_decimal_be(b, d->p, op->size));
        SL_RETURN_NOT_OK(check_decimal_digits(b, error));
      } else {
        // Avro: three little-endian uint32 (months, days, milliseconds) →
        // Arrow month_day_nano: int32 months, int32 days, int64 nanoseconds.
        uint8_t mdn[16];
        uint32_t months, days, ms;
        memcpy(&months, d->p, 4);
        memcpy(&days, d->p + 4, 4);
        memcpy(&ms, d->p + 8, 4);
        if (months > INT32_MAX || days > INT32_MAX)
          return sl_error_set(error, EILSEQ, "duration of %" PRIu32 " months, %" PRIu32 " days: "
                              "Arrow's month_day_nano holds at most %" PRId32 " of each",
                              months, days, INT32_MAX);
        memcpy(mdn, d->p, 8);
        int64_t ns = (int64_t)ms * 1000000;
        memcpy(mdn + 8, &ns, 8);
        APPEND(sl_builder_append_fixed(b, mdn));
      }
      d->p += op->size;
      return 0;
    case OP_ENUM: {
      int32_t x = 0;
      SL_RETURN_NOT_OK(read_int(d, &x, error));
      if (x < 0 || x >= op->size)
        return sl_error_set(error, EILSEQ, "enum index %d out of range (%" PRId64 " symbols)",
                            (int)x, op->size);
      APPEND(sl_builder_append_int32(b, x));
      return 0;
    }
    case OP_RECORD:
      for (int32_t k = 0; k < op->n_kids; ++k) {
        int rc = d->bld[kids[k]] != NULL ? decode(d, kids[k], error)
                                         : skip(d, kids[k], error);  // dropped by the reader
        if (rc != 0) return field_error(d->prog, op, k, rc, error);
      }
      APPEND(sl_builder_struct_finish(b));
      return 0;
    case OP_INT_AS_LONG: case OP_INT_AS_FLOAT: case OP_INT_AS_DOUBLE: {
      int32_t x = 0;
      SL_RETURN_NOT_OK(read_int(d, &x, error));
      if (op->size > 0) SL_RETURN_NOT_OK(check_time_of_day(x, op->size, error));  // time-micros
      if (op->kind == OP_INT_AS_LONG) APPEND(sl_builder_append_int64(b, x));
      else if (op->kind == OP_INT_AS_FLOAT) APPEND(sl_builder_append_float(b, (float)x));
      else APPEND(sl_builder_append_double(b, x));
      return 0;
    }
    case OP_LONG_AS_FLOAT: case OP_LONG_AS_DOUBLE:
      SL_RETURN_NOT_OK(read_long(d, &v, error));
      if (op->kind == OP_LONG_AS_FLOAT) APPEND(sl_builder_append_float(b, (float)v));
      else APPEND(sl_builder_append_double(b, (double)v));
      return 0;
    case OP_FLOAT_AS_DOUBLE: {
      float f;
      if (d->end - d->p < 4) return truncated(error, "float");
      memcpy(&f, d->p, 4);
      d->p += 4;
      APPEND(sl_builder_append_double(b, f));
      return 0;
    }
    case OP_ENUM_MAP: {
      int32_t x = 0, mapped;
      SL_RETURN_NOT_OK(read_int(d, &x, error));
      if (x < 0 || x >= op->size)
        return sl_error_set(error, EILSEQ, "enum index %d out of range (%" PRId64 " symbols)",
                            (int)x, op->size);
      memcpy(&mapped, d->prog->pool + op->pool_off + 4 * (int64_t)x, 4);
      if (mapped < 0) {
        const char* symbol = op->writer != NULL && x < op->writer->n ? op->writer->names[x] : "?";
        return sl_error_set(error, EILSEQ, "the writer's enum symbol '%s' (%d) has no match in "
                            "the reader's enum (and it has no default)", symbol, (int)x);
      }
      APPEND(sl_builder_append_int32(b, mapped));
      return 0;
    }
    case OP_DEFAULT: {
      // A reader-only field: its default, encoded once, decodes like data.
      struct avro_decoder sub = {d->prog->pool + op->pool_off,
                                 d->prog->pool + op->pool_off + op->pool_len, d->prog, d->bld,
                                 AVRO_MAX_EMPTY_VALUES};  // defaults are finite by construction
      return decode(&sub, kids[0], error);
    }
    case OP_ARRAY: {
      const struct avro_op* item = &d->prog->ops[kids[0]];
      const int64_t items_before = b->children[0].length;
      for (;;) {
        SL_RETURN_NOT_OK(read_count(d, item, &n, &bytes, error));
        if (n == 0) break;
        const uint8_t* start = d->p;
        SL_RETURN_NOT_OK(decode_items(d, kids[0], n, error));
        if (bytes >= 0 && d->p - start != bytes)
          return sl_error_set(error, EILSEQ, "array block of %" PRId64 " bytes declared "
                              "%" PRId64, (int64_t)(d->p - start), bytes);
      }
      if (b->type.id == SL_TYPE_FIXED_SIZE_LIST &&
          b->children[0].length - items_before != b->type.list_size) {
        return sl_error_set(error, EILSEQ, "array of %" PRId64 " items where its schema names "
                            "fixed_size_list of %" PRId64 " (sluice.arrow_type)",
                            b->children[0].length - items_before, (int64_t)b->type.list_size);
      }
      APPEND(sl_builder_list_finish(b));
      return 0;
    }
    case OP_MAP: {
      struct sl_builder* entries = &b->children[0];
      struct sl_builder* keys = &entries->children[0];
      for (;;) {
        SL_RETURN_NOT_OK(read_count(d, NULL, &n, &bytes, error));
        if (n == 0) break;
        const uint8_t* start = d->p;
        for (int64_t k = 0; k < n; ++k) {
          SL_RETURN_NOT_OK(read_len(d, &v, "map key", error));
          if (sl_utf8_invalid_at(d->p, v) >= 0) return sl_error_set(error, EILSEQ, "map key is not valid UTF-8");
          APPEND(sl_builder_append_binary(keys, d->p, v));
          d->p += v;
          SL_RETURN_NOT_OK(decode(d, kids[0], error));
          APPEND(sl_builder_struct_finish(entries));
        }
        // skip() trusts the declared size: checked here, so that a read does
        // not depend on the columns asked for.
        if (bytes >= 0 && d->p - start != bytes)
          return sl_error_set(error, EILSEQ, "map block of %" PRId64 " bytes declared "
                              "%" PRId64, (int64_t)(d->p - start), bytes);
      }
      APPEND(sl_builder_list_finish(b));
      return 0;
    }
    case OP_NULLABLE:
      SL_RETURN_NOT_OK(read_long(d, &v, error));
      if (v == op->null_index) {
        if (op->null_error)
          return sl_error_set(error, EILSEQ, "null written where the reader schema allows none");
        APPEND(sl_builder_append_null(b));
        return 0;
      }
      if (v != 1 - op->null_index)
        return sl_error_set(error, EILSEQ, "invalid union index %" PRId64 " (2 branches)", v);
      return decode(d, kids[0], error);
    case OP_TO_BRANCH:
      SL_RETURN_NOT_OK(decode(d, kids[0], error));
      APPEND(sl_builder_union_finish(b, (int8_t)op->size));
      return 0;
    case OP_UNION_MAP: case OP_UNION_TO_ONE: {
      SL_RETURN_NOT_OK(read_long(d, &v, error));
      if (v < 0 || v >= op->n_kids)
        return sl_error_set(error, EILSEQ, "invalid union index %" PRId64 " (%d branches)", v,
                            (int)op->n_kids);
      int32_t t = d->prog->targets[op->kids + v];
      if (t < 0) {
        const struct avro_node* w = d->prog->ops[kids[v]].node;
        int64_t why = -1;  // why its reader type does not take it, when it matched one
        if (op->pool_len > 0) memcpy(&why, d->prog->pool + op->pool_off + v * 8, 8);
        if (w != NULL && w->kind == AVRO_NULL && why < 0)  // as OP_NULLABLE says it
          return sl_error_set(error, EILSEQ, "null written where the reader schema allows none");
        return sl_error_set(error, EILSEQ, "union branch %" PRId64 " of the writer (%s) has no "
                            "match in the reader's schema%s%s", v,
                            w == NULL ? "?" : w->name != NULL ? w->name
                                                              : sl_avro_kind_name(w->kind),
                            why >= 0 ? ": " : "",
                            why >= 0 ? (const char*)d->prog->pool + why : "");
      }
      SL_RETURN_NOT_OK(decode(d, kids[v], error));
      if (op->kind == OP_UNION_MAP) APPEND(sl_builder_union_finish(b, (int8_t)t));
      return 0;
    }
    case OP_UNION:
      SL_RETURN_NOT_OK(read_long(d, &v, error));
      if (v < 0 || v >= op->n_kids)
        return sl_error_set(error, EILSEQ, "invalid union index %" PRId64 " (%d branches)", v,
                            (int)op->n_kids);
      SL_RETURN_NOT_OK(decode(d, kids[v], error));
      APPEND(sl_builder_union_finish(b, (int8_t)v));
      return 0;
    default:
      return sl_error_set(error, EINVAL, "bad Avro op %d", (int)op->kind);
  }
}

static int decode_items(struct avro_decoder* d, int32_t item_i, int64_t n,
                        struct sluice_error* error) {
  const struct avro_op* item = &d->prog->ops[item_i];
  struct sl_builder* b = d->bld[item_i];
  int64_t left = d->end - d->p;
  switch (item->kind) {
    case OP_DOUBLE: case OP_FLOAT:
      if (AVRO_LITTLE_ENDIAN) {
        // The encoding is the little-endian IEEE value: a block is one memcpy.
        int64_t w = item->kind == OP_DOUBLE ? 8 : 4;
        if (n > left / w) return truncated(error, "array of floating-point values");
        APPEND(sl_builder_append_values(b, d->p, n));
        d->p += n * w;
        return 0;
      }
      break;
    case OP_INT64: case OP_INT32:
      APPEND(sl_builder_reserve(b, n));  // n <= bytes left, checked by read_count
      for (int64_t k = 0; k < n; ++k) {
        int64_t v = 0;
        SL_RETURN_NOT_OK(read_long(d, &v, error));
        if (item->kind == OP_INT64) {
          sl_builder_append_int64_unsafe(b, v);
        } else {
          if (v < INT32_MIN || v > INT32_MAX)
            return sl_error_set(error, EILSEQ, "int value %" PRId64 " out of the 32-bit range", v);
          sl_builder_append_int32_unsafe(b, (int32_t)v);
        }
      }
      return 0;
    default:
      break;
  }
  for (int64_t k = 0; k < n; ++k) SL_RETURN_NOT_OK(decode(d, item_i, error));
  return 0;
}

int sl_avro_decode_rows(struct avro_decoder* d, int64_t n, int64_t* done, struct sluice_error* error) {
  for (*done = 0; *done < n; ++*done) SL_RETURN_NOT_OK(sl_avro_decode_row(d, error));
  return 0;
}

int sl_avro_objects_fill(const struct avro_program* prog, const uint8_t* p, const uint8_t* end,
                         int64_t n) {
  const struct avro_op* top = &prog->ops[0];
  if (n == 0 || top->min_size <= 0) return 1;  // (load_block ignores an empty block's data)
  if (n > (end - p) / top->min_size) return 0;
  struct avro_decoder d = {.p = p, .end = end, .prog = prog, .empty_left = AVRO_MAX_EMPTY_VALUES};
  struct sluice_error scratch;
  memset(&scratch, 0, sizeof scratch);
  const int32_t* kids = prog->kids + top->kids;
  for (int64_t r = 0; r < n; ++r) {
    int64_t v = 0;
    if (prog->root_branch > 0 && (read_long(&d, &v, &scratch) != 0 || v != prog->root_branch - 1))
      return 0;
    for (int32_t k = 0; k < top->n_kids; ++k) {
      if (skip(&d, kids[k], &scratch) != 0) return 0;
    }
  }
  return d.p == d.end;
}

int sl_avro_decode_row(struct avro_decoder* d, struct sluice_error* error) {
  const struct avro_op* top = &d->prog->ops[0];
  const int32_t* kids = d->prog->kids + top->kids;
  if (d->prog->root_branch > 0) {  // a writer's top-level union read as a record
    int64_t v = 0;
    const struct avro_node* u = d->prog->root_union;
    SL_RETURN_NOT_OK(read_long(d, &v, error));
    if (v < 0 || v >= u->n)
      return sl_error_set(error, EILSEQ, "invalid union index %" PRId64 " (%d branches)", v,
                          (int)u->n);
    if (v != d->prog->root_branch - 1) {
      const struct avro_node* w = u->items[v];
      return sl_error_set(error, EILSEQ, "union branch %" PRId64 " of the writer (%s) has no "
                          "match in the reader's schema (its top-level record)", v,
                          w->name != NULL ? w->name : sl_avro_kind_name(w->kind));
    }
  }
  for (int32_t k = 0; k < top->n_kids; ++k) {
    int32_t i = kids[k];
    struct sl_builder* b = d->bld[i];
    if (b == NULL) {
      int rc = skip(d, i, error);
      if (rc != 0) return field_error(d->prog, top, k, rc, error);
      continue;
    }
    // Flat numeric columns (W1-like rows) are most of the work for narrow
    // records: handled here without a call through the general decoder.
    uint8_t kind = d->prog->ops[i].kind;
    if (kind == OP_DOUBLE && d->end - d->p >= 8 && b->length < b->capacity) {
      double v;
      memcpy(&v, d->p, 8);
      d->p += 8;
      sl_builder_append_double_unsafe(b, v);
    } else if (kind == OP_INT64 && b->length < b->capacity) {
      int64_t v = 0;
      int rc = read_long(d, &v, error);
      if (rc != 0) return field_error(d->prog, top, k, rc, error);
      sl_builder_append_int64_unsafe(b, v);
    } else {
      int rc = decode(d, i, error);
      if (rc != 0) return field_error(d->prog, top, k, rc, error);
    }
  }
  return 0;
}

/* ---- flat rows ---------------------------------------------------------------- */

int sl_avro_flat_row(const struct avro_decoder* d) {
  const struct avro_op* top = &d->prog->ops[0];
  if (top->n_kids <= 0 || top->n_kids > AVRO_FLAT_MAX || d->prog->root_branch > 0) return 0;
  const int32_t* kids = d->prog->kids + top->kids;
  for (int32_t k = 0; k < top->n_kids; ++k) {
    uint8_t kind = d->prog->ops[kids[k]].kind;
    if (d->bld[kids[k]] == NULL ||
        (kind != OP_INT32 && kind != OP_INT64 && kind != OP_FLOAT && kind != OP_DOUBLE))
      return 0;
  }
  return 1;
}

// Narrow records of numbers (W1's rows) spend most of their time per field:
// this loop keeps each column's write pointer in a register-friendly array
// instead of going through the builder per value.
/// Stores the value of a long or int field of a flat row at *dst (an int
/// must fit 32 bits).
static inline int flat_store_int(uint8_t kind, int64_t x, uint8_t** dst,
                                 struct sluice_error* error) {
  if (kind == OP_INT64) {
    memcpy(*dst, &x, 8);
    *dst += 8;
    return 0;
  }
  if (x < INT32_MIN || x > INT32_MAX)
    return sl_error_set(error, EILSEQ, "int value %" PRId64 " out of the 32-bit range", x);
  int32_t y = (int32_t)x;
  memcpy(*dst, &y, 4);
  *dst += 4;
  return 0;
}

int sl_avro_decode_flat_rows(struct avro_decoder* d, int64_t n, int64_t* done,
                          struct sluice_error* error) {
  const struct avro_op* top = &d->prog->ops[0];
  const int32_t* kids = d->prog->kids + top->kids;
  const int32_t nk = top->n_kids;
  uint8_t kind[AVRO_FLAT_MAX];
  uint8_t* dst[AVRO_FLAT_MAX];
  struct sl_builder* b[AVRO_FLAT_MAX];
  for (int32_t k = 0; k < nk; ++k) {
    b[k] = d->bld[kids[k]];
    kind[k] = d->prog->ops[kids[k]].kind;
    if (b[k]->validity.data != NULL || b[k]->length > b[k]->capacity - n)
      return sl_avro_decode_rows(d, n, done, error);  // nullable or full: the general path
    dst[k] = b[k]->values.data + b[k]->values.size;
  }
  const uint8_t* p = d->p;
  const uint8_t* end = d->end;
  // While a whole row of the longest encodings fits, no value needs a bound
  // check (most of the block; its last rows take the checked loop below).
  int64_t row_max = 0;
  for (int32_t k = 0; k < nk; ++k)
    row_max += kind[k] == OP_DOUBLE ? 8 : kind[k] == OP_FLOAT ? 4 : 10;
  int rc = 0;
  int32_t bad = 0;  // the field an error is in
  int64_t r = 0;
  for (; r < n && end - p >= row_max; ++r) {
    for (int32_t k = 0; k < nk && rc == 0; ++k) {
      switch (kind[k]) {
        case OP_DOUBLE: memcpy(dst[k], p, 8); dst[k] += 8; p += 8; break;
        case OP_FLOAT: memcpy(dst[k], p, 4); dst[k] += 4; p += 4; break;
        default: {
          // Ten bytes are there: the bound is the varint's own limit, so the
          // compiler drops the per-byte check.
          int64_t x = 0;
          int zr = avro_zigzag(&p, p + 10, &x);
          rc = zr != 0 ? varint_error(zr, error) : flat_store_int(kind[k], x, &dst[k], error);
          if (rc != 0) bad = k;
        }
      }
    }
    if (rc != 0) {
      ++r;  // as the loop below counts a row that failed part-way
      break;
    }
  }
  for (; r < n && rc == 0; ++r) {
    for (int32_t k = 0; k < nk; ++k) {
      if (kind[k] == OP_DOUBLE) {
        if (end - p < 8) {
          rc = truncated(error, "double");
          bad = k;
          break;
        }
        memcpy(dst[k], p, 8);  // constant sizes: one load and one store
        dst[k] += 8;
        p += 8;
        continue;
      }
      if (kind[k] == OP_FLOAT) {
        if (end - p < 4) {
          rc = truncated(error, "float");
          bad = k;
          break;
        }
        memcpy(dst[k], p, 4);
        dst[k] += 4;
        p += 4;
        continue;
      }
      int64_t x = 0;
      int zr = avro_zigzag(&p, end, &x);
      rc = zr != 0 ? varint_error(zr, error) : flat_store_int(kind[k], x, &dst[k], error);
      if (rc != 0) {
        bad = k;
        break;
      }
    }
  }
  // Whole rows only: a row that failed part-way is not kept.
  *done = rc == 0 ? r : r - 1;
  for (int32_t k = 0; k < nk; ++k) {
    b[k]->values.size += *done * b[k]->value_width;
    b[k]->length += *done;
  }
  d->p = p;
  return rc != 0 ? field_error(d->prog, top, bad, rc, error) : 0;
}
