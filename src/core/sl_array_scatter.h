// sl_array_scatter: a struct array's rows dealt out to several new struct
// arrays in one pass over each column (a partitioned write's batch whose
// rows belong to many partitions). Filtering the batch once per
// destination (sl_array_filter) reads every column once per destination.
#ifndef SL_ARRAY_SCATTER_H
#define SL_ARRAY_SCATTER_H

#include <stdint.h>

#include "sluice.h"

/// Whether sl_array_scatter takes struct arrays of `schema`: its children
/// are bool, integers, floats, dates, times, timestamps, durations,
/// decimals, fixed-size binary, or (large) string / binary, none a
/// dictionary.
int sl_array_scatter_supported(const struct ArrowSchema* schema);

/// Deals the rows of struct array `in` (of `schema`, supported, without
/// nulls at the top level) out to out[0 .. n_out): row r goes to
/// out[dest[r]] (0 <= dest[r] < n_out), rows keeping their order;
/// counts[l] = how many go to out[l]. Each out[l] is a new struct array
/// whose buffers are its own (from `alloc`). On error every out[l] is left
/// released.
int sl_array_scatter(const struct ArrowSchema* schema, const struct ArrowArray* in,
                     const int64_t* dest, const int64_t* counts, int64_t n_out,
                     const struct sluice_allocator* alloc, struct ArrowArray* out,
                     struct sluice_error* error);

#endif
