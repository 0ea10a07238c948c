// Stored statistics of a Parquet file (the footer's column chunk
// statistics, merged over row groups) as sl_stored_column_stats plus a 2-row
// min / max array in each column's Arrow type.
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

#endif
