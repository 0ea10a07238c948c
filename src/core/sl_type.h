// Arrow types as sluice reasons about them: parsed from (and printed to) the
// C Data Interface format strings.
#ifndef SL_TYPE_H
#define SL_TYPE_H

#include <stdint.h>

#include "sluice.h"

enum sl_type_id {
  SL_TYPE_NA = 0,     // "n"
  SL_TYPE_BOOL,       // "b"
  SL_TYPE_INT8, SL_TYPE_UINT8, SL_TYPE_INT16, SL_TYPE_UINT16,
  SL_TYPE_INT32, SL_TYPE_UINT32, SL_TYPE_INT64, SL_TYPE_UINT64,
  SL_TYPE_HALF_FLOAT, SL_TYPE_FLOAT, SL_TYPE_DOUBLE,
  SL_TYPE_BINARY, SL_TYPE_LARGE_BINARY, SL_TYPE_STRING, SL_TYPE_LARGE_STRING,
  SL_TYPE_FIXED_SIZE_BINARY,  // "w:N"
  SL_TYPE_DECIMAL128,         // "d:P,S" or "d:P,S,128"
  SL_TYPE_DECIMAL256,         // "d:P,S,256"
  SL_TYPE_DATE32, SL_TYPE_DATE64,
  SL_TYPE_TIME32, SL_TYPE_TIME64,
  SL_TYPE_TIMESTAMP,
  SL_TYPE_DURATION,
  SL_TYPE_INTERVAL_MONTHS, SL_TYPE_INTERVAL_DAY_TIME, SL_TYPE_INTERVAL_MONTH_DAY_NANO,
  SL_TYPE_LIST, SL_TYPE_LARGE_LIST, SL_TYPE_FIXED_SIZE_LIST,
  SL_TYPE_STRUCT, SL_TYPE_MAP,
  SL_TYPE_DENSE_UNION, SL_TYPE_SPARSE_UNION,
  SL_TYPE_COUNT
};

enum sl_time_unit { SL_SECOND = 0, SL_MILLI, SL_MICRO, SL_NANO };

/// A parsed format string. Pointers (timezone) point into the format string.
struct sl_type {
  enum sl_type_id id;
  int32_t byte_width;       ///< fixed_size_binary, decimal (16/32)
  int32_t precision, scale; ///< decimal
  int32_t list_size;        ///< fixed_size_list
  enum sl_time_unit unit;   ///< time32/64, timestamp, duration
  const char* timezone;     ///< timestamp: points into the format, "" if none
  int32_t n_type_codes;     ///< unions
  int8_t type_codes[128];   ///< unions
};

/// Parses a C Data Interface format string. EINVAL with a message if unknown.
int sl_type_parse(const char* format, struct sl_type* out, struct sluice_error* error);

/// Number of buffers the C Data Interface gives arrays of this type
/// (e.g. 2 for int32, 3 for utf8, 1 for struct, 0 for null; unions have no
/// validity bitmap: 1 for sparse (type ids), 2 for dense (type ids, offsets)).
int sl_type_n_buffers(enum sl_type_id id);
/// Whether an imported array of this type may have `n` buffers: the count
/// above, or for null one more (polars exports an unused buffer, which
/// Arrow C++ accepts). Unions' pre-1.0 validity buffer is the IPC writer's
/// own tolerance.
int sl_type_buffers_ok(enum sl_type_id id, int64_t n);

/// Bit width of one value in the fixed-width data buffer (1 for bool, 0 if the
/// type has no fixed-width data buffer). Uses byte_width for w:N / decimals.
int64_t sl_type_bit_width(const struct sl_type* type);

/// A short human name ("int64", "timestamp[us, tz=UTC]", "list<...>" is not
/// expanded): writes at most `cap` bytes into `out` and returns `out` (so
/// that a message's argument names the type only when the message is made).
const char* sl_type_name(const struct sl_type* type, char* out, size_t cap);

/// sl_type_name of a C Data Interface format string ("l" is "int64"), for
/// messages; a format that does not parse is written as it is. Returns `out`.
const char* sl_format_name(const char* format, char* out, size_t cap);

/// Writes the C Data Interface format string of `type` (the inverse of
/// sl_type_parse, e.g. "tsu:UTC", "d:10,2", "+ud:0,1") into `out`, at most
/// `cap` bytes including the NUL.
void sl_type_format(const struct sl_type* type, char* out, size_t cap);

#endif
