// Stored statistics of a Parquet file (the footer's column chunk
// statistics, merged over row groups) as sl_stored_column_stats plus a 2-row
// min / max array in each column's Arrow type; and row groups judged by
// their statistics against a row filter.
#ifndef PQ_STATS_H
#define PQ_STATS_H

#include <stdint.h>

#include "sluice.h"
#include "../sl_format.h"
#include "pq_meta.h"
#include "pq_schema.h"

int pq_stored_stats(const struct pq_file_meta* meta, const struct pq_schema* schema,
                    const struct sluice_allocator* alloc, const char* name,
                    const int64_t* columns, int64_t n_columns, int64_t* row_count,
                    struct sl_stored_column_stats* stats, struct ArrowArray* min_max,
                    struct sluice_error* error);

/// Whether a row of row group `rg` may pass `filter` (conditions on top-level
/// columns of `schema`): 0 only when a condition's column chunk statistics
/// prove that none does (every value null, or bounds that the condition
/// rules out); 1 otherwise, and whenever unsure. See pq_prune.c.
int pq_row_group_may_match(const struct pq_file_meta* meta, const struct pq_schema* schema,
                           int64_t rg, const struct sl_row_filter* filter);

#endif
