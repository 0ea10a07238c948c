// Arrow values as CQL values: the writer's half of cql_type.c. An encoder
// pairs a bound variable's CQL type with the Arrow column that fills it,
// checked once when the write starts; encoding a value then follows the
// pair without looking at format strings again.
#ifndef CQL_ENCODE_H
#define CQL_ENCODE_H

#include <stdint.h>

#include "sluice.h"
#include "../../core/sl_buffer.h"
#include "../../core/sl_value_text.h"
#include "cql_type.h"

struct cql_encoder {
  const struct cql_type* cql;
  /// The Arrow field; for a dictionary-encoded column, its value field (the
  /// index is looked up in the array's dictionary first).
  const struct sl_text_field* arrow;
  int dictionary;  ///< the column is dictionary-encoded
  /// For a field of a UDT or tuple: which child of the parent struct array
  /// holds it (-1 for a UDT field the struct lacks, written as null).
  int64_t struct_child;
  int n_children;
  struct cql_encoder* children;
  /// Set when no value of the Arrow type can be written as the CQL type:
  /// the reason, given for the first value that is not null. A column with
  /// nulls only still fits (a CSV column empty in every row is read as
  /// strings, and fills a column of any type with unset cells).
  char mismatch[640];
};

/// Pairs `cql` with the Arrow column `arrow` (both must outlive the
/// encoder). When no value of that Arrow type can be written as that CQL
/// type, encoding a value that is not null fails (see `mismatch`).
int sl_cql_encoder_init(struct cql_encoder* e, const struct cql_type* cql,
                     const struct sl_text_field* arrow, const char* column,
                     const struct sluice_allocator* alloc, struct sluice_error* error);
void sl_cql_encoder_free(struct cql_encoder* e, const struct sluice_allocator* alloc);

/// What a null top-level value becomes: "unset" leaves the column as it is
/// (no tombstone, as DSBulk does by default), "null" deletes it.
enum cql_null_mode { CQL_NULL_UNSET = -2, CQL_NULL_NULL = -1 };

/// Appends row `i` of `array` (the column's array; `i` before its offset)
/// as a [bytes]: a 4-byte big-endian length and the value, or the length
/// `null_mode` alone for null. 0, ENOMEM, or EINVAL with *why saying why the
/// value cannot be written (out of the CQL type's range, a null inside a
/// collection, ...); *why points to static text.
int sl_cql_encode_value(const struct cql_encoder* e, const struct ArrowArray* array, int64_t i,
                     enum cql_null_mode null_mode, struct sl_buffer* out, const char** why);

#endif
