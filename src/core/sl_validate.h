// Validation of arrays built from untrusted input, before anyone dereferences
// them: buffer presence, lengths, offsets within bounds, union type ids,
// dictionary indexes, UTF-8 (full mode).
#ifndef SL_VALIDATE_H
#define SL_VALIDATE_H

#include <stdint.h>

#include "sluice.h"

enum sl_validate_level {
  /// O(1) per node: counts of buffers and children, lengths and offsets fit
  /// the buffer sizes that are known.
  SL_VALIDATE_MINIMAL = 0,
  /// Also O(n): offsets monotonic and within the child / data, union type ids
  /// and offsets valid, dictionary indexes within the dictionary.
  SL_VALIDATE_FULL = 1,
  /// Also UTF-8 of utf8 columns.
  SL_VALIDATE_FULL_UTF8 = 2,
};

/// Buffer sizes in bytes when the producer knows them (IPC does: they come
/// from the message), so that minimal validation can check that a buffer
/// holds what length+offset imply. Pass NULL when unknown.
struct sl_buffer_sizes {
  /// Callback returning the size of buffer `i` of `array`, or -1 if unknown.
  int64_t (*size_of)(void* ctx, const struct ArrowArray* array, int64_t i);
  void* ctx;
};

/// Checks `array` against `schema` recursively. Returns 0, or EILSEQ with a
/// message naming the column path ("col.child[2]") and the reason.
int sl_array_validate(const struct ArrowSchema* schema, const struct ArrowArray* array,
                      enum sl_validate_level level, const struct sl_buffer_sizes* sizes,
                      struct sluice_error* error);

/// The same, naming a bad value of one of the batch's own columns (a
/// record batch's children) by its row, first_row + its index, when
/// first_row >= 0 (the rows of a stream before this batch); deeper
/// values, and every value when first_row < 0, by their index.
int sl_array_validate_rows(const struct ArrowSchema* schema, const struct ArrowArray* array,
                           enum sl_validate_level level, const struct sl_buffer_sizes* sizes,
                           int64_t first_row, struct sluice_error* error);

/// sl_array_validate for a producer that shares one dictionary among many
/// arrays and validated it in full when it built it (the IPC reader, whose
/// dictionaries grow by deltas): dictionaries of flat values (no children)
/// get only the O(1) checks, so that a batch does not cost its whole
/// dictionary again. Nested ones, whose parts may refer to dictionaries
/// attached later, and the indexes into every dictionary are checked at
/// `level`.
int sl_array_validate_shared_dicts(const struct ArrowSchema* schema,
                                   const struct ArrowArray* array, enum sl_validate_level level,
                                   const struct sl_buffer_sizes* sizes,
                                   struct sluice_error* error);

#endif
