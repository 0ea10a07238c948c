// Shared by sluice_stats.c (computed statistics) and sluice_stats_stored.c
// (statistics stored in the data's metadata).
#ifndef SLUICE_STATS_INTERNAL_H
#define SLUICE_STATS_INTERNAL_H

#include "sluice.h"
#include <stddef.h>
#include <stdint.h>

#include "core/sl_value_text.h"

enum sl_stats_key_kind { SL_KEY_NONE = 0, SL_KEY_I64, SL_KEY_U64, SL_KEY_F64, SL_KEY_BYTES, SL_KEY_DECIMAL };

/// A comparable form of one value. `bytes` is borrowed from the batch (or
/// owned by a merged state, see sl_stats_key_store).
struct sl_stats_key {
  enum sl_stats_key_kind kind;
  int64_t i;
  uint64_t u;
  double d;
  const uint8_t* bytes;
  int64_t n;
  /// Decimals as big-endian with the sign bit flipped: memcmp orders them.
  uint8_t decimal[32];
};

/// The key of row `i` of `array` (not null); SL_KEY_NONE for types without an
/// order (and NaN). Byte keys borrow the array's memory.
void sl_stats_key_of(const struct sl_text_field* field, const struct ArrowArray* array, int64_t i,
                     struct sl_stats_key* key);
/// <0, 0, >0 as `a` orders before, with, after `b` (keys of one field).
int sl_stats_key_compare(const struct sl_stats_key* a, const struct sl_stats_key* b);
/// Makes `dst` a copy of `src` whose bytes live in *storage (grown as needed,
/// *cap bytes; the caller frees it with sl_free(alloc, *storage, *cap)). ENOMEM.
int sl_stats_key_store(struct sl_stats_key* dst, const struct sl_stats_key* src,
                       uint8_t** storage, size_t* cap, const struct sluice_allocator* alloc);

/// Whether sluice_dataset_stats computes a min/max for values of this field
/// (kept beside sl_stats_key_of, which decides the same thing per value).
int sl_stats_type_has_order(const struct sl_text_field* field);

/// Fills result[c] (zeroed, row->n_children entries; name/type untouched)
/// with what the reader's stored_stats hook says about the projected columns:
/// count (row count), null_count, min/max rendered as text, min_exact,
/// max_exact, from_metadata = 1. Without the hook, sets *available = 0 and
/// count = null_count = -1. Strings are allocated with the default allocator
/// (sluice_stats_free frees them).
int sl_stats_stored(struct sluice_dataset* dataset, const struct sl_text_field* row,
                    struct sluice_column_stats* result, int* available,
                    struct sluice_error* error);

#endif
