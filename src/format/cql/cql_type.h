// CQL types as a RESULT's metadata describes them ([option] trees), their
// Arrow types, and the decoding of one value into an Arrow builder.
#ifndef CQL_TYPE_H
#define CQL_TYPE_H

#include <stdint.h>

#include "sluice.h"
#include "../../core/sl_builder.h"
#include "../../io/sl_cql.h"

/// The largest decimal scale (either sign) read, and so written: a value of
/// 100 KB of digits as text.
#define CQL_DECIMAL_MAX_SCALE 100000

/// Option ids of the protocol (v4, plus v5's duration id).
enum cql_type_id {
  CQL_CUSTOM = 0x0000,
  CQL_ASCII = 0x0001,
  CQL_BIGINT = 0x0002,
  CQL_BLOB = 0x0003,
  CQL_BOOLEAN = 0x0004,
  CQL_COUNTER = 0x0005,
  CQL_DECIMAL = 0x0006,
  CQL_DOUBLE = 0x0007,
  CQL_FLOAT = 0x0008,
  CQL_INT = 0x0009,
  CQL_TIMESTAMP = 0x000B,
  CQL_UUID = 0x000C,
  CQL_VARCHAR = 0x000D,
  CQL_VARINT = 0x000E,
  CQL_TIMEUUID = 0x000F,
  CQL_INET = 0x0010,
  CQL_DATE = 0x0011,
  CQL_TIME = 0x0012,
  CQL_SMALLINT = 0x0013,
  CQL_TINYINT = 0x0014,
  CQL_DURATION = 0x0015,
  CQL_LIST = 0x0020,
  CQL_MAP = 0x0021,
  CQL_SET = 0x0022,
  CQL_UDT = 0x0030,
  CQL_TUPLE = 0x0031,
  /// Not a protocol id: a custom VectorType (Cassandra 5) of fixed-width
  /// elements; `dimension` elements of children[0].
  CQL_VECTOR = 0x7001,
};

struct cql_type {
  int id;             ///< enum cql_type_id
  char* name;         ///< column, UDT field or tuple component name
  char* custom;       ///< CQL_CUSTOM: the class name
  int32_t dimension;  ///< CQL_VECTOR: elements per value
  int n_children;     ///< list/set 1, map 2 (key, value), UDT/tuple fields, vector 1
  struct cql_type* children;
};

/// Reads one [option] (recursively) into `out`, named `name` (copied).
/// -1 when the bytes are malformed or too deeply nested, ENOMEM.
int sl_cql_type_read(struct sl_cql_cursor* c, const char* name, size_t name_len,
                  const struct sluice_allocator* alloc, struct cql_type* out);
void sl_cql_type_free(struct cql_type* t, const struct sluice_allocator* alloc);

/// The Arrow field for `t` (nullable; map keys are not).
int sl_cql_type_arrow_schema(const struct cql_type* t, const struct sluice_allocator* alloc,
                          struct ArrowSchema* out, struct sluice_error* error);

/// Appends the value `v` of `n` bytes (n < 0: null) of type `t` to `b`.
/// 0, ENOMEM, or EILSEQ with *why saying what is wrong with the bytes.
int sl_cql_value_append(const struct cql_type* t, struct sl_builder* b, const uint8_t* v,
                     int32_t n, const char** why);

#endif
