// Stored statistics of a Parquet file (the footer's column chunk
// statistics, merged over row groups) as sl_stored_column_stats plus a 2-row
// min / max array in each column's Arrow type; and row groups judged by
// their statistics against a row filter.
#ifndef PQ_STATS_H
#define PQ_STATS_H

#include <stdint.h>

#include "sluice.h"
#include "../sl_format.h"
#include "core/sl_row_filter.h"
#include "io/sl_source.h"
#include "pq_meta.h"
#include "pq_schema.h"

int sl_pq_stored_stats(const struct pq_file_meta* meta, const struct pq_schema* schema,
                    const struct sluice_allocator* alloc, const char* name,
                    const int64_t* columns, int64_t n_columns, int64_t* row_count,
                    struct sl_stored_column_stats* stats, struct ArrowArray* min_max,
                    struct sluice_error* error);

/// A row group judged against a row filter's conditions while planning
/// (pq_prune.c: statistics, pq_bloom.c: Bloom filters, pq_dict_prune.c:
/// dictionary pages). Each pq_condition_*_may_match is 0 only when what it
/// reads proves that no row of the row group passes condition `c`; 1
/// otherwise, and whenever unsure.
struct pq_bloom_cache;
struct pq_codec_ctx;
struct pq_row_group_judge {
  const struct pq_file_meta* meta;
  const struct pq_schema* schema;
  int64_t rg;
  struct sl_source* source;          ///< where Bloom filters and dictionaries are read
  struct pq_bloom_cache* bloom;      ///< may be NULL
  const struct sluice_allocator* alloc;
  struct pq_codec_ctx** codec;       ///< created on first need; the caller frees it
  int verify_checksums;              ///< a dictionary page whose CRC fails is not believed
  /// Read the dictionaries of a source that is not mapped (a split about to
  /// be decoded: one request per chunk, on the worker's thread) rather than
  /// leave them unread; `failed` then receives a read's error code, `error`
  /// its message (the split fails rather than judge by half the bytes).
  int remote_dictionaries;
  int64_t remote_max_bytes;          ///< larger dictionary pages are not fetched
  int failed;
  struct sluice_error* error;
};
/// By the chunk's statistics: every value null, or bounds the condition
/// rules out.
int sl_pq_condition_stats_may_match(const struct pq_row_group_judge* j,
                                 const struct sl_filter_condition* c);

#endif
