// Shared by sluice_stats.c (computed statistics) and sluice_stats_stored.c
// (statistics stored in the data's metadata).
#ifndef SLUICE_STATS_INTERNAL_H
#define SLUICE_STATS_INTERNAL_H

#include "sluice.h"
#include "core/sl_value_text.h"

/// Whether sluice_dataset_stats computes a min/max for values of this field
/// (kept beside stats_key_of, which decides the same thing per value).
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
