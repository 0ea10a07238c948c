// Hive-style partitions: the `key=value` directory segments of a dataset's
// objects below the location's root (sales/year=2024/month=1/part-0.parquet)
// become columns, as pyarrow.dataset, polars and DuckDB read them. Every
// object must have the same keys in the same order, or there are none.
#ifndef SLUICE_DATASET_HIVE_H
#define SLUICE_DATASET_HIVE_H

#include <stdint.h>

#include "sluice.h"
#include "../io/sl_location.h"

/// The partition columns of a dataset and each object's values.
struct sl_hive {
  int64_t n_keys;     ///< 0 = not partitioned
  char** keys;        ///< column names (percent-decoded)
  /// Arrow format per key: "l" (int64) when every value is digits after
  /// an optional '-', "tdD" (date32) when every value is a YYYY-MM-DD date, else
  /// "u" (utf8).
  const char** formats;
  int64_t n_objects;
  /// [object * n_keys + key]: the value's text (percent-decoded, NUL-
  /// terminated), or NULL for a null (`__HIVE_DEFAULT_PARTITION__`). Room
  /// for values_cap objects.
  char** values;
  /// [object * n_keys + key]: the length of values[], which may hold NUL
  /// bytes (`k=a%00b`, as pyarrow writes and reads "a\0b").
  size_t* value_lens;
  int64_t values_cap;
  /// A partition filter kept no object: the objects left (one, for the
  /// schema) give no rows.
  int none_match;
  /// [object]: 1 when a partition filter refused it but it stays for its
  /// columns (sl_hive_filter's keep_all): it gives no rows. NULL = none.
  uint8_t* schema_only;
};

/// Reads the partitions of `names`, the objects `location` expanded to.
/// Names not under the location's literal root give an unpartitioned result
/// (n_keys 0); a key named twice (y=1/y=2) keeps its first value; objects
/// with different keys are EINVAL, naming two of them. `out` is zeroed first;
/// free it with sl_hive_free, also after an error.
int sl_hive_detect(const char* location, const struct sl_location_list* names,
                   const struct sluice_allocator* alloc, struct sl_hive* out,
                   struct sluice_error* error);

void sl_hive_free(struct sl_hive* hive, const struct sluice_allocator* alloc);

/// Drops from `names` (and `hive`) the objects whose partition values do not
/// pass `filter`: conditions `key OP value` joined by ',', all of which must
/// hold; OP is =, !=, <, <=, >, >=; `key=a|b` is either value, `key!=a|b`
/// neither. Values compare as the key's type (integers as numbers, dates as
/// dates, text bytewise); a null value passes no condition. Keys and values
/// may be %XX-escaped (`city=S%C3%A3o%20Paulo`, a ',' as %2C). When nothing
/// passes, the first object stays (for the schema) with hive->none_match
/// set. With `keep_all` (union_by_name: every object's columns count)
/// nothing is dropped: the refused objects are marked in hive->schema_only
/// (made by this call: at most one keep_all filter per hive).
/// EINVAL names a malformed condition or an unknown key.
int sl_hive_filter(struct sl_hive* hive, struct sl_location_list* names, const char* filter,
                   int keep_all,
                   const struct sluice_allocator* alloc, struct sluice_error* error);

/// Partition column `key` of object `object` for `length` rows: every row
/// holds the object's value (or is null).
int sl_hive_column(const struct sl_hive* hive, int64_t key, int64_t object, int64_t length,
                   const struct sluice_allocator* alloc, struct ArrowArray* out,
                   struct sluice_error* error);

#endif
