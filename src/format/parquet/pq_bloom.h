// Parquet split block Bloom filters (parquet-format BloomFilter.md), read to
// skip row groups that an equality filter rules out where the statistics
// cannot (unsorted high-cardinality columns: ids, names, UUIDs). DuckDB
// writes them for dictionary-encoded columns, pyarrow on request; sluice's
// writer with -W bloom_filters=COLUMNS.
#ifndef PQ_BLOOM_H
#define PQ_BLOOM_H

#include <stddef.h>
#include <stdint.h>

#include "core/sl_row_filter.h"
#include "io/sl_source.h"
#include "pq_meta.h"
#include "pq_schema.h"
#include "pq_stats.h"

/// Whether the filter's bitset (num_bytes, a multiple of 32) may hold the
/// value whose xxHash64 is `hash` (0 = certainly not).
int sl_pq_bloom_may_contain(const uint8_t* bitset, int64_t num_bytes, uint64_t hash);

/// Sets the bits of the value whose xxHash64 is `hash`.
void sl_pq_bloom_insert(uint8_t* bitset, int64_t num_bytes, uint64_t hash);

/// Bytes of a filter for `ndv` distinct values at false-positive rate `fpp`
/// (the spec's formula), a power of two from 32 bytes to 128 MiB.
int64_t sl_pq_bloom_size(int64_t ndv, double fpp);

/// xxHash64 (seed 0) of a value's PLAIN bytes, as writers hash them.
uint64_t sl_pq_bloom_hash(const void* data, size_t size);

/// A condition's values put as PLAIN physical values of a leaf, as Bloom
/// filters hash them and dictionary pages hold them; a zero also as its
/// twin of the other sign (the filter takes -0.0 and 0.0 as equal). In-lists
/// of over half PQ_PLAIN_LOOKUPS values are not looked up, so as not to hash
/// hundreds of values per row group.
#define PQ_PLAIN_LOOKUPS 128
struct pq_plain_values {
  int n;
  const uint8_t* bytes[PQ_PLAIN_LOOKUPS];  ///< into bufs, or the condition's own bytes
  size_t lengths[PQ_PLAIN_LOOKUPS];
  uint8_t bufs[PQ_PLAIN_LOOKUPS][8];
};
/// 1 with `out` filled when every value of `c` can be put so; 0 when one
/// cannot (a conversion between the physical and Arrow values, a value past
/// the physical type's range, NaN, bool, too many values).
int sl_pq_condition_plain_values(const struct pq_field* f, const struct sl_filter_condition* c,
                              struct pq_plain_values* out);

/// The filters of a column read in one piece when they lie together (as
/// writers put them, back to back before the footer), so that a remote file
/// costs one request for them rather than one per row group. Owned by the
/// reader; planning (one thread) fills it.
#define PQ_BLOOM_CACHE_COLUMNS 4
struct pq_bloom_span {
  int64_t leaf;          ///< the column whose filters these are
  int64_t start, end;    ///< file range held (empty when it could not be read)
  struct sl_view view;
};
struct pq_bloom_cache {
  struct pq_bloom_span spans[PQ_BLOOM_CACHE_COLUMNS];
  int n;
};
void sl_pq_bloom_cache_release(struct pq_bloom_cache* cache);

/// 0 when `c` is an equality (or in-list) none of whose values the Bloom
/// filter of its column's chunk in row group j->rg holds, so no row passes;
/// 1 otherwise, and whenever the filter is absent, unreadable, of a kind
/// sluice does not check, or the values cannot be put as the column's
/// physical values. Reads the filters from j->source (through j->bloom).
int sl_pq_condition_bloom_may_match(const struct pq_row_group_judge* j,
                                 const struct sl_filter_condition* c);

#endif
